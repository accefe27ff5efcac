// The parameters of the vision operations of Backend (the layout models' CNN backbone, hybrid encoder and
// deformable-attention decoder), and the host-side folding of batch norm into a convolution.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "engine/backend/activation.h"
#include "engine/backend/tensor.h"

namespace folio {

// How a convolution's products may round their inputs on the tensor cores: float32 (none), TF32 (10 mantissa
// bits, as torch's cuDNN convolutions do by default) or bfloat16 (7 bits, twice TF32's rate); the sums stay
// float32. A backend without such a path computes in float32.
enum class ConvPrecision { Float32, Tf32, Bfloat16 };
// "float32", "tf32" or "bfloat16"; find_conv_precision gives nothing for any other name.
const char* conv_precision_name(ConvPrecision precision);
std::optional<ConvPrecision> find_conv_precision(std::string_view name);

// A 2-D convolution over NCHW tensors, as torch.nn.Conv2d computes it: symmetric zero padding per axis,
// channels in `groups` groups (groups == c_in == c_out: depthwise), then the activation.
struct Conv2dParams {
    std::array<int64_t, 2> stride{1, 1};    // height, width
    std::array<int64_t, 2> padding{0, 0};   // height, width, on both sides
    std::array<int64_t, 2> dilation{1, 1};  // height, width
    int64_t groups = 1;
    Activation activation = Activation::None;
    ConvPrecision precision = ConvPrecision::Float32;
};

enum class PoolMode { Max, Average };

// A 2-D pooling as torch.nn.MaxPool2d / AvgPool2d compute it: padding counts as -inf for Max; for Average it
// counts as zeros in the divisor when count_include_pad is set (torch's default); ceil_mode rounds the output
// size up, a last window starting inside the input or its left padding.
struct Pool2dParams {
    PoolMode mode = PoolMode::Max;
    std::array<int64_t, 2> kernel{2, 2};  // height, width
    std::array<int64_t, 2> stride{2, 2};
    std::array<int64_t, 2> padding{0, 0};
    bool ceil_mode = false;
    bool count_include_pad = true;
};

// One level of a multi-scale feature map: height x width positions, rows [start, start + height * width) of
// the value tensor of multi_scale_deformable_attention.
struct FeatureLevel {
    int64_t height = 0;
    int64_t width = 0;
    int64_t start = 0;
};

// How interpolate2d maps an output position to the input: scale = in / out per axis; Nearest takes input
// floor(dst * scale), Bilinear samples at (dst + 0.5) * scale - 0.5 clamped at 0 (torch's
// align_corners=False).
enum class InterpolateMode { Nearest, Bilinear };

// The k largest values of each row and their columns: values float32, indices int32.
struct TopK {
    Tensor values;
    Tensor indices;
};

// The most frequencies Backend::sinusoid takes.
inline constexpr int64_t kMaxSinusoidFreqs = 64;

// Output size of a convolution or pooling along one axis, floor or ceil mode.
int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation);
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, bool ceil_mode);

// Folds an inference batch norm after a convolution into its weight and bias: channel o's weights scale by
// s = gamma[o] / sqrt(var[o] + eps) and its bias becomes (bias[o] - mean[o]) * s + beta[o] (bias zero
// where the convolution had none). weight [c_out, ...], bias and the norm's vectors [c_out].
void fold_batch_norm(std::span<float> weight, std::span<float> bias, std::span<const float> gamma,
                     std::span<const float> beta, std::span<const float> mean, std::span<const float> var,
                     float eps);

}  // namespace folio
