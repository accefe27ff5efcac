// Host entry points of the element-wise kernels and the cuBLAS linear layer. All tensors are row-major
// float32 in device memory unless named otherwise; every launcher enqueues on `stream` and returns without
// waiting.
#pragma once

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace folio::kernels {

// x[i] += y[i] for i < n.  x, y [n]
void add_f32(float* x, const float* y, int64_t n, cudaStream_t stream);

// y = x · wᵀ (+ b).  x [n, in], w [out, in], b [out] or null  ->  y [n, out]
// Per group g, c_g [m, n] = a_g [m, k] · b_g [n, k]ᵀ as one strided batch.  a [g, m, k], b [g, n, k]  ->
// c [g, m, n]
void batched_products_f32(cublasHandle_t handle, const float* a, const float* b, float* c, int64_t g,
                          int64_t m, int64_t n, int64_t k, cudaStream_t stream);

void linear_f32(cublasHandle_t handle, const float* x, const float* w, const float* b, float* y, int64_t n,
                int64_t in, int64_t out, cudaStream_t stream);

// y[row, col] += b[col].  y [n_rows, n_cols], b [n_cols]
void add_bias_f32(float* y, const float* b, int64_t n_rows, int64_t n_cols, cudaStream_t stream);

// In place: x = gelu(x), tanh approximation.  x [n]
void gelu_tanh_f32(float* x, int64_t n, cudaStream_t stream);

// In place: x = gelu(x), exact erf form.  x [n]
void gelu_erf_f32(float* x, int64_t n, cudaStream_t stream);

// y = x widened to float32 (exactly).  x [n] bfloat16 bits  ->  y [n]
void widen_bf16(const uint16_t* x, float* y, int64_t n, cudaStream_t stream);

// y = silu(gate) * up where gate_up = [gate | up].  gate_up [n, 2 d], y [n, d]
void swiglu_f32(const float* gate_up, float* y, int64_t n, int64_t d, cudaStream_t stream);
// The same in bfloat16 bits, computed in float32 and rounded to nearest even.  gate_up [n, 2 d], y [n, d]
void swiglu_bf16(const uint16_t* gate_up, uint16_t* y, int64_t n, int64_t d, cudaStream_t stream);
// y = the float each 8-bit level stands for: element e of a row is level v of channel e / channel_size and
// becomes table[channel * 256 + v].  levels [n / row_size, row_size] bytes, table [row_size / channel_size,
// 256]  ->  y [n / row_size, row_size]
void expand_levels(const uint8_t* levels, const float* table, float* y, int64_t n, int row_size,
                   int channel_size, cudaStream_t stream);

// Number of CUDA devices; 0 where there is no driver or no device.
int device_count();

}  // namespace folio::kernels
