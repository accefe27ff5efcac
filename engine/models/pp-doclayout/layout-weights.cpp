#include "engine/models/pp-doclayout/layout-weights.h"

#include <cmath>

#include "engine/common/error.h"
#include "engine/files/safetensors.h"

namespace folio {

std::vector<float> LayoutWeights::host(const std::string& name, const std::vector<int64_t>& shape) const {
    const TensorView& t = store_.get(name);
    if (t.shape != shape) {
        fail(store_.dir().string(), ": tensor ", name, " has shape ", shape_string(t.shape),
             ", the config needs ", shape_string(shape));
    }
    return to_f32(t);
}

bool LayoutWeights::has(const std::string& name) const {
    return store_.find(name) != nullptr;
}

Tensor LayoutWeights::tensor(const std::string& name, std::vector<int64_t> shape) {
    const std::vector<float> values = host(name, shape);
    n_bytes_ += static_cast<int64_t>(values.size() * sizeof(float));
    return backend_.upload(values, std::move(shape));
}

Linear LayoutWeights::linear(const std::string& prefix, int64_t n_out, int64_t n_in) {
    return scaled_linear(prefix, n_out, n_in, 1.0f);
}

Linear LayoutWeights::scaled_linear(const std::string& prefix, int64_t n_out, int64_t n_in, float scale) {
    std::vector<float> w = host(prefix + ".weight", {n_out, n_in});
    std::vector<float> b = host(prefix + ".bias", {n_out});
    if (scale != 1.0f) {
        for (float& v : w) {
            v *= scale;
        }
        for (float& v : b) {
            v *= scale;
        }
    }
    Tensor bias = backend_.upload(b, {n_out});
    // With bfloat16 convolutions the linear layers' products round their inputs to bfloat16 too, as the
    // reference's bfloat16 model does; a layer of a few outputs (the boxes' last layer, the class scores)
    // stays float32, where the tensor cores would gain nothing.
    if (precision_ == ConvPrecision::Bfloat16 && n_out % 8 == 0 && n_in % 8 == 0) {
        n_bytes_ += static_cast<int64_t>(w.size() * sizeof(uint16_t) + b.size() * sizeof(float));
        return Linear{backend_.upload(quantize(w, n_out, n_in, Quantization::Bf16, 0)), bias};
    }
    n_bytes_ += static_cast<int64_t>((w.size() + b.size()) * sizeof(float));
    return Linear{dense_weight(backend_.upload(w, {n_out, n_in})), bias};
}

Mlp LayoutWeights::mlp(const std::string& prefix, int64_t n_in, int64_t n_hidden, int64_t n_out,
                       int n_layers) {
    Mlp m;
    for (int i = 0; i < n_layers; ++i) {
        const int64_t in = i == 0 ? n_in : n_hidden;
        const int64_t out = i == n_layers - 1 ? n_out : n_hidden;
        m.layers.push_back(linear(prefix + ".layers." + std::to_string(i), out, in));
    }
    return m;
}

Conv LayoutWeights::upload_conv(std::vector<float> w, std::vector<float> b, const ConvShape& shape) {
    Conv c;
    n_bytes_ += static_cast<int64_t>((w.size() + b.size()) * sizeof(float));
    c.w = backend_.upload(w, {shape.c_out, shape.c_in, shape.kernel, shape.kernel});
    c.b = backend_.upload(b, {shape.c_out});
    c.p.stride = {shape.stride, shape.stride};
    c.p.padding = {shape.padding, shape.padding};
    c.p.groups = shape.groups;
    c.p.activation = shape.activation;
    c.p.precision = precision_;
    return c;
}

Conv LayoutWeights::conv_bn(const std::string& conv_weight, const std::string& norm_prefix,
                            const ConvShape& shape, float eps) {
    std::vector<float> w = host(conv_weight, {shape.c_out, shape.c_in, shape.kernel, shape.kernel});
    std::vector<float> b(static_cast<size_t>(shape.c_out), 0.0f);
    const std::vector<int64_t> v{shape.c_out};
    fold_batch_norm(w, b, host(norm_prefix + ".weight", v), host(norm_prefix + ".bias", v),
                    host(norm_prefix + ".running_mean", v), host(norm_prefix + ".running_var", v), eps);
    return upload_conv(std::move(w), std::move(b), shape);
}

Conv LayoutWeights::conv(const std::string& prefix, const ConvShape& shape) {
    return upload_conv(host(prefix + ".weight", {shape.c_out, shape.c_in, shape.kernel, shape.kernel}),
                       host(prefix + ".bias", {shape.c_out}), shape);
}

Conv LayoutWeights::repvgg(const std::string& prefix, int64_t channels, Activation activation, float eps) {
    const std::vector<int64_t> v{channels};
    std::vector<float> w3 = host(prefix + ".conv1.conv.weight", {channels, channels, 3, 3});
    std::vector<float> b3(static_cast<size_t>(channels), 0.0f);
    fold_batch_norm(w3, b3, host(prefix + ".conv1.norm.weight", v), host(prefix + ".conv1.norm.bias", v),
                    host(prefix + ".conv1.norm.running_mean", v), host(prefix + ".conv1.norm.running_var", v),
                    eps);
    std::vector<float> w1 = host(prefix + ".conv2.conv.weight", {channels, channels, 1, 1});
    std::vector<float> b1(static_cast<size_t>(channels), 0.0f);
    fold_batch_norm(w1, b1, host(prefix + ".conv2.norm.weight", v), host(prefix + ".conv2.norm.bias", v),
                    host(prefix + ".conv2.norm.running_mean", v), host(prefix + ".conv2.norm.running_var", v),
                    eps);
    for (size_t o = 0; o < static_cast<size_t>(channels); ++o) {
        for (size_t i = 0; i < static_cast<size_t>(channels); ++i) {
            w3[(o * static_cast<size_t>(channels) + i) * 9 + 4] += w1[o * static_cast<size_t>(channels) + i];
        }
        b3[o] += b1[o];
    }
    return upload_conv(std::move(w3), std::move(b3), {channels, channels, 3, 1, 1, 1, activation});
}

Tensor global_pointer_products(Backend& backend, const Tensor& qk, int64_t pages, int64_t n,
                               int64_t head_size) {
    if (qk.shape != std::vector<int64_t>{pages * n, 2 * head_size}) {
        fail("global pointer: projections of shape ", shape_string(qk.shape), " for ", pages, " pages of ", n,
             " queries and head size ", head_size);
    }
    Tensor halves = qk;
    halves.shape = {pages * n, 2, head_size};
    const int perm[] = {1, 0, 2};
    const Tensor split =
        backend.permute(halves, perm);  // [2, pages * n, head_size]: the query halves, the keys
    const Tensor queries = split.view(0, {pages, n, head_size});
    const Tensor keys = split.view(pages * n * head_size, {pages, n, head_size});
    return backend.batched_products(queries, keys);  // [pages, n, n]
}

void finish_global_pointer(std::span<float> products, int64_t n, int64_t head_size) {
    const float scale = std::sqrt(static_cast<float>(head_size));
    const auto rows = static_cast<int64_t>(products.size()) / n;
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r % n;
        float* row = products.data() + r * n;
        for (int64_t j = 0; j < n; ++j) {
            row[j] = j > i ? row[j] / scale : -1e4f;
        }
    }
}

std::vector<float> global_pointer_logits(Backend& backend, const Tensor& qk, int64_t pages, int64_t n,
                                         int64_t head_size) {
    std::vector<float> logits = backend.download(global_pointer_products(backend, qk, pages, n, head_size));
    finish_global_pointer(logits, n, head_size);
    return logits;
}

Tensor run(Backend& backend, const Conv& conv, const Tensor& x) {
    return backend.conv2d(x, conv.w, &conv.b, conv.p);
}

Tensor run(Backend& backend, const Mlp& mlp, const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < mlp.layers.size(); ++i) {
        LinearSpec spec;
        spec.activation = i + 1 < mlp.layers.size() ? Activation::Relu : Activation::None;
        h = apply(backend, mlp.layers[i], h, spec);
    }
    return h;
}

}  // namespace folio
