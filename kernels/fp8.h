// Activations for FP8 products: rows rounded to E4M3 with a scale each, optionally normalised first.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/quantized-linear.h"

namespace folio::kernels {

// The rows an FP8 product reads. x is float32 or bfloat16 bits (the other null); with a norm, each row is
// normalised as layer_norm_f32 or rms_norm_f32 does it (norm_w, and norm_b for LayerNorm, [d] float32).
struct Fp8RowsArgs {
    const float* x = nullptr;
    const uint16_t* x_bf16 = nullptr;
    LinearInput norm = LinearInput::Plain;
    const float* norm_w = nullptr;
    const float* norm_b = nullptr;
    float eps = 0.0f;
    int64_t n_rows = 0;
    int64_t d = 0;
};

// Each row's scale is its largest magnitude m over 448 (1 for a row of zeros), and each value v becomes the
// E4M3 value nearest v · 448 / m, as round_rows_to_fp8 computes it on the host. d a multiple of 4, x aligned
// to four values (norm_w and norm_b too).  x [n_rows, d]  ->  q [n_rows, d] E4M3 bytes, scales [n_rows]
void quantize_rows_fp8(const Fp8RowsArgs& args, uint8_t* q, float* scales, cudaStream_t stream);

}  // namespace folio::kernels
