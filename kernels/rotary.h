// Host entry points of the rotary position embedding. Row-major float32 in device memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// Rotate-half RoPE in place: for i < head_dim / 2, with a = x[i] and b = x[i + head_dim / 2],
// x[i] = a cos[i] - b sin[i] and x[i + head_dim / 2] = b cos[i + head_dim / 2] + a sin[i + head_dim / 2].
// x [n, n_head, head_dim], cos, sin [n, head_dim]; head_dim is even.
void rope_f32(float* x, const float* cos, const float* sin, int64_t n, int64_t n_head, int64_t head_dim,
              cudaStream_t stream);

// Where the language model's attention input goes, token r of a step: its q and k heads turned by its
// positions (frequency i turns with the position on axis pair_axis[i], at angle position * inv_freq[i]), q
// written to q_out and k, with the v heads, to cache row slots[r] unless it lies outside [0, n_slots).
// positions [n, n_axes], slots [n], inv_freq and pair_axis [head_dim / 2], q_out [n, n_head, head_dim],
// k_cache, v_cache [n_slots, n_kv_head, head_dim]; head_dim is even. A cache of 8-bit levels (q8_cache) has
// k_scales, v_scales [n_slots, n_kv_head]: each head row is stored as its largest magnitude over 127 and the
// levels round(x · 127 / largest), ties to even, as quantize_q8_rows (engine/backend/tensor.h) does.
struct RopeCacheArgs {
    const int32_t* positions = nullptr;
    const int32_t* slots = nullptr;
    const float* inv_freq = nullptr;
    const int32_t* pair_axis = nullptr;
    int n_axes = 1;
    float* q_out = nullptr;
    void* k_cache = nullptr;  // float32, bfloat16 with bf16_cache, or int8 levels with q8_cache
    void* v_cache = nullptr;
    bool bf16_cache = false;
    bool q8_cache = false;
    float* k_scales = nullptr;
    float* v_scales = nullptr;
    int64_t n_head = 0;
    int64_t n_kv_head = 0;
    int64_t head_dim = 0;
    int64_t n_slots = 0;
};

// The heads of qkv's n tokens to where a says.  qkv [n, (n_head + 2 n_kv_head) * head_dim]; head_dim at most
// 256 for a cache of 8-bit levels
void rope_qkv_to_cache_f32(const float* qkv, const RopeCacheArgs& a, int64_t n, cudaStream_t stream);

}  // namespace folio::kernels
