// Decoding attention over a bfloat16 paged cache on the tensor cores, for K/V heads that each serve 8 query
// heads of head_dim 128: every warp of a block takes its own tiles of 16 keys, loads them straight into its
// registers and keeps both products and the online softmax there, so that the block's warps meet only once,
// to merge. paged_decode_attention_f32, and paged_attention_f32 for its row spans, hand it the calls it
// takes.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/attention.h"

namespace folio::kernels {

// Whether decode_attention_bf16 takes a call: 8 query heads of head_dim 128 a K/V head, a bfloat16 cache,
// queries, outputs, keys and values 16-byte aligned, and the cache's rows and the keys a row may see
// (max_row_keys) below 2^31.
bool decode_attention_bf16_takes(const float* q, const void* out, const PagedCache& cache,
                                 int64_t max_row_keys, int64_t n_head, int64_t n_kv_head, int64_t head_dim);

// paged_decode_attention_f32's call with bf16_products, for the calls decode_attention_bf16_takes (with
// max_row_keys max_blocks * block_size): query row i sees the first seq_lens[i] keys (capped at max_blocks *
// block_size) through row i of the block tables; a row of no key comes out zero. Queries, keys, values and
// weights are rounded to bfloat16, sums kept in float32. splits as attention_splits(n_seqs, ...) chose them;
// a row may use fewer. q, out [n_seqs, n_head, 128], seq_lens [n_seqs] (device)
void decode_attention_bf16(const float* q, const PagedCache& cache, float* out, const int32_t* seq_lens,
                           int64_t n_seqs, int64_t max_blocks, const AttentionSplits& splits, int64_t n_head,
                           int64_t n_kv_head, float scale, cudaStream_t stream);

// The same with the outputs rounded to bfloat16 as they are stored, for a product that reads them so.
// out_bf16 [n_seqs, n_head, 128] bfloat16 bits
void decode_attention_bf16(const float* q, const PagedCache& cache, uint16_t* out_bf16,
                           const int32_t* seq_lens, int64_t n_seqs, int64_t max_blocks,
                           const AttentionSplits& splits, int64_t n_head, int64_t n_kv_head, float scale,
                           cudaStream_t stream);

// The same for paged_attention_f32's row spans of one row each (a step that also writes other keys of
// them, so none is read before the kernel ahead has finished): row span i writes query row q_row, which
// sees its first visible_keys(span, 0) keys through the block-table entries from kv_start, at most
// max_row_keys of them. Rows outside the spans are left as they are.
// q, out [n_q_rows, n_head, 128], row_spans [n_row_spans] (device)
void decode_attention_bf16(const float* q, const PagedCache& cache, float* out,
                           const AttentionSpan* row_spans, int64_t n_row_spans, int64_t max_row_keys,
                           const AttentionSplits& splits, int64_t n_head, int64_t n_kv_head, float scale,
                           cudaStream_t stream);

}  // namespace folio::kernels
