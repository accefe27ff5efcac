#include "engine/models/llama/llama.h"

#include <utility>

#include "engine/common/error.h"
#include "engine/runtime/rope.h"

namespace folio {

namespace {

LlamaDecoderShape shape_of(const LlamaConfig& c) {
    LlamaDecoderShape shape;
    shape.prefix = "model.";
    shape.vocab_size = c.vocab_size;
    shape.hidden_size = c.hidden_size;
    shape.intermediate_size = c.intermediate_size;
    shape.n_layers = c.num_hidden_layers;
    shape.n_heads = c.num_attention_heads;
    shape.n_kv_heads = c.num_key_value_heads;
    shape.head_dim = c.head_dim;
    shape.rms_norm_eps = c.rms_norm_eps;
    shape.tie_word_embeddings = c.tie_word_embeddings;
    shape.attention_bias = c.attention_bias;
    shape.mlp_bias = c.mlp_bias;
    return shape;
}

// One position axis for every frequency, the frequencies scaled as the config's rope type says.
RopeParams rope_of(Backend& backend, const LlamaConfig& c) {
    RotaryLayout layout(1);
    layout.section(0, c.head_dim / 2);
    return layout.upload(backend, c.head_dim, llama_rope_inverse_frequencies(c));
}

}  // namespace

int64_t llama_decode_bytes(const LlamaConfig& c, const ModelLoadParams& load) {
    constexpr auto f32 = static_cast<int64_t>(sizeof(float));
    const auto linear = [&](int64_t n_out, int64_t n_in) {
        return quantized_bytes(layer_quantization(load.quantization, n_in, load), n_out, n_in,
                               load.group_size);
    };
    const int64_t d = c.hidden_size, hd = c.head_dim, ff = c.intermediate_size;
    const int64_t q_dim = c.num_attention_heads * hd, kv_dim = c.num_key_value_heads * hd;
    const int64_t layer =
        linear(q_dim + 2 * kv_dim, d) + linear(d, q_dim) + linear(2 * ff, d) + linear(d, ff) + 2 * d * f32;
    const int64_t head = c.tie_word_embeddings && !load.bf16_weights
                             ? c.vocab_size * d * f32
                             : quantized_bytes(layer_quantization(Quantization::None, d, load), c.vocab_size,
                                               d, load.group_size);
    return c.num_hidden_layers * layer + d * f32 + head;
}

Llama::Llama(Backend& backend, const LlamaConfig& config, WeightSource& weights, const ModelLoadParams& load,
             QuantizationObserver* observer)
    : Llama(backend, config, WeightLoader(backend, weights, load, observer)) {}

Llama::Llama(Backend& backend, const LlamaConfig& config, WeightLoader&& weights)
    : backend_(backend),
      config_(config),
      decoder_(weights, shape_of(config), rope_of(backend, config)),
      n_weight_bytes_(weights.n_weight_bytes()) {
    weights.quantize_layers();
}

ModelLimits Llama::limits() const {
    return {config_.vocab_size, config_.max_position_embeddings, config_.eos_token_ids};
}

void Llama::check_images(const PreprocessedImages& images) const {
    if (!images.grids.empty() || !images.levels.empty() || !images.pixel_values.empty()) {
        fail("a Llama model reads text only; it takes no images (", images.grids.size(), " given)");
    }
}

int64_t Llama::n_image_tokens(const ImageGrid& /*grid*/) const {
    fail("a Llama model reads text only; it has no image tokens");
}

Tensor Llama::encode_images(std::span<const std::span<const uint8_t>> /*levels*/,
                            const ChannelLevels& /*level_values*/, std::span<const ImageGrid> grids) {
    fail("a Llama model reads text only; it cannot encode ", grids.size(), " images");
}

Tensor Llama::encode_images(std::span<const std::span<const float>> /*values*/,
                            std::span<const ImageGrid> grids) {
    fail("a Llama model reads text only; it cannot encode ", grids.size(), " images");
}

PromptPositions Llama::prompt_positions(std::span<const TokenModality> modality,
                                        std::span<const ImageGrid> grids) const {
    if (!grids.empty()) {
        fail("a Llama model reads text only; a prompt with ", grids.size(), " images");
    }
    PromptPositions out;
    out.n_axes = 1;
    out.pos.reserve(modality.size());
    for (size_t i = 0; i < modality.size(); ++i) {
        if (is_media(modality[i])) {
            fail("a Llama model reads text only; prompt token ", i, " is an image's or a video's");
        }
        out.pos.push_back(static_cast<int64_t>(i));
    }
    return out;
}

}  // namespace folio
