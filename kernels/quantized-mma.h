// The product of a few rows with WINT8/WINT4 weights on the tensor cores, the weights dequantized in
// registers as they are read: one pass over the packed weights for up to kQuantizedMmaMaxRows rows, where
// the GEMV would read x again for every weight row and dequantizing to bfloat16 first would write and read
// the weights again in bfloat16.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/quantized-linear.h"

namespace folio::kernels {

constexpr int64_t kQuantizedMmaMaxRows = 64;
// Weight values (n_in x n_out) from which it takes more than 16 rows: smaller weights fill too few blocks for
// that many rows, where cuBLAS on weights dequantized into the L2 cache does better.
constexpr int64_t kQuantizedMmaWideValues = int64_t{1} << 23;

// Whether quantized_mma_bf16 multiplies n rows of n_in inputs by n_out weight rows in format: WINT8 or WINT4,
// n_in a multiple of 64, 1 to 16 rows, or up to kQuantizedMmaMaxRows of kQuantizedMmaWideValues weights or
// more; and FOLIO_QUANTIZED_MMA not "0" in the environment (which keeps the dequantize-then-cuBLAS path, for
// comparisons).
bool quantized_mma_takes(int64_t n, int64_t n_in, int64_t n_out, QuantizedFormat format);

// Whether x_bf16 and a.q are aligned as quantized_mma_bf16's lanes read them (16 bytes for x; 8 for WINT4
// weights, 16 for WINT8).
bool quantized_mma_aligned(const QuantizedLinearArgs& a, const uint16_t* x_bf16);

// y [n, n_out] float32 (or y_bf16 [n, n_out] bfloat16 bits, rounded to nearest even) = a.epilogue(x_bf16
// [n, n_in] · dequantize(a.q)ᵀ + a.b), each weight dequantized and rounded to bfloat16 as
// dequantize_rows_bf16 writes it, float32 sums. Reads a.format, a.q, a.scales, a.b, a.n, a.n_in, a.n_out,
// a.group_size and a.epilogue. Throws folio::Error where quantized_mma_takes or quantized_mma_aligned is
// false.
void quantized_mma_bf16(const QuantizedLinearArgs& a, const uint16_t* x_bf16, float* y, uint16_t* y_bf16,
                        cudaStream_t stream);

}  // namespace folio::kernels
