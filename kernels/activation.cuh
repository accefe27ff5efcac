// Element-wise activations shared by the kernels that apply them on their own and in a product's epilogue.
#pragma once

namespace folio::kernels {

// GELU, tanh approximation.
__device__ inline float gelu_tanh(float v) {
    constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

// SiLU, the gate of SwiGLU.
__device__ inline float silu(float v) {
    return v / (1.0f + expf(-v));
}

}  // namespace folio::kernels
