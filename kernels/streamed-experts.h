// The decode mixture of experts' streamed kernels for WINT4 experts (streamed-experts.cu): each warp holds
// its part of the input in registers and streams several weight rows past it, as the streamed GEMV does.
// Both are chained launches (launch_chained) and take packed WINT4 pools whose n_in is a multiple of 8.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/moe.h"

namespace folio::kernels {

// expert_swiglu_rows_f32's work for inputs of at most 2,560 columns; returns whether it enqueued it (not
// where the input is wider or FOLIO_GEMV_STREAMED=0).
bool launch_expert_swiglu_streamed(const float* x, const ExpertWeights& w, const ExpertWeights& shared,
                                   const int32_t* experts, float* y, int64_t n, int64_t k,
                                   cudaStream_t stream);

// add_expert_down_f32's work for experts of at most 1,536 inputs; returns whether it enqueued it (as above).
bool launch_add_expert_down_streamed(float* x, const float* h, const ExpertWeights& w,
                                     const ExpertWeights& shared, const int32_t* experts,
                                     const float* weights, int64_t n, int64_t k, cudaStream_t stream);

}  // namespace folio::kernels
