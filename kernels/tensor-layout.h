// Host entry points of the layout operations on 4-byte elements (float32 or int32 bits) in device memory:
// axis permutation, joining along an axis and spatial zero padding. Enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/permute-plan.h"
#include "kernels/vision-types.h"

namespace folio::kernels {

// y's dimension i is x's dimension axes[i].  x [x_shape]  ->  y [x_shape[axes[0]], ...]; up to
// kMaxLayoutDims dimensions.
void permute_u32(const uint32_t* x, uint32_t* y, const int64_t* x_shape, const int* axes, int rank,
                 cudaStream_t stream);

// Copies a part into its place in a joined tensor: n_outer blocks of part_inner elements, block o going to
// y + o * out_inner + column.  part [n_outer, part_inner], y [n_outer, out_inner]
void copy_blocks_u32(const uint32_t* part, uint32_t* y, int64_t n_outer, int64_t part_inner,
                     int64_t out_inner, int64_t column, cudaStream_t stream);

// Zero padding of the spatial axes: top rows above and left columns before the input, zeros after it.
// x [in.n, in.c, in.h, in.w]  ->  y [in.n, in.c, out.h, out.w]
void pad2d_f32(const float* x, float* y, const Dims4& in, const Dims4& out, int64_t top, int64_t left,
               cudaStream_t stream);

}  // namespace folio::kernels
