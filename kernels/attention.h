// Host entry points of scaled dot-product attention over contiguous or paged keys and values, with grouped
// K/V heads. Row-major in device memory, float32 but for a paged cache's keys and values, which may be
// bfloat16; enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// The largest head_dim the kernels take.
constexpr int64_t kMaxAttentionHeadDim = 256;
// The most query rows of one span.
constexpr int64_t kAttentionTileRows = 32;
// The most splits of the keys of one row.
constexpr int64_t kMaxAttentionSplits = 64;
// Blocks a multiprocessor that attention_splits fills when the rows are few: enough loads of keys in flight
// to read a long context's cache at the memory's rate.
constexpr int64_t kAttentionSplitBlocksPerSm = 8;

// Consecutive query rows [q_row, q_row + n_rows) that share their keys: row i sees the first
// clamp(first_visible + step * i, 0, max_visible) of them. For contiguous keys, key j is kv row kv_start + j;
// for paged keys, kv_start is the first block-table entry of the keys. A row that sees no key gets zeros.
struct AttentionSpan {
    int64_t q_row = 0;
    int64_t n_rows = 0;
    int64_t kv_start = 0;
    int64_t first_visible = 0;
    int64_t step = 0;
    int64_t max_visible = 0;
};

// The element type of a paged cache's keys and values: float32, bfloat16, or signed 8-bit levels with a
// float32 scale a (kv row, K/V head), element d of that row being level d times the scale.
enum class KvElement { F32, Bf16, Q8 };

// A layer's keys and values in a paged cache: key position p of a span is kv row
// block_tables[kv_start + p / block_size] * block_size + p % block_size, and keys in blocks outside the
// cache's n_blocks are skipped.  k, v [n_blocks * block_size, n_kv_head, head_dim] of `element` (bfloat16 as
// its bits), k_scales, v_scales [n_blocks * block_size, n_kv_head] for Q8 elements, and block_tables
// (device)
struct PagedCache {
    const void* k = nullptr;
    const void* v = nullptr;
    KvElement element = KvElement::F32;
    const int32_t* block_tables = nullptr;
    int64_t block_size = 0;
    int64_t n_blocks = 0;
    const float* k_scales = nullptr;
    const float* v_scales = nullptr;
};

// How the keys of each row span of attention_f32, paged_attention_f32 and paged_decode_attention_f32 are
// split between blocks. With several splits each block writes its partial result to partials, and the last
// block of a row to finish, found through the row's counter, combines them into the output. Calls that share
// counters run one after another (on one stream).
struct AttentionSplits {
    int64_t n_splits = 1;
    float* partials = nullptr;    // [attention_partials_floats(...)] (device); null for one split
    int32_t* counters = nullptr;  // [n_counters] (device): zero before a call and zero again after it
    int64_t n_counters = 0;
};

// Splits of the keys of each row span: kAttentionSplitBlocksPerSm blocks a multiprocessor when the rows are
// few and see many keys (decoding a long context), else 1. A block takes the query heads of a row that share
// a K/V head together, up to 8 of them. With split_row_tensor_cores (bfloat16 products in a call that
// decode_attention_bf16 does not take, such as one over a float32 cache), decoding rows that take the
// split-row kernel's tensor cores (8 query heads of head_dim 128 a K/V head) split in three at least, while
// kAttentionSplitCounters cover their blocks; in decode_attention_bf16 one split a row that fills the
// device does better.
int64_t attention_splits(int64_t n_row_spans, int64_t n_head, int64_t n_kv_head, int64_t head_dim,
                         int64_t max_visible, int n_multiprocessors, bool split_row_tensor_cores);
// Floats of the partials buffer n_splits need (0 for one split).
int64_t attention_partials_floats(int64_t n_row_spans, int64_t n_head, int64_t n_splits, int64_t head_dim);
// Floats ahead of a split's outputs in its partials (its maximum and sum of exponentials, padded so that the
// outputs start 16-byte aligned): each split of a (row, head) takes this and head_dim rounded up to 4.
constexpr int64_t kAttentionPartialHeader = 4;
// Counters any call split as attention_splits chose needs at most: one a (row, head group) of a split call.
constexpr int64_t kAttentionSplitCounters = int64_t{1} << 16;

// Softmax(q kᵀ · scale) v for the rows of the spans and every head; rows outside them are left as they are.
// `row_spans` each hold one row and are run one block per row and group of query heads sharing a K/V head,
// with each row's keys split between blocks when the rows are few (decoding); `tile_spans` hold up to
// kAttentionTileRows rows that share each block of keys loaded to shared memory (prefill). q, out
// [n_q_total, n_head, head_dim], k, v [n_kv_total, n_kv_head, head_dim], spans (device), splits of the row
// spans' keys as attention_splits(n_row_spans, ...) chose them
void attention_f32(const float* q, const float* k, const float* v, float* out, const AttentionSpan* row_spans,
                   int64_t n_row_spans, const AttentionSplits& splits, const AttentionSpan* tile_spans,
                   int64_t n_tile_spans, int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                   cudaStream_t stream);

// The same with keys in a paged cache, a span's kv_start being its first block-table entry; a row span sees
// at most max_row_keys keys. With bf16_products, the row spans that decode_attention_bf16 takes go to it
// (queries, keys, values and weights rounded to bfloat16, sums in float32); tile spans are float32 here.
// q, out [n_q_total, n_head, head_dim], spans (device)
void paged_attention_f32(const float* q, const PagedCache& cache, float* out, const AttentionSpan* row_spans,
                         int64_t n_row_spans, int64_t max_row_keys, const AttentionSplits& splits,
                         const AttentionSpan* tile_spans, int64_t n_tile_spans, int64_t n_head,
                         int64_t n_kv_head, int64_t head_dim, float scale, cudaStream_t stream,
                         bool bf16_products);

// Decoding, with the metadata on the device: query row i sees the first seq_lens[i] keys (capped at
// max_blocks * block_size) through row i of the cache's block tables, [n_seqs, max_blocks]; a row of length
// 0 comes out zero. Every row of out is written. splits as attention_splits(n_seqs, ...) chose them. With
// bf16_products, rows take the scores and the weighted values on the tensor cores where a K/V head serves 8
// query heads of head_dim 128: queries, keys, values and weights rounded to bfloat16, sums in float32; with a
// bfloat16 cache through decode_attention_bf16 (decode-attention.h).
// q, out [n_seqs, n_head, head_dim], seq_lens [n_seqs] (device)
void paged_decode_attention_f32(const float* q, const PagedCache& cache, float* out, const int32_t* seq_lens,
                                int64_t n_seqs, int64_t max_blocks, const AttentionSplits& splits,
                                int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale,
                                cudaStream_t stream, bool bf16_products);

}  // namespace folio::kernels
