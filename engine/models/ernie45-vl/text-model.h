// ERNIE-4.5-VL's language model: token embeddings, decoder layers of grouped-query attention with the 3D
// multimodal RoPE (height and width interleaved, time after them) over the paged KV cache, a dense SwiGLU MLP
// or the mixture of experts, the final RMSNorm and the LM head.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/ernie45-vl/moe.h"
#include "engine/models/linear.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/model.h"

namespace folio {

class Ernie45VlTextModel {
public:
    // Loads the weights under model. (and lm_head where it is not tied). A tensor-parallel rank other than 0
    // loads its part of the layers and no embedding table or head: embed() and logits() throw there.
    Ernie45VlTextModel(WeightLoader& weights, const Ernie45VlTextConfig& config);

    // Token embeddings.  ids [n]  ->  [n, hidden]
    Tensor embed(std::span<const int32_t> ids);
    // The same with the ids on the backend, -p - 1 standing for pending[p].  ids [n], pending [n_pending]
    Tensor embed(const Tensor& ids, const Tensor& pending);
    // The decoder layers over the step's new tokens; returned before the final norm.  embeds [n, hidden]
    Tensor forward(Tensor embeds, const DecoderStep& step, PagedKvCache& cache);
    // The final norm and the LM head.  hidden [n, hidden]  ->  logits [n, vocab]
    Tensor logits(const Tensor& hidden);
    KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const;

private:
    struct Layer {
        Tensor input_norm;              // [d]
        Linear qkv_proj;                // [(n_head + 2 n_kv_head) hd, d], q and k rows in rotate-half order
        Linear o_proj;                  // [d, n_head hd]
        Tensor post_norm;               // [d]
        Linear gate_up_proj;            // dense layers: [2 d_ff, d]
        Linear down_proj;               // dense layers: [d, d_ff]
        std::unique_ptr<MoeBlock> moe;  // sparse layers
    };

    Backend& backend_;
    Ernie45VlTextConfig config_;
    AttentionPrecision precision_;
    int n_heads_ = 0;      // the attention heads this model holds: a tensor-parallel rank's part
    int n_kv_heads_ = 0;   // and its key/value heads
    Tensor embed_tokens_;  // [vocab, hidden]
    Linear lm_head_;       // [vocab, hidden]
    std::vector<Layer> layers_;
    Tensor final_norm_;  // [hidden]
    RopeParams rope_;    // 3D mRoPE: h and w interleaved, then t
    int split_rank_ = 0;

    // Throws folio::Error on a rank that holds no embedding table or head.
    void check_holds_ends(const char* what) const;
};

}  // namespace folio
