#include <cmath>
#include <type_traits>

#include "attention.h"
#include "cuda-check.h"
#include "error.h"
#include "reduce.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kWarps = 8;
constexpr int kBlock = kWarps * kWarpSize;
constexpr int kKeysPerStep = 4;  // keys a warp scores together, for independent shuffle chains

// Where the keys of a row live: kv rows kv_start + j.
struct ContiguousKeys {
    __device__ int64_t row(int64_t kv_start, int64_t j) const { return kv_start + j; }
};

// Where the keys of a row live in a paged cache.
struct PagedKeys {
    const int32_t* block_tables;
    int64_t block_size;

    __device__ int64_t row(int64_t table_start, int64_t p) const {
        return static_cast<int64_t>(block_tables[table_start + p / block_size]) * block_size + p % block_size;
    }
};

// One block per (row, head); each warp runs an online softmax over every kWarps-th step of keys, lanes
// splitting head_dim (kPerLane values each); the warps' partial results are merged at the end.
// q, out [n_q_total, n_head, head_dim], k, v [n_kv_total, n_kv_head, head_dim], rows [gridDim.x]
template <int kPerLane, typename Keys>
__global__ void __launch_bounds__(kBlock)
    attention_f32_kernel(const float* q, const float* k, const float* v, float* out, const AttentionRow* rows,
                         Keys keys, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale) {
    __shared__ float warp_max[kWarps];
    __shared__ float warp_sum_exp[kWarps];
    __shared__ float warp_acc[kWarps][kPerLane * kWarpSize];

    const AttentionRow r = rows[blockIdx.x];
    const int64_t h = blockIdx.y;
    const int64_t kv_head = h / (n_head / n_kv_head);
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;

    const float* qr = q + (r.q_row * n_head + h) * head_dim;  // [head_dim]
    float qv[kPerLane];
    float acc[kPerLane];
#pragma unroll
    for (int p = 0; p < kPerLane; ++p) {
        const int64_t d = lane + p * kWarpSize;
        qv[p] = d < head_dim ? qr[d] : 0.0f;
        acc[p] = 0.0f;
    }
    float running_max = -INFINITY, running_sum = 0.0f;

    for (int64_t j0 = static_cast<int64_t>(warp) * kKeysPerStep; j0 < r.n_visible;
         j0 += static_cast<int64_t>(kWarps) * kKeysPerStep) {
        float score[kKeysPerStep];
        int64_t kv_row[kKeysPerStep];
#pragma unroll
        for (int t = 0; t < kKeysPerStep; ++t) {
            const int64_t j = j0 + t;
            kv_row[t] = j < r.n_visible ? keys.row(r.kv_start, j) : -1;
            float dot = 0.0f;
            if (kv_row[t] >= 0) {
                const float* kr = k + (kv_row[t] * n_kv_head + kv_head) * head_dim;  // [head_dim]
#pragma unroll
                for (int p = 0; p < kPerLane; ++p) {
                    const int64_t d = lane + p * kWarpSize;
                    if (d < head_dim) {
                        dot += qv[p] * kr[d];
                    }
                }
            }
            score[t] = dot;
        }
        float step_max = running_max;
#pragma unroll
        for (int t = 0; t < kKeysPerStep; ++t) {
            score[t] = warp_sum(score[t]) * scale;
            if (kv_row[t] >= 0) {
                step_max = fmaxf(step_max, score[t]);
            }
        }
        const float correction = expf(running_max - step_max);
        running_sum *= correction;
#pragma unroll
        for (int p = 0; p < kPerLane; ++p) {
            acc[p] *= correction;
        }
#pragma unroll
        for (int t = 0; t < kKeysPerStep; ++t) {
            if (kv_row[t] < 0) {
                continue;
            }
            const float weight = expf(score[t] - step_max);
            running_sum += weight;
            const float* vr = v + (kv_row[t] * n_kv_head + kv_head) * head_dim;  // [head_dim]
#pragma unroll
            for (int p = 0; p < kPerLane; ++p) {
                const int64_t d = lane + p * kWarpSize;
                if (d < head_dim) {
                    acc[p] += weight * vr[d];
                }
            }
        }
        running_max = step_max;
    }

    if (lane == 0) {
        warp_max[warp] = running_max;
        warp_sum_exp[warp] = running_sum;
    }
#pragma unroll
    for (int p = 0; p < kPerLane; ++p) {
        warp_acc[warp][lane + p * kWarpSize] = acc[p];
    }
    __syncthreads();

    float total_max = -INFINITY;
    for (int w = 0; w < kWarps; ++w) {
        total_max = fmaxf(total_max, warp_max[w]);
    }
    float factor[kWarps];
    float total_sum = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
        factor[w] = warp_max[w] == -INFINITY ? 0.0f : expf(warp_max[w] - total_max);
        total_sum += warp_sum_exp[w] * factor[w];
    }
    float* orow = out + (r.q_row * n_head + h) * head_dim;  // [head_dim]
    for (int64_t d = threadIdx.x; d < head_dim; d += kBlock) {
        float o = 0.0f;
        for (int w = 0; w < kWarps; ++w) {
            o += warp_acc[w][d] * factor[w];
        }
        orow[d] = total_sum > 0.0f ? o / total_sum : 0.0f;
    }
}

template <typename Keys>
void launch_attention(const float* q, const float* k, const float* v, float* out, const AttentionRow* rows,
                      int64_t n_rows, const Keys& keys, int64_t n_head, int64_t n_kv_head, int64_t head_dim,
                      float scale, cudaStream_t stream) {
    if (n_rows == 0 || n_head == 0) {
        return;
    }
    if (head_dim <= 0 || head_dim > kMaxAttentionHeadDim || n_kv_head <= 0 || n_head % n_kv_head != 0) {
        fail("attention kernel: head_dim ", head_dim, " (at most ", kMaxAttentionHeadDim, "), ", n_head,
             " heads over ", n_kv_head, " K/V heads");
    }
    const dim3 grid(static_cast<unsigned int>(n_rows), static_cast<unsigned int>(n_head));
    const auto run = [&](auto per_lane) {
        attention_f32_kernel<decltype(per_lane)::value, Keys>
            <<<grid, kBlock, 0, stream>>>(q, k, v, out, rows, keys, n_head, n_kv_head, head_dim, scale);
    };
    switch ((head_dim + kWarpSize - 1) / kWarpSize) {
        case 1:
            run(std::integral_constant<int, 1>{});
            break;
        case 2:
            run(std::integral_constant<int, 2>{});
            break;
        case 3:
            run(std::integral_constant<int, 3>{});
            break;
        case 4:
            run(std::integral_constant<int, 4>{});
            break;
        case 5:
            run(std::integral_constant<int, 5>{});
            break;
        case 6:
            run(std::integral_constant<int, 6>{});
            break;
        case 7:
            run(std::integral_constant<int, 7>{});
            break;
        default:
            run(std::integral_constant<int, 8>{});
            break;
    }
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void attention_f32(const float* q, const float* k, const float* v, float* out, const AttentionRow* rows,
                   int64_t n_rows, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                   cudaStream_t stream) {
    launch_attention(q, k, v, out, rows, n_rows, ContiguousKeys{}, n_head, n_kv_head, head_dim, scale,
                     stream);
}

void paged_attention_f32(const float* q, const float* k_cache, const float* v_cache, float* out,
                         const AttentionRow* rows, int64_t n_rows, const int32_t* block_tables,
                         int64_t block_size, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                         cudaStream_t stream) {
    launch_attention(q, k_cache, v_cache, out, rows, n_rows, PagedKeys{block_tables, block_size}, n_head,
                     n_kv_head, head_dim, scale, stream);
}

}  // namespace folio::kernels
