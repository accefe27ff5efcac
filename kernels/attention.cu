#include <algorithm>
#include <cmath>
#include <type_traits>

#include "attention-keys.cuh"
#include "attention.h"
#include "chained-launch.cuh"
#include "cuda-check.h"
#include "dispatch.cuh"
#include "error.h"
#include "reduce.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kWarps = 4;
constexpr int kBlock = kWarps * kWarpSize;
constexpr int kKeysPerLane = 1;                      // keys a lane scores in one step of the row kernel
constexpr int kStepKeys = kKeysPerLane * kWarpSize;  // keys a warp takes in one step
constexpr int kValueBatch = 8;                       // value rows a lane loads before it accumulates them
constexpr int kMergeBlock = 128;
static_assert(kMaxAttentionSplits <= kMergeBlock);
// Blocks of the row kernel up to which each lane asks for its keys' value rows in L1 as it scores them: with
// few blocks the value reads then find their rows there, with many the rows of all blocks crowd L1 out.
constexpr int64_t kPrefetchValuesMaxBlocks = 256;
// Keys a split of a row should have at least, so that splitting pays for the merge.
constexpr int64_t kMinKeysPerSplit = 32;

// Asks for the n floats at p in the SM's L1 cache, a request per 128-byte line.
__device__ inline void prefetch_l1(const float* p, int64_t n) {
    for (int64_t i = 0; i < n; i += 32) {
        asm volatile("prefetch.global.L1 [%0];" ::"l"(p + i));
    }
}

// One thread per sequence of a decode batch: the row span of its one query, which sees its seq_lens[i] keys
// (at most max_blocks * block_size) through row i of the block tables. Chained.
// seq_lens [n_seqs], spans [n_seqs]
__global__ void decode_spans_kernel(const int32_t* seq_lens, int64_t n_seqs, int64_t max_blocks,
                                    int64_t block_size, AttentionSpan* spans) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n_seqs) {
        const int64_t n_keys = min(max(int64_t{seq_lens[i]}, int64_t{0}), max_blocks * block_size);
        spans[i] = AttentionSpan{i, 1, i * max_blocks, n_keys, 1, n_keys};
    }
}

// One block per (row, group of kGroup query heads sharing one K/V head, split of the keys), so that each key
// and value is read once for the group. Each warp runs an online softmax per head over every kWarps-th step
// of kStepKeys keys of the split. Scoring, a lane takes kKeysPerLane keys and dots each with the group's
// queries (from shared memory), so that a step needs one reduction per head instead of one per key and
// head; accumulating, lanes split head_dim (kPerLane values each) and read each value row together. The
// warps' results are merged at the end. With one split the block writes the row's output; with several it
// writes each head's running maximum, sum of exponentials and unnormalized output to partials, which
// merge_splits_f32_kernel combines. kVec4: head_dim is a multiple of 4, and key rows are read 4 values at a
// time. With prefetch_values, each lane asks for its key's value row in L1 as it scores the key. Chained.
// q, out [n_q_total, n_head, head_dim], k, v [n_kv_total, n_kv_head, head_dim], spans [gridDim.x],
// partials [gridDim.x, n_head, gridDim.z, head_dim + 2] or null with one split
template <int kPerLane, int kGroup, bool kVec4, typename Keys>
__global__ void __launch_bounds__(kBlock)
    attention_row_f32_kernel(const float* __restrict__ q, const float* __restrict__ k,
                             const float* __restrict__ v, float* __restrict__ out, const AttentionSpan* spans,
                             Keys keys, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                             float* __restrict__ partials, bool prefetch_values) {
    constexpr int kDims = kPerLane * kWarpSize;  // head_dim rounded up to whole lanes
    __shared__ __align__(16) float q_scaled[kGroup][kDims];
    __shared__ __align__(16) float weights[kWarps][kGroup][kStepKeys];
    __shared__ int64_t step_rows[kWarps][kStepKeys];
    __shared__ float part_max[kWarps][kGroup];
    __shared__ float part_sum[kWarps][kGroup];
    __shared__ float part_acc[kWarps][kGroup][kDims];

    wait_for_prior_grids();
    start_dependent_grids();
    const AttentionSpan span = spans[blockIdx.x];
    const int64_t n_visible = visible_keys(span, 0);
    const int64_t split_keys = (n_visible + gridDim.z - 1) / gridDim.z;
    const int64_t key_begin = blockIdx.z * split_keys;
    const int64_t key_end = min(n_visible, key_begin + split_keys);
    const int64_t h0 = static_cast<int64_t>(blockIdx.y) * kGroup;
    const int64_t kv_head = h0 / (n_head / n_kv_head);
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;

    const float* qr = q + (span.q_row * n_head + h0) * head_dim;  // [kGroup, head_dim]
    for (int i = static_cast<int>(threadIdx.x); i < kGroup * kDims; i += kBlock) {
        const int g = i / kDims, d = i % kDims;
        q_scaled[g][d] = d < head_dim ? qr[g * head_dim + d] * scale : 0.0f;
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

    for (int64_t j0 = key_begin + static_cast<int64_t>(warp) * kStepKeys; j0 < key_end;
         j0 += static_cast<int64_t>(kWarps) * kStepKeys) {
        // Scores of this lane's keys j0 + t * 32 + lane for every head of the group.
        const float* key_rows[kKeysPerLane];
        bool valid[kKeysPerLane];
#pragma unroll
        for (int t = 0; t < kKeysPerLane; ++t) {
            const int64_t j = j0 + t * kWarpSize + lane;
            const int64_t row = j < key_end ? keys.row(span.kv_start, j) : -1;
            valid[t] = row >= 0;
            step_rows[warp][t * kWarpSize + lane] = row;
            key_rows[t] = k + (max(row, int64_t{0}) * n_kv_head + kv_head) * head_dim;  // [head_dim]
            if (prefetch_values && valid[t]) {
                prefetch_l1(v + (row * n_kv_head + kv_head) * head_dim, head_dim);
            }
        }
        float score[kGroup][kKeysPerLane] = {};
#pragma unroll 8
        for (int d = 0; d < head_dim; d += 4) {
            float4 kd[kKeysPerLane];
#pragma unroll
            for (int t = 0; t < kKeysPerLane; ++t) {
                if constexpr (kVec4) {
                    kd[t] = valid[t] ? *reinterpret_cast<const float4*>(key_rows[t] + d) : float4{};
                } else {
                    const float* r = key_rows[t];
                    kd[t] = valid[t] ? float4{r[d], d + 1 < head_dim ? r[d + 1] : 0.0f,
                                              d + 2 < head_dim ? r[d + 2] : 0.0f,
                                              d + 3 < head_dim ? r[d + 3] : 0.0f}
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
                const float* vr = v + (max(row, int64_t{0}) * n_kv_head + kv_head) * head_dim;  // [head_dim]
#pragma unroll
                for (int p = 0; p < kPerLane; ++p) {
                    const int d = lane + p * kWarpSize;
                    vd[t][p] = row >= 0 && d < head_dim ? vr[d] : 0.0f;
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
        if (gridDim.z == 1) {
            out[(span.q_row * n_head + h) * head_dim + d] = total_sum > 0.0f ? o / total_sum : 0.0f;
            continue;
        }
        float* partial = partials + ((blockIdx.x * n_head + h) * gridDim.z + blockIdx.z) *
                                        (head_dim + 2);  // [head_dim + 2]
        if (d == 0) {
            partial[0] = total_max;
            partial[1] = total_sum;
        }
        partial[2 + d] = o;
    }
}

// One block per (row, head), chained: combines the splits' partial results into the row's output. Thread s
// reads split s's maximum and sum, so that they arrive together; each split's factor is computed once.
// partials [gridDim.x, n_head, n_splits, head_dim + 2], out [n_q_total, n_head, head_dim], spans [gridDim.x];
// n_splits <= kMaxAttentionSplits <= kMergeBlock
__global__ void __launch_bounds__(kMergeBlock)
    merge_splits_f32_kernel(const float* partials, const AttentionSpan* spans, float* out, int64_t n_head,
                            int64_t n_splits, int64_t head_dim) {
    __shared__ float split_max[kMaxAttentionSplits];
    __shared__ float split_sum[kMaxAttentionSplits];
    __shared__ float factor[kMaxAttentionSplits];  // exp(split max - total max), 0 for an empty split
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t h = blockIdx.y;
    const float* row_partials = partials + (blockIdx.x * n_head + h) * n_splits * (head_dim + 2);
    if (threadIdx.x < n_splits) {
        split_max[threadIdx.x] = row_partials[threadIdx.x * (head_dim + 2)];
        split_sum[threadIdx.x] = row_partials[threadIdx.x * (head_dim + 2) + 1];
    }
    __syncthreads();
    float total_max = -INFINITY;
    for (int64_t s = 0; s < n_splits; ++s) {
        total_max = fmaxf(total_max, split_max[s]);
    }
    if (threadIdx.x < n_splits) {
        const float m = split_max[threadIdx.x];
        factor[threadIdx.x] = m == -INFINITY ? 0.0f : expf(m - total_max);
    }
    __syncthreads();
    float total_sum = 0.0f;
    for (int64_t s = 0; s < n_splits; ++s) {
        total_sum += split_max[s] == -INFINITY ? 0.0f : split_sum[s] * factor[s];
    }
    float* orow = out + (spans[blockIdx.x].q_row * n_head + h) * head_dim;  // [head_dim]
    for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float o = 0.0f;
#pragma unroll 8
        for (int64_t s = 0; s < n_splits; ++s) {
            o += split_max[s] == -INFINITY ? 0.0f : row_partials[s * (head_dim + 2) + 2 + d] * factor[s];
        }
        orow[d] = total_sum > 0.0f ? o / total_sum : 0.0f;
    }
}

constexpr int kSoftmaxRowsPerBlock = 8;

// One warp per row, in place: x = softmax(x * scale).  x [n_rows, n_cols]
__global__ void softmax_rows_f32_kernel(float* x, int64_t n_rows, int64_t n_cols, float scale) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * kSoftmaxRowsPerBlock + threadIdx.x / kWarpSize;
    if (r >= n_rows) {
        return;
    }
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    float* row = x + r * n_cols;  // [n_cols]
    float m = -INFINITY;
    for (int64_t i = lane; i < n_cols; i += kWarpSize) {
        m = fmaxf(m, row[i]);
    }
    m = warp_max(m);
    float sum = 0.0f;
    for (int64_t i = lane; i < n_cols; i += kWarpSize) {
        const float e = expf((row[i] - m) * scale);
        row[i] = e;
        sum += e;
    }
    const float inv = 1.0f / warp_sum(sum);
    for (int64_t i = lane; i < n_cols; i += kWarpSize) {
        row[i] *= inv;
    }
}

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
// q, out [n_q_total, n_head, head_dim], k, v [n_kv_total, n_kv_head, head_dim], spans [gridDim.x]
template <int kPerLane, typename Keys>
__global__ void __launch_bounds__(kTileBlock)
    attention_tile_f32_kernel(const float* q, const float* k, const float* v, float* out,
                              const AttentionSpan* spans, Keys keys, int64_t n_head, int64_t n_kv_head,
                              int64_t head_dim, float scale) {
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
                const int64_t at = (kv_row * n_kv_head + kv_head) * head_dim + d;
                kv = k[at];
                vv = v[at];
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

// Query heads the row kernel takes per block for head_dim's kPerLane: the most of 8, 4, 2 and 1 that divides
// the heads sharing a K/V head and keeps kGroup * kPerLane registers of queries and outputs at most 32.
int row_group(int64_t n_head, int64_t n_kv_head, int per_lane) {
    const int64_t shared = n_head / n_kv_head;
    for (const int group : {8, 4, 2}) {
        if (shared % group == 0 && group * per_lane <= 32) {
            return group;
        }
    }
    return 1;
}

// Values of head_dim each lane of a row kernel holds.
int per_lane_of(int64_t head_dim) {
    return clamp_1_to_8((head_dim + kWarpSize - 1) / kWarpSize);
}

template <int kPerLane, typename Keys>
void launch_rows(const float* q, const float* k, const float* v, float* out, const AttentionSpan* row_spans,
                 int64_t n_row_spans, int64_t n_splits, float* partials, const Keys& keys, int64_t n_head,
                 int64_t n_kv_head, int64_t head_dim, float scale, cudaStream_t stream) {
    const bool vec4 = head_dim % 4 == 0 && reinterpret_cast<uintptr_t>(k) % 16 == 0;
    const auto launch = [&](auto group, auto vector) {
        constexpr int kGroup = decltype(group)::value;
        constexpr bool kVec4 = decltype(vector)::value;
        const dim3 grid(static_cast<unsigned int>(n_row_spans), static_cast<unsigned int>(n_head / kGroup),
                        static_cast<unsigned int>(n_splits));
        const bool prefetch_values =
            static_cast<int64_t>(grid.x) * grid.y * grid.z <= kPrefetchValuesMaxBlocks;
        launch_chained(attention_row_f32_kernel<kPerLane, kGroup, kVec4, Keys>, grid, dim3(kBlock), 0, stream,
                       q, k, v, out, row_spans, keys, n_head, n_kv_head, head_dim, scale, partials,
                       prefetch_values);
    };
    const auto launch_group = [&](auto group) {
        if (vec4) {
            launch(group, std::true_type{});
        } else {
            launch(group, std::false_type{});
        }
    };
    switch (row_group(n_head, n_kv_head, kPerLane)) {
        case 8:
            if constexpr (8 * kPerLane <= 32) {
                launch_group(std::integral_constant<int, 8>{});
            }
            break;
        case 4:
            if constexpr (4 * kPerLane <= 32) {
                launch_group(std::integral_constant<int, 4>{});
            }
            break;
        case 2:
            launch_group(std::integral_constant<int, 2>{});
            break;
        default:
            launch_group(std::integral_constant<int, 1>{});
            break;
    }
    if (n_splits > 1) {
        const dim3 merge_grid(static_cast<unsigned int>(n_row_spans), static_cast<unsigned int>(n_head));
        launch_chained(merge_splits_f32_kernel, merge_grid, dim3(kMergeBlock), 0, stream, partials, row_spans,
                       out, n_head, n_splits, head_dim);
    }
}

template <typename Keys>
void launch_attention(const float* q, const float* k, const float* v, float* out,
                      const AttentionSpan* row_spans, int64_t n_row_spans, int64_t n_splits, float* partials,
                      const AttentionSpan* tile_spans, int64_t n_tile_spans, const Keys& keys, int64_t n_head,
                      int64_t n_kv_head, int64_t head_dim, float scale, cudaStream_t stream) {
    if (n_head == 0) {
        return;
    }
    if (head_dim <= 0 || head_dim > kMaxAttentionHeadDim || n_kv_head <= 0 || n_head % n_kv_head != 0) {
        fail("attention kernel: head_dim ", head_dim, " (at most ", kMaxAttentionHeadDim, "), ", n_head,
             " heads over ", n_kv_head, " K/V heads");
    }
    if (n_splits < 1 || n_splits > kMaxAttentionSplits || (n_splits > 1 && partials == nullptr)) {
        fail("attention kernel: ", n_splits, " splits of the keys (1 to ", kMaxAttentionSplits,
             ", several need partials)");
    }
    with_1_to_8(per_lane_of(head_dim), [&](auto per_lane) {
        constexpr int kPerLane = decltype(per_lane)::value;
        if (n_row_spans > 0) {
            launch_rows<kPerLane>(q, k, v, out, row_spans, n_row_spans, n_splits, partials, keys, n_head,
                                  n_kv_head, head_dim, scale, stream);
        }
        if (n_tile_spans > 0) {
            const size_t shared_bytes = tile_shared_bytes(head_dim);
            CUDA_CHECK(cudaFuncSetAttribute(attention_tile_f32_kernel<kPerLane, Keys>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(shared_bytes)));
            const dim3 grid(static_cast<unsigned int>(n_tile_spans), static_cast<unsigned int>(n_head));
            attention_tile_f32_kernel<kPerLane, Keys><<<grid, kTileBlock, shared_bytes, stream>>>(
                q, k, v, out, tile_spans, keys, n_head, n_kv_head, head_dim, scale);
            CUDA_CHECK(cudaGetLastError());
        }
    });
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

int64_t attention_splits(int64_t n_row_spans, int64_t n_head, int64_t n_kv_head, int64_t head_dim,
                         int64_t max_visible, int n_multiprocessors) {
    const int64_t n_groups =
        n_kv_head > 0 ? n_head / row_group(n_head, n_kv_head, per_lane_of(head_dim)) : n_head;
    const int64_t n_blocks = std::max<int64_t>(n_row_spans * n_groups, 1);
    const int64_t wanted = (2 * static_cast<int64_t>(n_multiprocessors) + n_blocks - 1) / n_blocks;
    return std::clamp<int64_t>(std::min(wanted, max_visible / kMinKeysPerSplit), 1, kMaxAttentionSplits);
}

int64_t attention_partials_floats(int64_t n_row_spans, int64_t n_head, int64_t n_splits, int64_t head_dim) {
    return n_splits > 1 ? n_row_spans * n_head * n_splits * (head_dim + 2) : 0;
}

void attention_f32(const float* q, const float* k, const float* v, float* out, const AttentionSpan* row_spans,
                   int64_t n_row_spans, int64_t n_splits, float* partials, const AttentionSpan* tile_spans,
                   int64_t n_tile_spans, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                   cudaStream_t stream) {
    launch_attention(q, k, v, out, row_spans, n_row_spans, n_splits, partials, tile_spans, n_tile_spans,
                     ContiguousKeys{}, n_head, n_kv_head, head_dim, scale, stream);
}

void paged_attention_f32(const float* q, const float* k_cache, const float* v_cache, float* out,
                         const AttentionSpan* row_spans, int64_t n_row_spans, int64_t n_splits,
                         float* partials, const AttentionSpan* tile_spans, int64_t n_tile_spans,
                         const int32_t* block_tables, int64_t block_size, int64_t n_blocks, int64_t n_head,
                         int64_t n_kv_head, int64_t head_dim, float scale, cudaStream_t stream) {
    launch_attention(q, k_cache, v_cache, out, row_spans, n_row_spans, n_splits, partials, tile_spans,
                     n_tile_spans, PagedKeys{block_tables, block_size, n_blocks}, n_head, n_kv_head, head_dim,
                     scale, stream);
}

void batched_attention_f32(cublasHandle_t handle, const float* const* q, const float* const* k,
                           const float* const* v, float* const* scores, float* const* out, float* scores_base,
                           int64_t n_batch, int64_t n_q, int64_t n_kv, int64_t head_dim, int64_t ld,
                           float scale, cudaStream_t stream) {
    if (n_batch == 0 || n_q == 0 || n_kv == 0) {
        return;
    }
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    const float one = 1.0f, zero = 0.0f;
    // scores [n_q, n_kv] = q kᵀ: column-major [n_kv, n_q] = k (as [head_dim, n_kv])ᵀ q.
    CUBLAS_CHECK(cublasSgemmBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n_kv),
                                    static_cast<int>(n_q), static_cast<int>(head_dim), &one, k,
                                    static_cast<int>(ld), q, static_cast<int>(ld), &zero, scores,
                                    static_cast<int>(n_kv), static_cast<int>(n_batch)));
    const int64_t n_rows = n_batch * n_q;
    softmax_rows_f32_kernel<<<static_cast<unsigned int>((n_rows + kSoftmaxRowsPerBlock - 1) /
                                                        kSoftmaxRowsPerBlock),
                              kSoftmaxRowsPerBlock * kWarpSize, 0, stream>>>(scores_base, n_rows, n_kv,
                                                                             scale);
    CUDA_CHECK(cudaGetLastError());
    // out [n_q, head_dim] = p v: column-major [head_dim, n_q] = v (as [head_dim, n_kv]) pᵀ.
    CUBLAS_CHECK(cublasSgemmBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(head_dim),
                                    static_cast<int>(n_q), static_cast<int>(n_kv), &one, v,
                                    static_cast<int>(ld), scores, static_cast<int>(n_kv), &zero, out,
                                    static_cast<int>(ld), static_cast<int>(n_batch)));
}

void paged_decode_attention_f32(const float* q, const float* k_cache, const float* v_cache, float* out,
                                const int32_t* seq_lens, const int32_t* block_tables, int64_t n_seqs,
                                int64_t max_blocks, AttentionSpan* spans, int64_t n_splits, float* partials,
                                int64_t block_size, int64_t n_blocks, int64_t n_head, int64_t n_kv_head,
                                int64_t head_dim, float scale, cudaStream_t stream) {
    if (n_seqs == 0) {
        return;
    }
    constexpr int kSpanBlock = 128;
    launch_chained(decode_spans_kernel,
                   dim3(static_cast<unsigned int>((n_seqs + kSpanBlock - 1) / kSpanBlock)), dim3(kSpanBlock),
                   0, stream, seq_lens, n_seqs, max_blocks, block_size, spans);
    launch_attention(q, k_cache, v_cache, out, spans, n_seqs, n_splits, partials, nullptr, 0,
                     PagedKeys{block_tables, block_size, n_blocks}, n_head, n_kv_head, head_dim, scale,
                     stream);
}

}  // namespace folio::kernels
