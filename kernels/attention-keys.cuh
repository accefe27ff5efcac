// Where the keys of an attention span live, and how many of them each of its rows sees: shared by the
// attention kernels.
#pragma once

#include <cstdint>

#include "attention.h"

namespace folio::kernels {

// Keys of a span at kv rows kv_start + j.
struct ContiguousKeys {
    __device__ int64_t row(int64_t kv_start, int64_t j) const { return kv_start + j; }
};

// Keys of a span in a paged cache, kv_start being its first block-table entry; -1 for a table entry outside
// the cache's n_blocks.
struct PagedKeys {
    const int32_t* block_tables;
    int64_t block_size;
    int64_t n_blocks;

    __device__ int64_t row(int64_t table_start, int64_t p) const {
        const int64_t block = block_tables[table_start + p / block_size];
        return block >= 0 && block < n_blocks ? block * block_size + p % block_size : -1;
    }
};

// Keys row i of a span sees.
__device__ inline int64_t visible_keys(const AttentionSpan& s, int64_t i) {
    return min(s.max_visible, max(int64_t{0}, s.first_visible + s.step * i));
}

}  // namespace folio::kernels
