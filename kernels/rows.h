// Host entry points of the row gather and scatter. Row-major float32 in device memory (a gathered table may
// be bfloat16), enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// out[i] = src[rows[i]] for i < n_rows.  src [n_src, d], rows [n_rows] (device), out [n_rows, d]
void gather_rows_f32(const float* src, const int64_t* rows, float* out, int64_t n_rows, int64_t d,
                     cudaStream_t stream);

// The same with int32 row indices, a negative one -p - 1 standing for pending[p] where p < n_pending
// (pending may be null with n_pending 0); a row outside [0, n_src) gives zeros.  rows [n_rows], pending
// [n_pending] (device)
void gather_rows_i32_f32(const float* src, const int32_t* rows, float* out, int64_t n_rows, int64_t d,
                         int64_t n_src, const int32_t* pending, int64_t n_pending, cudaStream_t stream);
// Both from a table of bfloat16 values (its bits), widened to float32 rows.
void gather_rows_bf16(const uint16_t* src, const int64_t* rows, float* out, int64_t n_rows, int64_t d,
                      cudaStream_t stream);
void gather_rows_i32_bf16(const uint16_t* src, const int32_t* rows, float* out, int64_t n_rows, int64_t d,
                          int64_t n_src, const int32_t* pending, int64_t n_pending, cudaStream_t stream);
// dst[rows[i]] = src[src_rows[i]] for i < n_rows, src_rows[i] = i where src_rows is null; rows must be
// distinct.  dst [n_dst, d], rows, src_rows [n_rows] (device), src [n_src, d]
void scatter_rows_f32(float* dst, const int64_t* rows, const float* src, const int64_t* src_rows,
                      int64_t n_rows, int64_t d, cudaStream_t stream);
// dst[rows[i]] = src[i] for i < n_rows with distinct int32 rows, those outside [0, n_dst) skipped.
// dst [n_dst, d], rows [n_rows] (device), src [n_rows, d]
void scatter_rows_i32_f32(float* dst, const int32_t* rows, const float* src, int64_t n_rows, int64_t d,
                          int64_t n_dst, cudaStream_t stream);

// x[i] += Σ_t weights[i n_taps + t] · src[rows[i n_taps + t]], summed over t in order first.
// x [n_rows, d], src [n_src, d], rows and weights [n_rows * n_taps] (device)
void add_weighted_rows_f32(float* x, const float* src, const int64_t* rows, const float* weights,
                           int64_t n_rows, int64_t n_taps, int64_t d, cudaStream_t stream);

}  // namespace folio::kernels
