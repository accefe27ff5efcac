#include "engine/runtime/kv-cache.h"

#include "engine/common/error.h"

namespace folio {

int64_t kv_block_bytes(const KvCacheParams& params) {
    // A Q8 row of head_dim levels carries its float32 scale.
    const int64_t row_bytes =
        params.head_dim * element_size(params.dtype) + (params.dtype == ScalarType::Q8 ? 4 : 0);
    return 2LL * params.n_layer * params.block_size * params.n_kv_head * row_bytes;
}

PagedKvCache::PagedKvCache(Backend& backend, const KvCacheParams& params) : params_(params) {
    if (params.n_layer <= 0 || params.n_kv_head <= 0 || params.head_dim <= 0 || params.n_blocks <= 0 ||
        params.block_size <= 0) {
        fail("kv cache: invalid size, ", params.n_layer, " layers, ", params.n_kv_head, " heads of ",
             params.head_dim, ", ", params.n_blocks, " blocks of ", params.block_size);
    }
    const int64_t n_slots = params.n_blocks * params.block_size;
    for (int l = 0; l < params.n_layer; ++l) {
        k_.push_back(backend.alloc_kv({n_slots, params.n_kv_head, params.head_dim}, params.dtype));
        v_.push_back(backend.alloc_kv({n_slots, params.n_kv_head, params.head_dim}, params.dtype));
    }
}

int64_t PagedKvCache::n_bytes() const {
    return kv_block_bytes(params_) * params_.n_blocks;
}

}  // namespace folio
