// Decoding attention over a bfloat16 paged cache on the tensor cores, for K/V heads that each serve 8 query
// heads of head_dim 128: every warp of a block takes its own tiles of 16 keys, loads them straight into its
// registers and keeps both products and the online softmax there, so that the block's warps meet only once,
// to merge. paged_decode_attention_f32 hands it the calls it takes.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "attention.h"

namespace folio::kernels {

// Whether decode_attention_bf16 takes a call: 8 query heads of head_dim 128 a K/V head, a bfloat16 cache,
// queries, outputs, keys and values 16-byte aligned, and the cache's rows and a row's keys (max_blocks of
// block_size) below 2^31.
bool decode_attention_bf16_takes(const float* q, const float* out, const PagedCache& cache,
                                 int64_t max_blocks, int64_t n_head, int64_t n_kv_head, int64_t head_dim);

// paged_decode_attention_f32's call with bf16_products, for the calls decode_attention_bf16_takes: query
// row i sees the first seq_lens[i] keys (capped at max_blocks * block_size) through row i of the block
// tables; a row of no key comes out zero. Queries, keys, values and weights are rounded to bfloat16, sums
// kept in float32. splits as attention_splits(n_seqs, ...) chose them; a row may use fewer.
// q, out [n_seqs, n_head, 128], seq_lens [n_seqs] (device)
void decode_attention_bf16(const float* q, const PagedCache& cache, float* out, const int32_t* seq_lens,
                           int64_t n_seqs, int64_t max_blocks, const AttentionSplits& splits, int64_t n_head,
                           int64_t n_kv_head, float scale, cudaStream_t stream);

}  // namespace folio::kernels
