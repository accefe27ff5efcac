// The GEMV of the quantized linear layer (quantized-gemv.cu): up to kQuantizedGemvMaxRows rows of float32 x
// against the packed weights, finished as QuantizedLinearArgs::output says.
#pragma once

#include <cuda_runtime.h>

#include "kernels/quantized-linear.h"

namespace folio::kernels {

// Whether the GEMV applies a's RMSNorm input itself, as it reads x: at up to kGemvNormMaxRows rows and
// columns in whole chunks of eight. Otherwise a pass writes the normed input first.
bool gemv_takes_norm(const QuantizedLinearArgs& a);

// What a GEMV kernel does with its sums, fixed when it is compiled, so that each product's kernel holds only
// its own epilogue: store them (with a.epilogue), or combine the pairs of a SwiGLU or RopeToCache output.
enum class GemvFinish { Store, Swiglu, Rope };

// Enqueues the GEMV of a, whose input is Plain or one the GEMV takes itself (gemv_takes_norm).
void launch_gemv(const QuantizedLinearArgs& a, cudaStream_t stream);

}  // namespace folio::kernels
