// One rotate-half pair of the language model's attention input to its place, shared by the RoPE kernel and
// the epilogue of the product that makes q, k and v.
#pragma once

#include <cuda_bf16.h>

#include "kernels/rotary.h"

namespace folio::kernels {

// Where a pair of values goes and how it turns: dst [head_dim], or dst_bf16 [head_dim] for a row of a
// bfloat16 cache (both null where the token's cache row lies outside the cache), the pair written as
// (x0 c - x1 s, x1 c + x0 s) at pair and pair + head_dim / 2.
struct RopePairTarget {
    float* dst = nullptr;
    __nv_bfloat16* dst_bf16 = nullptr;
    float c = 1.0f;
    float s = 0.0f;
};

// Where head `head` of token r's q, k and v heads (q heads first, then k, then v) goes, as RopeCacheArgs
// says, with no turn (c = 1, s = 0); *turns says whether it is a head the token's position turns (q or k).
__device__ inline RopePairTarget rope_head_target(const RopeCacheArgs& a, int r, int head, bool* turns) {
    RopePairTarget t;
    *turns = false;
    if (head < a.n_head) {
        t.dst = a.q_out + (static_cast<int64_t>(r) * a.n_head + head) * a.head_dim;
        *turns = true;
        return t;
    }
    const int64_t slot = a.slots[r];
    if (slot < 0 || slot >= a.n_slots) {
        return t;
    }
    const bool key = head - a.n_head < a.n_kv_head;
    const int64_t kv_head = (head - a.n_head) % a.n_kv_head;
    void* cache = key ? a.k_cache : a.v_cache;
    const int64_t at = (slot * a.n_kv_head + kv_head) * a.head_dim;
    if (a.bf16_cache) {
        t.dst_bf16 = static_cast<__nv_bfloat16*>(cache) + at;
    } else {
        t.dst = static_cast<float*>(cache) + at;
    }
    *turns = key;
    return t;
}

// The cos and sin by which token r's position turns the pair at `pair` of its q and k heads.
__device__ inline void rope_pair_turn(const RopeCacheArgs& a, int r, int pair, float* c, float* s) {
    const int axis = a.pair_axis[pair];
    sincosf(static_cast<float>(a.positions[r * a.n_axes + axis]) * a.inv_freq[pair], s, c);
}

// The target of the pair at `pair` of head `head` of token r: rope_head_target with its turn.
__device__ inline RopePairTarget rope_pair_target(const RopeCacheArgs& a, int r, int head, int pair) {
    bool turns = false;
    RopePairTarget t = rope_head_target(a, r, head, &turns);
    if (turns) {
        rope_pair_turn(a, r, pair, &t.c, &t.s);
    }
    return t;
}

// x0 = head[pair] and x1 = head[pair + half] to where t says.
__device__ inline void store_rope_pair(const RopePairTarget& t, int pair, int half, float x0, float x1) {
    if (t.dst != nullptr) {
        t.dst[pair] = x0 * t.c - x1 * t.s;
        t.dst[pair + half] = x1 * t.c + x0 * t.s;
    } else if (t.dst_bf16 != nullptr) {
        t.dst_bf16[pair] = __float2bfloat16_rn(x0 * t.c - x1 * t.s);
        t.dst_bf16[pair + half] = __float2bfloat16_rn(x1 * t.c + x0 * t.s);
    }
}

}  // namespace folio::kernels
