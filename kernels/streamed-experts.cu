#include <cstdint>

#include "kernels/chained-launch.cuh"
#include "kernels/expert-rows.cuh"
#include "kernels/reduce.cuh"
#include "kernels/streamed-experts.h"
#include "kernels/streamed-gemv.h"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

namespace {

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / kWarpSize;
// add_expert_down_streamed_kernel's lane chunks of h at most (inputs up to 256 of them each) and outputs a
// block.
constexpr int kDownStreamedChunks = 6;
constexpr int kDownStreamedOuts = 4;
// expert_swiglu_streamed_kernel's lane chunks of x a part (two parts) and SwiGLU columns a warp.
constexpr int kSwigluStreamedChunks = 5;
constexpr int kSwigluStreamedPairs = 4;

// expert_swiglu_rows_kernel for WINT4 inputs of at most 256·kParts·kChunks columns: each block's warps are
// kParts parts of kWarpsPerBlock / kParts groups, a group kPairs SwiGLU columns, each warp holding its part
// of x in registers and streaming its columns' gate and up rows past it, where a warp a column read x once
// for every pair of rows. The shared columns' blocks come first and load before the wait for the routing;
// the chosen columns' after it. The parts' sums meet in shared memory.
template <QuantizedFormat kType, int kParts, int kChunks, int kPairs>
__global__ void __launch_bounds__(kBlock, 2)
    expert_swiglu_streamed_kernel(const float* x, ExpertWeights w, ExpertWeights shared,
                                  const int32_t* experts, float* y, int64_t n, int64_t k) {
    constexpr int kGroups = kWarpsPerBlock / kParts;
    constexpr int kColumnsPerBlock = kGroups * kPairs;
    __shared__ float sums[kWarpsPerBlock][2 * kPairs];
    const int64_t half = w.n_rows / 2, shared_half = shared.n_rows / 2;
    const int64_t n_cols = k * half + shared_half;
    const int64_t shared_blocks = (shared_half + kColumnsPerBlock - 1) / kColumnsPerBlock;
    const int warp = static_cast<int>(threadIdx.x / kWarpSize);
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    const int part = warp % kParts, group = warp / kParts;
    const int64_t i = blockIdx.y, b = blockIdx.x;
    const bool in_shared = b < shared_blocks;
    const int64_t first_col = (in_shared ? b : b - shared_blocks) * kColumnsPerBlock + group * kPairs;
    const int64_t n_block_cols = in_shared ? shared_half : k * half;
    const float* xr = x + i * w.n_in;
    float* yr = y + i * n_cols;
    const int64_t first_column = static_cast<int64_t>(part) * kChunks * 256 + lane * 8;
    const RowSource expert_rows = row_source<kType>(w), shared_rows = row_source<kType>(shared);
    const RowSource rows = in_shared ? shared_rows : expert_rows;
    const uint64_t policy = evict_normal_policy();
    if (!in_shared) {
        wait_for_prior_grids();
        start_dependent_grids();
    }
    // Every word is loaded, from a clamped address where its column, expert or input is not one to use, so
    // that no load waits behind a branch; such columns' sums are dropped (live) and such inputs are not read.
    uint32_t bits[2 * kPairs][kChunks];
    float scales[2 * kPairs][kChunks];
    bool live[kPairs];
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
        const int64_t col = min(first_col + p, n_block_cols - 1);
        live[p] = first_col + p < n_block_cols;
        int64_t gate_row = col, up_row = col + shared_half;
        if (!in_shared) {
            const int64_t j = col / half, o = col - j * half;
            const int32_t e = experts[i * k + j];
            // An expert out of range adds nothing: its column's SwiGLU is 0.
            live[p] = live[p] && e >= 0 && e < w.n_experts;
            gate_row = min(max(e, 0), static_cast<int32_t>(w.n_experts) - 1) * w.n_rows + o;
            up_row = gate_row + half;
        }
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
            const int64_t column = min(first_column + c * 256, w.n_in - 8);
            const Packed8 g =
                load_packed8<kType>(rows.q, rows.scales, gate_row, column, rows.n_in, rows.shift, policy);
            const Packed8 u =
                load_packed8<kType>(rows.q, rows.scales, up_row, column, rows.n_in, rows.shift, policy);
            bits[2 * p][c] = g.bits.x;
            scales[2 * p][c] = g.scale;
            bits[2 * p + 1][c] = u.bits.x;
            scales[2 * p + 1][c] = u.scale;
        }
    }
    if (in_shared) {
        wait_for_prior_grids();
        start_dependent_grids();
    }
    float acc[2 * kPairs] = {};
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
        const int64_t column = first_column + c * 256;
        if (column >= w.n_in) {
            break;
        }
        const float4 lo = *reinterpret_cast<const float4*>(xr + column);
        const float4 hi = *reinterpret_cast<const float4*>(xr + column + 4);
        const float xv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int r = 0; r < 2 * kPairs; ++r) {
            acc[r] = add_word_dot<kType>(acc[r], bits[r][c], scales[r][c], xv);
        }
    }
#pragma unroll
    for (int r = 0; r < 2 * kPairs; ++r) {
        acc[r] = warp_sum(acc[r]);
        if (lane == 0) {
            sums[warp][r] = acc[r];
        }
    }
    __syncthreads();
    const int64_t col = first_col + lane;
    if (part != 0 || lane >= kPairs || col >= n_block_cols) {
        return;
    }
    float gate = 0.0f, up = 0.0f;
#pragma unroll
    for (int t = 0; t < kParts; ++t) {
        gate += sums[warp + t][2 * lane];
        up += sums[warp + t][2 * lane + 1];
    }
    bool lane_live = false;
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
        lane_live = lane == p ? live[p] : lane_live;
    }
    if (!lane_live) {
        gate = 0.0f;
        up = 0.0f;
    }
    if (in_shared) {
        yr[k * half + col] = swiglu(gate, up);
    } else {
        yr[col] = swiglu(gate, up);
    }
}

// add_expert_down_kernel for WINT4 rows of at most 256·kChunks inputs, kOuts outputs a block: each warp
// holds its segment's columns of h in registers and streams the kOuts rows past them, where a warp a row
// read h once for each row. The chosen experts come from the routing two launches back, so a segment's
// weights are loaded before the wait for the kernel ahead (which writes h). Each lane adds its segments in
// the same order as add_expert_down_kernel, and the block its warps' sums, so the results are the same. Its
// registers are capped for two blocks a multiprocessor, so that one block's loads are in flight while the
// other sums.
template <QuantizedFormat kType, int kChunks, int kOuts>
__global__ void __launch_bounds__(kBlock, 2)
    add_expert_down_streamed_kernel(float* x, const float* h, ExpertWeights w, ExpertWeights shared,
                                    const int32_t* experts, const float* weights, int64_t n, int64_t k) {
    __shared__ float sums[kWarpsPerBlock][kOuts];
    const int64_t d = w.n_rows;
    const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kOuts, i = blockIdx.y;
    const int warp = static_cast<int>(threadIdx.x / kWarpSize);
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    const float* hr = h + i * (k * w.n_in + shared.n_in);
    const int64_t n_shared_parts = shared.n_rows > 0 ? (shared.n_in + w.n_in - 1) / w.n_in : 0;
    const RowSource expert_rows = row_source<kType>(w), shared_rows = row_source<kType>(shared);
    const uint64_t policy = evict_normal_policy();
    float acc[kOuts] = {};
    bool waited = false;
    for (int64_t segment = warp; segment < k + n_shared_parts; segment += kWarpsPerBlock) {
        const bool chosen = segment < k;
        const int32_t e = chosen ? experts[i * k + segment] : 0;
        const bool live = !chosen || (e >= 0 && e < w.n_experts);
        const RowSource rows = chosen ? expert_rows : shared_rows;
        const int64_t c_begin = chosen ? 0 : (segment - k) * w.n_in;
        const int64_t c_end = chosen                           ? w.n_in
                              : c_begin + w.n_in < shared.n_in ? c_begin + w.n_in
                                                               : shared.n_in;
        const float* input = chosen ? hr + segment * w.n_in : hr + k * w.n_in;
        // WINT4: a word and a scale a chunk (a Packed8 holds four words). Every word is loaded, from a
        // clamped address where its expert, output or column is not one to use, so that no load waits behind
        // a branch; such experts are skipped, outputs not stored and columns not read.
        const int64_t first_live_row = chosen ? min(max(e, 0), static_cast<int32_t>(w.n_experts) - 1) * d : 0;
        uint32_t bits[kOuts][kChunks];
        float scales[kOuts][kChunks];
#pragma unroll
        for (int r = 0; r < kOuts; ++r) {
#pragma unroll
            for (int j = 0; j < kChunks; ++j) {
                const int64_t c = min(c_begin + lane * 8 + j * 256, c_end - 8);
                const Packed8 p =
                    load_packed8<kType>(rows.q, rows.scales, first_live_row + min(o0 + r, d - 1), c,
                                        rows.n_in, rows.shift, policy);
                bits[r][j] = p.bits.x;
                scales[r][j] = p.scale;
            }
        }
        if (!waited) {
            wait_for_prior_grids();
            start_dependent_grids();
            waited = true;
        }
        if (!live) {
            continue;
        }
        const float weight = chosen ? weights[i * k + segment] : 1.0f;
        float part[kOuts] = {};
#pragma unroll
        for (int j = 0; j < kChunks; ++j) {
            const int64_t c = c_begin + lane * 8 + j * 256;
            if (c >= c_end) {
                break;
            }
            const float4 lo = *reinterpret_cast<const float4*>(input + c);
            const float4 hi = *reinterpret_cast<const float4*>(input + c + 4);
            const float xv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
            for (int r = 0; r < kOuts; ++r) {
                part[r] = add_word_dot<kType>(part[r], bits[r][j], scales[r][j], xv);
            }
        }
#pragma unroll
        for (int r = 0; r < kOuts; ++r) {
            acc[r] = chosen ? fmaf(weight, part[r], acc[r]) : acc[r] + part[r];
        }
    }
    if (!waited) {
        wait_for_prior_grids();
        start_dependent_grids();
    }
#pragma unroll
    for (int r = 0; r < kOuts; ++r) {
        acc[r] = warp_sum(acc[r]);
        if (lane == 0) {
            sums[warp][r] = acc[r];
        }
    }
    __syncthreads();
    if (threadIdx.x < kOuts && o0 + threadIdx.x < d) {
        float total = 0.0f;
        for (int t = 0; t < kWarpsPerBlock; ++t) {
            total += sums[t][threadIdx.x];
        }
        x[i * d + o0 + threadIdx.x] += total;
    }
}

}  // namespace

bool launch_expert_swiglu_streamed(const float* x, const ExpertWeights& w, const ExpertWeights& shared,
                                   const int32_t* experts, float* y, int64_t n, int64_t k,
                                   cudaStream_t stream) {
    if (w.n_in > 256 * 2 * kSwigluStreamedChunks || !streamed_gemv_enabled()) {
        return false;
    }
    constexpr int64_t kColumns = kWarpsPerBlock / 2 * kSwigluStreamedPairs;
    const int64_t blocks =
        (shared.n_rows / 2 + kColumns - 1) / kColumns + (k * (w.n_rows / 2) + kColumns - 1) / kColumns;
    launch_chained(
        expert_swiglu_streamed_kernel<QuantizedFormat::Wint4, 2, kSwigluStreamedChunks, kSwigluStreamedPairs>,
        dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(n)), dim3(kBlock), 0, stream, x, w, shared,
        experts, y, n, k);
    return true;
}

bool launch_add_expert_down_streamed(float* x, const float* h, const ExpertWeights& w,
                                     const ExpertWeights& shared, const int32_t* experts,
                                     const float* weights, int64_t n, int64_t k, cudaStream_t stream) {
    if (w.n_in > 256 * kDownStreamedChunks || !streamed_gemv_enabled()) {
        return false;
    }
    launch_chained(
        add_expert_down_streamed_kernel<QuantizedFormat::Wint4, kDownStreamedChunks, kDownStreamedOuts>,
        dim3(static_cast<unsigned>((w.n_rows + kDownStreamedOuts - 1) / kDownStreamedOuts),
             static_cast<unsigned>(n)),
        dim3(kBlock), 0, stream, x, h, w, shared, experts, weights, n, k);
    return true;
}

}  // namespace folio::kernels
