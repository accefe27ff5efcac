// Host entry points of the weight-only quantized linear layer: WINT8 (one int8 per weight, a scale per output
// row), WINT4 (two int4 per byte, column 2j in the low nibble, a scale per group of input columns) and BF16
// (bfloat16 weights, no scales), laid out as QuantizedWeights in engine/quantization.h. Row-major float32
// activations in device memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "gemm-lt.h"

namespace folio::kernels {

// The packed layouts (folio::Quantization, whose header needs C++20, which device code is not built with).
enum class QuantizedFormat { Wint8, Wint4, Bf16 };

// Rows of x up to which quantized_linear_f32 reads the packed weights directly (one pass over the weights
// for all rows); above it, it multiplies bfloat16 weights on the tensor cores through cuBLAS, WINT8/WINT4
// dequantized to bfloat16 in blocks of rows first.
constexpr int64_t kQuantizedGemvMaxRows = 8;

// y = epilogue(x · dequantize(w)ᵀ + b).  x [n, n_in], q as QuantizedWeights::q, scales [n_out, n_in /
// group_size], b [n_out] or null  ->  y [n, n_out] (read too when the epilogue accumulates).
struct QuantizedLinearArgs {
    QuantizedFormat format = QuantizedFormat::Bf16;
    const float* x = nullptr;
    const int8_t* q = nullptr;
    const float* scales = nullptr;
    const float* b = nullptr;
    float* y = nullptr;
    int64_t n = 0;
    int64_t n_in = 0;
    int64_t n_out = 0;
    int64_t group_size = 0;
    LinearEpilogue epilogue = LinearEpilogue::Store;
};

// scratch [n_scratch] floats, used when n > kQuantizedGemvMaxRows: x rounded to bfloat16 and, for
// WINT8/WINT4, a block of dequantized weight rows, multiplied on the tensor cores with float32 accumulation
// and the epilogue fused (gemm); quantized_linear_scratch_floats() says how much.
int64_t quantized_linear_scratch_floats(QuantizedFormat format, int64_t n, int64_t n_in, int64_t n_out);
void quantized_linear_f32(LtGemm& gemm, const QuantizedLinearArgs& args, float* scratch, int64_t n_scratch,
                          cudaStream_t stream);

// Weight rows [row_begin, row_begin + n_rows) as bfloat16 bits, rounded to nearest even.  q, scales as above
// ->  w [n_rows, n_in]
void dequantize_rows_bf16(QuantizedFormat format, const int8_t* q, const float* scales, uint16_t* w,
                          int64_t row_begin, int64_t n_rows, int64_t n_in, int64_t group_size,
                          cudaStream_t stream);

}  // namespace folio::kernels
