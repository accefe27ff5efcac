// Host entry point of the rotary position embedding. Row-major float32 in device memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// Rotate-half RoPE in place: for i < head_dim / 2, with a = x[i] and b = x[i + head_dim / 2],
// x[i] = a cos[i] - b sin[i] and x[i + head_dim / 2] = b cos[i + head_dim / 2] + a sin[i + head_dim / 2].
// x [n, n_head, head_dim], cos, sin [n, head_dim]; head_dim is even.
void rope_f32(float* x, const float* cos, const float* sin, int64_t n, int64_t n_head, int64_t head_dim,
              cudaStream_t stream);

}  // namespace folio::kernels
