// Kernels that compute in float32 and write float32 or bfloat16 (rounded to nearest even), by output type.
#pragma once

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

}  // namespace folio::kernels
