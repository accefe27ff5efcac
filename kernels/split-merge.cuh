// The hand-over between the blocks that split a row's keys in the attention kernels: each writes its partial
// result, and the last of them to finish merges them all.
#pragma once

#include <cstdint>

namespace folio::kernels {

// Counts this block's split of a (row, head group) as done, its partials written, and tells every thread
// whether the block was the last of n_splits to finish; if so the counter is set back to zero and every
// split's partials may be read (through L2, since L1 may hold stale lines). Called by every thread of the
// block.  counter (device)
__device__ inline bool last_split_done(int32_t* counter, int n_splits) {
    __shared__ bool last;
    __threadfence();  // the partials reach L2 before the counter counts them
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(counter, 1) == n_splits - 1;
        if (last) {
            *counter = 0;
        }
    }
    __syncthreads();
    if (!last) {
        return false;
    }
    __threadfence();
    return true;
}

}  // namespace folio::kernels
