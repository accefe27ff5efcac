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

// A thread an element of y, its place in x found with index arithmetic in I: 32 bits wherever the tensor
// allows, since 64-bit division costs several times as much and these kernels are held by it, not by memory.
// T is the element moved: a word, or four words where the innermost axis stays innermost in whole fours.
template <typename T, typename I>
__global__ void permute_kernel(const T* x, T* y, PermuteShape s, int64_t n) {
    const int64_t e = global_index();
    if (e >= n) {
        return;
    }
    I rest = static_cast<I>(e), offset = 0;
    for (int i = s.rank - 1; i >= 0; --i) {
        const auto size = static_cast<I>(s.size[i]);
        offset += rest % size * static_cast<I>(s.stride[i]);
        rest /= size;
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

// A thread an element of the part (T and I as for permute_kernel).
template <typename T, typename I>
__global__ void copy_blocks_kernel(const T* part, T* y, int64_t n, I part_inner, I out_inner, I column) {
    const int64_t e = global_index();
    if (e < n) {
        const auto i = static_cast<I>(e);
        y[static_cast<int64_t>(i / part_inner) * out_inner + column + i % part_inner] = part[e];
    }
}

// Whether a pointer and a count of words can be moved four words at a time.
bool four_words(const uint32_t* p, int64_t n_words) {
    return reinterpret_cast<uintptr_t>(p) % sizeof(uint4) == 0 && n_words % 4 == 0;
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
    // The innermost axis staying innermost in whole fours moves four words a thread.
    const int last = plan.rank - 1;
    const int64_t inner = plan.shape[last];
    const bool by_four = plan.axes[last] == last && four_words(x, inner) && four_words(y, inner);
    const int64_t width = by_four ? 4 : 1;
    PermuteShape s{};
    s.rank = plan.rank;
    int64_t x_strides[kMaxLayoutDims] = {};
    int64_t stride = 1;
    for (int d = plan.rank - 1; d >= 0; --d) {
        x_strides[d] = stride;
        stride *= d == last ? inner / width : plan.shape[d];
    }
    for (int i = 0; i < plan.rank; ++i) {
        s.size[i] = plan.axes[i] == last ? inner / width : plan.shape[plan.axes[i]];
        s.stride[i] = x_strides[plan.axes[i]];
    }
    const int64_t n_moved = n / width;
    const bool narrow = n_moved <= INT32_MAX;
    if (by_four) {
        const auto* x4 = reinterpret_cast<const uint4*>(x);
        auto* y4 = reinterpret_cast<uint4*>(y);
        if (narrow) {
            permute_kernel<uint4, uint32_t><<<n_blocks(n_moved), kBlock, 0, stream>>>(x4, y4, s, n_moved);
        } else {
            permute_kernel<uint4, int64_t><<<n_blocks(n_moved), kBlock, 0, stream>>>(x4, y4, s, n_moved);
        }
    } else if (narrow) {
        permute_kernel<uint32_t, uint32_t><<<n_blocks(n), kBlock, 0, stream>>>(x, y, s, n);
    } else {
        permute_kernel<uint32_t, int64_t><<<n_blocks(n), kBlock, 0, stream>>>(x, y, s, n);
    }
    CUDA_CHECK(cudaGetLastError());
}

void copy_blocks_u32(const uint32_t* part, uint32_t* y, int64_t n_outer, int64_t part_inner,
                     int64_t out_inner, int64_t column, cudaStream_t stream) {
    int64_t n = n_outer * part_inner;
    if (n == 0) {
        return;
    }
    if (four_words(part, part_inner) && four_words(y, out_inner) && column % 4 == 0) {
        n /= 4;
        const auto* p4 = reinterpret_cast<const uint4*>(part);
        auto* y4 = reinterpret_cast<uint4*>(y);
        if (n_outer * (out_inner / 4) <= INT32_MAX) {
            copy_blocks_kernel<uint4, uint32_t><<<n_blocks(n), kBlock, 0, stream>>>(
                p4, y4, n, static_cast<uint32_t>(part_inner / 4), static_cast<uint32_t>(out_inner / 4),
                static_cast<uint32_t>(column / 4));
        } else {
            copy_blocks_kernel<uint4, int64_t>
                <<<n_blocks(n), kBlock, 0, stream>>>(p4, y4, n, part_inner / 4, out_inner / 4, column / 4);
        }
    } else if (n_outer * out_inner <= INT32_MAX) {
        copy_blocks_kernel<uint32_t, uint32_t><<<n_blocks(n), kBlock, 0, stream>>>(
            part, y, n, static_cast<uint32_t>(part_inner), static_cast<uint32_t>(out_inner),
            static_cast<uint32_t>(column));
    } else {
        copy_blocks_kernel<uint32_t, int64_t>
            <<<n_blocks(n), kBlock, 0, stream>>>(part, y, n, part_inner, out_inner, column);
    }
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
