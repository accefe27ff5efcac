// The element-wise functions backend operations apply: by themselves (Backend::apply_activation) or fused
// after a product or a convolution.
#pragma once

namespace folio {

enum class Activation {
    None,
    Relu,
    Silu,
    Gelu,  // GELU, exact erf form
    Sigmoid,
    GeluTanh,   // GELU, tanh approximation
    QuickGelu,  // x · sigmoid(1.702 x), CLIP's approximation
    Swiglu,     // silu(first half) ⊙ second half of each row (stacked gate and up projections): linear only
};

const char* activation_name(Activation act);

}  // namespace folio
