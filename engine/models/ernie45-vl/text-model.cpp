#include "engine/models/ernie45-vl/text-model.h"

#include <cmath>
#include <string>
#include <utility>

#include "engine/common/error.h"
#include "engine/models/layers.h"
#include "engine/runtime/rope.h"

namespace folio {

Ernie45VlTextModel::Ernie45VlTextModel(WeightLoader& weights, const Ernie45VlTextConfig& config)
    : backend_(weights.backend()),
      config_(config),
      precision_(attention_precision(weights.params())),
      split_rank_(weights.params().split.rank) {
    const Ernie45VlTextConfig& tc = config;
    const Quantization q = weights.params().quantization;
    const int64_t d = tc.hidden_size, ff = tc.intermediate_size, hd = tc.head_dim;
    const int64_t q_dim = tc.num_attention_heads * hd, kv_dim = tc.num_key_value_heads * hd;
    // A tensor-parallel rank holds some of the heads, MLP columns and each expert's columns (TensorSplit).
    const TensorSplit& split = weights.params().split;
    n_heads_ = static_cast<int>(split.part(tc.num_attention_heads, "attention heads").count);
    n_kv_heads_ = static_cast<int>(split.part(tc.num_key_value_heads, "key/value heads").count);
    const bool untied_head = !tc.tie_word_embeddings && weights.has("lm_head.weight");
    // The embedding table and the head run on rank 0 alone (TensorParallelModel), so only rank 0 holds them.
    const bool ends = split.rank == 0;
    // The table's values stay on the host where the head is a bfloat16 copy of it.
    std::vector<float> table;
    if (ends) {
        embed_tokens_ = weights.load_embedding("model.embed_tokens.weight", tc.vocab_size, d,
                                               !untied_head && weights.params().bf16_weights, table,
                                               !untied_head && !weights.params().bf16_weights);
    }
    for (int l = 0; l < tc.num_hidden_layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        Layer& L = layers_.emplace_back();
        L.input_norm = weights.load(p + "input_layernorm.weight", {d});
        L.qkv_proj = weights.load_column_parallel(
            {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"}, {q_dim, kv_dim, kv_dim},
            {tc.num_attention_heads, tc.num_key_value_heads, tc.num_key_value_heads}, d, tc.use_bias, q);
        L.o_proj = weights.load_row_parallel(p + "self_attn.o_proj", d, q_dim, tc.num_attention_heads,
                                             tc.use_bias, q);
        L.post_norm = weights.load(p + "post_attention_layernorm.weight", {d});
        if (tc.sparse_layers[static_cast<size_t>(l)]) {
            L.moe = std::make_unique<MoeBlock>(weights, p + "mlp.", tc);
        } else {
            L.gate_up_proj = weights.load_column_parallel({p + "mlp.gate_proj", p + "mlp.up_proj"}, {ff, ff},
                                                          {ff, ff}, d, tc.use_bias, q);
            L.down_proj = weights.load_row_parallel(p + "mlp.down_proj", d, ff, ff, tc.use_bias, q);
        }
    }
    final_norm_ = weights.load("model.norm.weight", {d});
    // Frequency i turns with height for even i and width for odd i over the first two sections, then with
    // time; the weight source has put each head's adjacent pairs in rotate-half order.
    RotaryLayout layout(3);
    const std::pair<int, int> hw[] = {{1, tc.mrope_section[0]}, {2, tc.mrope_section[1]}};
    layout.interleaved(hw).section(0, tc.mrope_section[2]);
    rope_ = layout.upload(backend_, hd, tc.rope_theta);
    if (!ends) {
        return;
    }
    if (untied_head) {
        lm_head_ = weights.load_linear("lm_head", tc.vocab_size, d, false, Quantization::None);
    } else if (weights.params().bf16_weights) {
        lm_head_.w = backend_.upload(quantize(table, tc.vocab_size, d, Quantization::Bf16, d));
        weights.add_bytes(quantized_bytes(Quantization::Bf16, tc.vocab_size, d, d));
    } else {
        lm_head_.w = dense_weight(embed_tokens_);
    }
}

void Ernie45VlTextModel::check_holds_ends(const char* what) const {
    if (embed_tokens_.empty()) {
        fail("tensor-parallel rank ", split_rank_, " holds no ", what, ": rank 0 runs it for every rank");
    }
}

Tensor Ernie45VlTextModel::embed(std::span<const int32_t> ids) {
    check_holds_ends("embedding table");
    std::vector<int64_t> rows(ids.begin(), ids.end());
    for (const int64_t id : rows) {
        if (id < 0 || id >= config_.vocab_size) {
            fail("token id ", id, " outside the vocabulary of ", config_.vocab_size);
        }
    }
    return backend_.gather_rows(embed_tokens_, rows);  // [n, hidden]
}

Tensor Ernie45VlTextModel::embed(const Tensor& ids, const Tensor& pending) {
    check_holds_ends("embedding table");
    return backend_.gather_token_rows(embed_tokens_, ids, pending);  // [n, hidden]
}

KvCacheParams Ernie45VlTextModel::kv_cache_params(int64_t n_blocks, int64_t block_size) const {
    KvCacheParams params{config_.num_hidden_layers, n_kv_heads_, static_cast<int>(config_.head_dim), n_blocks,
                         block_size};
    params.dtype = backend_.kv_dtype(precision_);
    return params;
}

Tensor Ernie45VlTextModel::forward(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) {
    const Ernie45VlTextConfig& tc = config_;
    // Which tokens the vision experts take: the step's image and video tokens (routing reads them on the
    // host).
    std::vector<uint8_t> vision;  // [n]; empty: all text
    if (!step.modality.empty()) {
        for (const int32_t m : backend_.download_i32(step.modality)) {
            vision.push_back(m != static_cast<int32_t>(TokenModality::Text) ? 1 : 0);
        }
    }
    Tensor x = std::move(embeds);  // [n, d]; the residual stream
    for (size_t l = 0; l < layers_.size(); ++l) {
        const Layer& L = layers_[l];
        const auto layer = static_cast<int>(l);
        rms_norm_paged_attention_add(
            backend_, x,
            {L.input_norm, tc.rms_norm_eps, L.qkv_proj, L.o_proj, n_heads_, tc.head_dim, rope_, precision_},
            step, cache, layer);
        if (L.moe) {
            L.moe->add(x, L.post_norm, tc.rms_norm_eps, vision, step.batch == nullptr);
        } else {
            rms_norm_mlp_add(backend_, x, L.gate_up_proj, L.down_proj, L.post_norm, tc.rms_norm_eps);
        }
    }
    return x;
}

Tensor Ernie45VlTextModel::logits(const Tensor& hidden) {
    check_holds_ends("head");
    return apply(backend_, lm_head_, backend_.rms_norm(hidden, final_norm_, config_.rms_norm_eps));
}

}  // namespace folio
