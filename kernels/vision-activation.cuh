// The element-wise functions of Activation on the device, shared by the kernels that apply them by
// themselves and those that fuse them after a convolution.
#pragma once

#include "kernels/vision-types.h"

namespace folio::kernels {

// act(v), as the CPU backend computes it (ReLU keeps a NaN).
__device__ inline float activation_value(KernelActivation act, float v) {
    switch (act) {
        case KernelActivation::None:
            return v;
        case KernelActivation::Relu:
            return v < 0.0f ? 0.0f : v;
        case KernelActivation::Silu:
            return v / (1.0f + expf(-v));
        case KernelActivation::Gelu:
            return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
        case KernelActivation::Sigmoid:
            return 1.0f / (1.0f + expf(-v));
        case KernelActivation::QuickGelu:
            return v / (1.0f + expf(-1.702f * v));
    }
    return v;
}

}  // namespace folio::kernels
