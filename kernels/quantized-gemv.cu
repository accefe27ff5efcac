#include <algorithm>

#include <cuda_bf16.h>

#include "engine/common/error.h"
#include "kernels/activation.cuh"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/dispatch.cuh"
#include "kernels/elementwise.h"
#include "kernels/gemv-row.cuh"
#include "kernels/mma.cuh"
#include "kernels/norm.h"
#include "kernels/quantized-gemv.h"
#include "kernels/quantized-linear.h"
#include "kernels/reduce.cuh"
#include "kernels/rope-pair.cuh"
#include "kernels/streamed-gemv.h"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / kWarpSize;
// Warps a GEMV wants in all, about 32 an SM on today's largest devices: a product of few output rows splits
// each row's columns between up to kWarpsPerBlock warps to get there, while every warp keeps at least
// kMinPartColumns columns.
constexpr int64_t kGemvWarpsWanted = 4096;
// Above four rows half as many, which measured faster at eight rows (and slower at one and two).
constexpr int64_t kGemvWarpsWantedEightRows = 2048;
constexpr int64_t kMinPartColumns = 256;
// Blocks of the GEMV an SM holds at once, by the rows of x it multiplies: registers are capped at what lets
// that many fit. Eight rows of four chunks would take WINT8 to 179 registers a thread, one block an SM; one
// or two rows need few accumulators, and four blocks an SM keep twice the loads in flight.
constexpr int gemv_blocks_per_sm(int n_rows) {
    return n_rows <= 2 ? 4 : n_rows <= 4 ? 3 : 2;
}
// Rows of x up to which the GEMV applies an RMSNorm input itself: each row adds a sum of squares and a
// multiply by the norm's weights to every chunk, which at two rows takes the RoPE and SwiGLU kernels past
// their registers into spills.
constexpr int64_t kGemvNormMaxRows = 1;
// Blocks an SM of the GEMV that makes a paired output a warp a pair (two weight rows a warp).
constexpr int kPairBlocksPerSm = 3;
// SwiGLU pairs from which a single row's WINT8/WINT4 GEMV gives each warp two pairs (four weight rows, twice
// the loads in flight): wide MLPs, whose pairs still fill the device at half the warps.
constexpr int64_t kTwoPairsMinPairs = 4096;
// RoPE pairs from which a single row's q/k/v product gives each warp two pairs the same way (Llama-8B's
// 3,072, ERNIE-4.5-VL's 1,792).
constexpr int64_t kRopeTwoPairsMinPairs = 1024;
// Blocks an SM of that kernel, whose four rows' loads take registers for two.
constexpr int kTwoPairsBlocksPerSm = 2;
// Eight-column chunks a lane loads before it multiplies: several loads in flight per lane keep the memory
// system busy when a step's few rows give the device few warps.
constexpr int kChunksInFlight = 4;
// The same for a single row's plain WINT4 GEMV, whose chunks are half a WINT8 chunk's bytes: twice as many
// keep as many bytes in flight a lane.
constexpr int kWint4SingleRowChunks = 8;

// Columns [c, c + 8) of each of the a.n rows of x (kRows >= a.n), as the GEMV dots them: dot(r, x8) is called
// for row r. With kNorm (an RMSNorm input) the columns are multiplied by the norm's weights and their squares
// added to squares[r] first, so that the row's sums need only 1 / rms at the end.
template <int kRows, bool kNorm, typename Dot>
__device__ inline void for_each_input_row8(const QuantizedLinearArgs& a, int64_t c, float squares[kRows],
                                           Dot&& dot) {
    float norm_w[8];
    if constexpr (kNorm) {
        load8(a.norm_w + c, norm_w);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        if (r < a.n) {
            float xv[8];
            load8(a.x + r * a.n_in + c, xv);
            if constexpr (kNorm) {
                squares[r] += dot8(xv, xv);
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    xv[i] *= norm_w[i];
                }
            }
            dot(r, xv);
        }
    }
}

// Whether this lane finishes row `lane` of x for its slot (see finish_gemv_rows).
template <GemvFinish kFinish>
__device__ inline bool finishes_slot(const QuantizedLinearArgs& a, int slot, bool valid, int part, int lane) {
    return valid && part == 0 && lane < a.n && (!paired_finish(kFinish) || slot % 2 == 0);
}

// For a RopeToCache output, where the pair this lane finishes goes and how it turns, found before the wait
// for the kernel ahead, while the first weight loads are in flight; empty otherwise.
template <GemvFinish kFinish>
__device__ inline RopePairTarget gemv_rope_target(const QuantizedLinearArgs& a, int slot, bool valid,
                                                  int part, int lane) {
    if constexpr (kFinish == GemvFinish::Rope) {
        if (finishes_slot<kFinish>(a, slot, valid, part, lane)) {
            const int d = static_cast<int>(a.rope.head_dim);
            return rope_pair_target(a.rope, lane, slot / d, slot % d / 2);
        }
    }
    return {};
}

// For an output that accumulates, the value of y this lane's sum is added to (see finish_gemv_rows), loaded
// just after the wait for the kernel ahead so that its round trip overlaps the first loads of x instead of
// following the sums; 0 otherwise.
template <GemvFinish kFinish>
__device__ inline float gemv_accumulated(const QuantizedLinearArgs& a, int slot, bool valid, int part,
                                         int lane) {
    if constexpr (kFinish == GemvFinish::Store) {
        if (a.epilogue == LinearEpilogue::Accumulate && finishes_slot<kFinish>(a, slot, valid, part, lane)) {
            return a.y[lane * a.n_out + slot];
        }
    }
    return 0.0f;
}

// Adds the n_parts warps' sums of each output slot in order through shared memory; lane r of the slot's
// first part finishes row r of x, for a paired output the even slot's first part both slots of the pair, the
// odd slot's warps n_parts after it. With kNorm the parts' squares of x are added up alongside and the sums
// scaled by 1 / rms before the bias. An output that accumulates adds accumulated (from gemv_accumulated).
// acc, squares [kRows] per lane  ->  y [n, n_out] or [n, n_out / 2], or where rope (from gemv_rope_target)
// says
template <GemvFinish kFinish, int kRows, bool kNorm>
__device__ inline void finish_gemv_rows(float acc[kRows], float squares[kRows], const QuantizedLinearArgs& a,
                                        int slot, bool valid, int part, int n_parts,
                                        const RopePairTarget& rope, float accumulated) {
    __shared__ float part_sums[kWarpsPerBlock][kRows];
    __shared__ float part_squares[kNorm ? kWarpsPerBlock : 1][kRows];
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        if (r < a.n) {
            acc[r] = warp_sum(acc[r]);
            if constexpr (kNorm) {
                squares[r] = warp_sum(squares[r]);
            }
            if (lane == 0) {
                part_sums[warp][r] = acc[r];
                if constexpr (kNorm) {
                    part_squares[warp][r] = squares[r];
                }
            }
        }
    }
    __syncthreads();
    if (!finishes_slot<kFinish>(a, slot, valid, part, lane)) {
        return;
    }
    const int64_t o = gemv_weight_row<kFinish>(a, slot);
    float sum = 0.0f, square_sum = 0.0f;
    for (int p = 0; p < n_parts; ++p) {
        sum += part_sums[warp + p][lane];
        if constexpr (kNorm) {
            square_sum += part_squares[warp + p][lane];
        }
    }
    const float scale = kNorm ? inverse_rms(square_sum, a) : 1.0f;
    sum = sum * scale + (a.b ? a.b[o] : 0.0f);
    if constexpr (paired_finish(kFinish)) {
        const int64_t o_second = gemv_weight_row<kFinish>(a, slot + 1);
        float second = 0.0f;
        for (int p = 0; p < n_parts; ++p) {
            second += part_sums[warp + n_parts + p][lane];
        }
        second = second * scale + (a.b ? a.b[o_second] : 0.0f);
        if constexpr (kFinish == GemvFinish::Swiglu) {
            a.y[lane * (a.n_out / 2) + o] = silu(sum) * second;
        } else {
            const int d = static_cast<int>(a.rope.head_dim);
            store_rope_pair(rope, slot % d / 2, d / 2, sum, second);
        }
    } else {
        a.y[lane * a.n_out + o] = a.epilogue == LinearEpilogue::GeluTanh     ? gelu_tanh(sum)
                                  : a.epilogue == LinearEpilogue::Accumulate ? accumulated + sum
                                                                             : sum;
    }
}

// n_parts warps per output slot (1, 2, 4 or 8; kWarpsPerBlock / n_parts slots a block): part p of row o reads
// the row's packed weights in the 256-column chunks it owns (p, p + n_parts, ...) once, eight columns a
// lane, and dots them with every row of x, kChunks chunks in flight. The first kChunks are loaded before the
// wait for the previous kernel (the weights are uploaded, never written by a kernel), and a RopeToCache
// output's targets found. With kNorm each chunk of x is multiplied by the norm's weights as it is read and
// its squares summed (an RMSNorm input). kRows >= n rows of x; n_in is a multiple of 8.  x [n, n_in], b
// [n_out] or null, y as a.output says
template <QuantizedFormat kType, GemvFinish kFinish, int kRows, bool kNorm, int kChunks = kChunksInFlight>
__global__ void __launch_bounds__(kBlock, gemv_blocks_per_sm(kRows))
    quantized_gemv_f32_kernel(QuantizedLinearArgs a, int n_parts) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int part = warp % n_parts;
    const int slot = static_cast<int>(blockIdx.x) * (kWarpsPerBlock / n_parts) + warp / n_parts;
    const bool valid = slot < a.n_out;
    const int64_t o = gemv_weight_row<kFinish>(a, slot);
    const int64_t n_in = a.n_in;
    const int64_t stride = static_cast<int64_t>(n_parts) * kWarpSize * 8;  // columns between chunks
    const int64_t first = (static_cast<int64_t>(part) * kWarpSize + lane) * 8;
    const int shift = group_shift(a.group_size);
    Packed8 w[kChunks];
    const uint64_t policy = evict_first_policy();
    const auto load = [&](int64_t c0) {
#pragma unroll
        for (int k = 0; k < kChunks; ++k) {
            if (valid && c0 + k * stride < n_in) {
                w[k] = load_packed8<kType>(a.q, a.scales, o, c0 + k * stride, n_in, shift, policy);
            }
        }
    };
    load(first);
    const RopePairTarget rope = gemv_rope_target<kFinish>(a, slot, valid, part, lane);
    wait_for_prior_grids();
    start_dependent_grids();
    const float accumulated = gemv_accumulated<kFinish>(a, slot, valid, part, lane);
    float acc[kRows] = {};
    float squares[kRows] = {};  // of x's columns this warp reads, for an RMSNorm input
    for (int64_t c0 = first; valid && c0 < n_in; c0 += stride * kChunks) {
        if (c0 != first) {
            load(c0);
        }
#pragma unroll
        for (int k = 0; k < kChunks; ++k) {
            const int64_t c = c0 + k * stride;
            if (c >= n_in) {
                break;
            }
            float wk[8];
            unpack8_levels<kType>(w[k], wk);
            for_each_input_row8<kRows, kNorm>(a, c, squares, [&](int r, const float xv[8]) {
                acc[r] = add_dot8<kType>(acc[r], xv, wk, w[k]);
            });
        }
    }
    finish_gemv_rows<kFinish, kRows, kNorm>(acc, squares, a, slot, valid, part, n_parts, rope, accumulated);
}

// A paired output (SwiGLU or RopeToCache) of one or two rows, a warp a pair: warp w of the grid dots the two
// weight rows of output slots 2w and 2w + 1 (gemv_weight_row) with every row of x, the first kChunksInFlight
// chunks of both loaded before the wait, and lane r finishes row r. No shared memory and no barrier, and
// registers capped for kPairBlocksPerSm blocks an SM, so that the language model's 3,072 SwiGLU pairs and
// 1,280 q/k/v pairs each run in one wave on 132 SMs, where the GEMV's warp a row took one and a half and 1.2.
// With kNorm (one row) the warp applies the RMSNorm input as it reads x: it covers whole rows, so its own
// squares give 1 / rms. kRows >= n rows of x; n_in is a multiple of 8.  x [n, n_in], b [n_out] or null  ->
// y [n, n_out / 2], or where a.rope says
template <QuantizedFormat kType, GemvFinish kFinish, int kRows, bool kNorm, int kPairs = 1>
__global__ void __launch_bounds__(kBlock, kPairs == 1 ? kPairBlocksPerSm : kTwoPairsBlocksPerSm)
    quantized_gemv_pairs_kernel(QuantizedLinearArgs a) {
    static_assert(paired_finish(kFinish));
    constexpr int kWeightRows = 2 * kPairs;
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int first_pair =
        (static_cast<int>(blockIdx.x) * kWarpsPerBlock + static_cast<int>(threadIdx.x) / kWarpSize) * kPairs;
    const int64_t n_pairs = a.n_out / 2;
    const bool valid = first_pair < n_pairs;
    bool pair_valid[kPairs];
    int64_t rows[kWeightRows];
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
        pair_valid[p] = first_pair + p < n_pairs;
        rows[2 * p] = pair_valid[p] ? gemv_weight_row<kFinish>(a, 2 * (first_pair + p)) : 0;
        rows[2 * p + 1] = pair_valid[p] ? gemv_weight_row<kFinish>(a, 2 * (first_pair + p) + 1) : 0;
    }
    const int64_t n_in = a.n_in;
    constexpr int64_t kStride = int64_t{kWarpSize} * 8;  // columns between a lane's chunks
    const int64_t first = int64_t{lane} * 8;
    const int shift = group_shift(a.group_size);
    const uint64_t policy = evict_first_policy();
    Packed8 w[kWeightRows][kChunksInFlight];
    const auto load = [&](int64_t c0) {
#pragma unroll
        for (int k = 0; k < kChunksInFlight; ++k) {
#pragma unroll
            for (int h = 0; h < kWeightRows; ++h) {
                if (pair_valid[h / 2] && c0 + k * kStride < n_in) {
                    w[h][k] =
                        load_packed8<kType>(a.q, a.scales, rows[h], c0 + k * kStride, n_in, shift, policy);
                }
            }
        }
    };
    load(first);
    // Where lane r's pairs go and how they turn, for a RopeToCache output.
    RopePairTarget rope[kPairs];
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
        rope[p] = gemv_rope_target<kFinish>(a, 2 * (first_pair + p), pair_valid[p], 0, lane);
    }
    wait_for_prior_grids();
    start_dependent_grids();
    float acc[kWeightRows][kRows] = {};
    float squares[kRows] = {};  // of x's columns, for an RMSNorm input
    for (int64_t c0 = first; valid && c0 < n_in; c0 += kStride * kChunksInFlight) {
        if (c0 != first) {
            load(c0);
        }
#pragma unroll
        for (int k = 0; k < kChunksInFlight; ++k) {
            const int64_t c = c0 + k * kStride;
            if (c >= n_in) {
                break;
            }
            if constexpr (kPairs == 1) {
                float wk[2][8];
                unpack8_levels<kType>(w[0][k], wk[0]);
                unpack8_levels<kType>(w[1][k], wk[1]);
                for_each_input_row8<kRows, kNorm>(a, c, squares, [&](int r, const float xv[8]) {
                    acc[0][r] = add_dot8<kType>(acc[0][r], xv, wk[0], w[0][k]);
                    acc[1][r] = add_dot8<kType>(acc[1][r], xv, wk[1], w[1][k]);
                });
            } else {
                // One row of x (kRows 1): each weight row unpacked as it is dotted, to keep registers few.
                for_each_input_row8<kRows, kNorm>(a, c, squares, [&](int r, const float xv[8]) {
#pragma unroll
                    for (int h = 0; h < kWeightRows; ++h) {
                        float wk[8];
                        unpack8_levels<kType>(w[h][k], wk);
                        acc[h][r] = add_dot8<kType>(acc[h][r], xv, wk, w[h][k]);
                    }
                });
            }
        }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int h = 0; h < kWeightRows; ++h) {
            acc[h][r] = warp_sum(acc[h][r]);
        }
        if constexpr (kNorm) {
            squares[r] = warp_sum(squares[r]);
        }
    }
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
        const int pair = first_pair + p;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            if (pair_valid[p] && lane == r && r < a.n) {
                const float scale = kNorm ? inverse_rms(squares[r], a) : 1.0f;
                const float first_sum = acc[2 * p][r] * scale + (a.b ? a.b[rows[2 * p]] : 0.0f);
                const float second_sum = acc[2 * p + 1][r] * scale + (a.b ? a.b[rows[2 * p + 1]] : 0.0f);
                if constexpr (kFinish == GemvFinish::Swiglu) {
                    a.y[r * n_pairs + pair] = silu(first_sum) * second_sum;
                } else {
                    const int d = static_cast<int>(a.rope.head_dim);
                    store_rope_pair(rope[p], 2 * pair % d / 2, d / 2, first_sum, second_sum);
                }
            }
        }
    }
}

// The same for n_in not a multiple of 8: lanes take single columns, part p owning every n_parts-th 32.
// x [n, n_in], b [n_out] or null, y [n, n_out]
template <QuantizedFormat kType, GemvFinish kFinish>
__global__ void __launch_bounds__(kBlock, gemv_blocks_per_sm(kQuantizedGemvMaxRows))
    quantized_gemv_columns_f32_kernel(QuantizedLinearArgs a, int n_parts) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int part = warp % n_parts;
    const int slot = static_cast<int>(blockIdx.x) * (kWarpsPerBlock / n_parts) + warp / n_parts;
    const bool valid = slot < a.n_out;
    const int64_t o = gemv_weight_row<kFinish>(a, slot);
    const RopePairTarget rope = gemv_rope_target<kFinish>(a, slot, valid, part, lane);
    wait_for_prior_grids();
    start_dependent_grids();
    const float accumulated = gemv_accumulated<kFinish>(a, slot, valid, part, lane);
    float acc[kQuantizedGemvMaxRows] = {};
    for (int64_t c = static_cast<int64_t>(part) * kWarpSize + lane; valid && c < a.n_in;
         c += static_cast<int64_t>(n_parts) * kWarpSize) {
        const float w = weight_at<kType>(a.q, a.scales, o, c, a.n_in, a.group_size);
#pragma unroll
        for (int r = 0; r < kQuantizedGemvMaxRows; ++r) {
            if (r < a.n) {
                acc[r] += a.x[r * a.n_in + c] * w;
            }
        }
    }
    finish_gemv_rows<kFinish, kQuantizedGemvMaxRows, false>(acc, nullptr, a, slot, valid, part, n_parts, rope,
                                                            accumulated);
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

namespace {

// Warps per output row for a GEMV: the fewest (a power of two) that give kGemvWarpsWanted warps in all
// (kGemvWarpsWantedEightRows above four rows), and leave a block two slots for the pairs of a paired output.
int gemv_parts(const QuantizedLinearArgs& a) {
    const int max_parts = a.output != LinearOutput::Plain ? kWarpsPerBlock / 2 : kWarpsPerBlock;
    int parts = 1;
    const int64_t wanted = a.n > 4 ? kGemvWarpsWantedEightRows : kGemvWarpsWanted;
    while (parts < max_parts && a.n_out * parts < wanted && a.n_in >= 2 * parts * kMinPartColumns) {
        parts *= 2;
    }
    return parts;
}

// The GEMV of a, whose input is Plain, finished as kFinish says.
template <QuantizedFormat kType, GemvFinish kFinish>
void launch_gemv(const QuantizedLinearArgs& a, cudaStream_t stream) {
    const int parts = gemv_parts(a);
    const int64_t rows_per_block = kWarpsPerBlock / parts;
    const dim3 grid(static_cast<unsigned int>((a.n_out + rows_per_block - 1) / rows_per_block));
    if (a.n_in % 8 != 0) {
        launch_chained(quantized_gemv_columns_f32_kernel<kType, kFinish>, grid, dim3(kBlock), 0, stream, a,
                       parts);
        return;
    }
    // Accumulators for 1, 2, 4 or 8 rows, the fewest that hold a.n.
    const int n_rows = a.n <= 1 ? 1 : a.n <= 2 ? 2 : a.n <= 4 ? 4 : 8;
    const bool norm = a.input == LinearInput::RmsNorm;  // a single row (gemv_takes_norm)
    if constexpr (kType == QuantizedFormat::Wint4) {
        if (launch_streamed_gemv(a, kFinish, norm, stream)) {
            return;
        }
    }
    if constexpr (paired_finish(kFinish)) {
        // A warp a pair at one row, and for SwiGLU at two as well (RoPE's pairs measured slower there).
        if (n_rows == 1 || (kFinish == GemvFinish::Swiglu && n_rows == 2)) {
            // Two pairs a warp for a wide SwiGLU or q/k/v output of one row: twice the loads in flight a
            // warp.
            const bool two_pairs =
                n_rows == 1 && kType != QuantizedFormat::Bf16 &&
                a.n_out / 2 >= (kFinish == GemvFinish::Swiglu ? kTwoPairsMinPairs : kRopeTwoPairsMinPairs);
            const int64_t pairs_per_block = kWarpsPerBlock * (two_pairs ? 2 : 1);
            const dim3 pair_grid(
                static_cast<unsigned int>((a.n_out / 2 + pairs_per_block - 1) / pairs_per_block));
            auto* kernel = norm ? quantized_gemv_pairs_kernel<kType, kFinish, 1, true>
                                : quantized_gemv_pairs_kernel<kType, kFinish, 1, false>;
            if constexpr (kFinish == GemvFinish::Swiglu) {
                if (n_rows == 2) {
                    kernel = quantized_gemv_pairs_kernel<kType, kFinish, 2, false>;
                }
            }
            if constexpr (kType != QuantizedFormat::Bf16) {
                if (two_pairs) {  // one row
                    kernel = norm ? quantized_gemv_pairs_kernel<kType, kFinish, 1, true, 2>
                                  : quantized_gemv_pairs_kernel<kType, kFinish, 1, false, 2>;
                }
            }
            launch_chained(kernel, pair_grid, dim3(kBlock), 0, stream, a);
            return;
        }
    } else if (norm) {
        launch_chained(quantized_gemv_f32_kernel<kType, kFinish, 1, true>, grid, dim3(kBlock), 0, stream, a,
                       parts);
        return;
    }
    if constexpr (kType == QuantizedFormat::Wint4 && kFinish == GemvFinish::Store) {
        if (n_rows == 1) {
            launch_chained(quantized_gemv_f32_kernel<kType, kFinish, 1, false, kWint4SingleRowChunks>, grid,
                           dim3(kBlock), 0, stream, a, parts);
            return;
        }
    }
    with_1_2_4_8(n_rows, [&](auto rows) {
        launch_chained(quantized_gemv_f32_kernel<kType, kFinish, rows.value, false>, grid, dim3(kBlock), 0,
                       stream, a, parts);
    });
}

template <QuantizedFormat kType>
void launch_gemv(const QuantizedLinearArgs& a, cudaStream_t stream) {
    if (a.output == LinearOutput::Swiglu) {
        launch_gemv<kType, GemvFinish::Swiglu>(a, stream);
    } else if (a.output == LinearOutput::RopeToCache) {
        launch_gemv<kType, GemvFinish::Rope>(a, stream);
    } else {
        launch_gemv<kType, GemvFinish::Store>(a, stream);
    }
}

}  // namespace

bool gemv_takes_norm(const QuantizedLinearArgs& a) {
    return a.input == LinearInput::RmsNorm && a.n <= kGemvNormMaxRows && a.n_in % 8 == 0;
}

void launch_gemv(const QuantizedLinearArgs& a, cudaStream_t stream) {
    if (a.format == QuantizedFormat::Bf16) {
        launch_gemv<QuantizedFormat::Bf16>(a, stream);
    } else if (a.format == QuantizedFormat::Wint8) {
        launch_gemv<QuantizedFormat::Wint8>(a, stream);
    } else {
        launch_gemv<QuantizedFormat::Wint4>(a, stream);
    }
}

}  // namespace folio::kernels
