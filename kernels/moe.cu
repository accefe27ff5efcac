#include <algorithm>
#include <cfloat>
#include <climits>
#include <cstdint>

#include "engine/common/error.h"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/moe.h"
#include "kernels/reduce.cuh"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

namespace {

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / kWarpSize;
constexpr int kExpertsPerLane = kMaxExperts / kWarpSize;

// The routing and expert kernels are chained (launch_chained): each waits for the kernel ahead before it
// reads anything, so that a decode step's chain of small kernels overlaps each launch with the kernel before
// it.

// One warp a row: the softmax over the experts, then k rounds of a warp-wide arg-max of the biased scores.
__global__ void route_experts_kernel(const float* logits, const float* score_bias, int32_t* experts,
                                     float* weights, int64_t n, int n_experts, int k, float norm_min) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    if (row >= n) {
        return;
    }
    const float* l = logits + row * n_experts;
    float p[kExpertsPerLane];
    float score[kExpertsPerLane];
    float max = -FLT_MAX;
#pragma unroll
    for (int i = 0; i < kExpertsPerLane; ++i) {
        const int e = lane + i * kWarpSize;
        p[i] = e < n_experts ? l[e] : -FLT_MAX;
        max = fmaxf(max, p[i]);
    }
    max = warp_max(max);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kExpertsPerLane; ++i) {
        const int e = lane + i * kWarpSize;
        p[i] = e < n_experts ? expf(p[i] - max) : 0.0f;
        sum += p[i];
    }
    sum = warp_sum(sum);
#pragma unroll
    for (int i = 0; i < kExpertsPerLane; ++i) {
        const int e = lane + i * kWarpSize;
        p[i] /= sum;
        score[i] = e < n_experts ? p[i] + score_bias[e] : -FLT_MAX;
    }
    float chosen = 0.0f;
    for (int j = 0; j < k; ++j) {
        float best = -FLT_MAX, best_p = 0.0f;
        int best_e = INT_MAX;
#pragma unroll
        for (int i = 0; i < kExpertsPerLane; ++i) {
            const int e = lane + i * kWarpSize;
            if (e < n_experts && (score[i] > best || (score[i] == best && e < best_e))) {
                best = score[i], best_e = e, best_p = p[i];
            }
        }
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
            const float other = __shfl_xor_sync(0xffffffffu, best, offset);
            const int other_e = __shfl_xor_sync(0xffffffffu, best_e, offset);
            const float other_p = __shfl_xor_sync(0xffffffffu, best_p, offset);
            if (other > best || (other == best && other_e < best_e)) {
                best = other, best_e = other_e, best_p = other_p;
            }
        }
#pragma unroll
        for (int i = 0; i < kExpertsPerLane; ++i) {
            if (lane + i * kWarpSize == best_e) {
                score[i] = -FLT_MAX;
            }
        }
        chosen += best_p;
        if (lane == j % kWarpSize) {
            experts[row * k + j] = best_e;
            weights[row * k + j] = best_p;
        }
    }
    chosen = fmaxf(chosen, norm_min);
    __syncwarp();
    for (int j = lane; j < k; j += kWarpSize) {
        weights[row * k + j] /= chosen;
    }
}

template <QuantizedFormat kType>
__device__ inline float expert_weight(const ExpertWeights& w, int64_t row, int64_t c) {
    return weight_at<kType>(w.q, w.scales, row, c, w.n_in, w.group_size);
}

// Column c of weight row `row`.
template <bool kDense, QuantizedFormat kType>
__device__ inline float weight_value(const ExpertWeights& w, int64_t row, int64_t c) {
    if constexpr (kDense) {
        return w.dense[row * w.n_in + c];
    } else {
        return expert_weight<kType>(w, row, c);
    }
}

// What one warp of an expert_rows kernel computes: output column o of row r, from weight row `row` (o of
// expert experts[r]) and input row xr. Inactive past the ends, and for a row whose expert is out of range,
// whose output is written as zero here.
struct ExpertRowTask {
    bool active = false;
    int64_t n_out = 0, o = 0, r = 0, row = 0;
    int lane = 0;
    const float* xr = nullptr;
};

template <bool kSwiglu>
__device__ inline ExpertRowTask expert_row_task(const float* x, const ExpertWeights& w,
                                                const int32_t* experts, float* y, int64_t m, int64_t x_step) {
    wait_for_prior_grids();
    start_dependent_grids();
    ExpertRowTask t;
    t.n_out = kSwiglu ? w.n_rows / 2 : w.n_rows;
    t.o = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
    t.r = blockIdx.y;
    t.lane = static_cast<int>(threadIdx.x % kWarpSize);
    if (t.o >= t.n_out || t.r >= m) {
        return t;
    }
    const int32_t e = experts[t.r];
    if (e < 0 || e >= w.n_experts) {
        if (t.lane == 0) {
            y[t.r * t.n_out + t.o] = 0.0f;
        }
        return t;
    }
    t.active = true;
    t.xr = x + (t.r / x_step) * w.n_in;
    t.row = e * w.n_rows + t.o;
    return t;
}

// One warp an output column of one row: the dot product over the inputs (a SwiGLU's gate and up columns
// together).
template <bool kDense, QuantizedFormat kType, bool kSwiglu>
__global__ void expert_rows_linear_kernel(const float* x, ExpertWeights w, const int32_t* experts, float* y,
                                          int64_t m, int64_t x_step) {
    const ExpertRowTask t = expert_row_task<kSwiglu>(x, w, experts, y, m, x_step);
    if (!t.active) {
        return;
    }
    const int64_t n_out = t.n_out, o = t.o, r = t.r, row = t.row;
    const int lane = t.lane;
    const float* xr = t.xr;
    float acc = 0.0f, up = 0.0f;
    for (int64_t c = lane; c < w.n_in; c += kWarpSize) {
        const float xv = xr[c];
        acc = fmaf(xv, weight_value<kDense, kType>(w, row, c), acc);
        if constexpr (kSwiglu) {
            up = fmaf(xv, weight_value<kDense, kType>(w, row + n_out, c), up);
        }
    }
    acc = warp_sum(acc);
    if constexpr (kSwiglu) {
        up = warp_sum(up);
    }
    if (lane == 0) {
        y[r * n_out + o] = kSwiglu ? acc / (1.0f + expf(-acc)) * up : acc;
    }
}

// The packed formats' product, eight columns a lane at a time: each lane loads kChunks chunks of eight
// weights (one 16-, 8- or 4-byte word each) before it multiplies, as the quantized GEMV does, so that a warp
// keeps several loads in flight; the levels' dot product is scaled once per chunk. n_in is a multiple of 8
// (of the group size for WINT4, whose chunks then share a group).
template <QuantizedFormat kType, bool kSwiglu>
__global__ void expert_rows_packed_kernel(const float* x, ExpertWeights w, const int32_t* experts, float* y,
                                          int64_t m, int64_t x_step) {
    constexpr int kChunks = 4;
    constexpr int64_t kStride = int64_t{kWarpSize} * 8;  // columns between a lane's chunks
    const ExpertRowTask t = expert_row_task<kSwiglu>(x, w, experts, y, m, x_step);
    if (!t.active) {
        return;
    }
    const int64_t n_out = t.n_out, o = t.o, r = t.r, row = t.row;
    const int lane = t.lane;
    const float* xr = t.xr;
    const int shift = kType == QuantizedFormat::Wint4 ? group_shift(w.group_size) : 0;
    const uint64_t policy = evict_normal_policy();
    float acc = 0.0f, up = 0.0f;
    for (int64_t c0 = int64_t{lane} * 8; c0 < w.n_in; c0 += kStride * kChunks) {
        Packed8 g[kChunks], u[kChunks];
#pragma unroll
        for (int k = 0; k < kChunks; ++k) {
            const int64_t c = c0 + k * kStride;
            if (c < w.n_in) {
                g[k] = load_packed8<kType>(w.q, w.scales, row, c, w.n_in, shift, policy);
                if constexpr (kSwiglu) {
                    u[k] = load_packed8<kType>(w.q, w.scales, row + n_out, c, w.n_in, shift, policy);
                }
            }
        }
#pragma unroll
        for (int k = 0; k < kChunks; ++k) {
            const int64_t c = c0 + k * kStride;
            if (c >= w.n_in) {
                break;
            }
            const float4 lo = *reinterpret_cast<const float4*>(xr + c);
            const float4 hi = *reinterpret_cast<const float4*>(xr + c + 4);
            const float xv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
            float levels[8];
            unpack8_levels<kType>(g[k], levels);
            float dot = 0.0f;
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                dot = fmaf(xv[i], levels[i], dot);
            }
            acc = kType == QuantizedFormat::Bf16 ? acc + dot : fmaf(g[k].scale, dot, acc);
            if constexpr (kSwiglu) {
                unpack8_levels<kType>(u[k], levels);
                dot = 0.0f;
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    dot = fmaf(xv[i], levels[i], dot);
                }
                up = kType == QuantizedFormat::Bf16 ? up + dot : fmaf(u[k].scale, dot, up);
            }
        }
    }
    acc = warp_sum(acc);
    if constexpr (kSwiglu) {
        up = warp_sum(up);
    }
    if (lane == 0) {
        y[r * n_out + o] = kSwiglu ? acc / (1.0f + expf(-acc)) * up : acc;
    }
}

__global__ void add_expert_outputs_kernel(float* x, const float* src, const float* weights, int64_t n,
                                          int64_t k, int64_t d) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t i = blockIdx.y;
    if (c >= d || i >= n) {
        return;
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
        sum += weights[i * k + j] * src[(i * k + j) * d + c];
    }
    x[i * d + c] += sum;
}

template <bool kDense, QuantizedFormat kType>
void launch_expert_rows(const float* x, const ExpertWeights& w, const int32_t* experts, float* y, int64_t m,
                        int64_t x_step, bool swiglu, cudaStream_t stream) {
    const int64_t n_out = swiglu ? w.n_rows / 2 : w.n_rows;
    const dim3 grid(static_cast<unsigned>((n_out + kWarpsPerBlock - 1) / kWarpsPerBlock),
                    static_cast<unsigned>(m));
    const int64_t chunk = kType == QuantizedFormat::Wint4 ? std::max<int64_t>(w.group_size, 8) : 8;
    const bool x_aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0;
    if (!kDense && x_aligned && w.n_in % chunk == 0 &&
        (kType != QuantizedFormat::Wint4 || w.group_size % 8 == 0)) {
        if (swiglu) {
            launch_chained(expert_rows_packed_kernel<kType, true>, grid, dim3(kBlock), 0, stream, x, w,
                           experts, y, m, x_step);
        } else {
            launch_chained(expert_rows_packed_kernel<kType, false>, grid, dim3(kBlock), 0, stream, x, w,
                           experts, y, m, x_step);
        }
        return;
    }
    if (swiglu) {
        launch_chained(expert_rows_linear_kernel<kDense, kType, true>, grid, dim3(kBlock), 0, stream, x, w,
                       experts, y, m, x_step);
    } else {
        launch_chained(expert_rows_linear_kernel<kDense, kType, false>, grid, dim3(kBlock), 0, stream, x, w,
                       experts, y, m, x_step);
    }
}

}  // namespace

void route_experts_f32(const float* logits, const float* score_bias, int32_t* experts, float* weights,
                       int64_t n, int n_experts, int k, float norm_min, cudaStream_t stream) {
    if (n_experts <= 0 || n_experts > kMaxExperts || k <= 0 || k > n_experts) {
        fail("route_experts: top ", k, " of ", n_experts, " experts (at most ", kMaxExperts, ")");
    }
    if (n == 0) {
        return;
    }
    const auto blocks = static_cast<unsigned>((n + kWarpsPerBlock - 1) / kWarpsPerBlock);
    launch_chained(route_experts_kernel, dim3(blocks), dim3(kBlock), 0, stream, logits, score_bias, experts,
                   weights, n, n_experts, k, norm_min);
}

void expert_rows_linear_f32(const float* x, const ExpertWeights& w, const int32_t* experts, float* y,
                            int64_t m, int64_t x_step, bool swiglu, cudaStream_t stream) {
    if (m == 0 || w.n_rows == 0) {
        return;
    }
    if (m > 65535) {
        fail("expert_rows_linear: ", m, " rows, more than a launch takes (65535)");
    }
    if (w.dense != nullptr) {
        launch_expert_rows<true, QuantizedFormat::Bf16>(x, w, experts, y, m, x_step, swiglu, stream);
        return;
    }
    switch (w.format) {
        case QuantizedFormat::Bf16:
            launch_expert_rows<false, QuantizedFormat::Bf16>(x, w, experts, y, m, x_step, swiglu, stream);
            return;
        case QuantizedFormat::Wint8:
            launch_expert_rows<false, QuantizedFormat::Wint8>(x, w, experts, y, m, x_step, swiglu, stream);
            return;
        case QuantizedFormat::Wint4:
            launch_expert_rows<false, QuantizedFormat::Wint4>(x, w, experts, y, m, x_step, swiglu, stream);
            return;
    }
}

void add_expert_outputs_f32(float* x, const float* src, const float* weights, int64_t n, int64_t k, int64_t d,
                            cudaStream_t stream) {
    if (n * d == 0) {
        return;
    }
    const dim3 grid(static_cast<unsigned>((d + kBlock - 1) / kBlock), static_cast<unsigned>(n));
    launch_chained(add_expert_outputs_kernel, grid, dim3(kBlock), 0, stream, x, src, weights, n, k, d);
}

}  // namespace folio::kernels
