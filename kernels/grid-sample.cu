#include "kernels/grid-sample.h"

#include "kernels/cuda-check.h"
#include "kernels/flat-launch.cuh"

namespace folio::kernels {

namespace {

// The bilinear sample of plane [h, w] (element (y, x) at plane[(y * w + x) * stride]) at pixel coordinates
// (ix, iy), corners outside the plane counting as zero; as the CPU backend computes it.
__device__ float bilinear_zero_padded(const float* plane, int64_t h, int64_t w, int64_t stride, float ix,
                                      float iy) {
    const float x0f = floorf(ix), y0f = floorf(iy);
    const auto x0 = static_cast<int64_t>(x0f), y0 = static_cast<int64_t>(y0f);
    const float fx = ix - x0f, fy = iy - y0f;
    const float weights[4] = {(1.0f - fx) * (1.0f - fy), fx * (1.0f - fy), (1.0f - fx) * fy, fx * fy};
    float sum = 0.0f;
#pragma unroll
    for (int corner = 0; corner < 4; ++corner) {
        const int64_t y = y0 + corner / 2, x = x0 + corner % 2;
        if (y >= 0 && y < h && x >= 0 && x < w) {
            sum += weights[corner] * plane[(y * w + x) * stride];
        }
    }
    return sum;
}

// The first input index along an axis and the weight of the second, as torch's upsample kernels find them.
__device__ int64_t source_index(int64_t dst, float scale, int64_t size, bool nearest, float& frac) {
    if (nearest) {
        frac = 0.0f;
        return min(static_cast<int64_t>(floorf(static_cast<float>(dst) * scale)), size - 1);
    }
    const float src = fmaxf(scale * (static_cast<float>(dst) + 0.5f) - 0.5f, 0.0f);
    const auto i0 = static_cast<int64_t>(src);
    frac = src - static_cast<float>(i0);
    return i0;
}

__global__ void interpolate2d_kernel(const float* x, float* y, int64_t n_planes, int64_t h, int64_t w,
                                     int64_t out_h, int64_t out_w, float scale_h, float scale_w,
                                     bool nearest) {
    const int64_t e = global_index();
    if (e >= n_planes * out_h * out_w) {
        return;
    }
    const int64_t plane = e / (out_h * out_w), oy = e / out_w % out_h, ox = e % out_w;
    const float* xp = x + plane * h * w;
    float fy = 0.0f, fx = 0.0f;
    const int64_t y0 = source_index(oy, scale_h, h, nearest, fy), y1 = y0 + (y0 < h - 1 ? 1 : 0);
    const int64_t x0 = source_index(ox, scale_w, w, nearest, fx), x1 = x0 + (x0 < w - 1 ? 1 : 0);
    if (nearest) {
        y[e] = xp[y0 * w + x0];
        return;
    }
    const float top = (1.0f - fx) * xp[y0 * w + x0] + fx * xp[y0 * w + x1];
    const float bottom = (1.0f - fx) * xp[y1 * w + x0] + fx * xp[y1 * w + x1];
    y[e] = (1.0f - fy) * top + fy * bottom;
}

// A thread a (image, output position), looping over the channels.
__global__ void grid_sample_kernel(const float* x, const float* grid, float* y, Dims4 in, int64_t n_pos) {
    const int64_t e = global_index();
    if (e >= in.n * n_pos) {
        return;
    }
    const int64_t img = e / n_pos, pos = e % n_pos;
    const float ix = ((grid[e * 2] + 1.0f) * static_cast<float>(in.w) - 1.0f) / 2.0f;
    const float iy = ((grid[e * 2 + 1] + 1.0f) * static_cast<float>(in.h) - 1.0f) / 2.0f;
    for (int64_t c = 0; c < in.c; ++c) {
        const float* plane = x + (img * in.c + c) * in.h * in.w;
        y[(img * in.c + c) * n_pos + pos] = bilinear_zero_padded(plane, in.h, in.w, 1, ix, iy);
    }
}

// A thread an output element (image, query, head, channel d): consecutive threads read consecutive channels
// of each sampled value row.
__global__ void msda_kernel(const float* value, FeatureLevels levels, const float* locations,
                            const float* weights, float* out, int64_t n, int64_t s, int64_t n_head,
                            int64_t d_head, int64_t n_q, int64_t n_points) {
    const int64_t e = global_index();
    if (e >= n * n_q * n_head * d_head) {
        return;
    }
    const int64_t d = e % d_head, task = e / d_head;  // task: (image, query, head)
    const int64_t h = task % n_head, img = task / (n_q * n_head);
    float acc = 0.0f;
    for (int64_t l = 0; l < levels.n; ++l) {
        const float* base = value + ((img * s + levels.start[l]) * n_head + h) * d_head + d;
        const auto height = static_cast<float>(levels.height[l]), width = static_cast<float>(levels.width[l]);
        for (int64_t pt = 0; pt < n_points; ++pt) {
            const int64_t sample = (task * levels.n + l) * n_points + pt;
            const float ix = locations[sample * 2] * width - 0.5f;
            const float iy = locations[sample * 2 + 1] * height - 0.5f;
            acc += weights[sample] *
                   bilinear_zero_padded(base, levels.height[l], levels.width[l], n_head * d_head, ix, iy);
        }
    }
    out[e] = acc;
}

}  // namespace

void interpolate2d_f32(const float* x, float* y, const Dims4& in, const Dims4& out, bool nearest,
                       cudaStream_t stream) {
    const int64_t n = out.n * out.c * out.h * out.w;
    if (n == 0) {
        return;
    }
    const float scale_h = static_cast<float>(in.h) / static_cast<float>(out.h);
    const float scale_w = static_cast<float>(in.w) / static_cast<float>(out.w);
    interpolate2d_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, y, in.n * in.c, in.h, in.w, out.h, out.w,
                                                             scale_h, scale_w, nearest);
    CUDA_CHECK(cudaGetLastError());
}

void grid_sample_f32(const float* x, const float* grid, float* y, const Dims4& in, int64_t h_out,
                     int64_t w_out, cudaStream_t stream) {
    const int64_t n = in.n * h_out * w_out;
    if (n == 0) {
        return;
    }
    grid_sample_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, grid, y, in, h_out * w_out);
    CUDA_CHECK(cudaGetLastError());
}

void multi_scale_deformable_attention_f32(const float* value, const FeatureLevels& levels,
                                          const float* locations, const float* weights, float* out, int64_t n,
                                          int64_t s, int64_t n_head, int64_t d_head, int64_t n_q,
                                          int64_t n_points, cudaStream_t stream) {
    const int64_t n_out = n * n_q * n_head * d_head;
    if (n_out == 0) {
        return;
    }
    msda_kernel<<<n_blocks(n_out), kBlock, 0, stream>>>(value, levels, locations, weights, out, n, s, n_head,
                                                        d_head, n_q, n_points);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
