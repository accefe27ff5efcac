// Host entry point of 2-D max and average pooling over NCHW float32 tensors in device memory, enqueued on
// stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/vision-types.h"

namespace folio::kernels {

// folio::Pool2dParams: kernel, stride and padding per axis (height, width).
struct PoolWindow {
    int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
    bool max = true;
    bool count_include_pad = true;
};

// y = pool(x) over each window.  x [in.n, in.c, in.h, in.w]  ->  y [in.n, in.c, out.h, out.w]
void pool2d_f32(const float* x, float* y, const Dims4& in, const Dims4& out, const PoolWindow& p,
                cudaStream_t stream);

}  // namespace folio::kernels
