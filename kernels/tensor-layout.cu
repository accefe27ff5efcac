#include "kernels/tensor-layout.h"

#include <algorithm>

#include "kernels/cuda-check.h"
#include "kernels/flat-launch.cuh"
#include "kernels/permute-plan.h"

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

constexpr int kTile = 32;     // a transpose block's tile: 32 x 32 elements
constexpr int kTileRows = 8;  // its threads: 32 x 8, each moving four elements of the tile

// A batch of matrices transposed a tile a block through shared memory, so that both the reads and the writes
// are whole rows of the tile (the padding column keeps the tile's columns in different banks).
// x [batch, rows, cols]  ->  y [batch, cols, rows]
__global__ void transpose_kernel(const uint32_t* x, uint32_t* y, int64_t batch, int64_t rows, int64_t cols) {
    __shared__ uint32_t tile[kTile][kTile + 1];
    const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
    const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile;
    for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
        const uint32_t* xb = x + b * rows * cols;
        uint32_t* yb = y + b * rows * cols;
        for (int i = static_cast<int>(threadIdx.y); i < kTile; i += kTileRows) {
            const int64_t r = r0 + i, c = c0 + threadIdx.x;
            if (r < rows && c < cols) {
                tile[i][threadIdx.x] = xb[r * cols + c];
            }
        }
        __syncthreads();
        for (int i = static_cast<int>(threadIdx.y); i < kTile; i += kTileRows) {
            const int64_t c = c0 + i, r = r0 + threadIdx.x;
            if (c < cols && r < rows) {
                yb[c * rows + r] = tile[threadIdx.x][i];
            }
        }
        __syncthreads();
    }
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
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) {
        n *= x_shape[d];
    }
    if (n == 0) {
        return;
    }
    const PermutePlan plan = plan_permute(x_shape, axes, rank);
    if (plan.rank <= 1) {
        CUDA_CHECK(cudaMemcpyAsync(y, x, static_cast<size_t>(n) * sizeof(uint32_t), cudaMemcpyDeviceToDevice,
                                   stream));
        return;
    }
    // [rows, cols] -> [cols, rows], or a batch of them: tiles through shared memory.
    if (plan.is_transpose()) {
        const bool batched = plan.rank == 3;
        const int64_t batch = batched ? plan.shape[0] : 1;
        const int64_t rows = plan.shape[batched ? 1 : 0], cols = plan.shape[batched ? 2 : 1];
        const int64_t tiles_y = (rows + kTile - 1) / kTile;
        if (tiles_y <= 65535) {
            const dim3 grid(static_cast<unsigned int>((cols + kTile - 1) / kTile),
                            static_cast<unsigned int>(tiles_y),
                            static_cast<unsigned int>(std::min<int64_t>(batch, 65535)));
            transpose_kernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(x, y, batch, rows, cols);
            CUDA_CHECK(cudaGetLastError());
            return;
        }
    }
    PermuteShape s{};
    s.rank = plan.rank;
    int64_t x_strides[kMaxLayoutDims] = {};
    int64_t stride = 1;
    for (int d = plan.rank - 1; d >= 0; --d) {
        x_strides[d] = stride;
        stride *= plan.shape[d];
    }
    for (int i = 0; i < plan.rank; ++i) {
        s.size[i] = plan.shape[plan.axes[i]];
        s.stride[i] = x_strides[plan.axes[i]];
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
