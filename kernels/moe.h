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

}  // namespace folio::kernels
