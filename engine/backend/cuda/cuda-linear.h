// How the CUDA backend describes a product's input and output to the quantized-linear kernels.
#pragma once

#include "kernels/quantized-linear.h"

namespace folio::cuda {

// What a product multiplies: x, or x transformed first (kernels::LinearInput).
struct LinearInputSpec {
    kernels::LinearInput input = kernels::LinearInput::Plain;
    const float* norm_w = nullptr;  // [n_in], for RmsNorm and LayerNorm
    float eps = 0.0f;
    const float* norm_b = nullptr;  // [n_in], for LayerNorm
};

// What a product's rows become (kernels::LinearOutput), with where the heads go for RopeToCache.
struct LinearOutputSpec {
    kernels::LinearOutput output = kernels::LinearOutput::Plain;
    kernels::RopeCacheArgs rope;
};

}  // namespace folio::cuda
