// Host entry points of the mixture-of-experts kernels: routing, products with each row's expert, and the
// weighted sum of the experts' outputs. Row-major float32 and int32 in device memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/quantized-linear.h"

namespace folio::kernels {

// The most experts a router may have.
inline constexpr int kMaxExperts = 512;

// For each row of logits, the k experts of the largest softmax(logits) + score_bias (equal scores to the
// lower expert), in that order, and their probabilities over the chosen ones' sum (at least norm_min).
// logits [n, n_experts], score_bias [n_experts]  ->  experts [n, k], weights [n, k]
void route_experts_f32(const float* logits, const float* score_bias, int32_t* experts, float* weights,
                       int64_t n, int n_experts, int k, float norm_min, cudaStream_t stream);

// The most rows the CUDA backend runs add_routed_experts for in the three launches below, which read the
// shared experts' weights once a row (the linear layers read them once for all rows); at 8 rows they were
// the slower (docs/performance.md).
inline constexpr int64_t kRoutedExpertsMaxRows = 4;

// The most rows route_experts_linear_f32 takes: it counts each row's finished blocks in one of this many
// counters.
inline constexpr int64_t kRoutingCounters = 4096;

// The weight of expert_rows_linear: float32 rows (dense) or packed ones (q with scales, as quantize lays
// them out), every expert's n_rows rows one after another.
struct ExpertWeights {
    const float* dense = nullptr;
    QuantizedFormat format = QuantizedFormat::Bf16;  // where dense is null
    const int8_t* q = nullptr;
    const float* scales = nullptr;
    int64_t n_in = 0;
    int64_t group_size = 0;
    int64_t n_rows = 0;  // rows an expert has
    int64_t n_experts = 0;
};

// y[r] = act(w's rows of expert experts[r] · x[r / x_step]) for r < m, act a SwiGLU of each block's halves
// where swiglu is set (y then has n_rows / 2 columns); an expert outside [0, n_experts) gives zeros.
// x [m / x_step, n_in], experts [m]  ->  y [m, n_rows or n_rows / 2]
void expert_rows_linear_f32(const float* x, const ExpertWeights& w, const int32_t* experts, float* y,
                            int64_t m, int64_t x_step, bool swiglu, cudaStream_t stream);

// x[i] += Σ_j weights[i k + j] · src[i k + j], summed over j in order.  x [n, d], src [n k, d], weights [n,
// k]
void add_expert_outputs_f32(float* x, const float* src, const float* weights, int64_t n, int64_t k, int64_t d,
                            cudaStream_t stream);

// An RMSNorm the rows pass before the router (route_experts_linear_f32): none where w is null.
struct RoutingNorm {
    const float* w = nullptr;  // [d]
    float eps = 0.0f;
    float* xn = nullptr;  // [n, d]: receives the normalized rows, which the expert launches then read
};

// A decode step's routing in one launch: each row's logits x · routerᵀ in float32 (a warp an expert, its
// sum in a fixed order) into logits, then, in the block that finishes the row last, route_experts_f32's
// choice from them. counters are zero on entry and left zero. n is at most kRoutingCounters. With a norm
// the rows are normalized first (x · rsqrt(mean(x²) + eps) · w), in the same launch where a lane can hold
// its share of a row (d a multiple of 4 up to 4,096, 16-byte aligned), else in a pass of its own.
// x [n, d], router [n_experts, d], score_bias [n_experts]  ->  experts [n, k], weights [n, k]; logits
// [n, n_experts] and counters [n] are scratch
void route_experts_linear_f32(const float* x, const float* router, const float* score_bias, float* logits,
                              int32_t* counters, int32_t* experts, float* weights, int64_t n, int64_t d,
                              int n_experts, int k, float norm_min, const RoutingNorm& norm,
                              cudaStream_t stream);

// A decode step's expert products before the down projection, in one launch: row i of y is, for j < k in
// order, the SwiGLU of expert experts[i k + j]'s rows of w times x[i] (w.n_rows / 2 columns each), then the
// SwiGLU of shared's rows times x[i] (shared.n_rows / 2 columns; none where shared.n_rows is 0). shared is
// one expert in w's format over w's inputs. The shared columns need no routing: their blocks start before
// the kernel ahead (the routing) ends and, unless x_from_kernel_ahead (the routing wrote x), read x before
// it ends too. An expert outside [0, w.n_experts) gives zeros.
// x [n, w.n_in], experts [n, k]  ->  y [n, k w.n_rows / 2 + shared.n_rows / 2]
void expert_swiglu_rows_f32(const float* x, const ExpertWeights& w, const ExpertWeights& shared,
                            const int32_t* experts, float* y, int64_t n, int64_t k, bool x_from_kernel_ahead,
                            cudaStream_t stream);

// A decode step's down projection, weighted sum and residual in one launch: x[i] += Σ_j weights[i k + j] ·
// (expert experts[i k + j]'s rows of w · h[i, j w.n_in : (j + 1) w.n_in]) + shared's rows · h[i, k w.n_in :].
// A block an output: its warps take the experts and the shared rows' parts of w.n_in columns in turn, and
// their sums are added in a fixed order. An expert outside [0, w.n_experts) adds nothing. shared has
// w.n_rows rows (or none) and its own inputs, in w's format.
// x [n, w.n_rows], h [n, k w.n_in + shared.n_in], experts, weights [n, k]
void add_expert_down_f32(float* x, const float* h, const ExpertWeights& w, const ExpertWeights& shared,
                         const int32_t* experts, const float* weights, int64_t n, int64_t k,
                         cudaStream_t stream);

// Two pools' routings as one: row i takes b's experts, numbered from b_first, and weights where use_b[i] is
// non-zero, a's otherwise.  a_*, b_* [n, k], use_b [n]  ->  experts, weights [n, k]
void merge_expert_routings_f32(const int32_t* a_experts, const float* a_weights, const int32_t* b_experts,
                               const float* b_weights, const int32_t* use_b, int32_t b_first,
                               int32_t* experts, float* weights, int64_t n, int64_t k, cudaStream_t stream);

// The (token, choice) pairs of a routing grouped by expert: slots [offsets[e], offsets[e + 1]) hold expert
// e's pairs, rows[s] is the token of slot s and slots[p] the slot of pair p. Within an expert the pairs come
// in no set order. Every expert is in [0, n_experts); cursor is scratch.
// experts [n_pairs], k choices a token  ->  offsets [n_experts + 1], rows [n_pairs], slots [n_pairs]; cursor
// [n_experts]
void order_by_expert_i32(const int32_t* experts, int64_t n_pairs, int64_t k, int n_experts, int32_t* offsets,
                         int32_t* rows, int32_t* slots, int32_t* cursor, cudaStream_t stream);

// Products of rows grouped by expert on the tensor cores: for each expert j of w (global number first + j),
// rows [offsets[first + j], offsets[first + j + 1]) of y are those rows of x times expert j's rows of w,
// then a SwiGLU of each block's halves where swiglu is set (y then has n_rows / 2 columns). Packed weights
// only (bfloat16, WINT8, WINT4; float32 ones throw): inputs and weights are rounded to bfloat16 (WINT8/WINT4
// dequantized first), the sums kept in float32. Other rows of y are not written.
// x [m, n_in], offsets [first + w.n_experts + 1]  ->  y [m, n_rows or n_rows / 2]
void grouped_expert_linear_f32(const float* x, const ExpertWeights& w, const int32_t* offsets, int first,
                               float* y, int64_t m, bool swiglu, cudaStream_t stream);

}  // namespace folio::kernels
