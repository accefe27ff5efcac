// The 3x3 convolution of stride 1 and padding 1 with bfloat16 inputs, read a tile of pixels at a time: a
// block holds the input rows its output tile needs (its halo included) in shared memory, channels innermost,
// and takes every tap's columns from them, so that each pixel is read once a step instead of once a tap. Used
// by conv2d_f32 where it applies (conv2d_halo_takes); its scratch is the weights rounded to bfloat16, tap
// first.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/conv2d.h"

namespace folio::kernels {

// Whether the halo kernel takes s: bfloat16 inputs, 3x3, stride, dilation and padding 1, no groups, input
// channels a multiple of 16, 32-bit indices, and output tiles enough to fill every multiprocessor's blocks.
bool conv2d_halo_takes(const Conv2dShape& s);

// Floats of scratch it takes: the weights as bfloat16 [9, c_out, c_in].
int64_t conv2d_halo_scratch_floats(const Conv2dShape& s);

// y = act(conv(x, w) + b) for a shape conv2d_halo_takes.  x [n, c_in, h, w], w [c_out, c_in, 3, 3],
// b [c_out] or null, scratch [conv2d_halo_scratch_floats(s)]  ->  y [n, c_out, h, w]
void conv2d_halo_bf16(const float* x, const float* w, const float* b, float* y, float* scratch,
                      const Conv2dShape& s, KernelActivation act, cudaStream_t stream);

}  // namespace folio::kernels
