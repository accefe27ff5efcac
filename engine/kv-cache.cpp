#include "kv-cache.h"

#include <numeric>

#include "error.h"

namespace folio {

KvCache::KvCache(Backend& backend, const KvCacheParams& params) : backend_(backend), params_(params) {
    if (params.n_layer <= 0 || params.n_kv_head <= 0 || params.head_dim <= 0 || params.n_ctx <= 0) {
        fail("kv cache: invalid size, ", params.n_layer, " layers, ", params.n_kv_head, " heads of ",
             params.head_dim, ", ", params.n_ctx, " positions");
    }
    for (int l = 0; l < params.n_layer; ++l) {
        k_.push_back(backend.alloc({params.n_ctx, params.n_kv_head, params.head_dim}));
        v_.push_back(backend.alloc({params.n_ctx, params.n_kv_head, params.head_dim}));
    }
}

void KvCache::write(int layer, int64_t n_past, const Tensor& k, const Tensor& v) {
    const int64_t n_new = k.rows();
    if (n_past < 0 || n_past + n_new > params_.n_ctx) {
        fail("kv cache: positions [", n_past, ", ", n_past + n_new, ") exceed the context of ",
             params_.n_ctx);
    }
    std::vector<int64_t> rows(static_cast<size_t>(n_new));
    std::iota(rows.begin(), rows.end(), n_past);
    backend_.scatter_rows(k_[layer], rows, k);
    backend_.scatter_rows(v_[layer], rows, v);
}

size_t KvCache::n_bytes() const {
    size_t n = 0;
    for (size_t l = 0; l < k_.size(); ++l) {
        n += k_[l].buffer->n_bytes() + v_[l].buffer->n_bytes();
    }
    return n;
}

}  // namespace folio
