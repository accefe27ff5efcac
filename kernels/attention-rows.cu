// Single query rows: the whole-row kernel, the dispatch between it and the split-row kernel
// (attention-split-rows.cu), the split of a row's keys, and decoding over a paged cache.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "engine/common/error.h"
#include "kernels/attention-keys.cuh"
#include "kernels/attention-rows.cuh"
#include "kernels/attention.h"
#include "kernels/chained-launch.cuh"
#include "kernels/decode-attention.h"
#include "kernels/dispatch.cuh"
#include "kernels/kv-element.cuh"
#include "kernels/reduce.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

// The whole-row kernel (rows enough to fill the device, keys not split).
constexpr int kWarps = 4;
constexpr int kBlock = kWarps * kWarpSize;
constexpr int kKeysPerLane = 1;                      // keys a lane scores in one step
constexpr int kStepKeys = kKeysPerLane * kWarpSize;  // keys a warp takes in one step
constexpr int kValueBatch = 8;                       // value rows a lane loads before it accumulates them

// The most query heads a split-row block takes.
constexpr int kMaxSplitGroup = 8;
// Splits a row on the tensor cores takes at least, however many rows fill the device: its tiles' products
// are quick, so a block does better with fewer of them (docs/performance.md, batches 128 and 256).
constexpr int64_t kMinTensorSplits = 3;

// One block per (row, group of kGroup query heads sharing one K/V head) for calls with rows enough to fill
// the device: each warp runs an online softmax per head over every kWarps-th step of kStepKeys keys of the
// row, so that a block keeps kWarps steps of loads in flight without shared tiles. Scoring, a lane takes
// kKeysPerLane keys and dots each with the group's queries (from shared memory), so that a step needs one
// reduction per head instead of one per key and head; accumulating, lanes split head_dim (kPerLane values
// each) and read each value row together. The warps' results are merged at the end. kVec4: head_dim is a
// multiple of 4, and key rows are read 4 values at a time. Chained.
template <int kPerLane, int kGroup, bool kVec4, typename Rows, typename Keys, typename KV>
__global__ void __launch_bounds__(kBlock) attention_row_f32_kernel(const RowArgs<Rows, Keys, KV> a) {
    constexpr int kDims = kPerLane * kWarpSize;  // head_dim rounded up to whole lanes
    __shared__ __align__(16) float q_scaled[kGroup][kDims];
    __shared__ __align__(16) float weights[kWarps][kGroup][kStepKeys];
    __shared__ int64_t step_rows[kWarps][kStepKeys];
    __shared__ float part_max[kWarps][kGroup];
    __shared__ float part_sum[kWarps][kGroup];
    __shared__ float part_acc[kWarps][kGroup][kDims];

    wait_for_prior_grids();
    start_dependent_grids();
    const KV* __restrict__ k = a.k;
    const KV* __restrict__ v = a.v;
    const int64_t n_head = a.n_head, n_kv_head = a.n_kv_head, head_dim = a.head_dim;
    const AttentionSpan span = a.rows.span(blockIdx.x);
    const int64_t key_end = visible_keys(span, 0);
    const int64_t h0 = static_cast<int64_t>(blockIdx.y) * kGroup;
    const int64_t kv_head = h0 / (n_head / n_kv_head);
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;

    const float* qr = a.q + (span.q_row * n_head + h0) * head_dim;  // [kGroup, head_dim]
    for (int i = static_cast<int>(threadIdx.x); i < kGroup * kDims; i += kBlock) {
        const int g = i / kDims, d = i % kDims;
        q_scaled[g][d] = d < head_dim ? qr[g * head_dim + d] * a.scale : 0.0f;
    }
    __syncthreads();

    float acc[kGroup][kPerLane];
    float running_max[kGroup], running_sum[kGroup];
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
#pragma unroll
        for (int p = 0; p < kPerLane; ++p) {
            acc[g][p] = 0.0f;
        }
        running_max[g] = -INFINITY;
        running_sum[g] = 0.0f;
    }

    for (int64_t j0 = static_cast<int64_t>(warp) * kStepKeys; j0 < key_end;
         j0 += static_cast<int64_t>(kWarps) * kStepKeys) {
        // Scores of this lane's keys j0 + t * 32 + lane for every head of the group.
        const KV* key_rows[kKeysPerLane];
        bool valid[kKeysPerLane];
#pragma unroll
        for (int t = 0; t < kKeysPerLane; ++t) {
            const int64_t j = j0 + t * kWarpSize + lane;
            const int64_t row = j < key_end ? a.keys.row(span.kv_start, j) : -1;
            valid[t] = row >= 0;
            step_rows[warp][t * kWarpSize + lane] = row;
            key_rows[t] = k + (max(row, int64_t{0}) * n_kv_head + kv_head) * head_dim;  // [head_dim]
        }
        float score[kGroup][kKeysPerLane] = {};
#pragma unroll 8
        for (int d = 0; d < head_dim; d += 4) {
            float4 kd[kKeysPerLane];
#pragma unroll
            for (int t = 0; t < kKeysPerLane; ++t) {
                if constexpr (kVec4) {
                    kd[t] = valid[t] ? load_four(key_rows[t] + d) : float4{};
                } else {
                    const KV* r = key_rows[t];
                    kd[t] = valid[t] ? float4{to_float(r[d]), d + 1 < head_dim ? to_float(r[d + 1]) : 0.0f,
                                              d + 2 < head_dim ? to_float(r[d + 2]) : 0.0f,
                                              d + 3 < head_dim ? to_float(r[d + 3]) : 0.0f}
                                     : float4{};
                }
            }
#pragma unroll
            for (int g = 0; g < kGroup; ++g) {
                const float4 qd = *reinterpret_cast<const float4*>(&q_scaled[g][d]);
#pragma unroll
                for (int t = 0; t < kKeysPerLane; ++t) {
                    score[g][t] += qd.x * kd[t].x + qd.y * kd[t].y + qd.z * kd[t].z + qd.w * kd[t].w;
                }
            }
        }
        if constexpr (std::is_same_v<KV, int8_t>) {
#pragma unroll
            for (int t = 0; t < kKeysPerLane; ++t) {
                const float key_scale =
                    valid[t] ? row_scale<KV>(a.k_scales,
                                             step_rows[warp][t * kWarpSize + lane] * n_kv_head + kv_head)
                             : 0.0f;
#pragma unroll
                for (int g = 0; g < kGroup; ++g) {
                    score[g][t] *= key_scale;
                }
            }
        }
        // One online-softmax step per head over the warp's kStepKeys keys.
#pragma unroll
        for (int g = 0; g < kGroup; ++g) {
            float lane_max = -INFINITY;
#pragma unroll
            for (int t = 0; t < kKeysPerLane; ++t) {
                lane_max = valid[t] ? fmaxf(lane_max, score[g][t]) : lane_max;
            }
            const float step_max = fmaxf(running_max[g], warp_max(lane_max));
            const float correction = step_max == -INFINITY ? 1.0f : expf(running_max[g] - step_max);
            float lane_sum = 0.0f;
#pragma unroll
            for (int t = 0; t < kKeysPerLane; ++t) {
                const float w = valid[t] ? expf(score[g][t] - step_max) : 0.0f;
                weights[warp][g][t * kWarpSize + lane] = w;
                lane_sum += w;
            }
            running_sum[g] = running_sum[g] * correction + warp_sum(lane_sum);
            running_max[g] = step_max;
#pragma unroll
            for (int p = 0; p < kPerLane; ++p) {
                acc[g][p] *= correction;
            }
        }
        __syncwarp();
        // Values of the step's keys, kValueBatch at a time, each row read by the whole warp.
        const int n_step = static_cast<int>(min(static_cast<int64_t>(kStepKeys), key_end - j0));
        for (int t0 = 0; t0 < n_step; t0 += kValueBatch) {
            float vd[kValueBatch][kPerLane];
#pragma unroll
            for (int t = 0; t < kValueBatch; ++t) {
                const int64_t row = t0 + t < n_step ? step_rows[warp][t0 + t] : -1;
                const KV* vr = v + (max(row, int64_t{0}) * n_kv_head + kv_head) * head_dim;  // [head_dim]
                const float value_scale =
                    row >= 0 ? row_scale<KV>(a.v_scales, row * n_kv_head + kv_head) : 0.0f;
#pragma unroll
                for (int p = 0; p < kPerLane; ++p) {
                    const int d = lane + p * kWarpSize;
                    vd[t][p] = row >= 0 && d < head_dim ? to_float(vr[d]) * value_scale : 0.0f;
                }
            }
#pragma unroll
            for (int g = 0; g < kGroup; ++g) {
#pragma unroll
                for (int t4 = 0; t4 < kValueBatch; t4 += 4) {
                    const float4 w = *reinterpret_cast<const float4*>(&weights[warp][g][t0 + t4]);
#pragma unroll
                    for (int p = 0; p < kPerLane; ++p) {
                        acc[g][p] +=
                            w.x * vd[t4][p] + w.y * vd[t4 + 1][p] + w.z * vd[t4 + 2][p] + w.w * vd[t4 + 3][p];
                    }
                }
            }
        }
        __syncwarp();  // weights and step_rows are rewritten by the next step
    }

#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
        if (lane == 0) {
            part_max[warp][g] = running_max[g];
            part_sum[warp][g] = running_sum[g];
        }
#pragma unroll
        for (int p = 0; p < kPerLane; ++p) {
            part_acc[warp][g][lane + p * kWarpSize] = acc[g][p];
        }
    }
    __syncthreads();

    for (int64_t i = threadIdx.x; i < kGroup * head_dim; i += kBlock) {
        const auto g = static_cast<int>(i / head_dim);
        const int64_t d = i % head_dim, h = h0 + g;
        float total_max = -INFINITY;
        for (int w = 0; w < kWarps; ++w) {
            total_max = fmaxf(total_max, part_max[w][g]);
        }
        float total_sum = 0.0f, o = 0.0f;
        for (int w = 0; w < kWarps; ++w) {
            const float factor = part_max[w][g] == -INFINITY ? 0.0f : expf(part_max[w][g] - total_max);
            total_sum += part_sum[w][g] * factor;
            o += part_acc[w][g][d] * factor;
        }
        a.out[(span.q_row * n_head + h) * head_dim + d] = total_sum > 0.0f ? o / total_sum : 0.0f;
    }
}

// Query heads the split-row kernel takes per block: the most of 8, 4 and 2 that divides the heads sharing a
// K/V head, else 1.
int split_group(int64_t n_head, int64_t n_kv_head) {
    const int64_t shared = n_head / n_kv_head;
    for (const int group : {kMaxSplitGroup, 4, 2}) {
        if (shared % group == 0) {
            return group;
        }
    }
    return 1;
}

// Whether the split-row kernel has its products on the tensor cores for a group of query heads and head_dim.
bool tensor_core_shape(int group, int64_t head_dim) {
    return group == kSplitTensorGroup && head_dim == kSplitTensorHeadDim;
}

// Query heads the whole-row kernel takes per block for head_dim's kPerLane: the most of 8, 4, 2 and 1 that
// divides the heads sharing a K/V head and keeps kGroup * kPerLane registers of queries and outputs at
// most 32.
int whole_row_group(int64_t n_head, int64_t n_kv_head, int per_lane) {
    const int64_t shared = n_head / n_kv_head;
    for (const int group : {8, 4, 2}) {
        if (shared % group == 0 && group * per_lane <= 32) {
            return group;
        }
    }
    return 1;
}

template <typename Rows, typename Keys, typename KV>
void launch_whole_rows(const RowArgs<Rows, Keys, KV>& args, int64_t n_rows, cudaStream_t stream) {
    with_1_to_8((args.head_dim + kWarpSize - 1) / kWarpSize, [&](auto per_lane) {
        constexpr int kPerLane = decltype(per_lane)::value;
        const auto launch = [&](auto group, auto vector) {
            constexpr int kGroup = decltype(group)::value;
            constexpr bool kVec4 = decltype(vector)::value;
            if constexpr (kGroup * kPerLane <= 32 || kGroup == 1) {
                const dim3 grid(static_cast<unsigned int>(n_rows),
                                static_cast<unsigned int>(args.n_head / kGroup));
                launch_chained(attention_row_f32_kernel<kPerLane, kGroup, kVec4, Rows, Keys, KV>, grid,
                               dim3(kBlock), 0, stream, args);
            }
        };
        const auto launch_group = [&](auto group) {
            if (args.vec4) {
                launch(group, std::true_type{});
            } else {
                launch(group, std::false_type{});
            }
        };
        with_1_2_4_8(whole_row_group(args.n_head, args.n_kv_head, kPerLane), launch_group);
    });
}

}  // namespace

template <typename Rows, typename Keys, typename KV>
void launch_rows(const RowArgs<Rows, Keys, KV>& args, int64_t n_rows, cudaStream_t stream,
                 bool tensor_cores) {
    const int group = split_group(args.n_head, args.n_kv_head);
    const bool on_tensor_cores = tensor_cores && tensor_core_shape(group, args.head_dim) && args.vec4;
    if (args.splits.n_splits == 1 && !on_tensor_cores) {
        launch_whole_rows(args, n_rows, stream);
        return;
    }
    launch_split_rows(args, n_rows, group, on_tensor_cores, stream);
}

// The row sources and key layouts that attention.cu and paged_decode_attention_f32 launch.
template void launch_rows(const RowArgs<SpanRows, ContiguousKeys, float>&, int64_t, cudaStream_t, bool);
template void launch_rows(const RowArgs<SpanRows, PagedKeys, float>&, int64_t, cudaStream_t, bool);
template void launch_rows(const RowArgs<SpanRows, PagedKeys, Bf16>&, int64_t, cudaStream_t, bool);
template void launch_rows(const RowArgs<SpanRows, PagedKeys, int8_t>&, int64_t, cudaStream_t, bool);

void check_attention_args(int64_t n_head, int64_t n_kv_head, int64_t head_dim,
                          const AttentionSplits& splits) {
    if (head_dim <= 0 || head_dim > kMaxAttentionHeadDim || n_kv_head <= 0 || n_head % n_kv_head != 0) {
        fail("attention kernel: head_dim ", head_dim, " (at most ", kMaxAttentionHeadDim, "), ", n_head,
             " heads over ", n_kv_head, " K/V heads");
    }
    if (splits.n_splits < 1 || splits.n_splits > kMaxAttentionSplits ||
        (splits.n_splits > 1 && (splits.partials == nullptr || splits.counters == nullptr))) {
        fail("attention kernel: ", splits.n_splits, " splits of the keys (1 to ", kMaxAttentionSplits,
             ", several need partials and counters)");
    }
}

// ---- launchers --------------------------------------------------------------------------------------

int64_t attention_splits(int64_t n_row_spans, int64_t n_head, int64_t n_kv_head, int64_t head_dim,
                         int64_t max_visible, int n_multiprocessors, bool split_row_tensor_cores) {
    const int group = n_kv_head > 0 ? split_group(n_head, n_kv_head) : 1;
    const int64_t n_blocks = std::max<int64_t>(n_row_spans * (n_head / group), 1);
    int64_t wanted =
        (kAttentionSplitBlocksPerSm * static_cast<int64_t>(n_multiprocessors) + n_blocks - 1) / n_blocks;
    if (split_row_tensor_cores && tensor_core_shape(group, head_dim) && n_blocks <= kAttentionSplitCounters) {
        wanted = std::max(wanted, kMinTensorSplits);
    }
    return std::clamp<int64_t>(std::min(wanted, max_visible / kMinKeysPerSplit), 1, kMaxAttentionSplits);
}

int64_t attention_partials_floats(int64_t n_row_spans, int64_t n_head, int64_t n_splits, int64_t head_dim) {
    return n_splits > 1 ? n_row_spans * n_head * n_splits * (kPartialHeader + (head_dim + 3) / 4 * 4) : 0;
}

void paged_decode_attention_f32(const float* q, const PagedCache& cache, float* out, const int32_t* seq_lens,
                                int64_t n_seqs, int64_t max_blocks, const AttentionSplits& splits,
                                int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                                cudaStream_t stream, bool bf16_products) {
    if (n_seqs == 0 || n_head == 0) {
        return;
    }
    check_attention_args(n_head, n_kv_head, head_dim, splits);
    if (bf16_products && decode_attention_bf16_takes(q, out, cache, max_blocks * cache.block_size, n_head,
                                                     n_kv_head, head_dim)) {
        decode_attention_bf16(q, cache, out, seq_lens, n_seqs, max_blocks, splits, n_head, n_kv_head, scale,
                              stream);
        return;
    }
    with_kv_element(cache.element, [&](auto element) {
        using KV = typename decltype(element)::type;
        const auto* k = static_cast<const KV*>(cache.k);
        const auto* v = static_cast<const KV*>(cache.v);
        const RowArgs<DecodeRows, PagedKeys, KV> args{
            q,
            k,
            v,
            out,
            DecodeRows{seq_lens, max_blocks, max_blocks * cache.block_size},
            PagedKeys{cache.block_tables, cache.block_size, cache.n_blocks},
            n_head,
            n_kv_head,
            head_dim,
            scale,
            vec4_rows(k, v, head_dim),
            splits,
            cache.k_scales,
            cache.v_scales};
        launch_rows(args, n_seqs, stream, bf16_products);
    });
}

}  // namespace folio::kernels
