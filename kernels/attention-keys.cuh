// Where the keys of an attention span live, which rows a call has and how many keys each of them sees:
// shared by the attention kernels.
#pragma once

#include <cstdint>

#include "kernels/attention.h"

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

// The rows of the spans of an attention call, uploaded by the host. settled_keys: none of a span's keys may
// be read before the previous kernel has finished, as it may have written any of them.
struct SpanRows {
    const AttentionSpan* spans;

    __device__ AttentionSpan span(int64_t i) const { return spans[i]; }
    __device__ static int64_t settled_keys(const AttentionSpan&) { return 0; }
};

// Decoding: row i sees the first seq_lens[i] keys, clamped to [0, max_keys], through row i of the block
// tables.
struct DecodeRows {
    const int32_t* seq_lens;
    int64_t max_blocks;
    int64_t max_keys;

    __device__ AttentionSpan span(int64_t i) const {
        const int64_t n = min(max(int64_t{seq_lens[i]}, int64_t{0}), max_keys);
        return AttentionSpan{i, 1, i * max_blocks, n, 1, n};
    }
    // Keys a decoding step does not write, which may be read before the previous kernel (the step's cache
    // write of each row's newest key) has finished: all but the last.
    __device__ static int64_t settled_keys(const AttentionSpan& span) {
        return max(span.max_visible - 1, int64_t{0});
    }
};

// Keys row i of a span sees.
__device__ inline int64_t visible_keys(const AttentionSpan& s, int64_t i) {
    return min(s.max_visible, max(int64_t{0}, s.first_visible + s.step * i));
}

}  // namespace folio::kernels
