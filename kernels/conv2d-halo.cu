#include "kernels/conv2d-halo.h"

#include <climits>
#include <map>
#include <mutex>
#include <utility>

#include <cuda_bf16.h>

#include "kernels/async-copy.cuh"
#include "kernels/conv2d-tiles.cuh"
#include "kernels/cuda-check.h"
#include "kernels/flat-launch.cuh"
#include "kernels/mma.cuh"
#include "kernels/vision-activation.cuh"

namespace folio::kernels {

namespace {

// A block's output tile: kTileH rows by kTileW columns of one image (kTileN positions), for kTileM output
// channels; each step takes kChunk input channels, whose kPatchH x kPatchW pixels (the tile and its one-pixel
// halo) the block reads once.
constexpr int kTileH = 8, kTileW = 16, kTileN = kTileH * kTileW;
constexpr int kPatchH = kTileH + 2, kPatchW = kTileW + 2, kPatchPixels = kPatchH * kPatchW;
constexpr int kChunk = 16, kTaps = 9;
constexpr int kWarpN = 32;
using conv_tiles::kWarpsN;
static_assert(kWarpsN * kWarpN == kTileN);

// Two buffers of a step's weights [tap, channel, kChunk] and pixels [pixel, kChunk], bfloat16.
template <int kTileM>
constexpr size_t shared_bytes() {
    return sizeof(uint16_t) * 2 * (kTaps * kTileM + kPatchPixels) * kChunk;
}

// Where half h (8 channels, 16 bytes) of row `index` of kChunk channels lies: the halves of rows 4 to 7 of
// each 8 swapped, so that ldmatrix's eight rows of 32 bytes fall in different banks whatever row they start
// at.
__device__ inline int half_offset(int index, int h) {
    return index * kChunk + ((h ^ ((index >> 2) & 1)) << 3);
}

struct HaloShape {
    int c_in, h, w, c_out;
    int tiles_x, tiles_y;  // output tiles across and down an image
};

// wb [9, c_out, c_in] (bfloat16) = w [c_out, c_in, 3, 3] rounded, tap first.
__global__ void halo_weights_kernel(const float* __restrict__ w, uint16_t* __restrict__ wb, int64_t c_out,
                                    int64_t c_in) {
    const int64_t e = global_index();
    if (e >= kTaps * c_out * c_in) {
        return;
    }
    const int64_t t = e / (c_out * c_in), o = e / c_in % c_out, c = e % c_in;
    wb[e] = __bfloat16_as_ushort(__float2bfloat16_rn(w[(o * c_in + c) * kTaps + t]));
}

// y [n, c_out, h, w] = act(conv3x3(x, w) + b) a tile at a time. Grid: output tiles of every image in x, tiles
// of kTileM output channels in y.
template <int kTileM>
__global__ void __launch_bounds__(conv_tiles::bf16_threads<kTileM>(), conv_tiles::bf16_min_blocks<kTileM>())
    conv2d_halo_kernel(const float* __restrict__ x, const uint16_t* __restrict__ wb,
                       const float* __restrict__ b, float* __restrict__ y, HaloShape g,
                       KernelActivation act) {
    constexpr int kThreads = conv_tiles::bf16_threads<kTileM>();
    constexpr int kPixelsPerThread = (kPatchPixels + kThreads - 1) / kThreads;
    extern __shared__ __align__(16) uint16_t shared_halo[];
    uint16_t* const weights = shared_halo;                               // [2][kTaps][kTileM][kChunk]
    uint16_t* const pixels = shared_halo + 2 * kTaps * kTileM * kChunk;  // [2][kPatchPixels][kChunk]
    const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
    const int m0 = static_cast<int>(blockIdx.y) * kTileM;
    const int tile = static_cast<int>(blockIdx.x);
    const int tx = tile % g.tiles_x, ty = tile / g.tiles_x % g.tiles_y, img = tile / (g.tiles_x * g.tiles_y);
    const int plane = g.h * g.w;
    const float* x_img = x + static_cast<int64_t>(img) * g.c_in * plane;  // [c_in, h, w]
    const int iy0 = ty * kTileH - 1, ix0 = tx * kTileW - 1;               // the patch's first pixel

    const auto copy_weights = [&](int chunk, int stage) {
        const int c0 = chunk * kChunk;
        uint16_t* dst = weights + stage * kTaps * kTileM * kChunk;
#pragma unroll 3
        for (int e = tid; e < kTaps * kTileM * 2; e += kThreads) {
            const int h = e & 1, m = (e >> 1) % kTileM, t = (e >> 1) / kTileM;
            const bool ok = m0 + m < g.c_out;
            const uint16_t* src =
                wb + (static_cast<int64_t>(t) * g.c_out + (ok ? m0 + m : 0)) * g.c_in + c0 + h * 8;
            copy_async_16_or_zero(dst + (t * kTileM) * kChunk + half_offset(m, h), src, ok);
        }
    };
    // The pixels this thread reads: patch pixel tid (and tid + kThreads), each with its kChunk channels.
    int offsets[kPixelsPerThread];  // in the image's plane, or -1 in the padding or past the patch
#pragma unroll
    for (int q = 0; q < kPixelsPerThread; ++q) {
        const int p = tid + q * kThreads, pr = p / kPatchW, pc = p - pr * kPatchW;
        const int iy = iy0 + pr, ix = ix0 + pc;
        const bool ok = p < kPatchPixels && static_cast<unsigned>(iy) < static_cast<unsigned>(g.h) &&
                        static_cast<unsigned>(ix) < static_cast<unsigned>(g.w);
        offsets[q] = ok ? iy * g.w + ix : -1;
    }
    float staged[kPixelsPerThread][kChunk];
    const auto load_pixels = [&](int chunk) {
        const float* x_chunk = x_img + chunk * kChunk * plane;
#pragma unroll
        for (int q = 0; q < kPixelsPerThread; ++q) {
#pragma unroll
            for (int ch = 0; ch < kChunk; ++ch) {
                staged[q][ch] = offsets[q] >= 0 ? __ldg(x_chunk + ch * plane + offsets[q]) : 0.0f;
            }
        }
    };
    const auto store_pixels = [&](int stage) {
        uint16_t* dst = pixels + stage * kPatchPixels * kChunk;
#pragma unroll
        for (int q = 0; q < kPixelsPerThread; ++q) {
            const int p = tid + q * kThreads;
            if (p < kPatchPixels) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float* v = staged[q] + h * 8;
                    *reinterpret_cast<uint4*>(dst + half_offset(p, h)) =
                        make_uint4(pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]),
                                   pack_bf16(v[6], v[7]));
                }
            }
        }
    };

    constexpr int kWarpM = conv_tiles::bf16_warp_rows(kTileM), kMTiles = kWarpM / 16;
    float acc[kMTiles][4][4] = {};  // [m tile, n tile, fragment]
    const int row0 = warp / kWarpsN * kWarpM, col0 = warp % kWarpsN * kWarpN;
    // ldmatrix rows: of the weights, channel row0 + lane % 16 (+ 16 mi) and half lane / 16; of the pixels,
    // the output row of positions col0 + 16 nj and column (lane % 8) + (lane / 16) 8 in it, half lane / 8
    // % 2.
    const int a_row = row0 + (lane & 15), a_half = lane >> 4;
    const int b_col = (lane & 7) + ((lane >> 4) << 3), b_half = (lane >> 3) & 1;
    const int n_chunks = g.c_in / kChunk;
    copy_weights(0, 0);
    commit_copies();
    load_pixels(0);
    store_pixels(0);
    wait_copies<0>();
    __syncthreads();
    for (int kc = 0; kc < n_chunks; ++kc) {
        const int st = kc & 1;
        const bool more = kc + 1 < n_chunks;
        if (more) {
            copy_weights(kc + 1, st ^ 1);
            commit_copies();
            load_pixels(kc + 1);
        }
        const uint16_t* w_stage = weights + st * kTaps * kTileM * kChunk;
        const uint16_t* p_stage = pixels + st * kPatchPixels * kChunk;
#pragma unroll 1
        for (int t = 0; t < kTaps; ++t) {
            const int i = t / 3, j = t - i * 3;
            uint32_t af[kMTiles][4];
#pragma unroll
            for (int mi = 0; mi < kMTiles; ++mi) {
                load_matrices(af[mi], w_stage + t * kTileM * kChunk + half_offset(a_row + mi * 16, a_half));
            }
#pragma unroll
            for (int nj = 0; nj < 2; ++nj) {
                const int out_row = (col0 + nj * 16) / kTileW;
                const int p = (out_row + i) * kPatchW + b_col + j;
                uint32_t bf[4];  // b0, b1 of n tile 2 nj, then of 2 nj + 1
                load_matrices(bf, p_stage + half_offset(p, b_half));
#pragma unroll
                for (int mi = 0; mi < kMTiles; ++mi) {
                    mma_bf16(acc[mi][2 * nj], af[mi], bf[0], bf[1]);
                    mma_bf16(acc[mi][2 * nj + 1], af[mi], bf[2], bf[3]);
                }
            }
        }
        if (more) {
            store_pixels(st ^ 1);  // the buffers every warp finished with before the last barrier
            wait_copies<0>();
        }
        __syncthreads();
    }

    // This lane's rows gq and gq + 8 of each m tile, positions 2 tq and 2 tq + 1 of each n tile.
    const int gq = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int n = col0 + ni * 8 + 2 * tq + e;
            const int oy = ty * kTileH + n / kTileW, ox = tx * kTileW + n % kTileW;
            if (oy >= g.h || ox >= g.w) {
                continue;
            }
            float* y_pos = y + static_cast<int64_t>(img) * g.c_out * plane + oy * g.w + ox;
#pragma unroll
            for (int mi = 0; mi < kMTiles; ++mi) {
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const int o = m0 + row0 + mi * 16 + gq + half * 8;
                    if (o < g.c_out) {
                        y_pos[static_cast<int64_t>(o) * plane] =
                            activation_value(act, acc[mi][ni][half * 2 + e] + (b != nullptr ? b[o] : 0.0f));
                    }
                }
            }
        }
    }
}

// Output tiles that fill every multiprocessor's resident blocks once, on the current device, for tiles of
// tile_m channels; worked out once per device (0 where the shared memory does not fit).
int64_t min_tiles(int tile_m) {
    static std::mutex mutex;
    static std::map<std::pair<int, int>, int64_t> plans;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard lock(mutex);
    const auto [it, added] = plans.try_emplace({device, tile_m}, 0);
    if (added) {
        int n_multiprocessors = 0;
        CUDA_CHECK(cudaDeviceGetAttribute(&n_multiprocessors, cudaDevAttrMultiProcessorCount, device));
        it->second = conv_tiles::with_tile_height(tile_m, [&](auto tile) -> int64_t {
            constexpr size_t kShared = shared_bytes<tile.value>();
            if (cudaFuncSetAttribute(conv2d_halo_kernel<tile.value>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(kShared)) != cudaSuccess) {
                cudaGetLastError();  // beyond this device's shared memory: not sticky
                return 0;
            }
            int blocks = 0;
            CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &blocks, conv2d_halo_kernel<tile.value>, conv_tiles::bf16_threads<tile.value>(), kShared));
            return int64_t{blocks} * n_multiprocessors;
        });
    }
    return it->second;
}

HaloShape halo_shape(const Conv2dShape& s) {
    return HaloShape{.c_in = static_cast<int>(s.c_in),
                     .h = static_cast<int>(s.h),
                     .w = static_cast<int>(s.w),
                     .c_out = static_cast<int>(s.c_out),
                     .tiles_x = static_cast<int>((s.w + kTileW - 1) / kTileW),
                     .tiles_y = static_cast<int>((s.h + kTileH - 1) / kTileH)};
}

}  // namespace

bool conv2d_halo_takes(const Conv2dShape& s) {
    const bool shape = s.inputs == ConvInputs::Bf16 && s.groups == 1 && s.kh == 3 && s.kw == 3 &&
                       s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 1 && s.pad_w == 1 &&
                       s.dilation_h == 1 && s.dilation_w == 1 && s.c_in % kChunk == 0 && s.c_in > 0 &&
                       s.h_out == s.h && s.w_out == s.w;
    if (!shape || s.c_in * s.h * s.w > INT_MAX || s.c_out * s.h * s.w > INT_MAX || s.c_out > 65535) {
        return false;
    }
    const int64_t tiles = s.n * ((s.h + kTileH - 1) / kTileH) * ((s.w + kTileW - 1) / kTileW);
    if (tiles > INT_MAX) {
        return false;
    }
    const int tile_m = conv_tiles::tile_height(s.c_out);
    const int64_t fill = min_tiles(tile_m);
    return fill > 0 && tiles * ((s.c_out + tile_m - 1) / tile_m) >= fill;
}

int64_t conv2d_halo_scratch_floats(const Conv2dShape& s) {
    return (kTaps * s.c_out * s.c_in + 1) / 2;
}

void conv2d_halo_bf16(const float* x, const float* w, const float* b, float* y, float* scratch,
                      const Conv2dShape& s, KernelActivation act, cudaStream_t stream) {
    auto* wb = reinterpret_cast<uint16_t*>(scratch);
    halo_weights_kernel<<<n_blocks(kTaps * s.c_out * s.c_in), kBlock, 0, stream>>>(w, wb, s.c_out, s.c_in);
    CUDA_CHECK(cudaGetLastError());
    const HaloShape g = halo_shape(s);
    const int tile_m = conv_tiles::tile_height(s.c_out);
    conv_tiles::with_tile_height(tile_m, [&](auto tile) {
        const dim3 grid(static_cast<unsigned int>(s.n * g.tiles_x * g.tiles_y),
                        static_cast<unsigned int>((s.c_out + tile.value - 1) / tile.value));
        conv2d_halo_kernel<tile.value>
            <<<grid, conv_tiles::bf16_threads<tile.value>(), shared_bytes<tile.value>(), stream>>>(x, wb, b,
                                                                                                   y, g, act);
    });
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
