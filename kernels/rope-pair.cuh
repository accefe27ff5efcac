// One rotate-half pair of the language model's attention input to its place, shared by the RoPE kernel and
// the epilogue of the product that makes q, k and v.
#pragma once

#include "rotary.h"

namespace folio::kernels {

// Values x0 = head[pair] and x1 = head[pair + head_dim / 2] of head `head` of token r's q, k and v heads (q
// heads first, then k, then v), written where RopeCacheArgs says: q and k heads turned, v heads as they are.
__device__ inline void store_rope_pair(const RopeCacheArgs& a, int64_t r, int64_t head, int64_t pair,
                                       float x0, float x1) {
    const int64_t half = a.head_dim / 2;
    float* dst = nullptr;  // [head_dim]
    if (head < a.n_head) {
        dst = a.q_out + (r * a.n_head + head) * a.head_dim;
    } else {
        const int64_t slot = a.slots[r];
        if (slot < 0 || slot >= a.n_slots) {
            return;
        }
        const int64_t kv_head = (head - a.n_head) % a.n_kv_head;
        float* cache = head - a.n_head < a.n_kv_head ? a.k_cache : a.v_cache;
        dst = cache + (slot * a.n_kv_head + kv_head) * a.head_dim;
        if (cache == a.v_cache) {
            dst[pair] = x0;
            dst[pair + half] = x1;
            return;
        }
    }
    const int axis = pair < a.section0 ? 0 : pair < a.section01 ? 1 : 2;
    const float angle = static_cast<float>(a.positions[r * 3 + axis]) * a.inv_freq[pair];
    const float c = cosf(angle), s = sinf(angle);
    dst[pair] = x0 * c - x1 * s;
    dst[pair + half] = x1 * c + x0 * s;
}

}  // namespace folio::kernels
