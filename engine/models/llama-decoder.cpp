#include "engine/models/llama-decoder.h"

#include <cmath>
#include <string>
#include <utility>

#include "engine/common/error.h"
#include "engine/models/layers.h"

namespace folio {

LlamaDecoder::LlamaDecoder(WeightLoader& weights, const LlamaDecoderShape& shape, RopeParams rope)
    : backend_(weights.backend()),
      shape_(shape),
      precision_(attention_precision(weights.params())),
      rope_(std::move(rope)),
      split_rank_(weights.params().split.rank) {
    const LlamaDecoderShape& tc = shape;
    if (tc.vocab_size < 1 || tc.hidden_size < 1 || tc.intermediate_size < 1 || tc.n_layers < 1 ||
        tc.n_heads < 1 || tc.n_kv_heads < 1 || tc.n_heads % tc.n_kv_heads != 0 || tc.head_dim < 2 ||
        tc.head_dim % 2 != 0 || rope_.inv_freq.n_elements() != tc.head_dim / 2) {
        fail("decoder: ", tc.n_heads, " heads over ", tc.n_kv_heads, " KV heads of ", tc.head_dim,
             " values, ", rope_.inv_freq.n_elements(), " rotary frequencies, ", tc.n_layers,
             " layers, vocabulary ", tc.vocab_size);
    }
    const Quantization q = weights.params().quantization;
    const int64_t d = tc.hidden_size, ff = tc.intermediate_size, hd = tc.head_dim;
    const int64_t q_dim = tc.n_heads * hd, kv_dim = tc.n_kv_heads * hd;
    // A tensor-parallel rank holds some of the heads and MLP columns (TensorSplit); from here on the decoder
    // works with its own part.
    const TensorSplit& split = weights.params().split;
    shape_.n_heads = static_cast<int>(split.part(tc.n_heads, "attention heads").count);
    shape_.n_kv_heads = static_cast<int>(split.part(tc.n_kv_heads, "key/value heads").count);
    shape_.intermediate_size = split.part(ff, "MLP columns").count;
    const std::string& tp = tc.prefix;
    const bool untied_head = !tc.tie_word_embeddings && weights.has("lm_head.weight");
    // The embedding table and the head run on rank 0 alone (TensorParallelModel), so only rank 0 holds them.
    const bool ends = split.rank == 0;
    // The table's values stay on the host where the head is a bfloat16 copy of it.
    std::vector<float> table;
    if (ends) {
        embed_tokens_ = weights.load_embedding(tp + "embed_tokens.weight", tc.vocab_size, d,
                                               !untied_head && weights.params().bf16_weights, table,
                                               !untied_head && !weights.params().bf16_weights);
    }
    for (int l = 0; l < tc.n_layers; ++l) {
        const std::string p = tp + "layers." + std::to_string(l) + ".";
        DecoderLayer& L = layers_.emplace_back();
        L.input_norm = weights.load(p + "input_layernorm.weight", {d});
        L.qkv_proj = weights.load_column_parallel(
            {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"}, {q_dim, kv_dim, kv_dim},
            {tc.n_heads, tc.n_kv_heads, tc.n_kv_heads}, d, tc.attention_bias, q);
        L.o_proj =
            weights.load_row_parallel(p + "self_attn.o_proj", d, q_dim, tc.n_heads, tc.attention_bias, q);
        L.post_norm = weights.load(p + "post_attention_layernorm.weight", {d});
        L.gate_up_proj = weights.load_column_parallel({p + "mlp.gate_proj", p + "mlp.up_proj"}, {ff, ff},
                                                      {ff, ff}, d, tc.mlp_bias, q);
        L.down_proj = weights.load_row_parallel(p + "mlp.down_proj", d, ff, ff, tc.mlp_bias, q);
    }
    final_norm_ = weights.load(tp + "norm.weight", {d});
    if (!ends) {
        return;
    }
    if (untied_head) {
        lm_head_ = weights.load_linear("lm_head", tc.vocab_size, d, false, Quantization::None);
    } else if (weights.params().bf16_weights) {
        // A bfloat16 copy of the tied table: decoding reads the head every step, the embedding only by row.
        lm_head_.w = backend_.upload(quantize(table, tc.vocab_size, d, Quantization::Bf16, d));
        weights.add_bytes(quantized_bytes(Quantization::Bf16, tc.vocab_size, d, d));
    } else {
        lm_head_.w = dense_weight(embed_tokens_);
    }
}

void LlamaDecoder::check_holds_ends(const char* what) const {
    if (embed_tokens_.empty()) {
        fail("tensor-parallel rank ", split_rank_, " holds no ", what, ": rank 0 runs it for every rank");
    }
}

Tensor LlamaDecoder::embed(std::span<const int32_t> ids) {
    check_holds_ends("embedding table");
    std::vector<int64_t> rows(ids.begin(), ids.end());
    for (const int64_t id : rows) {
        if (id < 0 || id >= shape_.vocab_size) {
            fail("token id ", id, " outside the vocabulary of ", shape_.vocab_size);
        }
    }
    return backend_.gather_rows(embed_tokens_, rows);  // [n, hidden]
}

Tensor LlamaDecoder::embed(const Tensor& ids, const Tensor& pending) {
    check_holds_ends("embedding table");
    return backend_.gather_token_rows(embed_tokens_, ids, pending);  // [n, hidden]
}

KvCacheParams LlamaDecoder::kv_cache_params(int64_t n_blocks, int64_t block_size) const {
    const LlamaDecoderShape& tc = shape_;
    KvCacheParams params{tc.n_layers, tc.n_kv_heads, tc.head_dim, n_blocks, block_size};
    params.dtype = backend_.kv_dtype(precision_);
    return params;
}

Tensor LlamaDecoder::forward(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) {
    const LlamaDecoderShape& tc = shape_;
    Tensor x = std::move(embeds);  // [n, d]; the residual stream
    for (size_t l = 0; l < layers_.size(); ++l) {
        const DecoderLayer& L = layers_[l];
        const auto layer = static_cast<int>(l);
        rms_norm_paged_attention_add(
            backend_, x,
            {L.input_norm, tc.rms_norm_eps, L.qkv_proj, L.o_proj, tc.n_heads, tc.head_dim, rope_, precision_},
            step, cache, layer);
        rms_norm_mlp_add(backend_, x, L.gate_up_proj, L.down_proj, L.post_norm, tc.rms_norm_eps);
    }
    return x;
}

Tensor LlamaDecoder::logits(const Tensor& hidden) {
    check_holds_ends("head");
    // The norm as a pass of its own: inside the head's GEMV, each of its many blocks would scale its input by
    // the norm's weights again, which costs more than the pass.
    return apply(backend_, lm_head_, backend_.rms_norm(hidden, final_norm_, shape_.rms_norm_eps));
}

}  // namespace folio
