// The paged key/value storage of the language model: per layer, K and V for n_blocks blocks of block_size
// token slots. Which slots a sequence owns is decided by the KV-cache manager; this holds only the tensors.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/backend.h"

namespace folio {

struct KvCacheParams {
    int n_layer = 0;
    int n_kv_head = 0;
    int head_dim = 0;
    int64_t n_blocks = 0;
    int64_t block_size = 0;
    ScalarType dtype = ScalarType::F32;  // float32, the backend's kv_dtype(), or Q8
};

// Bytes of K and V for one block across all layers, in dtype's elements (with a Q8 row's scale).
int64_t kv_block_bytes(const KvCacheParams& params);

// Where the new tokens of a batch go and what each sequence attends to.
struct KvBatch {
    std::vector<PagedSequence> seqs;
    std::vector<int32_t> block_tables;  // the sequences' tables, one after another
    std::vector<int64_t> slots;         // [n_tokens]: the cache slot of each new token
};

class PagedKvCache {
public:
    PagedKvCache(Backend& backend, const KvCacheParams& params);

    // A layer's keys and values: [n_blocks * block_size, n_kv_head, head_dim].
    Tensor& keys(int layer) { return k_.at(static_cast<size_t>(layer)); }
    Tensor& values(int layer) { return v_.at(static_cast<size_t>(layer)); }
    const KvCacheParams& params() const { return params_; }
    int64_t n_bytes() const;

private:
    KvCacheParams params_;
    std::vector<Tensor> k_;  // per layer [n_blocks * block_size, n_kv_head, head_dim]
    std::vector<Tensor> v_;
};

}  // namespace folio
