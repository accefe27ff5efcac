#include "engine/backend/backend-vision.h"

#include <cmath>

#include "engine/common/error.h"

namespace folio {

const char* conv_precision_name(ConvPrecision precision) {
    switch (precision) {
        case ConvPrecision::Float32:
            return "float32";
        case ConvPrecision::Tf32:
            return "tf32";
        case ConvPrecision::Bfloat16:
            return "bfloat16";
    }
    fail("conv_precision_name: invalid precision ", static_cast<int>(precision));
}

std::optional<ConvPrecision> find_conv_precision(std::string_view name) {
    for (const ConvPrecision p : {ConvPrecision::Float32, ConvPrecision::Tf32, ConvPrecision::Bfloat16}) {
        if (name == conv_precision_name(p)) {
            return p;
        }
    }
    return std::nullopt;
}

const char* activation_name(Activation act) {
    switch (act) {
        case Activation::None:
            return "none";
        case Activation::Relu:
            return "relu";
        case Activation::Silu:
            return "silu";
        case Activation::Gelu:
            return "gelu";
        case Activation::Sigmoid:
            return "sigmoid";
        case Activation::GeluTanh:
            return "gelu_tanh";
        case Activation::QuickGelu:
            return "quick_gelu";
        case Activation::Swiglu:
            return "swiglu";
    }
    fail("activation_name: invalid activation ", static_cast<int>(act));
}

int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
    const int64_t span = in + 2 * padding - dilation * (kernel - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
}

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, bool ceil_mode) {
    const int64_t span = in + 2 * padding - kernel;
    if (span < 0) {
        return 0;
    }
    int64_t out = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    // A last window must start inside the input or its left padding.
    if (ceil_mode && (out - 1) * stride >= in + padding) {
        --out;
    }
    return out;
}

void fold_batch_norm(std::span<float> weight, std::span<float> bias, std::span<const float> gamma,
                     std::span<const float> beta, std::span<const float> mean, std::span<const float> var,
                     float eps) {
    const size_t c_out = bias.size();
    if (gamma.size() != c_out || beta.size() != c_out || mean.size() != c_out || var.size() != c_out ||
        c_out == 0 || weight.size() % c_out != 0) {
        fail("fold_batch_norm: weight of ", weight.size(), " values, bias of ", bias.size(), ", gamma ",
             gamma.size(), ", beta ", beta.size(), ", mean ", mean.size(), ", var ", var.size(),
             "; the norm's vectors and the bias need one value per output channel");
    }
    const size_t per_channel = weight.size() / c_out;
    for (size_t o = 0; o < c_out; ++o) {
        if (!(var[o] + eps > 0.0f)) {
            fail("fold_batch_norm: channel ", o, " has variance ", var[o], " with eps ", eps);
        }
        // In double, then rounded once: the folded values are as close to the exact ones as float allows.
        const double scale = static_cast<double>(gamma[o]) / std::sqrt(static_cast<double>(var[o]) + eps);
        for (size_t i = o * per_channel; i < (o + 1) * per_channel; ++i) {
            weight[i] = static_cast<float>(weight[i] * scale);
        }
        bias[o] = static_cast<float>((static_cast<double>(bias[o]) - mean[o]) * scale + beta[o]);
    }
}

}  // namespace folio
