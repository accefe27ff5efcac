// Transformer layer halves the models share, each a few backend operations: a vision encoder's attention and
// MLP, and a language model's gated MLP, with their residual adds.
#pragma once

#include <cstdint>
#include <span>

#include "engine/backend/backend.h"
#include "engine/models/linear.h"

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

// x += act(layer_norm(x) · fc1ᵀ + b1) · fc2ᵀ + b2: a vision MLP (act GELU-tanh by default), its hidden
// values in bfloat16 where the backend keeps them so.  x [n, d], fc1 [d_ff, d], fc2 [d, d_ff], norm_w/norm_b
// [d]
void layer_norm_mlp_add(Backend& backend, Tensor& x, const Linear& fc1, const Linear& fc2,
                        const Tensor& norm_w, const Tensor& norm_b, float eps,
                        Activation act = Activation::GeluTanh);

// x += swiglu(rms_norm(x) · gate_upᵀ + b1) · downᵀ + b2: the language model's gated MLP, the gated values in
// bfloat16 where the backend keeps them so.  x [n, d], gate_up [2 d_ff, d] (the gate's rows first), down
// [d, d_ff], norm_w [d]
void rms_norm_mlp_add(Backend& backend, Tensor& x, const Linear& gate_up, const Linear& down,
                      const Tensor& norm_w, float eps);

}  // namespace folio
