// The mixture of experts' prompt path: two pools' routings merged, the (token, choice) pairs grouped by
// expert, and the grouped products, every expert's rows in one launch on the tensor cores.
#include <climits>
#include <cstdint>

#include "engine/common/error.h"
#include "kernels/cuda-check.h"
#include "kernels/mma.cuh"
#include "kernels/moe.h"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

namespace {

constexpr int kThreads = 256;

__global__ void merge_expert_routings_kernel(const int32_t* a_experts, const float* a_weights,
                                             const int32_t* b_experts, const float* b_weights,
                                             const int32_t* use_b, int32_t b_first, int32_t* experts,
                                             float* weights, int64_t n, int64_t k) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n * k) {
        return;
    }
    const bool b = use_b[i / k] != 0;
    experts[i] = b ? b_experts[i] + b_first : a_experts[i];
    weights[i] = b ? b_weights[i] : a_weights[i];
}

__global__ void count_experts_kernel(const int32_t* experts, int64_t n_pairs, int32_t* counts) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n_pairs) {
        atomicAdd(&counts[experts[i]], 1);
    }
}

// One thread: a scan over the experts' counts (a few hundred at most in practice).
__global__ void expert_offsets_kernel(int32_t* counts_then_cursor, int n_experts, int32_t* offsets) {
    int32_t sum = 0;
    for (int e = 0; e < n_experts; ++e) {
        const int32_t count = counts_then_cursor[e];
        offsets[e] = sum;
        counts_then_cursor[e] = sum;
        sum += count;
    }
    offsets[n_experts] = sum;
}

__global__ void place_pairs_kernel(const int32_t* experts, int64_t n_pairs, int64_t k, int32_t* cursor,
                                   int32_t* rows, int32_t* slots) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n_pairs) {
        const int32_t s = atomicAdd(&cursor[experts[i]], 1);
        rows[s] = static_cast<int32_t>(i / k);
        slots[i] = s;
    }
}

// The grouped product's tile: 64 rows of x by 64 weight rows, 32 inputs a step; four warps of 32 x 32.
constexpr int kTileRows = 64;
constexpr int kTileWeights = 64;
constexpr int kTileK = 32;
constexpr int kGemmThreads = 128;
constexpr int kRowStride = kTileK + 8;  // bfloat16 elements a shared row, padded against bank conflicts

struct GroupedArgs {
    const float* x = nullptr;
    ExpertWeights w;
    const int32_t* offsets = nullptr;
    int first = 0;
    float* y = nullptr;
    int64_t n_out = 0;      // columns of y
    bool vector_x = false;  // x rows read as float4
    bool vector_w = false;  // weights read eight at a time
};

// The weight row that shared row r of a block holds, or -1 past the expert's rows: a SwiGLU block holds 32
// gate rows and the 32 up rows that pair with them, other blocks 64 consecutive rows.
template <bool kSwiglu>
__device__ inline int64_t tile_weight_row(const GroupedArgs& a, int r) {
    if constexpr (kSwiglu) {
        const int64_t o = static_cast<int64_t>(blockIdx.x) * (kTileWeights / 2) + (r % (kTileWeights / 2));
        if (o >= a.n_out) {
            return -1;
        }
        return r < kTileWeights / 2 ? o : a.n_out + o;
    } else {
        const int64_t o = static_cast<int64_t>(blockIdx.x) * kTileWeights + r;
        return o < a.w.n_rows ? o : -1;
    }
}

// The shared row where warp column wn's n-tile t (8 weight rows) starts: a SwiGLU warp's tiles 0 and 1 are
// gate rows and 2 and 3 the up rows of the same outputs.
template <bool kSwiglu>
__device__ inline int tile_weight_base(int wn, int t) {
    if constexpr (kSwiglu) {
        return t < 2 ? wn * 16 + t * 8 : kTileWeights / 2 + wn * 16 + (t - 2) * 8;
    } else {
        return wn * 32 + t * 8;
    }
}

template <QuantizedFormat kType>
__device__ inline void load_weight_chunk(const GroupedArgs& a, int64_t row, int64_t c, int shift,
                                         uint64_t policy, float v[8]) {
    if (a.vector_w && c + 8 <= a.w.n_in) {
        unpack8<kType>(load_packed8<kType>(a.w.q, a.w.scales, row, c, a.w.n_in, shift, policy), v);
        return;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        v[i] = c + i < a.w.n_in ? weight_at<kType>(a.w.q, a.w.scales, row, c + i, a.w.n_in, a.w.group_size)
                                : 0.0f;
    }
}

// Block (x, y): weight tile x of the expert and row tile that tile number y names, counting every expert's
// row tiles in order; blocks past the last tile return at once.
template <QuantizedFormat kType, bool kSwiglu>
__global__ void __launch_bounds__(kGemmThreads) grouped_expert_kernel(GroupedArgs a) {
    __shared__ int64_t s_row0, s_row_end, s_expert;
    __shared__ __align__(16) uint16_t xs[kTileRows * kRowStride];
    __shared__ __align__(16) uint16_t ws[kTileWeights * kRowStride];
    if (threadIdx.x == 0) {
        int64_t tile = blockIdx.y;
        s_expert = -1;
        for (int64_t j = 0; j < a.w.n_experts; ++j) {
            const int64_t begin = a.offsets[a.first + j], end = a.offsets[a.first + j + 1];
            const int64_t tiles = (end - begin + kTileRows - 1) / kTileRows;
            if (tile < tiles) {
                s_expert = j;
                s_row0 = begin + tile * kTileRows;
                s_row_end = end < s_row0 + kTileRows ? end : s_row0 + kTileRows;
                break;
            }
            tile -= tiles;
        }
    }
    __syncthreads();
    if (s_expert < 0) {
        return;
    }
    const int64_t expert = s_expert, row0 = s_row0, row_end = s_row_end, n_in = a.w.n_in;
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int wm = warp / 2, wn = warp % 2, g = lane / 4, t4 = lane % 4;
    // The row and 16 columns of the tiles this thread fills.
    const int fill_row = static_cast<int>(threadIdx.x) / 2,
              fill_col = (static_cast<int>(threadIdx.x) % 2) * 16;
    const int64_t x_row = row0 + fill_row;
    const int64_t w_local = tile_weight_row<kSwiglu>(a, fill_row);
    const int64_t w_row = expert * a.w.n_rows + w_local;
    const int shift = kType == QuantizedFormat::Wint4 ? group_shift(a.w.group_size) : 0;
    const uint64_t policy = evict_normal_policy();

    float acc[2][4][4] = {};
    for (int64_t k0 = 0; k0 < n_in; k0 += kTileK) {
        {
            float v[16];
            const int64_t c = k0 + fill_col;
            if (x_row < row_end && a.vector_x && c + 16 <= n_in) {
                const float4* p = reinterpret_cast<const float4*>(a.x + x_row * n_in + c);
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const float4 q = p[i];
                    v[4 * i] = q.x, v[4 * i + 1] = q.y, v[4 * i + 2] = q.z, v[4 * i + 3] = q.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < 16; ++i) {
                    v[i] = x_row < row_end && c + i < n_in ? a.x[x_row * n_in + c + i] : 0.0f;
                }
            }
            uint32_t* dst = reinterpret_cast<uint32_t*>(xs + fill_row * kRowStride + fill_col);
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                dst[i] = pack_bf16(v[2 * i], v[2 * i + 1]);
            }
        }
        {
            uint32_t* dst = reinterpret_cast<uint32_t*>(ws + fill_row * kRowStride + fill_col);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float v[8] = {};
                if (w_local >= 0) {
                    load_weight_chunk<kType>(a, w_row, k0 + fill_col + h * 8, shift, policy, v);
                }
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    dst[h * 4 + i] = pack_bf16(v[2 * i], v[2 * i + 1]);
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < kTileK; ks += 16) {
            uint32_t af[2][4];
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
                const uint16_t* base = xs + (wm * 32 + mi * 16 + g) * kRowStride + ks + 2 * t4;
                af[mi][0] = *reinterpret_cast<const uint32_t*>(base);
                af[mi][1] = *reinterpret_cast<const uint32_t*>(base + 8 * kRowStride);
                af[mi][2] = *reinterpret_cast<const uint32_t*>(base + 8);
                af[mi][3] = *reinterpret_cast<const uint32_t*>(base + 8 * kRowStride + 8);
            }
#pragma unroll
            for (int t = 0; t < 4; ++t) {
                const uint16_t* base = ws + (tile_weight_base<kSwiglu>(wn, t) + g) * kRowStride + ks + 2 * t4;
                const uint32_t b0 = *reinterpret_cast<const uint32_t*>(base);
                const uint32_t b1 = *reinterpret_cast<const uint32_t*>(base + 8);
#pragma unroll
                for (int mi = 0; mi < 2; ++mi) {
                    mma_bf16(acc[mi][t], af[mi], b0, b1);
                }
            }
        }
        __syncthreads();
    }

    // Fragment element c of tile (mi, t): row g (+ 8 for c >= 2), column 2 t4 + (c & 1) of the tile.
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int64_t row = row0 + wm * 32 + mi * 16 + g + (c >= 2 ? 8 : 0);
            if (row >= row_end) {
                continue;
            }
            if constexpr (kSwiglu) {
#pragma unroll
                for (int t = 0; t < 2; ++t) {
                    const int64_t o = static_cast<int64_t>(blockIdx.x) * (kTileWeights / 2) + wn * 16 +
                                      t * 8 + 2 * t4 + (c & 1);
                    if (o < a.n_out) {
                        const float gate = acc[mi][t][c], up = acc[mi][t + 2][c];
                        a.y[row * a.n_out + o] = gate / (1.0f + expf(-gate)) * up;
                    }
                }
            } else {
#pragma unroll
                for (int t = 0; t < 4; ++t) {
                    const int64_t o =
                        static_cast<int64_t>(blockIdx.x) * kTileWeights + wn * 32 + t * 8 + 2 * t4 + (c & 1);
                    if (o < a.n_out) {
                        a.y[row * a.n_out + o] = acc[mi][t][c];
                    }
                }
            }
        }
    }
}

template <QuantizedFormat kType>
void launch_grouped(const GroupedArgs& a, int64_t m, bool swiglu, cudaStream_t stream) {
    const int64_t tiles = (m + kTileRows - 1) / kTileRows + a.w.n_experts;  // at least the row tiles needed
    const int64_t col_tiles = swiglu ? (a.n_out + kTileWeights / 2 - 1) / (kTileWeights / 2)
                                     : (a.n_out + kTileWeights - 1) / kTileWeights;
    if (tiles > 65535 || col_tiles > INT32_MAX) {
        fail("grouped_expert_linear: ", m, " rows over ", a.w.n_experts,
             " experts, more than a launch takes");
    }
    const dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(tiles));
    if (swiglu) {
        grouped_expert_kernel<kType, true><<<grid, kGemmThreads, 0, stream>>>(a);
    } else {
        grouped_expert_kernel<kType, false><<<grid, kGemmThreads, 0, stream>>>(a);
    }
    CUDA_CHECK(cudaGetLastError());
}

unsigned blocks_for(int64_t n) {
    return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

}  // namespace

void merge_expert_routings_f32(const int32_t* a_experts, const float* a_weights, const int32_t* b_experts,
                               const float* b_weights, const int32_t* use_b, int32_t b_first,
                               int32_t* experts, float* weights, int64_t n, int64_t k, cudaStream_t stream) {
    if (n * k == 0) {
        return;
    }
    merge_expert_routings_kernel<<<blocks_for(n * k), kThreads, 0, stream>>>(
        a_experts, a_weights, b_experts, b_weights, use_b, b_first, experts, weights, n, k);
    CUDA_CHECK(cudaGetLastError());
}

void order_by_expert_i32(const int32_t* experts, int64_t n_pairs, int64_t k, int n_experts, int32_t* offsets,
                         int32_t* rows, int32_t* slots, int32_t* cursor, cudaStream_t stream) {
    if (n_experts <= 0 || k <= 0 || n_pairs % k != 0 || n_pairs > INT32_MAX) {
        fail("order_by_expert: ", n_pairs, " pairs of ", k, " choices over ", n_experts, " experts");
    }
    CUDA_CHECK(cudaMemsetAsync(cursor, 0, static_cast<size_t>(n_experts) * sizeof(int32_t), stream));
    if (n_pairs > 0) {
        count_experts_kernel<<<blocks_for(n_pairs), kThreads, 0, stream>>>(experts, n_pairs, cursor);
        CUDA_CHECK(cudaGetLastError());
    }
    expert_offsets_kernel<<<1, 1, 0, stream>>>(cursor, n_experts, offsets);
    CUDA_CHECK(cudaGetLastError());
    if (n_pairs > 0) {
        place_pairs_kernel<<<blocks_for(n_pairs), kThreads, 0, stream>>>(experts, n_pairs, k, cursor, rows,
                                                                         slots);
        CUDA_CHECK(cudaGetLastError());
    }
}

void grouped_expert_linear_f32(const float* x, const ExpertWeights& w, const int32_t* offsets, int first,
                               float* y, int64_t m, bool swiglu, cudaStream_t stream) {
    if (m == 0 || w.n_rows == 0 || w.n_experts == 0) {
        return;
    }
    GroupedArgs a;
    a.x = x;
    a.w = w;
    a.offsets = offsets;
    a.first = first;
    a.y = y;
    a.n_out = swiglu ? w.n_rows / 2 : w.n_rows;
    a.vector_x = reinterpret_cast<uintptr_t>(x) % 16 == 0 && w.n_in % 4 == 0;
    if (w.dense != nullptr) {
        fail("grouped_expert_linear: float32 weights are multiplied expert by expert in float32, not here");
    }
    // load_packed8's words: eight columns aligned to their size, within one WINT4 group.
    a.vector_w = w.n_in % 8 == 0 && (w.format != QuantizedFormat::Wint4 || w.group_size % 8 == 0);
    switch (w.format) {
        case QuantizedFormat::Bf16:
            launch_grouped<QuantizedFormat::Bf16>(a, m, swiglu, stream);
            return;
        case QuantizedFormat::Wint8:
            launch_grouped<QuantizedFormat::Wint8>(a, m, swiglu, stream);
            return;
        case QuantizedFormat::Wint4:
            launch_grouped<QuantizedFormat::Wint4>(a, m, swiglu, stream);
            return;
    }
}

}  // namespace folio::kernels
