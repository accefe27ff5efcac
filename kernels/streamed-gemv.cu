#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kernels/activation.cuh"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/gemv-row.cuh"
#include "kernels/reduce.cuh"
#include "kernels/rope-pair.cuh"
#include "kernels/streamed-gemv.h"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

namespace {

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / kWarpSize;

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

// launch_streamed_gemv for one finish. The contiguous shape needs its words aligned and within one scale
// group.
template <GemvFinish kFinish>
bool launch_streamed_gemv(const QuantizedLinearArgs& a, bool norm, cudaStream_t stream) {
    constexpr QuantizedFormat kType = QuantizedFormat::Wint4;
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

}  // namespace

bool streamed_gemv_enabled() {
    static const bool off = [] {
        const char* value = std::getenv("FOLIO_GEMV_STREAMED");
        return value != nullptr && std::string_view(value) == "0";
    }();
    return !off;
}

bool launch_streamed_gemv(const QuantizedLinearArgs& a, GemvFinish finish, bool norm, cudaStream_t stream) {
    if (a.format != QuantizedFormat::Wint4) {
        return false;
    }
    switch (finish) {
        case GemvFinish::Swiglu:
            return launch_streamed_gemv<GemvFinish::Swiglu>(a, norm, stream);
        case GemvFinish::Rope:
            return launch_streamed_gemv<GemvFinish::Rope>(a, norm, stream);
        case GemvFinish::Store:
            break;
    }
    return launch_streamed_gemv<GemvFinish::Store>(a, norm, stream);
}

}  // namespace folio::kernels
