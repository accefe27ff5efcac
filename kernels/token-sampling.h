// Host entry points of token selection on the device (engine/sampling.h is the host side). Row-major float32
// in device memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// out[r] = the column of the largest value of row r, the first of equal ones, as std::max_element chooses.
// Rows are taken in chunks by many blocks, whose results go to scratch [argmax_scratch_floats(n_rows, d)].
// x [n_rows, d] (d >= 1)  ->  out [n_rows] (device)
int64_t argmax_scratch_floats(int64_t n_rows, int64_t d);
void argmax_rows_f32(const float* x, int32_t* out, float* scratch, int64_t n_rows, int64_t d,
                     cudaStream_t stream);

// One row of sample_rows_f32, as folio::RowSampling.
struct SampleRow {
    float temperature = 0.0f;
    int32_t top_k = 0;
    float top_p = 1.0f;
    float repetition_penalty = 1.0f;
    float uniform = 0.0f;
    int64_t history_begin = 0;
    int64_t history_count = 0;
};

// out[r] = the token folio::choose_token chooses for row r of logits, with float sums: the penalised and
// scaled row goes to scratch, the top-k key is found by a radix select, the top-p cut by bisection on the
// value, and the pick by a prefix sum in token order. Rows and history hold valid values (the checks of
// folio::check_sample_rows). logits, scratch [n_rows, vocab] (vocab >= 1), rows [n_rows], history (device)
//   ->  out [n_rows] (device)
void sample_rows_f32(const float* logits, const SampleRow* rows, const int32_t* history, float* scratch,
                     int32_t* out, int64_t n_rows, int64_t vocab, cudaStream_t stream);

}  // namespace folio::kernels
