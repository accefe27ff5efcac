#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/reduce.cuh"
#include "kernels/token-sampling.h"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kBlock = 1024;
constexpr int kRadixBits = 8;
constexpr int kRadixBins = 1 << kRadixBits;

// (value, column) pairs: the larger value wins and, between equal values, the smaller column. A NaN never
// beats a number, and a NaN in column 0 is never beaten: the choice std::max_element makes.
struct Best {
    float value;
    int32_t column;
};

__device__ inline Best better(Best a, Best b) {
    return b.value > a.value || (b.value == a.value && b.column < a.column) ? b : a;
}

__device__ inline Best warp_best(Best v) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        Best other;
        other.value = __shfl_xor_sync(0xffffffffu, v.value, offset);
        other.column = __shfl_xor_sync(0xffffffffu, v.column, offset);
        v = better(v, other);
    }
    return v;
}

// The column std::max_element picks in row [d], valid in thread 0.
__device__ int32_t block_argmax(const float* row, int64_t d) {
    __shared__ Best partial[kBlock / kWarpSize];
    Best best{row[0], 0};
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
        best = better(best, Best{row[c], static_cast<int32_t>(c)});
    }
    best = warp_best(best);
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    if (lane == 0) {
        partial[warp] = best;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < static_cast<int>(blockDim.x) / kWarpSize; ++w) {
            best = better(best, partial[w]);
        }
    }
    return best.column;
}

constexpr int kChunkBlock = 256;
constexpr int kChunkLoads = 16;  // values a thread loads at once
constexpr int64_t kArgmaxChunk = int64_t{kChunkBlock} * kChunkLoads;

// Beaten by every number, and by -inf in any column.
__device__ inline Best no_best() {
    return Best{-INFINITY, INT32_MAX};
}

// One block per (row, chunk of kArgmaxChunk columns), chained: the chunk's best (value, column), NaNs left
// out.  x [n_rows, d]  ->  best [n_rows, n_chunks]
__global__ void __launch_bounds__(kChunkBlock)
    argmax_chunks_f32_kernel(const float* x, Best* best, int64_t d, int64_t n_chunks) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t begin = static_cast<int64_t>(blockIdx.y) * kArgmaxChunk;
    const float* row = x + static_cast<int64_t>(blockIdx.x) * d;  // [d]
    float values[kChunkLoads];
#pragma unroll
    for (int i = 0; i < kChunkLoads; ++i) {
        const int64_t c = begin + i * kChunkBlock + threadIdx.x;
        values[i] = c < d ? row[c] : NAN;
    }
    Best b = no_best();
#pragma unroll
    for (int i = 0; i < kChunkLoads; ++i) {
        b = better(b, Best{values[i], static_cast<int32_t>(begin + i * kChunkBlock + threadIdx.x)});
    }
    b = warp_best(b);
    __shared__ Best partial[kChunkBlock / kWarpSize];
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    if (lane == 0) {
        partial[warp] = b;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < kChunkBlock / kWarpSize; ++w) {
            b = better(b, partial[w]);
        }
        best[blockIdx.x * n_chunks + blockIdx.y] = b;
    }
}

// One warp per row, chained: the best of the row's chunks, against column 0 first (a NaN there is never
// beaten, as with std::max_element).  x [n_rows, d], best [n_rows, n_chunks]  ->  out [n_rows]
__global__ void argmax_merge_kernel(const float* x, const Best* best, int32_t* out, int64_t d,
                                    int64_t n_chunks) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int lane = static_cast<int>(threadIdx.x);
    // Column 0 is read along with the chunks' bests rather than after them.
    const float first = lane == 0 ? x[blockIdx.x * d] : 0.0f;
    Best b = no_best();
    for (int64_t c = lane; c < n_chunks; c += kWarpSize) {
        b = better(b, best[blockIdx.x * n_chunks + c]);
    }
    b = warp_best(b);
    if (lane == 0) {
        out[blockIdx.x] = better(Best{first, 0}, b).column;
    }
}

// As folio::ordered_bits and folio::rank_key (engine/sampling.h): a larger key ranks first.
__device__ inline uint32_t ordered_bits(float value) {
    const uint32_t bits = __float_as_uint(value);
    return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

__device__ inline float from_ordered_bits(uint32_t bits) {
    return __uint_as_float((bits & 0x80000000u) != 0 ? bits & 0x7fffffffu : ~bits);
}

__device__ inline uint64_t rank_key(float value, int64_t token) {
    return static_cast<uint64_t>(ordered_bits(value)) << 32 | ~static_cast<uint32_t>(token);
}

// op over the block, returned to every thread. blockDim.x a multiple of 32.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op) {
    __shared__ T partial[kWarpSize];
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    __syncthreads();  // partial may still be read by a previous call
    if (lane == 0) {
        partial[warp] = v;
    }
    __syncthreads();
    T total = partial[0];
    for (int w = 1; w < static_cast<int>(blockDim.x) / kWarpSize; ++w) {
        total = op(total, partial[w]);
    }
    return total;
}

template <typename T>
struct Scan {
    T inclusive;
    T exclusive;
    T total;
};

// Prefix sums of v in thread order. Thread t's exclusive sum is bit for bit thread t - 1's inclusive one,
// so that the threads' [exclusive, inclusive) ranges tile [0, total) without gaps or overlaps.
template <typename T>
__device__ Scan<T> block_scan(T v) {
    __shared__ T warp_base[kWarpSize + 1];
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int n_warps = static_cast<int>(blockDim.x) / kWarpSize;
    for (int offset = 1; offset < kWarpSize; offset *= 2) {
        const T up = __shfl_up_sync(0xffffffffu, v, offset);
        if (lane >= offset) {
            v += up;
        }
    }
    const T up = __shfl_up_sync(0xffffffffu, v, 1);
    const T before = lane > 0 ? up : T{0};
    __syncthreads();  // warp_base may still be read by a previous call
    if (lane == kWarpSize - 1) {
        warp_base[warp] = v;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        T running{0};
        for (int w = 0; w < n_warps; ++w) {
            const T warp_total = warp_base[w];
            warp_base[w] = running;
            running += warp_total;
        }
        warp_base[n_warps] = running;
    }
    __syncthreads();
    return {v + warp_base[warp], before + warp_base[warp], warp_base[n_warps]};
}

// The key of the k-th token in rank order (1 <= k <= d) of row x [d], to every thread: the top-k set is the
// tokens whose key is at least it. A radix select, kRadixBits of the key a pass from the top, that stops
// once the tokens under the prefix found so far are exactly the ones still needed.
__device__ uint64_t kth_rank_key(const float* x, int64_t d, int64_t k) {
    __shared__ int32_t counts[kRadixBins];
    __shared__ uint64_t chosen_prefix;
    __shared__ int64_t chosen_remaining;
    __shared__ bool all_needed;
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    uint64_t prefix = 0;
    int64_t remaining = k;
    for (int shift = 64 - kRadixBits; shift >= 0; shift -= kRadixBits) {
        for (int b = static_cast<int>(threadIdx.x); b < kRadixBins; b += static_cast<int>(blockDim.x)) {
            counts[b] = 0;
        }
        __syncthreads();
        const uint64_t high = shift + kRadixBits == 64 ? 0 : ~uint64_t{0} << (shift + kRadixBits);
        for (int64_t base = 0; base < d; base += blockDim.x) {
            const int64_t i = base + threadIdx.x;
            int bin = -1;
            if (i < d) {
                const uint64_t key = rank_key(x[i], i);
                if ((key & high) == prefix) {
                    bin = static_cast<int>((key >> shift) & (kRadixBins - 1));
                }
            }
            // One atomic per distinct bin of the warp: most values share their top bits.
            const unsigned peers = __match_any_sync(0xffffffffu, bin);
            if (bin >= 0 && lane == __ffs(static_cast<int>(peers)) - 1) {
                atomicAdd(&counts[bin], __popc(peers));
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int64_t above = 0;
            int digit = kRadixBins - 1;
            for (; digit > 0 && above + counts[digit] < remaining; --digit) {
                above += counts[digit];
            }
            chosen_prefix = prefix | static_cast<uint64_t>(digit) << shift;
            chosen_remaining = remaining - above;
            all_needed = counts[digit] == chosen_remaining;
        }
        __syncthreads();
        prefix = chosen_prefix;
        remaining = chosen_remaining;
        if (all_needed) {
            break;
        }
    }
    return prefix;
}

// The n-th token (from 1) in ascending order for which in_set holds, to every thread; n is at most their
// number.
template <typename InSet>
__device__ int64_t nth_token(int64_t d, int64_t n, InSet in_set) {
    __shared__ int64_t found;
    int64_t before = 0;
    for (int64_t base = 0; base < d && before < n; base += blockDim.x) {
        const int64_t i = base + threadIdx.x;
        const int flag = i < d && in_set(i) ? 1 : 0;
        const Scan<int> scan = block_scan(flag);
        if (flag != 0 && before + scan.inclusive == n) {
            found = i;
        }
        before += scan.total;
    }
    __syncthreads();
    return found;
}

// One block per row, as folio::choose_token with float sums.
// logits, scratch [n_rows, d], rows [n_rows], history [rows' ranges]  ->  out [n_rows]
__global__ void __launch_bounds__(kBlock)
    sample_rows_f32_kernel(const float* logits, const SampleRow* rows, const int32_t* history, float* scratch,
                           int32_t* out, int64_t d) {
    const SampleRow p = rows[blockIdx.x];
    const float* in = logits + static_cast<int64_t>(blockIdx.x) * d;
    float* x = scratch + static_cast<int64_t>(blockIdx.x) * d;  // [d] penalised, then divided by temperature
    const bool scaled = p.temperature != 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        x[i] = scaled ? in[i] / p.temperature : in[i];
    }
    if (p.repetition_penalty != 1.0f) {
        __syncthreads();
        // A repeated token is written again with the same value, from the caller's logits.
        for (int64_t h = threadIdx.x; h < p.history_count; h += blockDim.x) {
            const int32_t token = history[p.history_begin + h];
            const float l = in[token];
            const float penalised = l > 0.0f ? l / p.repetition_penalty : l * p.repetition_penalty;
            x[token] = scaled ? penalised / p.temperature : penalised;
        }
    }
    __syncthreads();
    if (!scaled) {
        const int32_t column = block_argmax(x, d);
        if (threadIdx.x == 0) {
            out[blockIdx.x] = column;
        }
        return;
    }

    uint32_t max_bits = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        max_bits = max(max_bits, ordered_bits(x[i]));
    }
    max_bits = block_reduce(max_bits, [](uint32_t a, uint32_t b) { return max(a, b); });
    const float max_value = from_ordered_bits(max_bits);
    // Tokens are kept while their key is at least `threshold`.
    uint64_t threshold = p.top_k > 0 && p.top_k < d ? kth_rank_key(x, d, p.top_k) : 0;
    if (p.top_p < 1.0f) {
        // The kept tokens' mass of value (as ordered bits) at least `bits`.
        const auto mass_from = [&](uint64_t bits) {
            float sum = 0.0f;
            for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
                if (ordered_bits(x[i]) >= bits && rank_key(x[i], i) >= threshold) {
                    sum += expf(x[i] - max_value);
                }
            }
            return block_sum(sum);
        };
        const uint64_t kept_bits = threshold >> 32;  // no kept token has a smaller value
        const float mass = p.top_p * mass_from(kept_bits);
        // The largest value whose tokens and those above reach the mass: mass_from(low) >= mass > high_mass.
        uint64_t low = kept_bits, high = uint64_t{max_bits} + 1;
        float high_mass = 0.0f;
        while (high - low > 1) {
            const uint64_t mid = low + (high - low) / 2;
            const float s = mass_from(mid);
            if (s >= mass) {
                low = mid;
            } else {
                high = mid;
                high_mass = s;
            }
        }
        // Of the kept tokens of that value, the fewest in token order that reach the mass.
        const auto tied = [&](int64_t i) {
            return ordered_bits(x[i]) == low && rank_key(x[i], i) >= threshold;
        };
        int64_t n_tied = 0;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            n_tied += tied(i) ? 1 : 0;
        }
        n_tied = block_reduce(n_tied, [](int64_t a, int64_t b) { return a + b; });
        const float weight = expf(from_ordered_bits(static_cast<uint32_t>(low)) - max_value);
        const int64_t n_needed =
            weight > 0.0f ? static_cast<int64_t>(fmaxf(
                                1.0f, fminf(ceilf((mass - high_mass) / weight), static_cast<float>(n_tied))))
                          : n_tied;
        const uint64_t cut = n_needed < n_tied ? rank_key(from_ordered_bits(static_cast<uint32_t>(low)),
                                                          nth_token(d, n_needed, tied))
                                               : low << 32;
        threshold = max(threshold, cut);
    }

    // The pick: each thread sums the weights of a run of consecutive tokens; the thread whose run holds the
    // target walks it.
    const int64_t run = (d + blockDim.x - 1) / blockDim.x;
    const int64_t begin = min(d, threadIdx.x * run);
    const int64_t end = min(d, begin + run);
    float run_sum = 0.0f;
    int64_t last_kept = -1;
    for (int64_t i = begin; i < end; ++i) {
        if (rank_key(x[i], i) >= threshold) {
            run_sum += expf(x[i] - max_value);
            last_kept = i;
        }
    }
    __shared__ int64_t chosen;
    if (threadIdx.x == 0) {
        chosen = -1;
    }
    const Scan<float> scan = block_scan(run_sum);
    const int64_t last = block_reduce(last_kept, [](int64_t a, int64_t b) { return max(a, b); });
    const float target = p.uniform * scan.total;
    if (scan.exclusive <= target && target < scan.inclusive) {
        float cumulative = scan.exclusive;
        int64_t pick = last_kept;
        for (int64_t i = begin; i < end; ++i) {
            if (rank_key(x[i], i) >= threshold) {
                cumulative += expf(x[i] - max_value);
                if (cumulative > target) {
                    pick = i;
                    break;
                }
            }
        }
        chosen = pick;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        out[blockIdx.x] = static_cast<int32_t>(chosen >= 0 ? chosen : last);
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

int64_t argmax_scratch_floats(int64_t n_rows, int64_t d) {
    static_assert(sizeof(Best) == 2 * sizeof(float));
    return 2 * n_rows * ((d + kArgmaxChunk - 1) / kArgmaxChunk);
}

void argmax_rows_f32(const float* x, int32_t* out, float* scratch, int64_t n_rows, int64_t d,
                     cudaStream_t stream) {
    if (n_rows == 0) {
        return;
    }
    const int64_t n_chunks = (d + kArgmaxChunk - 1) / kArgmaxChunk;
    auto* best = reinterpret_cast<Best*>(scratch);
    launch_chained(argmax_chunks_f32_kernel,
                   dim3(static_cast<unsigned int>(n_rows), static_cast<unsigned int>(n_chunks)),
                   dim3(kChunkBlock), 0, stream, x, best, d, n_chunks);
    launch_chained(argmax_merge_kernel, dim3(static_cast<unsigned int>(n_rows)), dim3(kWarpSize), 0, stream,
                   x, static_cast<const Best*>(best), out, d, n_chunks);
}

void sample_rows_f32(const float* logits, const SampleRow* rows, const int32_t* history, float* scratch,
                     int32_t* out, int64_t n_rows, int64_t vocab, cudaStream_t stream) {
    if (n_rows == 0) {
        return;
    }
    sample_rows_f32_kernel<<<static_cast<unsigned int>(n_rows), kBlock, 0, stream>>>(logits, rows, history,
                                                                                     scratch, out, vocab);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
