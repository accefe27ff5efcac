#include "kernels/conv2d.h"

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

#include "engine/common/error.h"
#include "kernels/async-copy.cuh"
#include "kernels/conv2d-halo.h"
#include "kernels/conv2d-tiles.cuh"
#include "kernels/cuda-check.h"
#include "kernels/flat-launch.cuh"
#include "kernels/mma.cuh"
#include "kernels/vision-activation.cuh"

namespace folio::kernels {

namespace {

// The columns of a chunk of images stay under this many floats (at least one image's).
constexpr int64_t kMaxScratchFloats = int64_t{32} << 20;

// cols [images, c_in kh kw, h_out w_out] of x [images, c_in, h, w]: row (c, i, j) holds channel c at kernel
// tap (i, j) for every output position, zero where the tap falls in the padding. Grid: positions in x, the
// row in y, the image in z, so that a block's threads write consecutive columns.
__global__ void im2col_kernel(const float* x, float* cols, Conv2dShape s) {
    const int n_pos = static_cast<int>(s.h_out * s.w_out);
    const int pos = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (pos >= n_pos) {
        return;
    }
    const int kh = static_cast<int>(s.kh), kw = static_cast<int>(s.kw), w_out = static_cast<int>(s.w_out);
    const int h = static_cast<int>(s.h), w = static_cast<int>(s.w);
    const int r = static_cast<int>(blockIdx.y), img = static_cast<int>(blockIdx.z);
    const int c = r / (kh * kw), i = r / kw % kh, j = r % kw;
    const int oy = pos / w_out, ox = pos - oy * w_out;
    const int iy =
        oy * static_cast<int>(s.stride_h) - static_cast<int>(s.pad_h) + i * static_cast<int>(s.dilation_h);
    const int ix =
        ox * static_cast<int>(s.stride_w) - static_cast<int>(s.pad_w) + j * static_cast<int>(s.dilation_w);
    const float* plane = x + (static_cast<int64_t>(img) * s.c_in + c) * h * w;  // [h, w]
    const int64_t rows = s.c_in * s.kh * s.kw;
    cols[(img * rows + r) * n_pos + pos] = iy >= 0 && iy < h && ix >= 0 && ix < w ? plane[iy * w + ix] : 0.0f;
}

// y [n, c_out, h_out, w_out] = act(conv + b) where output channel o reads input channel o / (c_out / c_in)
// only (c_in == groups): a thread an output, the taps summed in the CPU backend's order. Grid: positions in
// x, the output channel in y, the image in z.
__global__ void conv2d_depthwise_kernel(const float* x, const float* w, const float* b, float* y,
                                        Conv2dShape s, KernelActivation act) {
    const int w_out = static_cast<int>(s.w_out), n_pos = static_cast<int>(s.h_out) * w_out;
    const int pos = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (pos >= n_pos) {
        return;
    }
    const int h = static_cast<int>(s.h), wd = static_cast<int>(s.w);
    const int kh = static_cast<int>(s.kh), kw = static_cast<int>(s.kw);
    const int o = static_cast<int>(blockIdx.y), img = static_cast<int>(blockIdx.z);
    const int c = o / static_cast<int>(s.c_out / s.c_in);
    const float* xp = x + (static_cast<int64_t>(img) * s.c_in + c) * h * wd;  // [h, w]
    const float* wk = w + static_cast<int64_t>(o) * kh * kw;                  // [kh, kw]
    const int oy = pos / w_out;
    const int y0 = oy * static_cast<int>(s.stride_h) - static_cast<int>(s.pad_h);
    const int x0 = (pos - oy * w_out) * static_cast<int>(s.stride_w) - static_cast<int>(s.pad_w);
    float sum = 0.0f;
    for (int i = 0; i < kh; ++i) {
        const int iy = y0 + i * static_cast<int>(s.dilation_h);
        for (int j = 0; j < kw; ++j) {
            const int ix = x0 + j * static_cast<int>(s.dilation_w);
            if (iy >= 0 && iy < h && ix >= 0 && ix < wd) {
                sum += wk[i * kw + j] * xp[iy * wd + ix];
            }
        }
    }
    y[(static_cast<int64_t>(img) * s.c_out + o) * n_pos + pos] =
        activation_value(act, sum + (b != nullptr ? b[o] : 0.0f));
}

// y [n_planes, n_pos] = act(y + b[plane % c_out]) in place, a thread a group of V values of one plane (V
// divides n_pos), the plane found in I: 32 bits wherever the output allows, since 64-bit division costs more
// than the pass's memory traffic.
template <typename V, typename I>
__global__ void bias_activation_kernel(V* y, const float* b, I n_groups, I plane_groups, I c_out,
                                       KernelActivation act) {
    const int64_t e = global_index();
    if (e >= n_groups) {
        return;
    }
    const float bias = b != nullptr ? b[static_cast<I>(e) / plane_groups % c_out] : 0.0f;
    if constexpr (std::is_same_v<V, float4>) {
        float4 v = y[e];
        v.x = activation_value(act, v.x + bias);
        v.y = activation_value(act, v.y + bias);
        v.z = activation_value(act, v.z + bias);
        v.w = activation_value(act, v.w + bias);
        y[e] = v;
    } else {
        y[e] = activation_value(act, y[e] + bias);
    }
}

// Launches bias_activation_kernel with the widest group and narrowest index the output allows.
void bias_activation(float* y, const float* b, int64_t n_planes, int64_t n_pos, int64_t c_out,
                     KernelActivation act, cudaStream_t stream) {
    const int64_t n = n_planes * n_pos;
    if (n == 0) {
        return;
    }
    const bool four = n_pos % 4 == 0 && reinterpret_cast<uintptr_t>(y) % sizeof(float4) == 0;
    const int64_t width = four ? 4 : 1, n_groups = n / width;
    if (n_groups <= INT32_MAX && four) {
        bias_activation_kernel<float4, uint32_t><<<n_blocks(n_groups), kBlock, 0, stream>>>(
            reinterpret_cast<float4*>(y), b, static_cast<uint32_t>(n_groups),
            static_cast<uint32_t>(n_pos / 4), static_cast<uint32_t>(c_out), act);
    } else if (n_groups <= INT32_MAX) {
        bias_activation_kernel<float, uint32_t><<<n_blocks(n_groups), kBlock, 0, stream>>>(
            y, b, static_cast<uint32_t>(n_groups), static_cast<uint32_t>(n_pos), static_cast<uint32_t>(c_out),
            act);
    } else {
        bias_activation_kernel<float, int64_t>
            <<<n_blocks(n_groups), kBlock, 0, stream>>>(y, b, n_groups, n_pos, c_out, act);
    }
    CUDA_CHECK(cudaGetLastError());
}

// The implicit product on the tensor cores: y [c_out, positions] = w [c_out, k] · cols [k, positions] with
// the columns gathered from x as each tile of them is needed (k = (c, i, j), positions those of every image
// in turn), never written out. A block computes kTileM output channels by kTileN positions in steps of
// kTileK, each warp up to 64 x 32 of them; the tiles go through kStages buffers of shared memory filled by
// asynchronous copies, zeros where a tap falls in the padding or past the ends. Tiles of 32, 64 or 128
// channels, the lowest that holds c_out.
namespace implicit {

constexpr int kTileN = 128, kTileK = 32;
constexpr int kWarpN = 32, kWarpsN = kTileN / kWarpN;
static_assert(kWarpsN == conv_tiles::kWarpsN);

// A warp's rows: 64, or the whole tile where it is lower.
__host__ __device__ constexpr int warp_rows(int tile_m) {
    return tile_m < 64 ? tile_m : 64;
}
// Rows of the tiles padded so that the lanes of a fragment read fall in different banks.
constexpr int kRowA = kTileK + 4, kRowB = kTileN + 8;

template <int kTileM>
__host__ __device__ constexpr int threads() {
    return kTileM / warp_rows(kTileM) * kWarpsN * 32;
}

template <int kTileM, int kStages>
constexpr size_t shared_bytes() {
    return sizeof(float) * kStages * (kTileM * kRowA + kTileK * kRowB);
}

// Conv2dShape in 32-bit sizes, with the products' sizes.
struct Gemm {
    int c_in, h, w, c_out, kh, kw, w_out, n_pos;
    int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int k;       // c_in kh kw
    int n_cols;  // images times n_pos
};

// y [image, c_out, n_pos] = act(acc + b) for a warp's tile at output channels m_first.. and columns
// n_first..: this lane's rows gq and gq + 8 of each m tile, columns 2 tq and 2 tq + 1 of each n tile.
template <int kMTiles>
__device__ inline void store_outputs(const float (&acc)[kMTiles][4][4], float* __restrict__ y,
                                     const float* __restrict__ b, const Gemm& g, KernelActivation act,
                                     int m_first, int n_first, int lane) {
    const int gq = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int p = n_first + ni * 8 + 2 * tq + e;
            if (p >= g.n_cols) {
                continue;
            }
            const int p_img = p / g.n_pos;
            float* y_col = y + static_cast<int64_t>(p_img) * g.c_out * g.n_pos + (p - p_img * g.n_pos);
#pragma unroll
            for (int mi = 0; mi < kMTiles; ++mi) {
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const int o = m_first + mi * 16 + gq + half * 8;
                    if (o < g.c_out) {
                        y_col[static_cast<int64_t>(o) * g.n_pos] =
                            activation_value(act, acc[mi][ni][half * 2 + e] + (b != nullptr ? b[o] : 0.0f));
                    }
                }
            }
        }
    }
}

template <int kTileM, int kStages, bool kVectorWeights>
__global__ void __launch_bounds__(threads<kTileM>())
    conv2d_tf32_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                       float* __restrict__ y, Gemm g, KernelActivation act) {
    constexpr int kThreads = threads<kTileM>();
    constexpr int kRowsPerThread = kTileK * kTileN / kThreads;  // of the columns' tile
    constexpr int kRowStep = kThreads / kTileN;
    extern __shared__ __align__(16) float shared[];
    float(*a_tiles)[kTileM][kRowA] = reinterpret_cast<float(*)[kTileM][kRowA]>(shared);  // [stage] weights
    float(*b_tiles)[kTileK][kRowB] =
        reinterpret_cast<float(*)[kTileK][kRowB]>(shared + kStages * kTileM * kRowA);  // [stage] columns
    const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
    const int m0 = static_cast<int>(blockIdx.y) * kTileM, n0 = static_cast<int>(blockIdx.x) * kTileN;
    const int taps = g.kh * g.kw, plane = g.h * g.w;

    // The column this thread gathers, position n0 + tid % kTileN of its image, at rows tid / kTileN and every
    // kRowStep-th after.
    const int col = n0 + tid % kTileN, row_first = tid / kTileN;
    const bool col_ok = col < g.n_cols;
    const int img = col_ok ? col / g.n_pos : 0, pos = col_ok ? col - img * g.n_pos : 0;
    const int oy = pos / g.w_out, ox = pos - oy * g.w_out;
    const int iy0 = oy * g.stride_h - g.pad_h, ix0 = ox * g.stride_w - g.pad_w;
    const float* x_img = x + static_cast<int64_t>(img) * g.c_in * plane;  // [c_in, h, w]

    const auto load_tile = [&](int k_tile, int stage) {
        const int k0 = k_tile * kTileK;
        if constexpr (kVectorWeights) {  // k a multiple of 4: whole 16-byte pieces, in or out
#pragma unroll
            for (int e = tid; e < kTileM * kTileK / 4; e += kThreads) {
                const int r = e / (kTileK / 4), c = e % (kTileK / 4) * 4;
                const bool ok = m0 + r < g.c_out && k0 + c < g.k;
                copy_async_16_or_zero(&a_tiles[stage][r][c],
                                      ok ? w + static_cast<int64_t>(m0 + r) * g.k + k0 + c : w, ok);
            }
        } else {
#pragma unroll 4
            for (int e = tid; e < kTileM * kTileK; e += kThreads) {
                const int r = e / kTileK, c = e % kTileK;
                const bool ok = m0 + r < g.c_out && k0 + c < g.k;
                copy_async_4_or_zero(&a_tiles[stage][r][c],
                                     ok ? w + static_cast<int64_t>(m0 + r) * g.k + k0 + c : w, ok);
            }
        }
        // Row k0 + r of the columns is channel c at tap (i, j), stepped along as r goes.
        const int k_first = k0 + row_first;
        int c = k_first / taps;
        int i = (k_first - c * taps) / g.kw;
        int j = k_first - c * taps - i * g.kw;
#pragma unroll
        for (int r = 0; r < kRowsPerThread; ++r) {
            const int iy = iy0 + i * g.dilation_h, ix = ix0 + j * g.dilation_w;
            const bool ok = col_ok && c < g.c_in && static_cast<unsigned>(iy) < static_cast<unsigned>(g.h) &&
                            static_cast<unsigned>(ix) < static_cast<unsigned>(g.w);
            copy_async_4_or_zero(&b_tiles[stage][row_first + r * kRowStep][tid % kTileN],
                                 ok ? x_img + c * plane + iy * g.w + ix : x, ok);
#pragma unroll
            for (int step = 0; step < kRowStep; ++step) {
                if (++j == g.kw) {
                    j = 0;
                    if (++i == g.kh) {
                        i = 0;
                        ++c;
                    }
                }
            }
        }
    };

    const int n_k_tiles = (g.k + kTileK - 1) / kTileK;
#pragma unroll
    for (int t = 0; t < kStages - 1; ++t) {
        if (t < n_k_tiles) {
            load_tile(t, t);
        }
        commit_copies();
    }
    constexpr int kWarpM = warp_rows(kTileM), kMTiles = kWarpM / 16;
    float acc[kMTiles][4][4] = {};  // [m tile, n tile, fragment]
    const int row0 = warp / kWarpsN * kWarpM, col0 = warp % kWarpsN * kWarpN, gq = lane >> 2, tq = lane & 3;
    for (int kt = 0; kt < n_k_tiles; ++kt) {
        wait_copies<kStages - 2>();
        __syncthreads();  // tile kt is in, and every warp is done with the stage refilled next
        if (kt + kStages - 1 < n_k_tiles) {
            load_tile(kt + kStages - 1, (kt + kStages - 1) % kStages);
        }
        commit_copies();
        const int st = kt % kStages;
#pragma unroll
        for (int ks = 0; ks < kTileK; ks += 8) {
            uint32_t af[kMTiles][4];
#pragma unroll
            for (int mi = 0; mi < kMTiles; ++mi) {
                const int r = row0 + mi * 16 + gq;
                af[mi][0] = to_tf32(a_tiles[st][r][ks + tq]);
                af[mi][1] = to_tf32(a_tiles[st][r + 8][ks + tq]);
                af[mi][2] = to_tf32(a_tiles[st][r][ks + tq + 4]);
                af[mi][3] = to_tf32(a_tiles[st][r + 8][ks + tq + 4]);
            }
#pragma unroll
            for (int ni = 0; ni < 4; ++ni) {
                const int cc = col0 + ni * 8 + gq;
                const uint32_t b0 = to_tf32(b_tiles[st][ks + tq][cc]);
                const uint32_t b1 = to_tf32(b_tiles[st][ks + tq + 4][cc]);
#pragma unroll
                for (int mi = 0; mi < kMTiles; ++mi) {
                    mma_tf32(acc[mi][ni], af[mi], b0, b1);
                }
            }
        }
    }

    store_outputs(acc, y, b, g, act, m0 + row0, n0 + col0, lane);
}

// The same product with bfloat16 inputs (m16n8k16, float32 sums): each thread reads its part of the next
// weight tile and its column's next kColK taps into registers while the warps multiply the current tile,
// then stores them rounded to bfloat16 into the other of two buffers. Both tiles keep k contiguous (weights
// [m][k], columns [n][k]) so that ldmatrix reads the fragments: rows of kRowBf16 values, 80 bytes, put the
// eight rows of each 8x8 matrix in different banks.
constexpr int kRowBf16 = kTileK + 8;

template <int kTileM>
constexpr size_t shared_bytes_bf16() {
    return sizeof(uint16_t) * 2 * (kTileM + kTileN) * kRowBf16;
}

template <int kTileM, bool kVectorWeights>
__global__ void __launch_bounds__(conv_tiles::bf16_threads<kTileM>(), conv_tiles::bf16_min_blocks<kTileM>())
    conv2d_bf16_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                       float* __restrict__ y, Gemm g, KernelActivation act) {
    constexpr int kThreads = conv_tiles::bf16_threads<kTileM>();
    constexpr int kColK = kTileK * kTileN / kThreads;     // taps of its column a thread gathers: 16 or 32
    constexpr int kWeightK = kTileM * kTileK / kThreads;  // weights a thread brings: 8 or 16
    static_assert(kColK % 8 == 0 && kWeightK % 4 == 0);
    extern __shared__ __align__(16) uint16_t shared_bf16[];
    uint16_t(*a_tiles)[kTileM][kRowBf16] = reinterpret_cast<uint16_t(*)[kTileM][kRowBf16]>(shared_bf16);
    uint16_t(*b_tiles)[kTileN][kRowBf16] =
        reinterpret_cast<uint16_t(*)[kTileN][kRowBf16]>(shared_bf16 + 2 * kTileM * kRowBf16);
    const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
    const int m0 = static_cast<int>(blockIdx.y) * kTileM, n0 = static_cast<int>(blockIdx.x) * kTileN;
    const int taps = g.kh * g.kw, plane = g.h * g.w;

    // The column this thread gathers: position n0 + tid % kTileN, taps k_part.. k_part + kColK - 1 of a tile.
    const int col_in_tile = tid % kTileN, k_part = tid / kTileN * kColK;
    const int col = n0 + col_in_tile;
    const bool col_ok = col < g.n_cols;
    const int img = col_ok ? col / g.n_pos : 0, pos = col_ok ? col - img * g.n_pos : 0;
    const int oy = pos / g.w_out, ox = pos - oy * g.w_out;
    const int iy0 = oy * g.stride_h - g.pad_h, ix0 = ox * g.stride_w - g.pad_w;
    const float* x_img = x + static_cast<int64_t>(img) * g.c_in * plane;  // [c_in, h, w]

    float xs[kColK];     // the column's taps of the next tile
    float ws[kWeightK];  // this thread's weights of the next tile
    const auto load_registers = [&](int k_tile) {
        const int k0 = k_tile * kTileK;
        if constexpr (kVectorWeights) {  // k a multiple of 4: whole 16-byte pieces, in or out
#pragma unroll
            for (int q = 0; q < kWeightK / 4; ++q) {
                const int e = tid + q * kThreads, r = e / (kTileK / 4), c = e % (kTileK / 4) * 4;
                float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (m0 + r < g.c_out && k0 + c < g.k) {
                    v = __ldg(
                        reinterpret_cast<const float4*>(w + static_cast<int64_t>(m0 + r) * g.k + k0 + c));
                }
                ws[4 * q] = v.x;
                ws[4 * q + 1] = v.y;
                ws[4 * q + 2] = v.z;
                ws[4 * q + 3] = v.w;
            }
        } else {
#pragma unroll
            for (int q = 0; q < kWeightK; ++q) {
                const int e = tid + q * kThreads, r = e / kTileK, c = e % kTileK;
                ws[q] = m0 + r < g.c_out && k0 + c < g.k
                            ? __ldg(w + static_cast<int64_t>(m0 + r) * g.k + k0 + c)
                            : 0.0f;
            }
        }
        // Tap k0 + k_part + r is channel c at (i, j), stepped along as r goes; the same for the whole warp.
        const int k_first = k0 + k_part;
        int c = k_first / taps;
        int i = (k_first - c * taps) / g.kw;
        int j = k_first - c * taps - i * g.kw;
#pragma unroll
        for (int r = 0; r < kColK; ++r) {
            const int iy = iy0 + i * g.dilation_h, ix = ix0 + j * g.dilation_w;
            const bool ok = col_ok && c < g.c_in && static_cast<unsigned>(iy) < static_cast<unsigned>(g.h) &&
                            static_cast<unsigned>(ix) < static_cast<unsigned>(g.w);
            xs[r] = ok ? __ldg(x_img + c * plane + iy * g.w + ix) : 0.0f;
            if (++j == g.kw) {
                j = 0;
                if (++i == g.kh) {
                    i = 0;
                    ++c;
                }
            }
        }
    };
    const auto store_registers = [&](int stage) {
        if constexpr (kVectorWeights) {
#pragma unroll
            for (int q = 0; q < kWeightK / 4; ++q) {
                const int e = tid + q * kThreads, r = e / (kTileK / 4), c = e % (kTileK / 4) * 4;
                *reinterpret_cast<uint2*>(&a_tiles[stage][r][c]) =
                    make_uint2(pack_bf16(ws[4 * q], ws[4 * q + 1]), pack_bf16(ws[4 * q + 2], ws[4 * q + 3]));
            }
        } else {
#pragma unroll
            for (int q = 0; q < kWeightK; ++q) {
                const int e = tid + q * kThreads;
                a_tiles[stage][e / kTileK][e % kTileK] = __bfloat16_as_ushort(__float2bfloat16_rn(ws[q]));
            }
        }
#pragma unroll
        for (int r = 0; r < kColK; r += 8) {
            *reinterpret_cast<uint4*>(&b_tiles[stage][col_in_tile][k_part + r]) =
                make_uint4(pack_bf16(xs[r], xs[r + 1]), pack_bf16(xs[r + 2], xs[r + 3]),
                           pack_bf16(xs[r + 4], xs[r + 5]), pack_bf16(xs[r + 6], xs[r + 7]));
        }
    };

    constexpr int kWarpM = conv_tiles::bf16_warp_rows(kTileM), kMTiles = kWarpM / 16;
    float acc[kMTiles][4][4] = {};  // [m tile, n tile, fragment]
    const int row0 = warp / kWarpsN * kWarpM, col0 = warp % kWarpsN * kWarpN;
    // The rows this lane addresses for ldmatrix: of the weights, row lane % 16 at column (lane / 16) 8 (the
    // four matrices of a 16x16 A fragment); of the columns, position (lane % 8) + (lane / 16) 8 at tap
    // (lane / 8 % 2) 8 (b0 and b1 of two n tiles).
    const int a_row = row0 + (lane & 15), a_k = (lane >> 4) * 8;
    const int b_row = col0 + (lane & 7) + ((lane >> 4) << 3), b_k = ((lane >> 3) & 1) * 8;
    const int n_k_tiles = (g.k + kTileK - 1) / kTileK;
    load_registers(0);
    store_registers(0);
    __syncthreads();
    for (int kt = 0; kt < n_k_tiles; ++kt) {
        const int st = kt & 1;
        if (kt + 1 < n_k_tiles) {
            load_registers(kt + 1);
        }
#pragma unroll
        for (int ks = 0; ks < kTileK; ks += 16) {
            uint32_t af[kMTiles][4];
#pragma unroll
            for (int mi = 0; mi < kMTiles; ++mi) {
                load_matrices(af[mi], &a_tiles[st][a_row + mi * 16][ks + a_k]);
            }
#pragma unroll
            for (int nj = 0; nj < 2; ++nj) {
                uint32_t bf[4];  // b0, b1 of n tile 2 nj, then of 2 nj + 1
                load_matrices(bf, &b_tiles[st][b_row + nj * 16][ks + b_k]);
#pragma unroll
                for (int mi = 0; mi < kMTiles; ++mi) {
                    mma_bf16(acc[mi][2 * nj], af[mi], bf[0], bf[1]);
                    mma_bf16(acc[mi][2 * nj + 1], af[mi], bf[2], bf[3]);
                }
            }
        }
        if (kt + 1 < n_k_tiles) {
            store_registers(st ^ 1);  // the buffer every warp finished with before the last barrier
        }
        __syncthreads();
    }
    store_outputs(acc, y, b, g, act, m0 + row0, n0 + col0, lane);
}

// How a kernel runs on a device for tiles of tile_m channels: its buffers, and the tiles that fill every
// multiprocessor's resident blocks once (0 where even two buffers do not fit).
struct Plan {
    int stages = 0;
    int64_t min_tiles = 0;
};

// Blocks of either variant of a kernel (vector weights or not) resident on a multiprocessor at once.
template <typename Kernel>
int resident_blocks(Kernel vector_weights, Kernel scalar_weights, int n_threads, size_t n_shared) {
    int n = 0;
    for (Kernel kernel : {vector_weights, scalar_weights}) {
        if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(n_shared)) != cudaSuccess) {
            cudaGetLastError();  // beyond this device's shared memory: not sticky
            return 0;
        }
        int blocks = 0;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, n_threads, n_shared));
        n = n == 0 ? blocks : std::min(n, blocks);
    }
    return n;
}

template <int kTileM, int kStages>
int resident_blocks_tf32() {
    return resident_blocks(conv2d_tf32_kernel<kTileM, kStages, true>,
                           conv2d_tf32_kernel<kTileM, kStages, false>, threads<kTileM>(),
                           shared_bytes<kTileM, kStages>());
}

template <int kTileM>
int resident_blocks_bf16() {
    return resident_blocks(conv2d_bf16_kernel<kTileM, true>, conv2d_bf16_kernel<kTileM, false>,
                           conv_tiles::bf16_threads<kTileM>(), shared_bytes_bf16<kTileM>());
}

// The plan for tiles of tile_m channels with bfloat16 or TF32 inputs on the current device, worked out once
// per device.
Plan plan(int tile_m, bool bf16) {
    static std::mutex mutex;
    static std::map<std::tuple<int, int, bool>, Plan> plans;  // by device, tile height and inputs
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard lock(mutex);
    const auto [it, added] = plans.try_emplace({device, tile_m, bf16});
    if (added) {
        int n_multiprocessors = 0;
        CUDA_CHECK(cudaDeviceGetAttribute(&n_multiprocessors, cudaDevAttrMultiProcessorCount, device));
        it->second = conv_tiles::with_tile_height(tile_m, [&](auto tile) {
            if (bf16) {
                return Plan{2, int64_t{resident_blocks_bf16<tile.value>()} * n_multiprocessors};
            }
            // Lower tiles keep more blocks resident with two buffers, which hides the gathers' latency better
            // than a third buffer does; 128-row tiles take three where they fit.
            if constexpr (tile.value == 128) {
                if (const int three = resident_blocks_tf32<128, 3>(); three > 0) {
                    return Plan{3, int64_t{three} * n_multiprocessors};
                }
            }
            return Plan{2, int64_t{resident_blocks_tf32<tile.value, 2>()} * n_multiprocessors};
        });
    }
    return it->second;
}

template <int kTileM, int kStages>
void launch_tf32(const float* x, const float* w, const float* b, float* y, const Gemm& g,
                 KernelActivation act, cudaStream_t stream) {
    constexpr size_t kShared = shared_bytes<kTileM, kStages>();
    const dim3 grid(static_cast<unsigned int>((g.n_cols + kTileN - 1) / kTileN),
                    static_cast<unsigned int>((g.c_out + kTileM - 1) / kTileM));
    if (g.k % 4 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0) {
        conv2d_tf32_kernel<kTileM, kStages, true>
            <<<grid, threads<kTileM>(), kShared, stream>>>(x, w, b, y, g, act);
    } else {
        conv2d_tf32_kernel<kTileM, kStages, false>
            <<<grid, threads<kTileM>(), kShared, stream>>>(x, w, b, y, g, act);
    }
    CUDA_CHECK(cudaGetLastError());
}

template <int kTileM>
void launch_bf16(const float* x, const float* w, const float* b, float* y, const Gemm& g,
                 KernelActivation act, cudaStream_t stream) {
    constexpr size_t kShared = shared_bytes_bf16<kTileM>();
    const dim3 grid(static_cast<unsigned int>((g.n_cols + kTileN - 1) / kTileN),
                    static_cast<unsigned int>((g.c_out + kTileM - 1) / kTileM));
    if (g.k % 4 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0) {
        conv2d_bf16_kernel<kTileM, true>
            <<<grid, conv_tiles::bf16_threads<kTileM>(), kShared, stream>>>(x, w, b, y, g, act);
    } else {
        conv2d_bf16_kernel<kTileM, false>
            <<<grid, conv_tiles::bf16_threads<kTileM>(), kShared, stream>>>(x, w, b, y, g, act);
    }
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace implicit

bool depthwise(const Conv2dShape& s) {
    return s.c_in == s.groups;
}

bool pointwise(const Conv2dShape& s) {
    return s.kh == 1 && s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0;
}

// TF32 and bfloat16 convolutions without groups run as the implicit product (no columns, the bias and
// activation fused) where its 32-bit indices reach and its tiles fill every multiprocessor's blocks at least
// once; with fewer, most multiprocessors would idle, where cuBLAS splits the sum over k instead.
bool implicit_product(const Conv2dShape& s) {
    const bool fits_32_bits = s.c_in * s.h * s.w <= INT_MAX &&
                              s.n * s.h_out * s.w_out <= INT_MAX - implicit::kTileN &&
                              s.c_out * s.h_out * s.w_out <= INT_MAX;  // the kernel's indices
    if (s.inputs == ConvInputs::Float32 || s.groups != 1 || depthwise(s) || pointwise(s) || !fits_32_bits) {
        return false;
    }
    const int tile_m = conv_tiles::tile_height(s.c_out);
    const int64_t tiles = (s.n * s.h_out * s.w_out + implicit::kTileN - 1) / implicit::kTileN *
                          ((s.c_out + tile_m - 1) / tile_m);
    const int64_t min_tiles = implicit::plan(tile_m, s.inputs == ConvInputs::Bf16).min_tiles;
    return min_tiles > 0 && tiles >= min_tiles;
}

void conv2d_implicit(const float* x, const float* w, const float* b, float* y, const Conv2dShape& s,
                     KernelActivation act, cudaStream_t stream) {
    const int64_t k = s.c_in * s.kh * s.kw, n_cols = s.n * s.h_out * s.w_out;
    const implicit::Gemm g{.c_in = static_cast<int>(s.c_in),
                           .h = static_cast<int>(s.h),
                           .w = static_cast<int>(s.w),
                           .c_out = static_cast<int>(s.c_out),
                           .kh = static_cast<int>(s.kh),
                           .kw = static_cast<int>(s.kw),
                           .w_out = static_cast<int>(s.w_out),
                           .n_pos = static_cast<int>(s.h_out * s.w_out),
                           .stride_h = static_cast<int>(s.stride_h),
                           .stride_w = static_cast<int>(s.stride_w),
                           .pad_h = static_cast<int>(s.pad_h),
                           .pad_w = static_cast<int>(s.pad_w),
                           .dilation_h = static_cast<int>(s.dilation_h),
                           .dilation_w = static_cast<int>(s.dilation_w),
                           .k = static_cast<int>(k),
                           .n_cols = static_cast<int>(n_cols)};
    const int tile_m = conv_tiles::tile_height(s.c_out);
    if (s.inputs == ConvInputs::Bf16) {
        conv_tiles::with_tile_height(
            tile_m, [&](auto tile) { implicit::launch_bf16<tile.value>(x, w, b, y, g, act, stream); });
        return;
    }
    const bool three = implicit::plan(tile_m, false).stages == 3;
    conv_tiles::with_tile_height(tile_m, [&](auto tile) {
        if constexpr (tile.value == 128) {
            if (three) {
                implicit::launch_tf32<128, 3>(x, w, b, y, g, act, stream);
                return;
            }
        }
        implicit::launch_tf32<tile.value, 2>(x, w, b, y, g, act, stream);
    });
}

// Images whose columns one pass of im2col and the products take.
int64_t images_per_chunk(const Conv2dShape& s) {
    const int64_t per_image = s.c_in * s.kh * s.kw * s.h_out * s.w_out;
    return std::clamp<int64_t>(kMaxScratchFloats / std::max<int64_t>(per_image, 1), 1,
                               std::max<int64_t>(s.n, 1));
}

// cuBLAS's compute type that rounds float32 inputs as `inputs` says.
cublasComputeType_t compute_type(ConvInputs inputs) {
    switch (inputs) {
        case ConvInputs::Tf32:
            return CUBLAS_COMPUTE_32F_FAST_TF32;
        case ConvInputs::Bf16:
            return CUBLAS_COMPUTE_32F_FAST_16BF;
        default:
            return CUBLAS_COMPUTE_32F;
    }
}

// One strided batch of products: batch entry e gives c [m_rows, n_cols] (column-major, leading dimension
// m_rows) = a [m_rows, k] · b [k, n_cols] at a + e * stride_a, b + e * stride_b, c + e * stride_c.
void strided_products(cublasHandle_t handle, int64_t m_rows, int64_t n_cols, int64_t k, const float* a,
                      int64_t stride_a, const float* b, int64_t stride_b, float* c, int64_t stride_c,
                      int64_t batch, ConvInputs inputs) {
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(m_rows), static_cast<int>(n_cols),
        static_cast<int>(k), &alpha, a, CUDA_R_32F, static_cast<int>(m_rows), stride_a, b, CUDA_R_32F,
        static_cast<int>(k), stride_b, &beta, c, CUDA_R_32F, static_cast<int>(m_rows), stride_c,
        static_cast<int>(batch), compute_type(inputs), CUBLAS_GEMM_DEFAULT));
}

}  // namespace

int64_t conv2d_scratch_floats(const Conv2dShape& s) {
    if (conv2d_halo_takes(s)) {
        return conv2d_halo_scratch_floats(s);
    }
    if (depthwise(s) || pointwise(s) || implicit_product(s)) {
        return 0;
    }
    return images_per_chunk(s) * s.c_in * s.kh * s.kw * s.h_out * s.w_out;
}

void conv2d_f32(cublasHandle_t handle, const float* x, const float* w, const float* b, float* y,
                float* scratch, const Conv2dShape& s, KernelActivation act, cudaStream_t stream) {
    const int64_t n_pos = s.h_out * s.w_out, n_out = s.n * s.c_out * n_pos;
    if (n_out == 0) {
        return;
    }
    if (s.h * s.w > INT_MAX || n_pos > INT_MAX || s.c_in * s.kh * s.kw > 65535 || s.c_out > 65535 ||
        s.n > 65535) {
        fail("conv2d of ", s.n, "x", s.c_in, "x", s.h, "x", s.w, " into ", s.c_out, " channels of ", s.kh,
             "x", s.kw, ": beyond the kernels' grid");
    }
    if (depthwise(s)) {
        const dim3 grid(n_blocks(n_pos), static_cast<unsigned int>(s.c_out), static_cast<unsigned int>(s.n));
        conv2d_depthwise_kernel<<<grid, kBlock, 0, stream>>>(x, w, b, y, s, act);
        CUDA_CHECK(cudaGetLastError());
        return;
    }
    if (conv2d_halo_takes(s)) {
        conv2d_halo_bf16(x, w, b, y, scratch, s, act, stream);
        return;
    }
    if (implicit_product(s)) {
        conv2d_implicit(x, w, b, y, s, act, stream);
        return;
    }
    // Per image and group, row-major y_g [c_out_g, n_pos] = w_g [c_out_g, k] · cols_g [k, n_pos], which
    // column-major is y_gᵀ = cols_gᵀ · w_gᵀ with cols_gᵀ [n_pos, k] and w_gᵀ [k, c_out_g]. Without groups the
    // images of a chunk are one strided batch over the same weights.
    const int64_t c_out_g = s.c_out / s.groups, k = s.c_in / s.groups * s.kh * s.kw;
    const int64_t in_image = s.c_in * s.h * s.w, cols_image = s.c_in * s.kh * s.kw * n_pos;
    const int64_t chunk = images_per_chunk(s);
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    for (int64_t img = 0; img < s.n; img += chunk) {
        const int64_t m = std::min(chunk, s.n - img);
        const float* cols = x + img * in_image;
        int64_t cols_stride = in_image;
        if (!pointwise(s)) {
            const dim3 grid(n_blocks(n_pos), static_cast<unsigned int>(s.c_in * s.kh * s.kw),
                            static_cast<unsigned int>(m));
            im2col_kernel<<<grid, kBlock, 0, stream>>>(cols, scratch, s);
            CUDA_CHECK(cudaGetLastError());
            cols = scratch;
            cols_stride = cols_image;
        }
        float* out = y + img * s.c_out * n_pos;
        if (s.groups == 1) {
            strided_products(handle, n_pos, s.c_out, k, cols, cols_stride, w, 0, out, s.c_out * n_pos, m,
                             s.inputs);
            continue;
        }
        for (int64_t i = 0; i < m; ++i) {
            strided_products(handle, n_pos, c_out_g, k, cols + i * cols_stride, k * n_pos, w, c_out_g * k,
                             out + i * s.c_out * n_pos, c_out_g * n_pos, s.groups, s.inputs);
        }
    }
    if (b != nullptr || act != KernelActivation::None) {
        bias_activation(y, b, s.n * s.c_out, n_pos, s.c_out, act, stream);
    }
}

}  // namespace folio::kernels
