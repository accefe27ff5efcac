// The ERNIE-4.5 language model of PaddleOCR-VL: token embeddings, decoder layers of grouped-query attention
// with 3D multimodal RoPE over the paged KV cache and a SwiGLU MLP, the final RMSNorm and the LM head.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/models/linear.h"
#include "engine/models/paddleocr-vl/config.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/model.h"

namespace folio {

// The q, k and v projections are one layer, their rows one after another, and so are gate and up.
struct TextLayer {
    Tensor input_norm;    // [d]
    Linear qkv_proj;      // [(n_head + 2 n_kv_head) * hd, d]
    Linear o_proj;        // [d, n_head * hd]
    Tensor post_norm;     // [d]
    Linear gate_up_proj;  // [2 d_ff, d]
    Linear down_proj;     // [d, d_ff]
};

class ErnieDecoder {
public:
    // Loads the weights under model.language_model (and lm_head where it is not tied).
    ErnieDecoder(WeightLoader& weights, const TextConfig& config);

    // Token embeddings.  ids [n]  ->  [n, hidden]
    Tensor embed(std::span<const int32_t> ids);
    // The same with the ids on the backend, -p - 1 standing for pending[p] (not checked there: an id outside
    // the vocabulary gives zeros on the GPU).  ids [n], pending [n_pending] int32  ->  [n, hidden]
    Tensor embed(const Tensor& ids, const Tensor& pending);
    // The decoder layers over the step's new tokens; embeds is the residual stream, returned before the final
    // norm.  embeds [n, hidden]  ->  [n, hidden]
    Tensor forward(Tensor embeds, const DecoderStep& step, PagedKvCache& cache);
    // The final norm and the LM head.  hidden [n, hidden]  ->  logits [n, vocab]
    Tensor logits(const Tensor& hidden);
    KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const;

private:
    Backend& backend_;
    TextConfig config_;
    AttentionPrecision precision_;
    Tensor embed_tokens_;  // [vocab, hidden]
    Linear lm_head_;       // [vocab, hidden]; the embedding table when tied and kept in float32
    std::vector<TextLayer> layers_;
    Tensor final_norm_;  // [hidden]
    RopeParams rope_;    // 3D mRoPE: inverse frequencies and their axes [head_dim / 2], t, h and w sections
};

}  // namespace folio
