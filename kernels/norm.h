// Host entry points of the row-wise normalizations. Row-major float32 in device memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// y = (x - mean) / sqrt(var + eps) * w + b per row.  x, y [n_rows, d], w, b [d]
void layer_norm_f32(const float* x, const float* w, const float* b, float* y, int64_t n_rows, int64_t d,
                    float eps, cudaStream_t stream);

// The same written as bfloat16 bits, rounded to nearest even.  y [n_rows, d]
void layer_norm_bf16(const float* x, const float* w, const float* b, uint16_t* y, int64_t n_rows, int64_t d,
                     float eps, cudaStream_t stream);

// y = w * x / sqrt(mean(x²) + eps) per row.  x, y [n_rows, d], w [d]
void rms_norm_f32(const float* x, const float* w, float* y, int64_t n_rows, int64_t d, float eps,
                  cudaStream_t stream);

// The same written as bfloat16 bits, rounded to nearest even.  y [n_rows, d]
void rms_norm_bf16(const float* x, const float* w, uint16_t* y, int64_t n_rows, int64_t d, float eps,
                   cudaStream_t stream);

}  // namespace folio::kernels
