// Host entry points of token selection on the device (engine/sampling.h is the host side). Row-major float32
// in device memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// out[r] = the column of the largest value of row r, the first of equal ones, as std::max_element chooses.
// x [n_rows, d] (d >= 1)  ->  out [n_rows] (device)
void argmax_rows_f32(const float* x, int32_t* out, int64_t n_rows, int64_t d, cudaStream_t stream);

}  // namespace folio::kernels
