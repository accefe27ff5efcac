// Host entry point of the row-wise top-k over float32 tensors in device memory, enqueued on stream: each
// row's k-th largest found by an 8-bit radix select over 64-bit keys (the value's order-preserving bits above
// the complement of its column, so that every key is distinct and equal values rank in column order), then
// each selected key placed by counting the selected keys above it.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// Bytes of scratch top_k_f32 takes.
int64_t top_k_scratch_bytes(int64_t n_rows, int64_t k);

// The k largest values of each row, largest first, NaN above all numbers, equal values (-0 and +0 too) in
// column order, and their columns.  x [n_rows, d], scratch [top_k_scratch_bytes(n_rows, k)]  ->  values
// [n_rows, k], indices [n_rows, k] int32
void top_k_f32(const float* x, float* values, int32_t* indices, void* scratch, int64_t n_rows, int64_t d,
               int64_t k, cudaStream_t stream);

}  // namespace folio::kernels
