// Kernels that compute in float32 and write float32 or bfloat16 (rounded to nearest even), by output type.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

namespace folio::kernels {

__device__ inline float output_value(float v, const float*) {
    return v;
}

__device__ inline __nv_bfloat16 output_value(float v, const __nv_bfloat16*) {
    return __float2bfloat16_rn(v);
}

// *p = v in p's type.
template <typename T>
__device__ inline void store_output(T* p, float v) {
    *p = output_value(v, p);
}

// p[0..3] = v in p's type, in one store: p 16-byte (float) or 8-byte (bfloat16) aligned.
__device__ inline void store_four(float* p, float4 v) {
    *reinterpret_cast<float4*>(p) = v;
}

__device__ inline void store_four(__nv_bfloat16* p, float4 v) {
    const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
    uint2 bits;
    bits.x = *reinterpret_cast<const uint32_t*>(&lo);
    bits.y = *reinterpret_cast<const uint32_t*>(&hi);
    *reinterpret_cast<uint2*>(p) = bits;
}

}  // namespace folio::kernels
