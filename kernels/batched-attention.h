// Host entry point of the vision encoder's bidirectional attention as batched float32 cuBLAS GEMMs over
// images of one size and their heads, with a row softmax between; enqueued on stream.
#pragma once

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace folio::kernels {

// The most floats of scores batched_attention_f32 is given at once.
constexpr int64_t kMaxBatchedScoreFloats = int64_t{64} << 20;

// Bidirectional attention of n_batch independent (query block, head) entries of one shape through float32
// cuBLAS: scores_e = q_e k_eᵀ [n_q, n_kv], softmax(scores_e · scale) in place, out_e = scores_e v_e. Rows of
// q, k, v and out lie ld floats apart (n_head * head_dim in a [n, n_head, head_dim] tensor).
// q, k, v, out: device arrays of n_batch pointers to [n_q or n_kv rows, head_dim]; scores: a device array of
// n_batch pointers into scores_base, entry e at e * n_q * n_kv; scores_base [n_batch * n_q * n_kv]
void batched_attention_f32(cublasHandle_t handle, const float* const* q, const float* const* k,
                           const float* const* v, float* const* scores, float* const* out, float* scores_base,
                           int64_t n_batch, int64_t n_q, int64_t n_kv, int64_t head_dim, int64_t ld,
                           float scale, cudaStream_t stream);

}  // namespace folio::kernels
