// A contiguous key/value cache for one sequence: every layer keeps K and V for up to n_ctx positions.
#pragma once

#include <cstdint>
#include <vector>

#include "backend.h"

namespace folio {

struct KvCacheParams {
    int n_layer = 0;
    int n_kv_head = 0;
    int head_dim = 0;
    int64_t n_ctx = 0;
};

class KvCache {
public:
    KvCache(Backend& backend, const KvCacheParams& params);

    // Stores k/v [n_new, n_kv_head, head_dim] of a layer at positions [n_past, n_past + n_new).
    void write(int layer, int64_t n_past, const Tensor& k, const Tensor& v);

    const Tensor& keys(int layer) const { return k_[layer]; }    // [n_ctx, n_kv_head, head_dim]
    const Tensor& values(int layer) const { return v_[layer]; }  // [n_ctx, n_kv_head, head_dim]
    int64_t n_ctx() const { return params_.n_ctx; }
    size_t n_bytes() const;

private:
    Backend& backend_;
    KvCacheParams params_;
    std::vector<Tensor> k_;
    std::vector<Tensor> v_;
};

}  // namespace folio
