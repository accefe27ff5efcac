// The CPU backend's matrix products: y = x · wᵀ + b in blocks of four rows of x by four rows of w, each block
// a task on the pool, so that an output's arithmetic does not depend on how the work is split.
#pragma once

#include <cstdint>

#include "engine/backend/backend.h"
#include "engine/common/thread-pool.h"

namespace folio::cpu {

// With a float32 w, split over output columns when there are few rows (decode), over rows otherwise.
// x [n, in], w [out, in], b [out] or null  ->  y [n, out]
void dense_product(ThreadPool& pool, const float* x, const float* w, const float* b, float* y, int64_t n,
                   int64_t in, int64_t out);

// With packed weights: each task dequantizes four rows of w (dequantize_row) and multiplies them with every
// row of x.  x [n, w.n_in], b [w.n_out] or null  ->  y [n, w.n_out]
void packed_product(ThreadPool& pool, const float* x, const Weight& w, const float* b, float* y, int64_t n);

}  // namespace folio::cpu
