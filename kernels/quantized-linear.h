// Host entry points of the weight-only quantized linear layer: WINT8 (one int8 per weight, a scale per output
// row), WINT4 (two int4 per byte, column 2j in the low nibble, a scale per group of input columns) and BF16
// (bfloat16 weights, no scales), laid out as QuantizedWeights in engine/quantization.h. Row-major float32
// activations in device memory, enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/gemm-lt.h"
#include "kernels/rotary.h"

namespace folio::kernels {

// The packed layouts (folio::Quantization, whose header needs C++20, which device code is not built with).
enum class QuantizedFormat { Wint8, Wint4, Bf16 };

// Rows of x up to which quantized_linear_f32 may read the packed weights directly (one pass over the weights
// for all rows, quantized_gemv_takes); otherwise it multiplies on the tensor cores: up to
// kQuantizedMmaMaxRows rows with WINT8/WINT4 weights dequantized in registers (quantized-mma.h), more rows
// (or bfloat16 weights) through cuBLAS, WINT8/WINT4 dequantized to bfloat16 in blocks of rows first.
constexpr int64_t kQuantizedGemvMaxRows = 8;
// Whether quantized_linear_f32 multiplies n rows of n_in inputs by n_out weight rows with the GEMV rather
// than on the tensor cores. Each warp of the GEMV reads all of x for every weight row it dots, which the L1
// cache serves while x is small; the tensor cores' product reads x once. Bfloat16 weights keep the GEMV for
// one row, and for up to four rows of at most 3072 inputs (n_out aside). WINT8/WINT4 keep it for one row, and
// where the few-row product in registers takes their rows (quantized_mma_takes) for up to 4096 inputs in
// all, or fewer than 2048 weight rows (too few of its blocks to fill the device); elsewhere, where the
// tensor cores dequantize the rows first, for up to four rows of any width and up to 8192 inputs in all.
bool quantized_gemv_takes(int64_t n, int64_t n_in, int64_t n_out, QuantizedFormat format);

// What a linear layer multiplies: x itself, or x transformed on its way in (the norm before a layer). The
// GEMV of a single row applies an RMSNorm itself as it reads x (every warp sums the squares of the columns it
// reads); otherwise the transform is one pass that writes the input in the form the product reads: float32
// for the GEMV, bfloat16 for the tensor cores, where it takes the place of the rounding pass.
enum class LinearInput {
    Plain,      // x [n, n_in]
    RmsNorm,    // norm_w ⊙ x / rms(x) per row, as rms_norm_f32 computes it: x [n, n_in], norm_w [n_in], eps
    LayerNorm,  // as layer_norm_f32 computes it: x [n, n_in], norm_w and norm_b [n_in], eps
};

// What the product's rows become: themselves, or pairs of rows combined.
enum class LinearOutput {
    Plain,   // y [n, n_out]
    Swiglu,  // y [n, n_out / 2]: silu(first half) ⊙ second half of the stacked gate and up projections of a
             // gated MLP, from the same float32 sums; n_out even, epilogue Store
    RopeToCache,  // the language model's q, k and v heads to where QuantizedLinearArgs::rope says, as
                  // rope_qkv_to_cache_f32 puts them; y unused, epilogue Store
};

// y = output(epilogue(input(x) · dequantize(w)ᵀ + b)).  x as input says, q as QuantizedWeights::q, scales
// [n_out, n_in / group_size], b [n_out] or null  ->  y [n, n_out] (read too when the epilogue accumulates).
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
    LinearInput input = LinearInput::Plain;
    LinearOutput output = LinearOutput::Plain;
    // On the tensor cores only (quantized_gemv_takes false): in place of x with a Plain input, the input
    // already in bfloat16 bits [n, n_in], so that no rounding pass runs; in place of y for a Swiglu output
    // without a bias, the gated rows in bfloat16 bits [n, n_out / 2], gated from the product rounded to
    // bfloat16 as cuBLASLt writes it.
    const uint16_t* x_bf16 = nullptr;
    uint16_t* y_bf16 = nullptr;
    const float* norm_w = nullptr;  // [n_in], for LinearInput::RmsNorm and LayerNorm
    float eps = 0.0f;
    const float* norm_b = nullptr;  // [n_in], for LinearInput::LayerNorm
    // For LinearOutput::RopeToCache: where the heads go, q_out [n, n_head, head_dim] with n_out q, k and v
    // rows. The GEMV reads its positions, slots and frequencies before it waits for the kernel ahead, as it
    // does the weights, so that kernel must not write them (the step's inputs are uploaded).
    RopeCacheArgs rope;
};

// scratch [n_scratch] floats, used on the tensor cores: the input rounded to bfloat16 (unless
// x_bf16 holds it), for WINT8/WINT4 a block of dequantized weight rows, multiplied on the tensor cores with
// float32 accumulation and the epilogue fused (gemm), and the product before a SwiGLU or RopeToCache output;
// through the GEMV, the transformed input if there is one that the GEMV does not apply itself
// (it applies the output itself). quantized_linear_scratch_floats() says how much.
int64_t quantized_linear_scratch_floats(const QuantizedLinearArgs& args);
void quantized_linear_f32(LtGemm& gemm, const QuantizedLinearArgs& args, float* scratch, int64_t n_scratch,
                          cudaStream_t stream);

// x [n] float32  ->  y [n] bfloat16 bits, rounded to nearest even, four values a thread where alignment
// allows.
void round_to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t stream);

// Weight rows [row_begin, row_begin + n_rows) as bfloat16 bits, rounded to nearest even; WINT8/WINT4 eight
// weights a thread where n_in is a multiple of 8 and q (8 bytes) and w (16) are aligned.  q, scales as above
// ->  w [n_rows, n_in]
void dequantize_rows_bf16(QuantizedFormat format, const int8_t* q, const float* scales, uint16_t* w,
                          int64_t row_begin, int64_t n_rows, int64_t n_in, int64_t group_size,
                          cudaStream_t stream);

}  // namespace folio::kernels
