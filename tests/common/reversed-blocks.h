// A prompt's KV batch over blocks in reverse order, so that a model's attention must follow the block
// table: the fixtures' prompt logits run through it.
#pragma once

#include <cstdint>

#include "engine/runtime/kv-cache.h"

namespace folio::testing {

// One sequence of n tokens, new from position 0, in blocks of block_size slots numbered n_blocks - 1 down to
// 0, n_blocks = ceil(n / block_size).
inline KvBatch reversed_block_batch(int64_t n, int64_t block_size) {
    const int64_t n_blocks = (n + block_size - 1) / block_size;
    KvBatch batch;
    batch.seqs.push_back({0, n, n, 0});
    for (int64_t b = 0; b < n_blocks; ++b) {
        batch.block_tables.push_back(static_cast<int32_t>(n_blocks - 1 - b));
    }
    for (int64_t t = 0; t < n; ++t) {
        batch.slots.push_back(batch.block_tables[static_cast<size_t>(t / block_size)] * block_size +
                              t % block_size);
    }
    return batch;
}

}  // namespace folio::testing
