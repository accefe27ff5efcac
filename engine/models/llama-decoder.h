// The Llama-style decoder that Llama and ERNIE-4.5 share: token embeddings, layers of grouped-query attention
// with rotary positions over the paged KV cache and a SwiGLU MLP, each after an RMSNorm, the final RMSNorm
// and the head. The rotary frequencies and the position axes they turn with are the model's (llama3 scaling,
// a 3D multimodal layout), given whole.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/models/linear.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/model.h"

namespace folio {

struct LlamaDecoderShape {
    std::string prefix = "model.";  // of the embeddings, layers and final norm ("model.language_model.")
    int64_t vocab_size = 0;
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;
    int n_layers = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    float rms_norm_eps = 1e-5f;
    // A tied head reads the embedding table; an untied one is lm_head.weight (a checkpoint that lacks it is
    // read as tied).
    bool tie_word_embeddings = false;
    bool attention_bias = false;  // q, k, v and o projections
    bool mlp_bias = false;        // gate, up and down projections
};

// The q, k and v projections are one layer, their rows one after another, and so are gate and up.
struct DecoderLayer {
    Tensor input_norm;    // [d]
    Linear qkv_proj;      // [(n_head + 2 n_kv_head) * hd, d]
    Linear o_proj;        // [d, n_head * hd]
    Tensor post_norm;     // [d]
    Linear gate_up_proj;  // [2 d_ff, d]
    Linear down_proj;     // [d, d_ff]
};

class LlamaDecoder {
public:
    // Loads the weights under shape.prefix (and lm_head where it is not tied). A tensor-parallel rank other
    // than 0 loads its part of the layers and no embedding table or head: embed() and logits() throw there.
    LlamaDecoder(WeightLoader& weights, const LlamaDecoderShape& shape, RopeParams rope);

    // Token embeddings.  ids [n]  ->  [n, hidden]
    Tensor embed(std::span<const int32_t> ids);
    // The same with the ids on the backend, -p - 1 standing for pending[p] (not checked there: an id outside
    // the vocabulary gives zeros on the GPU).  ids [n], pending [n_pending] int32  ->  [n, hidden]
    Tensor embed(const Tensor& ids, const Tensor& pending);
    // The decoder layers over the step's new tokens; embeds is the residual stream, returned before the final
    // norm.  embeds [n, hidden]  ->  [n, hidden]
    Tensor forward(Tensor embeds, const DecoderStep& step, PagedKvCache& cache);
    // The final norm and the head.  hidden [n, hidden]  ->  logits [n, vocab]
    Tensor logits(const Tensor& hidden);
    KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const;
    // The shape this decoder works with: a tensor-parallel rank's heads, K/V heads and MLP columns.
    const LlamaDecoderShape& shape() const { return shape_; }

private:
    Backend& backend_;
    LlamaDecoderShape shape_;
    AttentionPrecision precision_;
    Tensor embed_tokens_;  // [vocab, hidden]
    Linear lm_head_;       // [vocab, hidden]; the embedding table when tied and kept in float32
    std::vector<DecoderLayer> layers_;
    Tensor final_norm_;  // [hidden]
    RopeParams rope_;    // inverse frequencies and their axes [head_dim / 2]
    int split_rank_ = 0;

    // Throws folio::Error on a rank that holds no embedding table or head.
    void check_holds_ends(const char* what) const;
};

}  // namespace folio
