#include "engine/models/paddleocr-vl/ernie-decoder.h"

#include <cmath>
#include <string>

#include "engine/common/error.h"
#include "engine/models/layers.h"
#include "engine/runtime/rope.h"

namespace folio {

ErnieDecoder::ErnieDecoder(WeightLoader& weights, const TextConfig& config)
    : backend_(weights.backend()), config_(config), precision_(attention_precision(weights.params())) {
    const TextConfig& tc = config;
    const Quantization q = weights.params().quantization;
    const int64_t d = tc.hidden_size, ff = tc.intermediate_size, hd = tc.head_dim;
    const int64_t q_dim = tc.num_attention_heads * hd, kv_dim = tc.num_key_value_heads * hd;
    const std::string tp = "model.language_model.";
    embed_tokens_ = weights.load(tp + "embed_tokens.weight", {tc.vocab_size, d});
    for (int l = 0; l < tc.num_hidden_layers; ++l) {
        const std::string p = tp + "layers." + std::to_string(l) + ".";
        TextLayer& L = layers_.emplace_back();
        L.input_norm = weights.load(p + "input_layernorm.weight", {d});
        L.qkv_proj = weights.load_stacked_linear(
            {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"}, {q_dim, kv_dim, kv_dim},
            d, tc.use_bias, q);
        L.o_proj = weights.load_linear(p + "self_attn.o_proj", d, q_dim, tc.use_bias, q);
        L.post_norm = weights.load(p + "post_attention_layernorm.weight", {d});
        L.gate_up_proj = weights.load_stacked_linear({p + "mlp.gate_proj", p + "mlp.up_proj"}, {ff, ff}, d,
                                                     tc.use_bias, q);
        L.down_proj = weights.load_linear(p + "mlp.down_proj", d, ff, tc.use_bias, q);
    }
    final_norm_ = weights.load(tp + "norm.weight", {d});
    // 3D mRoPE: the temporal, height and width axes in contiguous sections.
    RotaryLayout layout(3);
    for (int axis = 0; axis < 3; ++axis) {
        layout.section(axis, tc.mrope_section[static_cast<size_t>(axis)]);
    }
    rope_ = layout.upload(backend_, hd, tc.rope_theta);
    const bool untied_head = !tc.tie_word_embeddings && weights.has("lm_head.weight");
    if (untied_head) {
        lm_head_ = weights.load_linear("lm_head", tc.vocab_size, d, false, Quantization::None);
    } else if (weights.params().bf16_weights) {
        // A bfloat16 copy of the tied table: decoding reads the head every step, the embedding only by row.
        const std::vector<float> table = backend_.download(embed_tokens_);
        lm_head_.w = backend_.upload(quantize(table, tc.vocab_size, d, Quantization::Bf16, d));
        weights.add_bytes(quantized_bytes(Quantization::Bf16, tc.vocab_size, d, d));
    } else {
        lm_head_.w = dense_weight(embed_tokens_);
    }
}

Tensor ErnieDecoder::embed(std::span<const int32_t> ids) {
    std::vector<int64_t> rows(ids.begin(), ids.end());
    for (const int64_t id : rows) {
        if (id < 0 || id >= config_.vocab_size) {
            fail("token id ", id, " outside the vocabulary of ", config_.vocab_size);
        }
    }
    return backend_.gather_rows(embed_tokens_, rows);  // [n, hidden]
}

Tensor ErnieDecoder::embed(const Tensor& ids, const Tensor& pending) {
    return backend_.gather_token_rows(embed_tokens_, ids, pending);  // [n, hidden]
}

KvCacheParams ErnieDecoder::kv_cache_params(int64_t n_blocks, int64_t block_size) const {
    const TextConfig& tc = config_;
    KvCacheParams params{tc.num_hidden_layers, tc.num_key_value_heads, tc.head_dim, n_blocks, block_size};
    params.dtype = backend_.kv_dtype(precision_);
    return params;
}

Tensor ErnieDecoder::forward(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) {
    const TextConfig& tc = config_;

    Tensor x = std::move(embeds);  // [n, d]; the residual stream
    for (size_t l = 0; l < layers_.size(); ++l) {
        const TextLayer& L = layers_[l];
        const auto layer = static_cast<int>(l);
        rms_norm_paged_attention_add(backend_, x,
                                     {L.input_norm, tc.rms_norm_eps, L.qkv_proj, L.o_proj,
                                      tc.num_attention_heads, tc.head_dim, rope_, precision_},
                                     step, cache, layer);
        rms_norm_mlp_add(backend_, x, L.gate_up_proj, L.down_proj, L.post_norm, tc.rms_norm_eps);
    }
    return x;
}

Tensor ErnieDecoder::logits(const Tensor& hidden) {
    // The norm as a pass of its own: inside the head's GEMV, each of its many blocks would scale its input by
    // the norm's weights again, which costs more than the pass.
    return apply(backend_, lm_head_, backend_.rms_norm(hidden, final_norm_, config_.rms_norm_eps));
}

}  // namespace folio
