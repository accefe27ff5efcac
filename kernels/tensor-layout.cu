#include "kernels/tensor-layout.h"

#include "kernels/cuda-check.h"
#include "kernels/flat-launch.cuh"

namespace folio::kernels {

namespace {

// y's sizes and, for each of its dimensions, x's stride along it.
struct PermuteShape {
    int64_t size[kMaxLayoutDims];
    int64_t stride[kMaxLayoutDims];
    int rank;
};

__global__ void permute_kernel(const uint32_t* x, uint32_t* y, PermuteShape s, int64_t n) {
    const int64_t e = global_index();
    if (e >= n) {
        return;
    }
    int64_t rest = e, offset = 0;
    for (int i = s.rank - 1; i >= 0; --i) {
        offset += rest % s.size[i] * s.stride[i];
        rest /= s.size[i];
    }
    y[e] = x[offset];
}

__global__ void copy_blocks_kernel(const uint32_t* part, uint32_t* y, int64_t n_outer, int64_t part_inner,
                                   int64_t out_inner, int64_t column) {
    const int64_t e = global_index();
    if (e < n_outer * part_inner) {
        y[e / part_inner * out_inner + column + e % part_inner] = part[e];
    }
}

// A thread an output element: the input's where it lies inside, zero in the padding.
__global__ void pad2d_kernel(const float* x, float* y, int64_t n_planes, int64_t h, int64_t w, int64_t out_h,
                             int64_t out_w, int64_t top, int64_t left) {
    const int64_t e = global_index();
    if (e >= n_planes * out_h * out_w) {
        return;
    }
    const int64_t plane = e / (out_h * out_w), iy = e / out_w % out_h - top, ix = e % out_w - left;
    y[e] = iy >= 0 && iy < h && ix >= 0 && ix < w ? x[(plane * h + iy) * w + ix] : 0.0f;
}

}  // namespace

void permute_u32(const uint32_t* x, uint32_t* y, const int64_t* x_shape, const int* axes, int rank,
                 cudaStream_t stream) {
    PermuteShape s{};
    s.rank = rank;
    int64_t x_strides[kMaxLayoutDims] = {};
    int64_t n = 1;
    for (int d = rank - 1; d >= 0; --d) {
        x_strides[d] = n;
        n *= x_shape[d];
    }
    for (int i = 0; i < rank; ++i) {
        s.size[i] = x_shape[axes[i]];
        s.stride[i] = x_strides[axes[i]];
    }
    if (n == 0) {
        return;
    }
    permute_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, y, s, n);
    CUDA_CHECK(cudaGetLastError());
}

void copy_blocks_u32(const uint32_t* part, uint32_t* y, int64_t n_outer, int64_t part_inner,
                     int64_t out_inner, int64_t column, cudaStream_t stream) {
    if (n_outer * part_inner == 0) {
        return;
    }
    copy_blocks_kernel<<<n_blocks(n_outer * part_inner), kBlock, 0, stream>>>(part, y, n_outer, part_inner,
                                                                              out_inner, column);
    CUDA_CHECK(cudaGetLastError());
}

void pad2d_f32(const float* x, float* y, const Dims4& in, const Dims4& out, int64_t top, int64_t left,
               cudaStream_t stream) {
    const int64_t n = out.n * out.c * out.h * out.w;
    if (n == 0) {
        return;
    }
    pad2d_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, y, in.n * in.c, in.h, in.w, out.h, out.w, top, left);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
