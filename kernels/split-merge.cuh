// The hand-over between the blocks that split a row's keys in the attention kernels: each writes its partial
// result, and the last of them to finish merges them all.
#pragma once

#include <cmath>
#include <cstdint>

#include <cuda/atomic>

#include "kernels/attention.h"
#include "kernels/reduce.cuh"

namespace folio::kernels {

// Counts this block's split of a (row, head group) as done, its partials written, and tells every thread
// whether the block was the last of n_splits to finish; if so the counter is set back to zero and every
// split's partials may be read (through L2, since L1 may hold stale lines). Called by every thread of the
// block. The barrier orders the block's writes before thread 0's count, whose release makes them visible
// with it (release is cumulative) and whose acquire, in the last block, makes the other blocks' visible to
// every thread after the second barrier, so that no thread fences on its own.  counter (device)
__device__ inline bool last_split_done(int32_t* counter, int n_splits) {
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) {
        cuda::atomic_ref<int32_t, cuda::thread_scope_device> count(*counter);
        last = count.fetch_add(1, cuda::memory_order_acq_rel) == n_splits - 1;
        if (last) {
            count.store(0, cuda::memory_order_relaxed);
        }
    }
    __syncthreads();
    return last;
}

// Called by a whole warp: the factor of each split of one head, by which its partial output counts in the
// merge, to factor[s] for s < n_splits, from the splits' maxima and sums of exponentials at head_partials +
// s * stride (a lane a split); returns the head's total sum to every lane. kBase2: the maxima are of scores
// in base 2, whose weights come from exp2; else from exp.  factor [n_splits]
template <bool kBase2>
__device__ inline float split_factors(const float* head_partials, int stride, int n_splits, float* factor) {
    constexpr int kSplitsPerLane = static_cast<int>(kMaxAttentionSplits) / kWarpSize;
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    float2 max_sum[kSplitsPerLane];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < kSplitsPerLane; ++k) {
        const int s = lane + k * kWarpSize;
        max_sum[k] = s < n_splits ? __ldcg(reinterpret_cast<const float2*>(head_partials + s * stride))
                                  : float2{-INFINITY, 0.0f};
        m = fmaxf(m, max_sum[k].x);
    }
    m = warp_max(m);
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kSplitsPerLane; ++k) {
        const int s = lane + k * kWarpSize;
        const float x = max_sum[k].x - m;
        const float f = max_sum[k].x == -INFINITY ? 0.0f : (kBase2 ? exp2f(x) : expf(x));
        sum += max_sum[k].y * f;
        if (s < n_splits) {
            factor[s] = f;
        }
    }
    return warp_sum(sum);
}

}  // namespace folio::kernels
