// The layout models' weights from model.safetensors onto a backend: convolutions with their batch norm
// folded in (and RepVGG's parallel 3x3 and 1x1 branches folded into one 3x3), linear layers and the MLP
// heads of the DETR decoder.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/models/linear.h"

namespace folio {

class TensorStore;

// A convolution with its bias and activation, ready for Backend::conv2d.
struct Conv {
    Tensor w;  // [c_out, c_in / groups, kh, kw]
    Tensor b;  // [c_out]
    Conv2dParams p;
};

// Linear layers with ReLU between them (transformers' MLPPredictionHead).
struct Mlp {
    std::vector<Linear> layers;
};

// A convolution's shape and how it is applied.
struct ConvShape {
    int64_t c_out = 0;
    int64_t c_in = 0;  // per group
    int64_t kernel = 1;
    int64_t stride = 1;
    int64_t padding = 0;
    int64_t groups = 1;
    Activation activation = Activation::None;
};

class LayoutWeights {
public:
    // precision: how the convolutions may round their inputs (Conv2dParams::precision); with bfloat16 the
    // linear layers of eight outputs and inputs or more are stored in bfloat16 too.
    LayoutWeights(Backend& backend, const TensorStore& store,
                  ConvPrecision precision = ConvPrecision::Float32)
        : backend_(backend), store_(store), precision_(precision) {}

    // The tensor as float32, after checking its shape; throws naming the file and the tensor.
    std::vector<float> host(const std::string& name, const std::vector<int64_t>& shape) const;
    bool has(const std::string& name) const;
    Tensor tensor(const std::string& name, std::vector<int64_t> shape);
    Linear linear(const std::string& prefix, int64_t n_out, int64_t n_in);
    // A linear layer whose weight and bias are multiplied by scale (a score scaling folded in at load time).
    Linear scaled_linear(const std::string& prefix, int64_t n_out, int64_t n_in, float scale);
    Mlp mlp(const std::string& prefix, int64_t n_in, int64_t n_hidden, int64_t n_out, int n_layers);
    // A convolution without bias followed by a batch norm (prefix.running_mean, ...), folded into one.
    Conv conv_bn(const std::string& conv_weight, const std::string& norm_prefix, const ConvShape& shape,
                 float eps);
    // A convolution with its own bias.
    Conv conv(const std::string& prefix, const ConvShape& shape);
    // RepVGG's block: a 3x3 and a 1x1 convolution, each with its batch norm, summed, then the activation;
    // the 1x1 branch folds into the centre of the 3x3 kernel.
    Conv repvgg(const std::string& prefix, int64_t channels, Activation activation, float eps);

    Backend& backend() const { return backend_; }
    int64_t n_bytes() const { return n_bytes_; }

private:
    Conv upload_conv(std::vector<float> w, std::vector<float> b, const ConvShape& shape);

    Backend& backend_;
    const TensorStore& store_;
    ConvPrecision precision_ = ConvPrecision::Float32;
    int64_t n_bytes_ = 0;
};

// A global pointer's pair logits from each query's projection (its query half, then its key half), the dot
// products on the backend: entry [i][j] is q_i · k_j / sqrt(head_size) for i < j, -1e4 on and below the
// diagonal.  qk [pages * n, 2 head_size]  ->  [pages, n, n] on the host
std::vector<float> global_pointer_logits(Backend& backend, const Tensor& qk, int64_t pages, int64_t n,
                                         int64_t head_size);
// Its two halves: the dot products q_i · k_j on the backend  ->  [pages, n, n]
Tensor global_pointer_products(Backend& backend, const Tensor& qk, int64_t pages, int64_t n,
                               int64_t head_size);
// and on the host, the products scaled above the diagonal and -1e4 on and below it, in place.
// products [pages, n, n]
void finish_global_pointer(std::span<float> products, int64_t n, int64_t head_size);

Tensor run(Backend& backend, const Conv& conv, const Tensor& x);
// x [n, in]  ->  [n, out]
Tensor run(Backend& backend, const Mlp& mlp, const Tensor& x);

}  // namespace folio
