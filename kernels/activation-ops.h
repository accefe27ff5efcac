// Host entry points of the element-wise activations and the row softmax over float32 tensors in device
// memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/vision-types.h"

namespace folio::kernels {

// In place: x = act(x).  x [n]
void apply_activation_f32(float* x, int64_t n, KernelActivation act, cudaStream_t stream);

// out = x * act(y).  x, y, out [n]
void multiply_f32(const float* x, const float* y, float* out, int64_t n, KernelActivation y_act,
                  cudaStream_t stream);

// In place: softmax of each row, a warp a row.  x [n_rows, d]
void softmax_rows_f32(float* x, int64_t n_rows, int64_t d, cudaStream_t stream);

}  // namespace folio::kernels
