#include <algorithm>

#include <cuda_bf16.h>

#include "activation.cuh"
#include "chained-launch.cuh"
#include "cuda-check.h"
#include "dispatch.cuh"
#include "elementwise.h"
#include "error.h"
#include "mma.cuh"
#include "norm.h"
#include "quantized-linear.h"
#include "reduce.cuh"
#include "rope-pair.cuh"

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
// Eight-column chunks a lane loads before it multiplies: several loads in flight per lane keep the memory
// system busy when a step's few rows give the device few warps.
constexpr int kChunksInFlight = 4;

__device__ inline float low_nibble(int8_t byte) {
    return static_cast<float>(static_cast<int8_t>(static_cast<int8_t>(byte << 4) >> 4));
}

__device__ inline float high_nibble(int8_t byte) {
    return static_cast<float>(static_cast<int8_t>(byte >> 4));
}

__device__ inline float bf16_bits_to_float(uint16_t h) {
    return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

// Column c of weight row o, dequantized as dequantize_row() does.
template <QuantizedFormat kType>
__device__ inline float weight_at(const int8_t* q, const float* scales, int64_t o, int64_t c, int64_t n_in,
                                  int64_t group_size) {
    if constexpr (kType == QuantizedFormat::Bf16) {
        return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(q)[o * n_in + c]);
    } else if constexpr (kType == QuantizedFormat::Wint8) {
        return static_cast<float>(q[o * n_in + c]) * scales[o];
    } else {
        const int8_t byte = q[o * (n_in / 2) + c / 2];
        const float scale = scales[o * (n_in / group_size) + c / group_size];
        return ((c & 1) ? high_nibble(byte) : low_nibble(byte)) * scale;
    }
}

// The L2 policy of weight loads: the lines they bring in are the first to be evicted. A step reads each
// weight once and more weights than the L2 cache holds, so weights kept there would only push out what the
// step reads again soon (the K/V cache, activations, norm weights).
__device__ inline uint64_t evict_first_policy() {
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}

// 16, 8 or 4 bytes of weights at p, aligned to their size, loaded under policy.
__device__ inline uint4 load_weights_16(const void* p, uint64_t policy) {
    uint4 v;
    asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(policy));
    return v;
}

__device__ inline uint2 load_weights_8(const void* p, uint64_t policy) {
    uint2 v;
    asm volatile("ld.global.nc.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
                 : "=r"(v.x), "=r"(v.y)
                 : "l"(p), "l"(policy));
    return v;
}

__device__ inline uint32_t load_weights_4(const void* p, uint64_t policy) {
    uint32_t v;
    asm volatile("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(policy));
    return v;
}

// Columns per scale of a WINT4 row as a shift (meaningless for the other formats): group_size is a power of
// two (check_group_size), so that a chunk's scale is found without a 64-bit division.
__device__ inline int group_shift(int64_t group_size) {
    return __ffsll(group_size) - 1;
}

// The packed bytes of eight consecutive columns [c, c + 8) of weight row o and their scale, as loaded under
// policy (from evict_first_policy): c is a multiple of 8 and n_in of 8 (of 64 for WINT4), so the bytes are
// one 16-, 8- or 4-byte word and the eight columns share a WINT4 group of 1 << shift columns.
struct Packed8 {
    uint4 bits;
    float scale;
};

template <QuantizedFormat kType>
__device__ inline Packed8 load_packed8(const int8_t* q, const float* scales, int64_t o, int64_t c,
                                       int64_t n_in, int shift, uint64_t policy) {
    Packed8 p{};
    if constexpr (kType == QuantizedFormat::Bf16) {
        p.bits = load_weights_16(q + (o * n_in + c) * 2, policy);
    } else if constexpr (kType == QuantizedFormat::Wint8) {
        const uint2 word = load_weights_8(q + o * n_in + c, policy);
        p.bits.x = word.x;
        p.bits.y = word.y;
        p.scale = scales[o];
    } else {
        p.bits.x = load_weights_4(q + o * (n_in / 2) + c / 2, policy);
        p.scale = scales[o * (n_in >> shift) + (c >> shift)];
    }
    return p;
}

// Byte `byte` of word, an unsigned level u, as the float 2^23 + u minus bias: u goes into the low mantissa
// bits of 2^23 by a byte permute, and the subtraction is exact: a permute and an add in place of an integer-
// to-float conversion.
__device__ inline float level_of_byte(uint32_t word, int byte, float bias) {
    constexpr uint32_t kTwoTo23Bits = 0x4B000000u;
    return __uint_as_float(__byte_perm(word, kTwoTo23Bits, 0x7440u | static_cast<uint32_t>(byte))) - bias;
}

// The eight weights of a Packed8 before their scale: bfloat16 values, or the signed WINT8/WINT4 levels,
// exactly. Each level is offset to unsigned first (by 128 or 8, an exclusive or of its top bit), and the
// offset is part of the bias taken off.
template <QuantizedFormat kType>
__device__ inline void unpack8_levels(const Packed8& p, float out[8]) {
    if constexpr (kType == QuantizedFormat::Bf16) {
        const auto* halves = reinterpret_cast<const uint16_t*>(&p.bits);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            out[i] = bf16_bits_to_float(halves[i]);
        }
    } else if constexpr (kType == QuantizedFormat::Wint8) {
        constexpr float kBias = 8388608.0f + 128.0f;
        const uint32_t words[2] = {p.bits.x ^ 0x80808080u, p.bits.y ^ 0x80808080u};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            out[i] = level_of_byte(words[i / 4], i % 4, kBias);
        }
    } else {
        constexpr float kBias = 8388608.0f + 8.0f;
        const uint32_t offset = p.bits.x ^ 0x88888888u;
        const uint32_t low = offset & 0x0F0F0F0Fu, high = (offset >> 4) & 0x0F0F0F0Fu;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            out[2 * i] = level_of_byte(low, i, kBias);
            out[2 * i + 1] = level_of_byte(high, i, kBias);
        }
    }
}

// The eight weights of a Packed8, dequantized as dequantize_row() does.
template <QuantizedFormat kType>
__device__ inline void unpack8(const Packed8& p, float out[8]) {
    unpack8_levels<kType>(p, out);
    if constexpr (kType != QuantizedFormat::Bf16) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            out[i] *= p.scale;
        }
    }
}

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
// lane, and dots them with every row of x. The first kChunksInFlight chunks are loaded before the wait for
// the previous kernel (the weights are uploaded, never written by a kernel), and a RopeToCache output's
// targets found. With kNorm each chunk of x is multiplied by the norm's weights as it is read and its squares
// summed (an RMSNorm input). kRows >= n rows of x; n_in is a multiple of 8.  x [n, n_in], b [n_out] or null,
// y as a.output says
template <QuantizedFormat kType, GemvFinish kFinish, int kRows, bool kNorm>
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
    Packed8 w[kChunksInFlight];
    const uint64_t policy = evict_first_policy();
    const auto load = [&](int64_t c0) {
#pragma unroll
        for (int k = 0; k < kChunksInFlight; ++k) {
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
    for (int64_t c0 = first; valid && c0 < n_in; c0 += stride * kChunksInFlight) {
        if (c0 != first) {
            load(c0);
        }
#pragma unroll
        for (int k = 0; k < kChunksInFlight; ++k) {
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
template <QuantizedFormat kType, GemvFinish kFinish, int kRows, bool kNorm>
__global__ void __launch_bounds__(kBlock, kPairBlocksPerSm)
    quantized_gemv_pairs_kernel(QuantizedLinearArgs a) {
    static_assert(paired_finish(kFinish));
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int pair =
        static_cast<int>(blockIdx.x) * kWarpsPerBlock + static_cast<int>(threadIdx.x) / kWarpSize;
    const int64_t n_pairs = a.n_out / 2;
    const bool valid = pair < n_pairs;
    const int64_t rows[2] = {valid ? gemv_weight_row<kFinish>(a, 2 * pair) : 0,
                             valid ? gemv_weight_row<kFinish>(a, 2 * pair + 1) : 0};
    const int64_t n_in = a.n_in;
    constexpr int64_t kStride = int64_t{kWarpSize} * 8;  // columns between a lane's chunks
    const int64_t first = int64_t{lane} * 8;
    const int shift = group_shift(a.group_size);
    const uint64_t policy = evict_first_policy();
    Packed8 w[2][kChunksInFlight];
    const auto load = [&](int64_t c0) {
#pragma unroll
        for (int k = 0; k < kChunksInFlight; ++k) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                if (valid && c0 + k * kStride < n_in) {
                    w[h][k] =
                        load_packed8<kType>(a.q, a.scales, rows[h], c0 + k * kStride, n_in, shift, policy);
                }
            }
        }
    };
    load(first);
    // Where lane r's pair goes and how it turns, for a RopeToCache output.
    const RopePairTarget rope = gemv_rope_target<kFinish>(a, 2 * pair, valid, 0, lane);
    wait_for_prior_grids();
    start_dependent_grids();
    float acc[2][kRows] = {};
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
            float wk[2][8];
            unpack8_levels<kType>(w[0][k], wk[0]);
            unpack8_levels<kType>(w[1][k], wk[1]);
            for_each_input_row8<kRows, kNorm>(a, c, squares, [&](int r, const float xv[8]) {
                acc[0][r] = add_dot8<kType>(acc[0][r], xv, wk[0], w[0][k]);
                acc[1][r] = add_dot8<kType>(acc[1][r], xv, wk[1], w[1][k]);
            });
        }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        acc[0][r] = warp_sum(acc[0][r]);
        acc[1][r] = warp_sum(acc[1][r]);
        if constexpr (kNorm) {
            squares[r] = warp_sum(squares[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        if (valid && lane == r && r < a.n) {
            const float scale = kNorm ? inverse_rms(squares[r], a) : 1.0f;
            const float first_sum = acc[0][r] * scale + (a.b ? a.b[rows[0]] : 0.0f);
            const float second_sum = acc[1][r] * scale + (a.b ? a.b[rows[1]] : 0.0f);
            if constexpr (kFinish == GemvFinish::Swiglu) {
                a.y[r * n_pairs + pair] = silu(first_sum) * second_sum;
            } else {
                const int d = static_cast<int>(a.rope.head_dim);
                store_rope_pair(rope, 2 * pair % d / 2, d / 2, first_sum, second_sum);
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

// One thread per weight, rounded to bfloat16.  w [n_rows, n_in] <- rows [row_begin, row_begin + n_rows) of
// the packed matrix
template <QuantizedFormat kType>
__global__ void dequantize_rows_bf16_kernel(const int8_t* q, const float* scales, __nv_bfloat16* w,
                                            int64_t row_begin, int64_t n_rows, int64_t n_in,
                                            int64_t group_size) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n_rows * n_in) {
        w[i] = __float2bfloat16_rn(
            weight_at<kType>(q, scales, row_begin + i / n_in, i % n_in, n_in, group_size));
    }
}

// The same, one thread per eight consecutive weights, loaded packed and stored as one 16-byte word: n_in a
// multiple of 8 and n_rows * n_in below 2^31.  w [n_rows, n_in] as 16-byte words
template <QuantizedFormat kType>
__global__ void dequantize_rows8_bf16_kernel(const int8_t* q, const float* scales, uint4* w,
                                             int64_t row_begin, int n_rows, int n_in, int64_t group_size) {
    const int per_row = n_in / 8;
    const int i = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
    if (i >= n_rows * per_row) {
        return;
    }
    const int r = i / per_row, c = (i - r * per_row) * 8;
    float v[8];
    unpack8<kType>(
        load_packed8<kType>(q, scales, row_begin + r, c, n_in, group_shift(group_size), evict_first_policy()),
        v);
    w[i] = uint4{pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]), pack_bf16(v[6], v[7])};
}

// One thread per value.  x [n] float32  ->  y [n] bfloat16, rounded to nearest even
__global__ void round_to_bf16_kernel(const float* x, __nv_bfloat16* y, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = __float2bfloat16_rn(x[i]);
    }
}

// The same, one thread per four values read and written together; x 16-byte and y 8-byte aligned.
__global__ void round_to_bf16_x4_kernel(const float4* __restrict__ x, uint2* __restrict__ y,
                                        int64_t n_quads) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n_quads) {
        const float4 v = x[i];
        const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
        y[i] = uint2{*reinterpret_cast<const uint32_t*>(&lo), *reinterpret_cast<const uint32_t*>(&hi)};
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

namespace {

// The input of a transformed as a.input says (RmsNorm or LayerNorm), as the GEMV reads it.  ->  y [a.n,
// a.n_in]
void transform_input(const QuantizedLinearArgs& a, float* y, cudaStream_t stream) {
    if (a.input == LinearInput::LayerNorm) {
        layer_norm_f32(a.x, a.norm_w, a.norm_b, y, a.n, a.n_in, a.eps, stream);
    } else {
        rms_norm_f32(a.x, a.norm_w, y, a.n, a.n_in, a.eps, stream);
    }
}

// The same rounded to bfloat16, as the tensor cores read it.  ->  y [a.n, a.n_in]
void transform_input(const QuantizedLinearArgs& a, __nv_bfloat16* y, cudaStream_t stream) {
    auto* bits = reinterpret_cast<uint16_t*>(y);
    if (a.input == LinearInput::LayerNorm) {
        layer_norm_bf16(a.x, a.norm_w, a.norm_b, bits, a.n, a.n_in, a.eps, stream);
    } else {
        rms_norm_bf16(a.x, a.norm_w, bits, a.n, a.n_in, a.eps, stream);
    }
}

// WINT4's columns per scale: a power of two of at least 8, so that each eight-column chunk of the GEMV and
// of the dequantization shares one scale and finds it by a shift (group_shift).
void check_group_size(const char* what, QuantizedFormat format, int64_t group_size) {
    if (format == QuantizedFormat::Wint4 && (group_size < 8 || (group_size & (group_size - 1)) != 0)) {
        fail(what, ": WINT4 groups of ", group_size, " columns, not a power of two of at least 8");
    }
}

// Whether the GEMV applies a's RMSNorm input itself, as it reads x: at up to kGemvNormMaxRows rows and
// columns in whole chunks of eight. Otherwise a pass writes the normed input first.
bool gemv_takes_norm(const QuantizedLinearArgs& a) {
    return a.input == LinearInput::RmsNorm && a.n <= kGemvNormMaxRows && a.n_in % 8 == 0;
}

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
    if constexpr (paired_finish(kFinish)) {
        // A warp a pair at one row, and for SwiGLU at two as well (RoPE's pairs measured slower there).
        if (n_rows == 1 || (kFinish == GemvFinish::Swiglu && n_rows == 2)) {
            const dim3 pair_grid(
                static_cast<unsigned int>((a.n_out / 2 + kWarpsPerBlock - 1) / kWarpsPerBlock));
            auto* kernel = norm ? quantized_gemv_pairs_kernel<kType, kFinish, 1, true>
                                : quantized_gemv_pairs_kernel<kType, kFinish, 1, false>;
            if constexpr (kFinish == GemvFinish::Swiglu) {
                if (n_rows == 2) {
                    kernel = quantized_gemv_pairs_kernel<kType, kFinish, 2, false>;
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

void launch_gemv(const QuantizedLinearArgs& a, cudaStream_t stream) {
    if (a.format == QuantizedFormat::Bf16) {
        launch_gemv<QuantizedFormat::Bf16>(a, stream);
    } else if (a.format == QuantizedFormat::Wint8) {
        launch_gemv<QuantizedFormat::Wint8>(a, stream);
    } else {
        launch_gemv<QuantizedFormat::Wint4>(a, stream);
    }
}

// Floats of scratch that hold x in bfloat16, rounded up so that what follows starts 256-byte aligned.
int64_t bf16_activation_floats(int64_t n, int64_t n_in) {
    constexpr int64_t kAlignFloats = 64;
    return ((n * n_in + 1) / 2 + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

// Weight rows dequantized at once: all of them, or as many as fit 16 Mi bfloat16 values (at least one).
int64_t dequantize_block_rows(int64_t n_in, int64_t n_out) {
    constexpr int64_t kDequantizeValues = int64_t{16} << 20;
    return std::min(n_out, std::max<int64_t>(kDequantizeValues / std::max<int64_t>(n_in, 1), 1));
}

// Floats of scratch at its start that hold the input rounded to bfloat16: none where x_bf16 holds it.
int64_t input_scratch_floats(const QuantizedLinearArgs& a) {
    return a.x_bf16 != nullptr ? 0 : bf16_activation_floats(a.n, a.n_in);
}

// Floats of scratch before the product of a paired output on the tensor cores: the bfloat16 input, and the
// dequantized weight rows of WINT8/WINT4.
int64_t gemm_operand_floats(const QuantizedLinearArgs& a) {
    const int64_t activations = input_scratch_floats(a);
    if (a.format == QuantizedFormat::Bf16) {
        return activations;
    }
    return activations + bf16_activation_floats(dequantize_block_rows(a.n_in, a.n_out), a.n_in);
}

}  // namespace

int64_t quantized_linear_scratch_floats(const QuantizedLinearArgs& a) {
    if (a.n <= kQuantizedGemvMaxRows) {
        return a.input == LinearInput::Plain || gemv_takes_norm(a) ? 0 : a.n * a.n_in;
    }
    const int64_t product = a.output == LinearOutput::Plain ? 0
                            : a.y_bf16 != nullptr           ? bf16_activation_floats(a.n, a.n_out)
                                                            : a.n * a.n_out;
    return gemm_operand_floats(a) + product;
}

void round_to_bf16(const float* x, uint16_t* y_bits, int64_t n, cudaStream_t stream) {
    auto* y = reinterpret_cast<__nv_bfloat16*>(y_bits);
    const bool quads =
        n % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0;
    const int64_t n_threads = quads ? n / 4 : n;
    const auto n_blocks = static_cast<unsigned int>((n_threads + kBlock - 1) / kBlock);
    if (quads) {
        round_to_bf16_x4_kernel<<<n_blocks, kBlock, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                                 reinterpret_cast<uint2*>(y), n_threads);
    } else {
        round_to_bf16_kernel<<<n_blocks, kBlock, 0, stream>>>(x, y, n);
    }
    CUDA_CHECK(cudaGetLastError());
}

void dequantize_rows_bf16(QuantizedFormat format, const int8_t* q, const float* scales, uint16_t* w,
                          int64_t row_begin, int64_t n_rows, int64_t n_in, int64_t group_size,
                          cudaStream_t stream) {
    const int64_t n = n_rows * n_in;
    if (n == 0) {
        return;
    }
    check_group_size("dequantize_rows_bf16", format, group_size);
    auto* out = reinterpret_cast<__nv_bfloat16*>(w);
    const bool packed8 = format != QuantizedFormat::Bf16 && n_in % 8 == 0 && n < (int64_t{1} << 31) &&
                         reinterpret_cast<uintptr_t>(q) % 8 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    if (packed8) {
        const auto n_pieces = static_cast<unsigned int>(n / 8);
        const auto launch = [&](auto kernel) {
            kernel<<<(n_pieces + kBlock - 1) / kBlock, kBlock, 0, stream>>>(
                q, scales, reinterpret_cast<uint4*>(w), row_begin, static_cast<int>(n_rows),
                static_cast<int>(n_in), group_size);
        };
        if (format == QuantizedFormat::Wint8) {
            launch(dequantize_rows8_bf16_kernel<QuantizedFormat::Wint8>);
        } else {
            launch(dequantize_rows8_bf16_kernel<QuantizedFormat::Wint4>);
        }
        CUDA_CHECK(cudaGetLastError());
        return;
    }
    const auto n_blocks = static_cast<unsigned int>((n + kBlock - 1) / kBlock);
    if (format == QuantizedFormat::Bf16) {
        dequantize_rows_bf16_kernel<QuantizedFormat::Bf16>
            <<<n_blocks, kBlock, 0, stream>>>(q, scales, out, row_begin, n_rows, n_in, group_size);
    } else if (format == QuantizedFormat::Wint8) {
        dequantize_rows_bf16_kernel<QuantizedFormat::Wint8>
            <<<n_blocks, kBlock, 0, stream>>>(q, scales, out, row_begin, n_rows, n_in, group_size);
    } else {
        dequantize_rows_bf16_kernel<QuantizedFormat::Wint4>
            <<<n_blocks, kBlock, 0, stream>>>(q, scales, out, row_begin, n_rows, n_in, group_size);
    }
    CUDA_CHECK(cudaGetLastError());
}

void quantized_linear_f32(LtGemm& gemm, const QuantizedLinearArgs& a, float* scratch, int64_t n_scratch,
                          cudaStream_t stream) {
    if (a.n == 0 || a.n_out == 0) {
        return;
    }
    check_group_size("quantized_linear_f32", a.format, a.group_size);
    if (a.output != LinearOutput::Plain && (a.n_out % 2 != 0 || a.epilogue != LinearEpilogue::Store)) {
        fail("quantized_linear_f32: a paired output needs an even n_out and a stored epilogue, got n_out ",
             a.n_out, " and epilogue ", static_cast<int>(a.epilogue));
    }
    if (a.output == LinearOutput::RopeToCache &&
        a.n_out != (a.rope.n_head + 2 * a.rope.n_kv_head) * a.rope.head_dim) {
        fail("quantized_linear_f32: ", a.n_out, " output rows for ", a.rope.n_head, " q and ",
             a.rope.n_kv_head, " k/v heads of ", a.rope.head_dim);
    }
    const bool tensor_cores = a.n > kQuantizedGemvMaxRows;
    if (a.x_bf16 != nullptr && (!tensor_cores || a.input != LinearInput::Plain)) {
        fail("quantized_linear_f32: a bfloat16 input takes a plain input above ", kQuantizedGemvMaxRows,
             " rows, got ", a.n, " rows and input ", static_cast<int>(a.input));
    }
    if (a.y_bf16 != nullptr && (!tensor_cores || a.output != LinearOutput::Swiglu || a.b != nullptr)) {
        fail("quantized_linear_f32: a bfloat16 output takes a SwiGLU output without a bias above ",
             kQuantizedGemvMaxRows, " rows, got ", a.n, " rows, output ", static_cast<int>(a.output),
             a.b != nullptr ? " and a bias" : "");
    }
    const int64_t needed = quantized_linear_scratch_floats(a);
    if (n_scratch < needed) {
        fail("quantized_linear_f32: scratch of ", n_scratch, " floats for ", a.n, " x ", a.n_in,
             " activations and ", a.n_out, " weight rows needs ", needed);
    }
    if (!tensor_cores) {
        if (a.input == LinearInput::Plain || gemv_takes_norm(a)) {
            launch_gemv(a, stream);
            return;
        }
        // The transformed input to scratch [a.n, a.n_in] first.
        QuantizedLinearArgs plain = a;
        transform_input(a, scratch, stream);
        plain.x = scratch;
        plain.input = LinearInput::Plain;
        launch_gemv(plain, stream);
        return;
    }
    // The input rounded to bfloat16 at the start of scratch (unless x_bf16 holds it); WINT8/WINT4 weight rows
    // dequantized to bfloat16 after it, a block at a time, each block's output columns written by a GEMM
    // with the epilogue fused.
    const uint16_t* x_bf16 = a.x_bf16;
    if (x_bf16 == nullptr) {
        auto* rounded = reinterpret_cast<__nv_bfloat16*>(scratch);
        if (a.input == LinearInput::Plain) {
            round_to_bf16(a.x, reinterpret_cast<uint16_t*>(rounded), a.n * a.n_in, stream);
        } else {
            transform_input(a, rounded, stream);
        }
        x_bf16 = reinterpret_cast<const uint16_t*>(rounded);
    }
    auto* w_bf16 = reinterpret_cast<uint16_t*>(scratch + input_scratch_floats(a));
    // [a.n, a.n_out]: the product itself, or before its paired output (in bfloat16 for a bfloat16 output)
    float* product = a.output != LinearOutput::Plain ? scratch + gemm_operand_floats(a) : a.y;
    auto* product_bf16 = a.y_bf16 != nullptr ? reinterpret_cast<uint16_t*>(product) : nullptr;
    const int64_t block_rows =
        a.format == QuantizedFormat::Bf16 ? a.n_out : dequantize_block_rows(a.n_in, a.n_out);
    for (int64_t o = 0; o < a.n_out; o += block_rows) {
        LtLinearArgs block;
        block.x = x_bf16;
        block.w = w_bf16;  // rows [o, o + block.n_out) in bfloat16
        if (a.format == QuantizedFormat::Bf16) {
            block.w = reinterpret_cast<const uint16_t*>(a.q) + o * a.n_in;
        }
        block.b = a.b != nullptr ? a.b + o : nullptr;
        if (product_bf16 != nullptr) {
            block.y_bf16 = product_bf16 + o;
        } else {
            block.y = product + o;
        }
        block.n = a.n;
        block.n_in = a.n_in;
        block.n_out = std::min(block_rows, a.n_out - o);
        block.ld_y = a.n_out;
        block.epilogue = a.epilogue;
        if (a.format != QuantizedFormat::Bf16) {
            dequantize_rows_bf16(a.format, a.q, a.scales, w_bf16, o, block.n_out, a.n_in, a.group_size,
                                 stream);
        }
        gemm.linear_bf16(block, stream);
    }
    if (a.output == LinearOutput::Swiglu && product_bf16 != nullptr) {
        swiglu_bf16(product_bf16, a.y_bf16, a.n, a.n_out / 2, stream);
    } else if (a.output == LinearOutput::Swiglu) {
        swiglu_f32(product, a.y, a.n, a.n_out / 2, stream);
    } else if (a.output == LinearOutput::RopeToCache) {
        rope_qkv_to_cache_f32(product, a.rope, a.n, stream);
    }
}

}  // namespace folio::kernels
