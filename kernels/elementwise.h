// Host entry points of the element-wise kernels and the cuBLAS linear layer.
#pragma once

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace folio::kernels {

// x[i] += y[i] for i < n, on stream.
void add_f32(float* x, const float* y, int64_t n, cudaStream_t stream);

// y = x · wᵀ (+ b).  x [n, in], w [out, in], b [out] or null  ->  y [n, out], all row-major float32.
void linear_f32(cublasHandle_t handle, const float* x, const float* w, const float* b, float* y, int64_t n,
                int64_t in, int64_t out, cudaStream_t stream);

// Number of CUDA devices; 0 where there is no driver or no device.
int device_count();

}  // namespace folio::kernels
