// Transformer layer halves the models share, each a few backend operations: a vision encoder's attention and
// MLP, and a language model's gated MLP, with their residual adds.
#pragma once

#include <cstdint>
#include <span>

#include "engine/backend/backend.h"
#include "engine/models/linear.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/model.h"

namespace folio {

// The attention half of a vision layer: its LayerNorm, the stacked q, k and v projection (rows q, then k,
// then v, each n_head heads) and the output projection.
struct NormAttentionLayer {
    const Tensor& norm_w;  // [d]
    const Tensor& norm_b;  // [d]
    float eps = 0.0f;
    const Linear& qkv;  // [3 d, d]
    const Linear& out;  // [d, d]
    int64_t n_head = 0;
};

// x += rope_attention(layer_norm(x) · qkvᵀ + qkv_b, cos, sin, ...) · outᵀ + out_b: q, k, v and the attention
// output in bfloat16 between the products where the backend keeps them so and precision allows it.
// x [n, d], cos/sin [n, d / n_head]
void layer_norm_attention_add(Backend& backend, Tensor& x, const NormAttentionLayer& layer, const Tensor& cos,
                              const Tensor& sin, std::span<const AttentionSegment> segments, float scale,
                              AttentionPrecision precision);

// Rows a vision MLP takes at a time: its hidden values, d_ff wide, are the largest activations of a large
// image's encoder, so they are held for this many rows, not for all of them.
constexpr int64_t kMlpChunkRows = 8192;

// x += act(layer_norm(x) · fc1ᵀ + b1) · fc2ᵀ + b2: a vision MLP (act GELU-tanh by default), its hidden
// values in bfloat16 where the backend keeps them so, chunk_rows rows at a time.  x [n, d], fc1 [d_ff, d],
// fc2 [d, d_ff], norm_w/norm_b [d]
void layer_norm_mlp_add(Backend& backend, Tensor& x, const Linear& fc1, const Linear& fc2,
                        const Tensor& norm_w, const Tensor& norm_b, float eps,
                        Activation act = Activation::GeluTanh, int64_t chunk_rows = kMlpChunkRows);

// The attention half of a decoder layer over the paged KV cache: its RMSNorm, the stacked q, k and v
// projection (q, k and v rows, n_head, n_kv_head and n_kv_head heads of head_dim), RoPE and the output
// projection.
struct PagedAttentionLayer {
    const Tensor& norm_w;  // [d]
    float eps = 0.0f;
    const Linear& qkv;  // [(n_head + 2 n_kv_head) head_dim, d]
    const Linear& out;  // [d, n_head head_dim]
    int64_t n_head = 0;
    int64_t head_dim = 0;
    const RopeParams& rope;
    AttentionPrecision precision = AttentionPrecision::F32;
};

// x += attention(rms_norm(x) · qkvᵀ) · outᵀ for layer `layer` of the cache: k and v turned and stored at the
// step's cache rows, q attending through the step's batch (a prompt step) or its device-side lengths and
// block tables (a decode step).  x [n, d]
void rms_norm_paged_attention_add(Backend& backend, Tensor& x, const PagedAttentionLayer& attention,
                                  const DecoderStep& step, PagedKvCache& cache, int layer);

// x += swiglu(rms_norm(x) · gate_upᵀ + b1) · downᵀ + b2: the language model's gated MLP, the gated values in
// bfloat16 where the backend keeps them so.  x [n, d], gate_up [2 d_ff, d] (the gate's rows first), down
// [d, d_ff], norm_w [d]
void rms_norm_mlp_add(Backend& backend, Tensor& x, const Linear& gate_up, const Linear& down,
                      const Tensor& norm_w, float eps);

}  // namespace folio
