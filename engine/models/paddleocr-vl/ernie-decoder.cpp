#include "engine/models/paddleocr-vl/ernie-decoder.h"

#include "engine/runtime/rope.h"

namespace folio {

namespace {

LlamaDecoderShape shape_of(const TextConfig& tc) {
    LlamaDecoderShape shape;
    shape.prefix = "model.language_model.";
    shape.vocab_size = tc.vocab_size;
    shape.hidden_size = tc.hidden_size;
    shape.intermediate_size = tc.intermediate_size;
    shape.n_layers = tc.num_hidden_layers;
    shape.n_heads = tc.num_attention_heads;
    shape.n_kv_heads = tc.num_key_value_heads;
    shape.head_dim = tc.head_dim;
    shape.rms_norm_eps = tc.rms_norm_eps;
    shape.tie_word_embeddings = tc.tie_word_embeddings;
    shape.attention_bias = tc.use_bias;
    shape.mlp_bias = tc.use_bias;
    return shape;
}

RopeParams mrope_of(Backend& backend, const TextConfig& tc) {
    RotaryLayout layout(3);
    for (int axis = 0; axis < 3; ++axis) {
        layout.section(axis, tc.mrope_section[static_cast<size_t>(axis)]);
    }
    return layout.upload(backend, tc.head_dim, tc.rope_theta);
}

}  // namespace

ErnieDecoder::ErnieDecoder(WeightLoader& weights, const TextConfig& config)
    : LlamaDecoder(weights, shape_of(config), mrope_of(weights.backend(), config)) {}

}  // namespace folio
