#include <algorithm>
#include <cfloat>
#include <climits>
#include <cstdint>

#include "engine/common/error.h"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/expert-rows.cuh"
#include "kernels/moe.h"
#include "kernels/norm.h"
#include "kernels/reduce.cuh"
#include "kernels/streamed-experts.h"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

namespace {

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / kWarpSize;
constexpr int kExpertsPerLane = kMaxExperts / kWarpSize;

// The routing and expert kernels are chained (launch_chained): each waits for the kernel ahead before it
// reads anything, so that a decode step's chain of small kernels overlaps each launch with the kernel before
// it.

// The score-correction biases lane l holds for route_row: experts l + 32 i, loaded before the wait for the
// kernel ahead (they are weights).
__device__ inline void load_score_bias(const float* score_bias, int n_experts, int lane,
                                       float bias[kExpertsPerLane]) {
#pragma unroll
    for (int i = 0; i < kExpertsPerLane; ++i) {
        const int e = lane + i * kWarpSize;
        bias[i] = e < n_experts ? score_bias[e] : 0.0f;
    }
}

// One warp's routing of one row of logits (read through L2: a routing launch may have just written them in
// other blocks): the softmax over the experts, then k rounds of a warp-wide arg-max of the biased scores.
// Choice j's probability stays with lane j mod 32 until the chosen sum is known.
__device__ inline void route_row(const float* l, const float bias[kExpertsPerLane], int32_t* experts,
                                 float* weights, int64_t row, int n_experts, int k, float norm_min,
                                 int lane) {
    float p[kExpertsPerLane];
    float score[kExpertsPerLane];
    float max = -FLT_MAX;
#pragma unroll
    for (int i = 0; i < kExpertsPerLane; ++i) {
        const int e = lane + i * kWarpSize;
        p[i] = e < n_experts ? __ldcg(l + e) : -FLT_MAX;
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
        score[i] = e < n_experts ? p[i] + bias[i] : -FLT_MAX;
    }
    float chosen = 0.0f;
    float mine[kExpertsPerLane] = {};  // the probability of choice lane + 32 t in mine[t]
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
#pragma unroll
            for (int t = 0; t < kExpertsPerLane; ++t) {
                mine[t] = t == j / kWarpSize ? best_p : mine[t];
            }
        }
    }
    chosen = fmaxf(chosen, norm_min);
#pragma unroll
    for (int t = 0; t < kExpertsPerLane; ++t) {
        const int j = lane + t * kWarpSize;
        if (j < k) {
            weights[row * k + j] = mine[t] / chosen;
        }
    }
}

// One warp a row.
__global__ void route_experts_kernel(const float* logits, const float* score_bias, int32_t* experts,
                                     float* weights, int64_t n, int n_experts, int k, float norm_min) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    float bias[kExpertsPerLane];
    load_score_bias(score_bias, n_experts, lane, bias);
    wait_for_prior_grids();
    start_dependent_grids();
    if (row >= n) {
        return;
    }
    route_row(logits + row * n_experts, bias, experts, weights, row, n_experts, k, norm_min, lane);
}

// The router's warps: kRouterWarps an expert, each summing its share of the inputs, so that a lane has few
// loads to wait for; a block holds kWarpsPerBlock / kRouterWarps experts.
constexpr int kRouterWarps = 4;
constexpr int kRouterExpertsPerBlock = kWarpsPerBlock / kRouterWarps;

// Vectors of four router weights a lane holds in registers, loaded before the wait for the kernel ahead:
// inputs up to kRouterHeld * kRouterWarps * 128 columns (4,096).
constexpr int kRouterHeld = 8;

// Block (b, i): the logits of row i for experts [b kRouterExpertsPerBlock, ...), then the routing of row i
// in whichever of the row's blocks finishes last. With a norm, every block finds the row's 1 / rms from the
// squares its first expert's warps read (the logits are inv · Σ x · w_norm · router), and stores the
// normalized values of the vectors v (in the order the first expert's warps hold them) with v mod gridDim.x
// equal to b.
__global__ void route_experts_linear_kernel(const float* x, const float* router, const float* score_bias,
                                            float* logits, int32_t* counters, int32_t* experts,
                                            float* weights, int64_t d, int n_experts, int k, float norm_min,
                                            bool vectors, RoutingNorm norm) {
    __shared__ float partial[kWarpsPerBlock];
    __shared__ float partial_squares[kWarpsPerBlock];
    __shared__ bool last;
    const int warp = static_cast<int>(threadIdx.x / kWarpSize);
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    const int e = static_cast<int>(blockIdx.x) * kRouterExpertsPerBlock + warp / kRouterWarps;
    const int part = warp % kRouterWarps;
    const int64_t i = blockIdx.y;
    const float* xr = x + i * d;
    const float* wr = router + static_cast<int64_t>(min(e, n_experts - 1)) * d;
    constexpr int64_t kStep = int64_t{kRouterWarps} * kWarpSize * 4;  // columns between a lane's vectors
    const int64_t first = (int64_t{part} * kWarpSize + lane) * 4;
    // The router's and the norm's weights do not depend on the kernels ahead: the lane's vectors of them
    // held in registers go out before the wait.
    const bool held = vectors && d <= kStep * kRouterHeld;
    const bool normed = norm.w != nullptr;
    float4 wv[kRouterHeld], nv[kRouterHeld];
#pragma unroll
    for (int j = 0; j < kRouterHeld; ++j) {
        const int64_t c = first + j * kStep;
        const bool in = held && c < d;
        wv[j] = in ? __ldg(reinterpret_cast<const float4*>(wr + c)) : float4{};
        nv[j] = in && normed ? __ldg(reinterpret_cast<const float4*>(norm.w + c))
                             : float4{1.0f, 1.0f, 1.0f, 1.0f};
    }
    float bias[kExpertsPerLane] = {};
    if (warp == 0) {
        load_score_bias(score_bias, n_experts, lane, bias);
    }
    wait_for_prior_grids();
    start_dependent_grids();
    float acc = 0.0f, squares = 0.0f;
    float4 xv[kRouterHeld];
    if (held) {
#pragma unroll
        for (int j = 0; j < kRouterHeld; ++j) {
            const int64_t c = first + j * kStep;
            xv[j] = c < d ? *reinterpret_cast<const float4*>(xr + c) : float4{};
        }
#pragma unroll
        for (int j = 0; j < kRouterHeld; ++j) {
            squares += xv[j].x * xv[j].x + xv[j].y * xv[j].y + xv[j].z * xv[j].z + xv[j].w * xv[j].w;
            acc = fmaf(xv[j].x * nv[j].x, wv[j].x, acc);
            acc = fmaf(xv[j].y * nv[j].y, wv[j].y, acc);
            acc = fmaf(xv[j].z * nv[j].z, wv[j].z, acc);
            acc = fmaf(xv[j].w * nv[j].w, wv[j].w, acc);
        }
    } else if (vectors) {
#pragma unroll 4
        for (int64_t c = first; c < d; c += kStep) {
            const float4 a = *reinterpret_cast<const float4*>(xr + c);
            const float4 b = __ldg(reinterpret_cast<const float4*>(wr + c));
            acc = fmaf(a.x, b.x, acc);
            acc = fmaf(a.y, b.y, acc);
            acc = fmaf(a.z, b.z, acc);
            acc = fmaf(a.w, b.w, acc);
        }
    } else {
        for (int64_t c = int64_t{part} * kWarpSize + lane; c < d; c += int64_t{kRouterWarps} * kWarpSize) {
            acc = fmaf(xr[c], wr[c], acc);
        }
    }
    acc = warp_sum(acc);
    if (normed) {
        squares = warp_sum(squares);
    }
    if (lane == 0) {
        partial[warp] = acc;
        partial_squares[warp] = squares;
    }
    __syncthreads();
    float inv = 1.0f;
    if (normed) {
        float sum_squares = 0.0f;
        for (int w = 0; w < kRouterWarps; ++w) {
            sum_squares += partial_squares[w];
        }
        inv = rsqrtf(sum_squares / static_cast<float>(d) + norm.eps);
        if (warp < kRouterWarps) {
            float* xn = norm.xn + i * d;
#pragma unroll
            for (int j = 0; j < kRouterHeld; ++j) {
                const int64_t c = first + j * kStep;
                if (c < d && (c / 4) % gridDim.x == blockIdx.x) {
                    *reinterpret_cast<float4*>(xn + c) =
                        float4{nv[j].x * (xv[j].x * inv), nv[j].y * (xv[j].y * inv),
                               nv[j].z * (xv[j].z * inv), nv[j].w * (xv[j].w * inv)};
                }
            }
        }
    }
    if (part == 0 && lane == 0 && e < n_experts) {
        float sum = 0.0f;
        for (int w = 0; w < kRouterWarps; ++w) {
            sum += partial[warp + w];
        }
        logits[i * n_experts + e] = sum * inv;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(counters + i, 1) == static_cast<int>(gridDim.x) - 1;
    }
    __syncthreads();
    if (!last) {
        return;
    }
    __threadfence();
    if (warp == 0) {
        route_row(logits + i * n_experts, bias, experts, weights, i, n_experts, k, norm_min, lane);
    }
    if (threadIdx.x == 0) {
        counters[i] = 0;
    }
}

// One weight's rows as the row products read them.
// This lane's share of weight row a (and row b where kPair) times xr over columns [c_begin, c_end), added to
// acc_a (acc_b); a warp's lanes together cover those columns. The packed path reads eight columns a lane at a
// time, each lane loading kChunks chunks of eight weights (one 16-, 8- or 4-byte word each) before it
// multiplies, as the quantized GEMV does, so that a warp keeps several loads in flight, and scales the
// levels' dot product once per chunk; it needs n_in a multiple of 8 (of the group size for WINT4, whose
// chunks then share a group) and xr 16-byte aligned. The other path reads a column a lane at a time, in any
// format.
template <bool kDense, QuantizedFormat kType, bool kPacked, bool kPair>
__device__ inline void row_dots(const RowSource& s, int64_t row_a, int64_t row_b, const float* xr,
                                int64_t c_begin, int64_t c_end, int lane, uint64_t policy, float& acc_a,
                                float& acc_b) {
    if constexpr (kPacked) {
        constexpr int kChunks = 4;
        constexpr int64_t kStride = int64_t{kWarpSize} * 8;  // columns between a lane's chunks
        for (int64_t c0 = c_begin + int64_t{lane} * 8; c0 < c_end; c0 += kStride * kChunks) {
            Packed8 a[kChunks], b[kChunks];
#pragma unroll
            for (int j = 0; j < kChunks; ++j) {
                const int64_t c = c0 + j * kStride;
                if (c < c_end) {
                    a[j] = load_packed8<kType>(s.q, s.scales, row_a, c, s.n_in, s.shift, policy);
                    if constexpr (kPair) {
                        b[j] = load_packed8<kType>(s.q, s.scales, row_b, c, s.n_in, s.shift, policy);
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < kChunks; ++j) {
                const int64_t c = c0 + j * kStride;
                if (c >= c_end) {
                    break;
                }
                const float4 lo = *reinterpret_cast<const float4*>(xr + c);
                const float4 hi = *reinterpret_cast<const float4*>(xr + c + 4);
                const float xv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
                float levels[8];
                unpack8_levels<kType>(a[j], levels);
                float dot = 0.0f;
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    dot = fmaf(xv[i], levels[i], dot);
                }
                acc_a = kType == QuantizedFormat::Bf16 ? acc_a + dot : fmaf(a[j].scale, dot, acc_a);
                if constexpr (kPair) {
                    unpack8_levels<kType>(b[j], levels);
                    dot = 0.0f;
#pragma unroll
                    for (int i = 0; i < 8; ++i) {
                        dot = fmaf(xv[i], levels[i], dot);
                    }
                    acc_b = kType == QuantizedFormat::Bf16 ? acc_b + dot : fmaf(b[j].scale, dot, acc_b);
                }
            }
        }
    } else {
        for (int64_t c = c_begin + lane; c < c_end; c += kWarpSize) {
            const float xv = xr[c];
            if constexpr (kDense) {
                acc_a = fmaf(xv, s.dense[row_a * s.n_in + c], acc_a);
                if constexpr (kPair) {
                    acc_b = fmaf(xv, s.dense[row_b * s.n_in + c], acc_b);
                }
            } else {
                acc_a = fmaf(xv, weight_at<kType>(s.q, s.scales, row_a, c, s.n_in, s.group_size), acc_a);
                if constexpr (kPair) {
                    acc_b = fmaf(xv, weight_at<kType>(s.q, s.scales, row_b, c, s.n_in, s.group_size), acc_b);
                }
            }
        }
    }
}

// One warp an output column o of one row r: expert experts[r]'s row o (with its up row where kSwiglu) times
// row r / x_step of x. A row whose expert is out of range gets zeros.
template <bool kDense, QuantizedFormat kType, bool kPacked, bool kSwiglu>
__global__ void expert_rows_kernel(const float* x, ExpertWeights w, const int32_t* experts, float* y,
                                   int64_t m, int64_t x_step) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t n_out = kSwiglu ? w.n_rows / 2 : w.n_rows;
    const int64_t o = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
    const int64_t r = blockIdx.y;
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    if (o >= n_out || r >= m) {
        return;
    }
    const int32_t e = experts[r];
    if (e < 0 || e >= w.n_experts) {
        if (lane == 0) {
            y[r * n_out + o] = 0.0f;
        }
        return;
    }
    const int64_t row = e * w.n_rows + o;
    float acc = 0.0f, up = 0.0f;
    row_dots<kDense, kType, kPacked, kSwiglu>(row_source<kType>(w), row, row + n_out,
                                              x + (r / x_step) * w.n_in, 0, w.n_in, lane,
                                              evict_normal_policy(), acc, up);
    acc = warp_sum(acc);
    if constexpr (kSwiglu) {
        up = warp_sum(up);
    }
    if (lane == 0) {
        y[r * n_out + o] = kSwiglu ? swiglu(acc, up) : acc;
    }
}

// Block (b, i) of expert_swiglu_rows: the shared columns come first in block order, so that they are
// scheduled first, and before the wait for the routing, which they do not need (the kernel ahead of the
// routing, which wrote x, has finished when this one starts), unless x_from_kernel_ahead: the routing wrote
// x, and they wait for it first.
template <bool kDense, QuantizedFormat kType, bool kPacked>
__global__ void expert_swiglu_rows_kernel(const float* x, ExpertWeights w, ExpertWeights shared,
                                          const int32_t* experts, float* y, int64_t n, int64_t k,
                                          bool x_from_kernel_ahead) {
    const int64_t half = w.n_rows / 2, shared_half = shared.n_rows / 2;
    const int64_t n_cols = k * half + shared_half;
    const int64_t shared_blocks = (shared_half + kWarpsPerBlock - 1) / kWarpsPerBlock;
    const int warp = static_cast<int>(threadIdx.x / kWarpSize);
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    const int64_t i = blockIdx.y;
    const float* xr = x + i * w.n_in;
    float* yr = y + i * n_cols;
    const uint64_t policy = evict_normal_policy();
    const int64_t b = blockIdx.x;
    if (b < shared_blocks) {
        if (x_from_kernel_ahead) {
            wait_for_prior_grids();
        }
        const int64_t s = b * kWarpsPerBlock + warp;
        float gate = 0.0f, up = 0.0f;
        if (s < shared_half) {
            row_dots<kDense, kType, kPacked, true>(row_source<kType>(shared), s, s + shared_half, xr, 0,
                                                   shared.n_in, lane, policy, gate, up);
            gate = warp_sum(gate);
            up = warp_sum(up);
        }
        wait_for_prior_grids();
        start_dependent_grids();
        if (s < shared_half && lane == 0) {
            yr[k * half + s] = swiglu(gate, up);
        }
        return;
    }
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t col = (b - shared_blocks) * kWarpsPerBlock + warp;
    if (col >= k * half) {
        return;
    }
    const int64_t j = col / half, o = col - j * half;
    const int32_t e = experts[i * k + j];
    if (e < 0 || e >= w.n_experts) {
        if (lane == 0) {
            yr[col] = 0.0f;
        }
        return;
    }
    const int64_t row = e * w.n_rows + o;
    float gate = 0.0f, up = 0.0f;
    row_dots<kDense, kType, kPacked, true>(row_source<kType>(w), row, row + half, xr, 0, w.n_in, lane, policy,
                                           gate, up);
    gate = warp_sum(gate);
    up = warp_sum(up);
    if (lane == 0) {
        yr[col] = swiglu(gate, up);
    }
}

// Block (o, i): output o of row i. The sum's segments are the chosen experts' down rows o, each over its
// expert's w.n_in columns of h, then the shared row o in parts of w.n_in columns; warp t takes segments t,
// t + kWarpsPerBlock, ..., and the block adds the warps' sums in order, so that the result does not depend
// on timing.
template <bool kDense, QuantizedFormat kType, bool kPacked>
__global__ void add_expert_down_kernel(float* x, const float* h, ExpertWeights w, ExpertWeights shared,
                                       const int32_t* experts, const float* weights, int64_t n, int64_t k) {
    wait_for_prior_grids();
    start_dependent_grids();
    __shared__ float sums[kWarpsPerBlock];
    const int64_t d = w.n_rows;
    const int64_t o = blockIdx.x, i = blockIdx.y;
    const int warp = static_cast<int>(threadIdx.x / kWarpSize);
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    const float* hr = h + i * (k * w.n_in + shared.n_in);
    const int64_t n_shared_parts = shared.n_rows > 0 ? (shared.n_in + w.n_in - 1) / w.n_in : 0;
    const uint64_t policy = evict_normal_policy();
    float acc = 0.0f, unused = 0.0f;
    for (int64_t segment = warp; segment < k + n_shared_parts; segment += kWarpsPerBlock) {
        float part = 0.0f;
        if (segment < k) {
            const int32_t e = experts[i * k + segment];
            if (e >= 0 && e < w.n_experts) {
                row_dots<kDense, kType, kPacked, false>(row_source<kType>(w), e * d + o, 0,
                                                        hr + segment * w.n_in, 0, w.n_in, lane, policy, part,
                                                        unused);
                acc = fmaf(weights[i * k + segment], part, acc);
            }
        } else {
            const int64_t c_begin = (segment - k) * w.n_in;
            const int64_t c_end = c_begin + w.n_in < shared.n_in ? c_begin + w.n_in : shared.n_in;
            row_dots<kDense, kType, kPacked, false>(row_source<kType>(shared), o, 0, hr + k * w.n_in, c_begin,
                                                    c_end, lane, policy, part, unused);
            acc += part;
        }
    }
    acc = warp_sum(acc);
    if (lane == 0) {
        sums[warp] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int t = 0; t < kWarpsPerBlock; ++t) {
            total += sums[t];
        }
        x[i * d + o] += total;
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

// Whether w's rows (none counts) can go through the packed path: packed, n_in a multiple of eight columns
// (of the group size for WINT4).
bool packable(const ExpertWeights& w) {
    if (w.n_rows == 0) {
        return true;
    }
    if (w.dense != nullptr) {
        return false;
    }
    const int64_t chunk = w.format == QuantizedFormat::Wint4 ? std::max<int64_t>(w.group_size, 8) : 8;
    return w.n_in % chunk == 0 && (w.format != QuantizedFormat::Wint4 || w.group_size % 8 == 0);
}

bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Calls Launch<kDense, kType, kPacked>::run(args...) for w's format.
template <template <bool, QuantizedFormat, bool> class Launch, typename... Args>
void dispatch_experts(const ExpertWeights& w, bool packed, Args&&... args) {
    if (w.dense != nullptr) {
        Launch<true, QuantizedFormat::Bf16, false>::run(args...);
        return;
    }
    switch (w.format) {
        case QuantizedFormat::Bf16:
            packed ? Launch<false, QuantizedFormat::Bf16, true>::run(args...)
                   : Launch<false, QuantizedFormat::Bf16, false>::run(args...);
            return;
        case QuantizedFormat::Wint8:
            packed ? Launch<false, QuantizedFormat::Wint8, true>::run(args...)
                   : Launch<false, QuantizedFormat::Wint8, false>::run(args...);
            return;
        case QuantizedFormat::Wint4:
            packed ? Launch<false, QuantizedFormat::Wint4, true>::run(args...)
                   : Launch<false, QuantizedFormat::Wint4, false>::run(args...);
            return;
    }
}

dim3 warp_grid(int64_t n_warps, int64_t n_rows) {
    return dim3(static_cast<unsigned>((n_warps + kWarpsPerBlock - 1) / kWarpsPerBlock),
                static_cast<unsigned>(n_rows));
}

template <bool kDense, QuantizedFormat kType, bool kPacked>
struct LaunchExpertRows {
    static void run(const float* x, const ExpertWeights& w, const int32_t* experts, float* y, int64_t m,
                    int64_t x_step, bool swiglu, cudaStream_t stream) {
        const dim3 grid = warp_grid(swiglu ? w.n_rows / 2 : w.n_rows, m);
        if (swiglu) {
            launch_chained(expert_rows_kernel<kDense, kType, kPacked, true>, grid, dim3(kBlock), 0, stream, x,
                           w, experts, y, m, x_step);
        } else {
            launch_chained(expert_rows_kernel<kDense, kType, kPacked, false>, grid, dim3(kBlock), 0, stream,
                           x, w, experts, y, m, x_step);
        }
    }
};

template <bool kDense, QuantizedFormat kType, bool kPacked>
struct LaunchExpertSwigluRows {
    static void run(const float* x, const ExpertWeights& w, const ExpertWeights& shared,
                    const int32_t* experts, float* y, int64_t n, int64_t k, bool x_from_kernel_ahead,
                    cudaStream_t stream) {
        const int64_t shared_half = shared.n_rows / 2;
        const int64_t blocks = (shared_half + kWarpsPerBlock - 1) / kWarpsPerBlock +
                               (k * (w.n_rows / 2) + kWarpsPerBlock - 1) / kWarpsPerBlock;
        // The streamed kernel reads x only past its wait.
        if constexpr (!kDense && kType == QuantizedFormat::Wint4 && kPacked) {
            if (launch_expert_swiglu_streamed(x, w, shared, experts, y, n, k, stream)) {
                return;
            }
        }
        launch_chained(expert_swiglu_rows_kernel<kDense, kType, kPacked>,
                       dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(n)), dim3(kBlock), 0, stream,
                       x, w, shared, experts, y, n, k, x_from_kernel_ahead);
    }
};

template <bool kDense, QuantizedFormat kType, bool kPacked>
struct LaunchExpertDown {
    static void run(float* x, const float* h, const ExpertWeights& w, const ExpertWeights& shared,
                    const int32_t* experts, const float* weights, int64_t n, int64_t k, cudaStream_t stream) {
        if constexpr (!kDense && kType == QuantizedFormat::Wint4 && kPacked) {
            if (launch_add_expert_down_streamed(x, h, w, shared, experts, weights, n, k, stream)) {
                return;
            }
        }
        launch_chained(add_expert_down_kernel<kDense, kType, kPacked>,
                       dim3(static_cast<unsigned>(w.n_rows), static_cast<unsigned>(n)), dim3(kBlock), 0,
                       stream, x, h, w, shared, experts, weights, n, k);
    }
};

// shared is empty or in w's format over n_in inputs (any where n_in is negative).
void check_shared(const char* op, const ExpertWeights& w, const ExpertWeights& shared, int64_t n_in,
                  int64_t n_rows) {
    if (shared.n_rows == 0) {
        return;
    }
    const bool same_format =
        (w.dense != nullptr) == (shared.dense != nullptr) &&
        (w.dense != nullptr || (w.format == shared.format &&
                                (w.format != QuantizedFormat::Wint4 || w.group_size == shared.group_size)));
    if (!same_format || (n_in >= 0 && shared.n_in != n_in) || (n_rows >= 0 && shared.n_rows != n_rows)) {
        fail(op, ": shared experts of ", shared.n_rows, " x ", shared.n_in,
             " in another format or shape than ", "the experts' (", w.n_rows, " x ", w.n_in, ")");
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
    dispatch_experts<LaunchExpertRows>(w, packable(w) && aligned16(x), x, w, experts, y, m, x_step, swiglu,
                                       stream);
}

void route_experts_linear_f32(const float* x, const float* router, const float* score_bias, float* logits,
                              int32_t* counters, int32_t* experts, float* weights, int64_t n, int64_t d,
                              int n_experts, int k, float norm_min, const RoutingNorm& norm,
                              cudaStream_t stream) {
    if (n_experts <= 0 || n_experts > kMaxExperts || k <= 0 || k > n_experts || d <= 0) {
        fail("route_experts_linear: top ", k, " of ", n_experts, " experts (at most ", kMaxExperts, ") over ",
             d, " inputs");
    }
    if (n > kRoutingCounters) {
        fail("route_experts_linear: ", n, " rows, more than its ", kRoutingCounters, " counters");
    }
    if (norm.w != nullptr && norm.xn == nullptr) {
        fail("route_experts_linear: a norm without a tensor for the normalized rows");
    }
    if (n == 0) {
        return;
    }
    const bool vectors = d % 4 == 0 && aligned16(x) && aligned16(router);
    // The norm folds into the kernel's held path only (rows of at most kRouterHeld vectors a lane).
    const bool held = vectors && d <= int64_t{kRouterWarps} * kWarpSize * 4 * kRouterHeld;
    if (norm.w != nullptr && !(held && aligned16(norm.w) && aligned16(norm.xn))) {
        // Too wide or unaligned for the norm folded in: a pass of its own, the router reading its rows.
        rms_norm_f32(x, norm.w, norm.xn, n, d, norm.eps, stream);
        route_experts_linear_f32(norm.xn, router, score_bias, logits, counters, experts, weights, n, d,
                                 n_experts, k, norm_min, RoutingNorm{}, stream);
        return;
    }
    const dim3 grid(static_cast<unsigned>((n_experts + kRouterExpertsPerBlock - 1) / kRouterExpertsPerBlock),
                    static_cast<unsigned>(n));
    launch_chained(route_experts_linear_kernel, grid, dim3(kBlock), 0, stream, x, router, score_bias, logits,
                   counters, experts, weights, d, n_experts, k, norm_min, vectors, norm);
}

void expert_swiglu_rows_f32(const float* x, const ExpertWeights& w, const ExpertWeights& shared,
                            const int32_t* experts, float* y, int64_t n, int64_t k, bool x_from_kernel_ahead,
                            cudaStream_t stream) {
    check_shared("expert_swiglu_rows", w, shared, w.n_in, -1);
    if (w.n_rows % 2 || shared.n_rows % 2) {
        fail("expert_swiglu_rows: SwiGLU blocks of ", w.n_rows, " and ", shared.n_rows, " rows (not even)");
    }
    if (n == 0 || k * (w.n_rows / 2) + shared.n_rows / 2 == 0) {
        return;
    }
    if (n > 65535) {
        fail("expert_swiglu_rows: ", n, " rows, more than a launch takes (65535)");
    }
    dispatch_experts<LaunchExpertSwigluRows>(w, packable(w) && packable(shared) && aligned16(x), x, w, shared,
                                             experts, y, n, k, x_from_kernel_ahead, stream);
}

void add_expert_down_f32(float* x, const float* h, const ExpertWeights& w, const ExpertWeights& shared,
                         const int32_t* experts, const float* weights, int64_t n, int64_t k,
                         cudaStream_t stream) {
    check_shared("add_expert_down", w, shared, -1, w.n_rows);
    if (n == 0 || w.n_rows == 0) {
        return;
    }
    if (n > 65535) {
        fail("add_expert_down: ", n, " rows, more than a launch takes (65535)");
    }
    dispatch_experts<LaunchExpertDown>(w, packable(w) && packable(shared) && aligned16(h), x, h, w, shared,
                                       experts, weights, n, k, stream);
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
