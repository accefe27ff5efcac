#pragma once

// Device helpers the GEMV kernels share (quantized-gemv.cu, streamed-gemv.cu): eight inputs at a time, the
// RMSNorm input's scale, and which weight row each output slot of a paired output works on.

#include <cstdint>

#include "kernels/quantized-gemv.h"
#include "kernels/quantized-linear.h"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

// Eight consecutive floats from p, 16-byte aligned.
__device__ inline void load8(const float* p, float v[8]) {
    const float4 lo = *reinterpret_cast<const float4*>(p);
    const float4 hi = *reinterpret_cast<const float4*>(p + 4);
    v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
    v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}

// The dot product of eight inputs with eight weights.
__device__ inline float dot8(const float x[8], const float w[8]) {
    return x[0] * w[0] + x[1] * w[1] + x[2] * w[2] + x[3] * w[3] + x[4] * w[4] + x[5] * w[5] + x[6] * w[6] +
           x[7] * w[7];
}

// acc plus the dot product of eight inputs with a Packed8's weights, from its levels (unpack8_levels): the
// levels' dot product times the scale, one multiply where scaling each weight takes eight.
template <QuantizedFormat kType>
__device__ inline float add_dot8(float acc, const float x[8], const float levels[8], const Packed8& p) {
    if constexpr (kType == QuantizedFormat::Bf16) {
        return acc + dot8(x, levels);
    } else {
        return fmaf(p.scale, dot8(x, levels), acc);
    }
}

// 1 / rms of a row of x whose squares add up to square_sum, as rms_norm_f32 computes it.
__device__ inline float inverse_rms(float square_sum, const QuantizedLinearArgs& a) {
    return rsqrtf(square_sum / static_cast<float>(a.n_in) + a.eps);
}

// Whether a GEMV's output slots come in pairs (SwiGLU's gate and up, RoPE's rotate-half partners).
__host__ __device__ constexpr bool paired_finish(GemvFinish f) {
    return f != GemvFinish::Store;
}

// The weight row that output slot s of a GEMV works on: s itself; for a SwiGLU output gate row s / 2 in even
// slots and the matching up row in odd ones; for a RopeToCache output, within each head, row i in slot 2i
// and its rotate-half partner i + head_dim / 2 in slot 2i + 1. A block holds both slots of each pair. Slots
// and rows fit an int (n_out does).
template <GemvFinish kFinish>
__device__ inline int gemv_weight_row(const QuantizedLinearArgs& a, int s) {
    if constexpr (kFinish == GemvFinish::Swiglu) {
        return s / 2 + (s % 2) * static_cast<int>(a.n_out / 2);
    } else if constexpr (kFinish == GemvFinish::Rope) {
        const int d = static_cast<int>(a.rope.head_dim), in_head = s % d;
        return s - in_head + in_head / 2 + (in_head % 2) * (d / 2);
    } else {
        return s;
    }
}

}  // namespace folio::kernels
