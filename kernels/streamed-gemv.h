// The streamed GEMV of a single row of WINT4 weights (streamed-gemv.cu): each warp holds its part of x in
// registers and streams weight rows past it, so that x is read once a warp instead of once a weight row.
#pragma once

#include <cuda_runtime.h>

#include "kernels/quantized-gemv.h"
#include "kernels/quantized-linear.h"

namespace folio::kernels {

// Whether a single row's WINT4 products hold x in registers and stream their weight rows past it (the GEMV's
// and the decode mixture of experts' streamed kernels): yes, unless FOLIO_GEMV_STREAMED=0 is in the
// environment, which keeps the kernels of a warp a row for comparison.
bool streamed_gemv_enabled();

// Enqueues a's product, finished as finish says, on the streamed GEMV where it takes it (WINT4, one row, n_in
// a multiple of 8 up to 16,384, a grid of at least a block a multiprocessor; input Plain or an RMSNorm when
// norm); returns whether it did, and otherwise enqueues nothing.
bool launch_streamed_gemv(const QuantizedLinearArgs& a, GemvFinish finish, bool norm, cudaStream_t stream);

}  // namespace folio::kernels
