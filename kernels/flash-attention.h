// Host entry points of attention on the tensor cores: the queries of each span against their keys in blocks,
// q, k, v and the softmax weights rounded to bfloat16, scores, softmax and outputs in float32
// (flash-attention style, no score matrix in memory). Row-major tensors in device memory, float32 unless said
// otherwise, enqueued on stream; sm_80 and later.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/attention.h"

namespace folio::kernels {

// The most query rows of one span these kernels take, and the largest head_dim.
constexpr int64_t kFlashTileRows = 128;
constexpr int64_t kMaxFlashHeadDim = 128;

// Bytes of scratch flash_attention_bf16 takes: Q, K and V in bfloat16, rows padded to a multiple of 16.
int64_t flash_scratch_bytes(int64_t n_q_total, int64_t n_head, int64_t n_kv_total, int64_t n_kv_head,
                            int64_t head_dim);

// Softmax(q kᵀ · scale) v (scale > 0) for the rows of each span (at most kFlashTileRows) and every
// head; rows outside the spans are left as they are, a row that sees no key gets zeros.
// q, out [n_q_total, n_head, head_dim], k, v [n_kv_total, n_kv_head, head_dim], spans [n_spans] (device),
// scratch [flash_scratch_bytes()] bytes of device memory, 16-byte aligned
void flash_attention_bf16(const float* q, const float* k, const float* v, float* out,
                          const AttentionSpan* spans, int64_t n_spans, int64_t n_q_total, int64_t n_kv_total,
                          int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale, void* scratch,
                          cudaStream_t stream);

// Bytes of scratch rope_flash_attention_bf16 takes: the q, k and v heads in bfloat16, rows padded to a
// multiple of 16.
int64_t rope_flash_scratch_bytes(int64_t n, int64_t n_head, int64_t head_dim);

// The same over stacked q, k and v rows whose q and k heads are first turned by each row's cos and sin
// (rotate-half form, as rope_f32 turns them), in the pass that rounds them to bfloat16; every span's keys
// are rows of qkv. head_dim is even.
// qkv [n, 3, n_head, head_dim], cos, sin [n, head_dim], out [n, n_head, head_dim], spans [n_spans] (device),
// scratch [rope_flash_scratch_bytes()] bytes of device memory, 16-byte aligned
void rope_flash_attention_bf16(const float* qkv, const float* cos, const float* sin, float* out,
                               const AttentionSpan* spans, int64_t n_spans, int64_t n, int64_t n_head,
                               int64_t head_dim, float scale, void* scratch, cudaStream_t stream);

// The same with qkv in bfloat16 bits and out written as bfloat16 bits (rounded to nearest even), as the
// tensor-core products before and after attention write and read them.
// qkv [n, 3, n_head, head_dim], out [n, n_head, head_dim] bfloat16
void rope_flash_attention_bf16(const uint16_t* qkv, const float* cos, const float* sin, uint16_t* out,
                               const AttentionSpan* spans, int64_t n_spans, int64_t n, int64_t n_head,
                               int64_t head_dim, float scale, void* scratch, cudaStream_t stream);

// Bytes of n_rows rows of head_dim values in bfloat16, padded to a multiple of 16 values.
int64_t padded_rows_bytes(int64_t n_rows, int64_t head_dim);

// Rows of head_dim float32 values as bfloat16 rows padded with zeros to a multiple of 16 values, as
// paged_flash_attention_bf16 takes its queries.
// x [n_rows, head_dim]  ->  y [padded_rows_bytes(n_rows, head_dim)] bytes, 16-byte aligned
void round_rows_bf16(const float* x, uint16_t* y, int64_t n_rows, int64_t head_dim, cudaStream_t stream);

// Keys of one sequence in a paged cache: n_kv rows from block-table entry table_begin on, gathered to rows
// [dst_row, dst_row + n_kv) of paged_flash_attention_bf16's scratch.
struct PagedKeyRun {
    int64_t table_begin = 0;
    int64_t n_kv = 0;
    int64_t dst_row = 0;
};

// The same with keys in a paged cache (as paged_attention_f32 reads them): the keys and values of each run
// are first gathered into the scratch as bfloat16 rows, and each span's kv_start is its run's dst_row. Runs
// of at most max_run_kv keys, their rows within [0, n_scratch_rows).
// q [n_q_total, n_head, head_dim] as round_rows_bf16 makes it, out [n_q_total, n_head, head_dim],
// spans [n_spans] and runs [n_runs] (device), scratch [2 * padded_rows_bytes(n_scratch_rows * n_kv_head,
// head_dim)] bytes
void paged_flash_attention_bf16(const uint16_t* q, const PagedCache& cache, float* out,
                                const AttentionSpan* spans, int64_t n_spans, const PagedKeyRun* runs,
                                int64_t n_runs, int64_t max_run_kv, int64_t n_head, int64_t n_kv_head,
                                int64_t head_dim, float scale, void* scratch, int64_t n_scratch_rows,
                                cudaStream_t stream);

}  // namespace folio::kernels
