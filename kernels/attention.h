// Host entry points of scaled dot-product attention over contiguous or paged keys and values, with grouped
// K/V heads. Row-major float32 in device memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// The largest head_dim the kernels take.
constexpr int64_t kMaxAttentionHeadDim = 256;

// One query row of an attention call: the row of q, where its keys start, and how many it sees.
// For contiguous keys, key j of the row is kv row kv_start + j; for paged keys, kv_start is the row's first
// entry in the block tables. A row that sees no key gets zeros.
struct AttentionRow {
    int64_t q_row = 0;
    int64_t kv_start = 0;
    int64_t n_visible = 0;
};

// Softmax(q kᵀ · scale) v for each described row and head; rows not described are left as they are.
// q, out [n_q_total, n_head, head_dim], k, v [n_kv_total, n_kv_head, head_dim], rows [n_rows] (device)
void attention_f32(const float* q, const float* k, const float* v, float* out, const AttentionRow* rows,
                   int64_t n_rows, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                   cudaStream_t stream);

// The same with keys in a paged cache: key position p of a row is kv row
// block_tables[kv_start + p / block_size] * block_size + p % block_size.
// q, out [n_q_total, n_head, head_dim], k_cache, v_cache [n_blocks * block_size, n_kv_head, head_dim],
// rows [n_rows] and block_tables (device)
void paged_attention_f32(const float* q, const float* k_cache, const float* v_cache, float* out,
                         const AttentionRow* rows, int64_t n_rows, const int32_t* block_tables,
                         int64_t block_size, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                         cudaStream_t stream);

}  // namespace folio::kernels
