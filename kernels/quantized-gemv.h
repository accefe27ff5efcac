// The GEMV of the quantized linear layer (quantized-gemv.cu): up to kQuantizedGemvMaxRows rows of float32 x
// against the packed weights, finished as QuantizedLinearArgs::output says.
#pragma once

#include <cuda_runtime.h>

#include "kernels/quantized-linear.h"

namespace folio::kernels {

// Whether the GEMV applies a's RMSNorm input itself, as it reads x: at up to kGemvNormMaxRows rows and
// columns in whole chunks of eight. Otherwise a pass writes the normed input first.
bool gemv_takes_norm(const QuantizedLinearArgs& a);

// Whether a single row's WINT4 products hold x in registers and stream their weight rows past it (the GEMV's
// and the decode mixture of experts' streamed kernels): yes, unless FOLIO_GEMV_STREAMED=0 is in the
// environment, which keeps the kernels of a warp a row for comparison.
bool streamed_gemv_enabled();

// Enqueues the GEMV of a, whose input is Plain or one the GEMV takes itself (gemv_takes_norm).
void launch_gemv(const QuantizedLinearArgs& a, cudaStream_t stream);

}  // namespace folio::kernels
