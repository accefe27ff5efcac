// Attention over spans of query rows: the tile kernel for runs of rows (prefill) and the entry points that
// send single rows to the row kernels (attention-rows.cu).
#include <algorithm>
#include <cmath>

#include "engine/common/error.h"
#include "kernels/attention-keys.cuh"
#include "kernels/attention-rows.cuh"
#include "kernels/attention.h"
#include "kernels/cuda-check.h"
#include "kernels/decode-attention.h"
#include "kernels/dispatch.cuh"
#include "kernels/kv-element.cuh"
#include "kernels/reduce.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kTileWarps = 4;
constexpr int kTileBlock = kTileWarps * kWarpSize;
constexpr int kTileKeys = kWarpSize;  // keys per block of keys: one per lane when scoring
constexpr int kRowsPerWarp = static_cast<int>(kAttentionTileRows) / kTileWarps;

// Bytes of dynamic shared memory the tile kernel takes for a head_dim.
size_t tile_shared_bytes(int64_t head_dim) {
    return sizeof(float) * static_cast<size_t>(kAttentionTileRows * head_dim + kTileKeys * (head_dim + 1) +
                                               kTileKeys * head_dim);
}

// One block per (span of up to kAttentionTileRows query rows, head): blocks of kTileKeys keys and values are
// loaded to shared memory once for all rows of the span. Each warp keeps an online softmax for kRowsPerWarp
// rows; a lane scores one key of the block for each row, then accumulates head_dim values kPerLane apart.
// q, out [n_q_total, n_head, head_dim], k, v [n_kv_total, n_kv_head, head_dim] of KV, spans [gridDim.x]
template <int kPerLane, typename Keys, typename KV>
__global__ void __launch_bounds__(kTileBlock)
    attention_tile_f32_kernel(const float* q, const KV* k, const KV* v, const float* k_scales,
                              const float* v_scales, float* out, const AttentionSpan* spans, Keys keys,
                              int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale) {
    extern __shared__ float shared[];
    float* q_tile = shared;                                  // [kAttentionTileRows, head_dim]
    float* k_tile = q_tile + kAttentionTileRows * head_dim;  // [kTileKeys, head_dim + 1]
    float* v_tile = k_tile + kTileKeys * (head_dim + 1);     // [kTileKeys, head_dim]

    const AttentionSpan span = spans[blockIdx.x];
    const int64_t h = blockIdx.y;
    const int64_t kv_head = h / (n_head / n_kv_head);
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int row0 = static_cast<int>(threadIdx.x) / kWarpSize * kRowsPerWarp;

    for (int64_t i = threadIdx.x; i < kAttentionTileRows * head_dim; i += kTileBlock) {
        const int64_t r = i / head_dim, d = i % head_dim;
        q_tile[i] = r < span.n_rows ? q[((span.q_row + r) * n_head + h) * head_dim + d] : 0.0f;
    }
    int64_t n_visible[kRowsPerWarp];
    float running_max[kRowsPerWarp], running_sum[kRowsPerWarp], acc[kRowsPerWarp][kPerLane];
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        n_visible[rr] = row0 + rr < span.n_rows ? visible_keys(span, row0 + rr) : 0;
        running_max[rr] = -INFINITY;
        running_sum[rr] = 0.0f;
#pragma unroll
        for (int p = 0; p < kPerLane; ++p) {
            acc[rr][p] = 0.0f;
        }
    }
    const int64_t span_visible = max(visible_keys(span, 0), visible_keys(span, span.n_rows - 1));

    for (int64_t j0 = 0; j0 < span_visible; j0 += kTileKeys) {
        __syncthreads();  // the previous block of keys is no longer read
        for (int64_t i = threadIdx.x; i < kTileKeys * head_dim; i += kTileBlock) {
            const int64_t kk = i / head_dim, d = i % head_dim;
            float kv = 0.0f, vv = 0.0f;
            const int64_t kv_row = j0 + kk < span_visible ? keys.row(span.kv_start, j0 + kk) : -1;
            if (kv_row >= 0) {
                const int64_t row_head = kv_row * n_kv_head + kv_head, at = row_head * head_dim + d;
                kv = to_float(k[at]) * row_scale<KV>(k_scales, row_head);
                vv = to_float(v[at]) * row_scale<KV>(v_scales, row_head);
            }
            k_tile[kk * (head_dim + 1) + d] = kv;
            v_tile[i] = vv;
        }
        __syncthreads();

        float score[kRowsPerWarp] = {};
        const float* k_row = k_tile + lane * (head_dim + 1);  // [head_dim]; key j0 + lane
        for (int64_t d = 0; d < head_dim; ++d) {
            const float kd = k_row[d];
#pragma unroll
            for (int rr = 0; rr < kRowsPerWarp; ++rr) {
                score[rr] += q_tile[(row0 + rr) * head_dim + d] * kd;
            }
        }
        float weight[kRowsPerWarp];
#pragma unroll
        for (int rr = 0; rr < kRowsPerWarp; ++rr) {
            const bool valid = j0 + lane < n_visible[rr];
            const float s = valid ? score[rr] * scale : -INFINITY;
            const float new_max = fmaxf(running_max[rr], warp_max(s));
            weight[rr] = valid ? expf(s - new_max) : 0.0f;
            const float correction = new_max == -INFINITY ? 1.0f : expf(running_max[rr] - new_max);
            running_sum[rr] = running_sum[rr] * correction + warp_sum(weight[rr]);
#pragma unroll
            for (int p = 0; p < kPerLane; ++p) {
                acc[rr][p] *= correction;
            }
            running_max[rr] = new_max;
        }
        for (int kk = 0; kk < kTileKeys; ++kk) {
            float vd[kPerLane];
#pragma unroll
            for (int p = 0; p < kPerLane; ++p) {
                const int64_t d = lane + p * kWarpSize;
                vd[p] = d < head_dim ? v_tile[kk * head_dim + d] : 0.0f;
            }
#pragma unroll
            for (int rr = 0; rr < kRowsPerWarp; ++rr) {
                const float w = __shfl_sync(0xffffffffu, weight[rr], kk);
#pragma unroll
                for (int p = 0; p < kPerLane; ++p) {
                    acc[rr][p] += w * vd[p];
                }
            }
        }
    }

#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        if (row0 + rr >= span.n_rows) {
            continue;
        }
        float* orow = out + ((span.q_row + row0 + rr) * n_head + h) * head_dim;  // [head_dim]
#pragma unroll
        for (int p = 0; p < kPerLane; ++p) {
            const int64_t d = lane + p * kWarpSize;
            if (d < head_dim) {
                orow[d] = running_sum[rr] > 0.0f ? acc[rr][p] / running_sum[rr] : 0.0f;
            }
        }
    }
}

// k_scales, v_scales [n_kv_total, n_kv_head] for 8-bit levels, else null
template <typename Keys, typename KV>
void launch_attention(const float* q, const KV* k, const KV* v, const float* k_scales, const float* v_scales,
                      float* out, const AttentionSpan* row_spans, int64_t n_row_spans,
                      const AttentionSplits& splits, const AttentionSpan* tile_spans, int64_t n_tile_spans,
                      const Keys& keys, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                      cudaStream_t stream) {
    if (n_head == 0) {
        return;
    }
    check_attention_args(n_head, n_kv_head, head_dim, splits);
    if (n_row_spans > 0) {
        const RowArgs<SpanRows, Keys, KV> args{
            q,        k,         v,        out,   SpanRows{row_spans},       keys,
            n_head,   n_kv_head, head_dim, scale, vec4_rows(k, v, head_dim), splits,
            k_scales, v_scales};
        launch_rows(args, n_row_spans, stream, false);
    }
    if (n_tile_spans > 0) {
        with_1_to_8(clamp_1_to_8((head_dim + kWarpSize - 1) / kWarpSize), [&](auto per_lane) {
            constexpr int kPerLane = decltype(per_lane)::value;
            const size_t shared_bytes = tile_shared_bytes(head_dim);
            CUDA_CHECK(cudaFuncSetAttribute(attention_tile_f32_kernel<kPerLane, Keys, KV>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(shared_bytes)));
            const dim3 grid(static_cast<unsigned int>(n_tile_spans), static_cast<unsigned int>(n_head));
            attention_tile_f32_kernel<kPerLane, Keys, KV><<<grid, kTileBlock, shared_bytes, stream>>>(
                q, k, v, k_scales, v_scales, out, tile_spans, keys, n_head, n_kv_head, head_dim, scale);
            CUDA_CHECK(cudaGetLastError());
        });
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void attention_f32(const float* q, const float* k, const float* v, float* out, const AttentionSpan* row_spans,
                   int64_t n_row_spans, const AttentionSplits& splits, const AttentionSpan* tile_spans,
                   int64_t n_tile_spans, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                   cudaStream_t stream) {
    launch_attention(q, k, v, nullptr, nullptr, out, row_spans, n_row_spans, splits, tile_spans, n_tile_spans,
                     ContiguousKeys{}, n_head, n_kv_head, head_dim, scale, stream);
}

void paged_attention_f32(const float* q, const PagedCache& cache, float* out, const AttentionSpan* row_spans,
                         int64_t n_row_spans, int64_t max_row_keys, const AttentionSplits& splits,
                         const AttentionSpan* tile_spans, int64_t n_tile_spans, int64_t n_head,
                         int64_t n_kv_head, int64_t head_dim, float scale, cudaStream_t stream,
                         bool bf16_products) {
    if (n_row_spans > 0 && n_head > 0 && bf16_products &&
        decode_attention_bf16_takes(q, out, cache, max_row_keys, n_head, n_kv_head, head_dim)) {
        check_attention_args(n_head, n_kv_head, head_dim, splits);
        decode_attention_bf16(q, cache, out, row_spans, n_row_spans, max_row_keys, splits, n_head, n_kv_head,
                              scale, stream);
        n_row_spans = 0;
    }
    with_kv_element(cache.element, [&](auto element) {
        using KV = typename decltype(element)::type;
        launch_attention(q, static_cast<const KV*>(cache.k), static_cast<const KV*>(cache.v), cache.k_scales,
                         cache.v_scales, out, row_spans, n_row_spans, splits, tile_spans, n_tile_spans,
                         PagedKeys{cache.block_tables, cache.block_size, cache.n_blocks}, n_head, n_kv_head,
                         head_dim, scale, stream);
    });
}

}  // namespace folio::kernels
