#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <cuda_bf16.h>

#include "engine/common/error.h"
#include "kernels/activation.cuh"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/dispatch.cuh"
#include "kernels/elementwise.h"
#include "kernels/mma.cuh"
#include "kernels/norm.h"
#include "kernels/quantized-gemv.h"
#include "kernels/quantized-linear.h"
#include "kernels/reduce.cuh"
#include "kernels/rope-pair.cuh"
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

// A single row's WINT4 GEMV with x held in registers (quantized_gemv_streamed_kernel), in three shapes of
// about the same registers: two consecutive words of x a lane and 16 output slots a warp (inputs up to 4,096
// in parts of 512 columns), else four or eight chunks of 256 columns a lane and 8 or 4 slots (up to 8,192 and
// 16,384 inputs).
constexpr int kStreamContiguousWords = 2;
constexpr int kStreamContiguousSlots = 16;
constexpr int kStreamNarrowChunks = 4;
constexpr int kStreamNarrowSlots = 8;
constexpr int kStreamWideChunks = 8;
constexpr int kStreamWideSlots = 4;

// Eight consecutive floats from p, 16-byte aligned.
__device__ inline void load8(const float* p, float v[8]) {
    const float4 lo = *reinterpret_cast<const float4*>(p);
    const float4 hi = *reinterpret_cast<const float4*>(p + 4);
    v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
    v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}

// The dot product of eight inputs with eight weights.
__device__ inline float dot8(const float x[8], const float w[8]) {
    return x[0] * w[0] + x[1] * w[1] + x[2] * w[2] + x[3] * w[3] + x[4] * w[4] + x[5] * w[5] + x[6] * w[6] +
           x[7] * w[7];
}

// acc plus the dot product of eight inputs with a Packed8's weights, from its levels (unpack8_levels): the
// levels' dot product times the scale, one multiply where scaling each weight takes eight.
template <QuantizedFormat kType>
__device__ inline float add_dot8(float acc, const float x[8], const float levels[8], const Packed8& p) {
    if constexpr (kType == QuantizedFormat::Bf16) {
        return acc + dot8(x, levels);
    } else {
        return fmaf(p.scale, dot8(x, levels), acc);
    }
}

// 1 / rms of a row of x whose squares add up to square_sum, as rms_norm_f32 computes it.
__device__ inline float inverse_rms(float square_sum, const QuantizedLinearArgs& a) {
    return rsqrtf(square_sum / static_cast<float>(a.n_in) + a.eps);
}

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

// What a GEMV kernel does with its sums, fixed when it is compiled, so that each product's kernel holds only
// its own epilogue: store them (with a.epilogue), or combine the pairs of a SwiGLU or RopeToCache output.
enum class GemvFinish { Store, Swiglu, Rope };

__host__ __device__ constexpr bool paired_finish(GemvFinish f) {
    return f != GemvFinish::Store;
}

// The weight row that output slot s of a GEMV works on: s itself; for a SwiGLU output gate row s / 2 in even
// slots and the matching up row in odd ones; for a RopeToCache output, within each head, row i in slot 2i
// and its rotate-half partner i + head_dim / 2 in slot 2i + 1. A block holds both slots of each pair. Slots
// and rows fit an int (n_out does).
template <GemvFinish kFinish>
__device__ inline int gemv_weight_row(const QuantizedLinearArgs& a, int s) {
    if constexpr (kFinish == GemvFinish::Swiglu) {
        return s / 2 + (s % 2) * static_cast<int>(a.n_out / 2);
    } else if constexpr (kFinish == GemvFinish::Rope) {
        const int d = static_cast<int>(a.rope.head_dim), in_head = s % d;
        return s - in_head + in_head / 2 + (in_head % 2) * (d / 2);
    } else {
        return s;
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

// A single row's product with x held in registers: each warp loads its part of x once and streams kSlots
// output slots' weight rows past it, so that x is read once a warp instead of once a weight row, where the
// L1 traffic of reading it (four bytes of x a weight against half a byte of WINT4) held the GEMV below the
// memory's rate. A lane holds kWords words of eight columns of its part: with kContiguous the part's columns
// [p·256·kWords, (p+1)·256·kWords), lane l owning 8·kWords consecutive ones from 8·kWords·l (one load and one
// scale a weight row); otherwise part p's chunks [p·part_chunks, (p+1)·part_chunks) of 256 columns, lane l
// owning columns 8·l + 256·k of each. The block's warps are n_parts parts of blockDim / 32 / n_parts slot
// groups, whose part sums meet in shared memory. All of a warp's weight words are loaded before the wait for
// the kernel ahead. With kNorm x is multiplied by the norm's weights as it is read, and 1 / rms comes from
// the parts' squares. n_in is a multiple of 8 (with kContiguous of 8·kWords, and the group size too); kSlots
// is even, so that a warp holds whole pairs of a paired output.  x [1, n_in], b [n_out] or null  ->  y as
// a.output says
template <QuantizedFormat kType, GemvFinish kFinish, bool kNorm, int kWords, int kSlots, bool kContiguous>
__global__ void __launch_bounds__(kBlock, 2)
    quantized_gemv_streamed_kernel(QuantizedLinearArgs a, int n_parts, int part_chunks) {
    static_assert(kSlots % 2 == 0 && kSlots <= kWarpSize);
    static_assert(!kContiguous || kWords == 2 || kWords == 4);
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int n_groups = static_cast<int>(blockDim.x) / kWarpSize / n_parts;
    const int part = warp % n_parts;
    const int first_slot = (static_cast<int>(blockIdx.x) * n_groups + warp / n_parts) * kSlots;
    const int64_t n_in = a.n_in;
    // The column of word k of this lane, and whether it is one of the part's.
    const int64_t first_column = kContiguous ? static_cast<int64_t>(part) * 256 * kWords + lane * 8 * kWords
                                             : static_cast<int64_t>(part) * part_chunks * 256 + lane * 8;
    const auto column = [&](int k) { return first_column + (kContiguous ? k * 8 : k * 256); };
    const auto holds = [&](int k) { return (kContiguous || k < part_chunks) && column(k) < n_in; };
    const int shift = group_shift(a.group_size);
    const uint64_t policy = evict_first_policy();
    // Every word is loaded, from a clamped address where its slot or column is not this warp's, so that no
    // load waits behind a branch that uses the one before it; such words meet zero inputs or are not stored.
    uint32_t bits[kSlots][kWords];
    float scales[kSlots][kContiguous ? 1 : kWords];
#pragma unroll
    for (int r = 0; r < kSlots; ++r) {
        const int64_t o = gemv_weight_row<kFinish>(a, min(first_slot + r, static_cast<int>(a.n_out) - 1));
        if constexpr (kContiguous) {
            const int64_t c = min(first_column, n_in - 8 * kWords);
            const int8_t* at = a.q + o * (n_in / 2) + c / 2;
            if constexpr (kWords == 2) {
                const uint2 v = load_weights_8(at, policy);
                bits[r][0] = v.x;
                bits[r][1] = v.y;
            } else {
                const uint4 v = load_weights_16(at, policy);
                bits[r][0] = v.x;
                bits[r][1] = v.y;
                bits[r][2] = v.z;
                bits[r][3] = v.w;
            }
            scales[r][0] = a.scales[o * (n_in >> shift) + (c >> shift)];
        } else {
#pragma unroll
            for (int k = 0; k < kWords; ++k) {
                const int64_t c = holds(k) ? column(k) : min(first_column, n_in - 8);
                const Packed8 w = load_packed8<kType>(a.q, a.scales, o, c, n_in, shift, policy);
                bits[r][k] = w.bits.x;
                scales[r][k] = w.scale;
            }
        }
    }
    // Lane l < kSlots finishes slot first_slot + l; for a RopeToCache output the even lanes their pairs.
    const int finish_slot = first_slot + lane;
    const bool finishes =
        part == 0 && lane < kSlots && finish_slot < a.n_out && (!paired_finish(kFinish) || lane % 2 == 0);
    RopePairTarget rope;
    if constexpr (kFinish == GemvFinish::Rope) {
        if (finishes) {
            const int d = static_cast<int>(a.rope.head_dim);
            rope = rope_pair_target(a.rope, 0, finish_slot / d, finish_slot % d / 2);
        }
    }
    wait_for_prior_grids();
    start_dependent_grids();
    const float accumulated =
        kFinish == GemvFinish::Store && a.epilogue == LinearEpilogue::Accumulate && finishes
            ? a.y[gemv_weight_row<kFinish>(a, finish_slot)]
            : 0.0f;
    // Words this lane does not hold (loaded from clamped addresses) meet zero inputs and add nothing.
    float xv[kWords][8];
    float squares = 0.0f;
    float norm_w[8];
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
        if (holds(k)) {
            load8(a.x + column(k), xv[k]);
            if constexpr (kNorm) {
                squares += dot8(xv[k], xv[k]);
                load8(a.norm_w + column(k), norm_w);
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    xv[k][i] *= norm_w[i];
                }
            }
        } else {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                xv[k][i] = 0.0f;
            }
        }
    }
    float acc[kSlots];
#pragma unroll
    for (int r = 0; r < kSlots; ++r) {
        acc[r] = 0.0f;
#pragma unroll
        for (int k = 0; k < kWords; ++k) {
            Packed8 w{};
            w.bits.x = bits[r][k];
            w.scale = scales[r][kContiguous ? 0 : k];
            float levels[8];
            unpack8_levels<kType>(w, levels);
            if constexpr (kContiguous) {
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    acc[r] = fmaf(xv[k][i], levels[i], acc[r]);
                }
            } else {
                acc[r] = add_dot8<kType>(acc[r], xv[k], levels, w);
            }
        }
        if constexpr (kContiguous) {
            acc[r] *= scales[r][0];
        }
    }
    __shared__ float part_sums[kWarpsPerBlock][kSlots];
    __shared__ float part_squares[kWarpsPerBlock];
#pragma unroll
    for (int r = 0; r < kSlots; ++r) {
        acc[r] = warp_sum(acc[r]);
    }
    if constexpr (kNorm) {
        squares = warp_sum(squares);
    }
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < kSlots; ++r) {
            part_sums[warp][r] = acc[r];
        }
        part_squares[warp] = squares;
    }
    __syncthreads();
    if (!finishes) {
        return;
    }
    float sum = 0.0f, second = 0.0f, square_sum = 0.0f;
    for (int p = 0; p < n_parts; ++p) {
        sum += part_sums[warp + p][lane];
        if constexpr (paired_finish(kFinish)) {
            second += part_sums[warp + p][lane + 1];
        }
        square_sum += part_squares[warp + p];
    }
    const float scale = kNorm ? inverse_rms(square_sum, a) : 1.0f;
    const int64_t o = gemv_weight_row<kFinish>(a, finish_slot);
    sum = sum * scale + (a.b ? a.b[o] : 0.0f);
    if constexpr (paired_finish(kFinish)) {
        const int64_t o_second = gemv_weight_row<kFinish>(a, finish_slot + 1);
        second = second * scale + (a.b ? a.b[o_second] : 0.0f);
        if constexpr (kFinish == GemvFinish::Swiglu) {
            a.y[o] = silu(sum) * second;
        } else {
            const int d = static_cast<int>(a.rope.head_dim);
            store_rope_pair(rope, finish_slot % d / 2, d / 2, sum, second);
        }
    } else {
        a.y[o] = a.epilogue == LinearEpilogue::GeluTanh     ? gelu_tanh(sum)
                 : a.epilogue == LinearEpilogue::Accumulate ? accumulated + sum
                                                            : sum;
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

// For a single row of WINT4 inputs, the streamed GEMV's parts and chunks of 256 columns a part: the fewest
// parts whose chunks fit max_chunks; none (0 parts) where even kWarpsPerBlock parts do not. A block holds
// kWarpsPerBlock / n_parts slot groups of n_parts warps.
struct StreamShape {
    int n_parts = 0;
    int part_chunks = 0;
};

StreamShape stream_shape(int64_t n_in, int max_chunks) {
    const int64_t n_chunks = (n_in + 255) / 256;
    const int64_t parts = (n_chunks + max_chunks - 1) / max_chunks;
    if (parts > kWarpsPerBlock) {
        return {};
    }
    return {static_cast<int>(parts), static_cast<int>((n_chunks + parts - 1) / parts)};
}

// The current device's multiprocessors.
int multiprocessors() {
    int device = 0, n = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    return n;
}

// Launches the streamed GEMV in the given shape where its blocks are at least the device's multiprocessors
// (fewer, as for a small model's products, leave too few loads in flight); returns whether it did.
template <QuantizedFormat kType, GemvFinish kFinish, int kWords, int kSlots, bool kContiguous>
bool launch_streamed(const QuantizedLinearArgs& a, bool norm, StreamShape shape, cudaStream_t stream) {
    const int n_groups = kWarpsPerBlock / shape.n_parts;
    const int64_t slots_per_block = int64_t{n_groups} * kSlots;
    const int64_t n_blocks = (a.n_out + slots_per_block - 1) / slots_per_block;
    if (n_blocks < multiprocessors()) {
        return false;
    }
    const dim3 block(static_cast<unsigned int>(n_groups * shape.n_parts * kWarpSize));
    auto* kernel = norm ? quantized_gemv_streamed_kernel<kType, kFinish, true, kWords, kSlots, kContiguous>
                        : quantized_gemv_streamed_kernel<kType, kFinish, false, kWords, kSlots, kContiguous>;
    launch_chained(kernel, dim3(static_cast<unsigned int>(n_blocks)), block, 0, stream, a, shape.n_parts,
                   shape.part_chunks);
    return true;
}

// Launches the streamed GEMV for a single row where it takes a (WINT4, n_in a multiple of 8 and at most
// 8·256·kStreamWideChunks, enough blocks); returns whether it did. The contiguous shape needs its words
// aligned and within one scale group.
template <QuantizedFormat kType, GemvFinish kFinish>
bool launch_streamed_gemv(const QuantizedLinearArgs& a, bool norm, cudaStream_t stream) {
    if constexpr (kType != QuantizedFormat::Wint4) {
        return false;
    } else {
        if (a.n != 1 || a.n_in % 8 != 0 || !streamed_gemv_enabled()) {
            return false;
        }
        constexpr int kLaneColumns = 8 * kStreamContiguousWords;
        if (a.n_in % kLaneColumns == 0 && a.group_size % kLaneColumns == 0 &&
            reinterpret_cast<uintptr_t>(a.q) % (kLaneColumns / 2) == 0) {
            if (const StreamShape shape = stream_shape(a.n_in, kStreamContiguousWords); shape.n_parts != 0) {
                return launch_streamed<kType, kFinish, kStreamContiguousWords, kStreamContiguousSlots, true>(
                    a, norm, shape, stream);
            }
        }
        if (const StreamShape narrow = stream_shape(a.n_in, kStreamNarrowChunks); narrow.n_parts != 0) {
            return launch_streamed<kType, kFinish, kStreamNarrowChunks, kStreamNarrowSlots, false>(
                a, norm, narrow, stream);
        }
        if (const StreamShape wide = stream_shape(a.n_in, kStreamWideChunks); wide.n_parts != 0) {
            return launch_streamed<kType, kFinish, kStreamWideChunks, kStreamWideSlots, false>(a, norm, wide,
                                                                                               stream);
        }
        return false;
    }
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
    if (launch_streamed_gemv<kType, kFinish>(a, norm, stream)) {
        return;
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

bool streamed_gemv_enabled() {
    static const bool off = [] {
        const char* value = std::getenv("FOLIO_GEMV_STREAMED");
        return value != nullptr && std::string_view(value) == "0";
    }();
    return !off;
}

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
