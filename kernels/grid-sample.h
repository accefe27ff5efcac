// Host entry points of bilinear resampling over float32 tensors in device memory: interpolation of NCHW
// maps, grid sampling, and multi-scale deformable attention's sampling and weighting. Enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/vision-types.h"

namespace folio::kernels {

// The most levels multi_scale_deformable_attention_f32 takes (the layout models have 3 or 4).
constexpr int kMaxFeatureLevels = 8;

// The levels of a multi-scale value tensor: level l is height[l] x width[l] rows from row start[l].
struct FeatureLevels {
    int64_t height[kMaxFeatureLevels] = {};
    int64_t width[kMaxFeatureLevels] = {};
    int64_t start[kMaxFeatureLevels] = {};
    int64_t n = 0;
};

// Backend::interpolate2d: nearest or bilinear (align_corners=False) with scale in / out per axis.
// x [in.n, in.c, in.h, in.w]  ->  y [in.n, in.c, out.h, out.w]
void interpolate2d_f32(const float* x, float* y, const Dims4& in, const Dims4& out, bool nearest,
                       cudaStream_t stream);

// Backend::grid_sample (align_corners=False, zero padding).  x [in.n, in.c, in.h, in.w], grid [in.n, h_out,
// w_out, 2]  ->  y [in.n, in.c, h_out, w_out]
void grid_sample_f32(const float* x, const float* grid, float* y, const Dims4& in, int64_t h_out,
                     int64_t w_out, cudaStream_t stream);

// Backend::multi_scale_deformable_attention, a thread an output element.  value [n, s, n_head, d_head],
// locations [n, n_q, n_head, levels.n, n_points, 2], weights [n, n_q, n_head, levels.n, n_points]  ->
// out [n, n_q, n_head * d_head]
void multi_scale_deformable_attention_f32(const float* value, const FeatureLevels& levels,
                                          const float* locations, const float* weights, float* out, int64_t n,
                                          int64_t s, int64_t n_head, int64_t d_head, int64_t n_q,
                                          int64_t n_points, cudaStream_t stream);

}  // namespace folio::kernels
