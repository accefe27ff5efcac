#include "linear.h"

#include "error.h"
#include "weight-source.h"

namespace folio {

Tensor reshaped(const Tensor& t, std::vector<int64_t> shape) {
    Tensor r = t;
    r.shape = std::move(shape);
    if (r.n_elements() != t.n_elements()) {
        fail("reshape of ", shape_string(t.shape), " to ", shape_string(r.shape));
    }
    return r;
}

Quantization layer_quantization(Quantization q, int64_t n_in, const ModelLoadParams& load) {
    if (q == Quantization::None && load.bf16_weights) {
        return Quantization::Bf16;
    }
    return q == Quantization::Wint4 && n_in % load.group_size != 0 ? Quantization::Wint8 : q;
}

Tensor WeightLoader::load(const std::string& name, std::vector<int64_t> shape) {
    std::vector<float> values = weights_.load(name, shape);
    n_params_ += static_cast<int64_t>(values.size());
    n_weight_bytes_ += static_cast<int64_t>(values.size() * sizeof(float));
    return backend_.upload(values, std::move(shape));
}

Tensor WeightLoader::load_optional_bias(const std::string& name, int64_t n, bool present) {
    return present ? load(name, {n}) : Tensor{};
}

bool WeightLoader::has(const std::string& name) const {
    return weights_.has(name);
}

Linear WeightLoader::load_linear(const std::string& prefix, int64_t n_out, int64_t n_in, bool bias,
                                 Quantization quantization) {
    return load_stacked_linear({prefix}, {n_out}, n_in, bias, quantization);
}

Linear WeightLoader::load_stacked_linear(const std::vector<std::string>& prefixes,
                                         const std::vector<int64_t>& n_outs, int64_t n_in, bool bias,
                                         Quantization quantization) {
    std::vector<float> values, biases;  // [sum of n_outs, n_in], [sum of n_outs]
    int64_t n_out = 0;
    for (size_t i = 0; i < prefixes.size(); ++i) {
        const std::vector<float> w = weights_.load(prefixes[i] + ".weight", {n_outs[i], n_in});
        values.insert(values.end(), w.begin(), w.end());
        if (bias) {
            const std::vector<float> b = weights_.load(prefixes[i] + ".bias", {n_outs[i]});
            biases.insert(biases.end(), b.begin(), b.end());
        }
        n_out += n_outs[i];
    }
    n_params_ += static_cast<int64_t>(values.size() + biases.size());
    Linear layer;
    quantization = layer_quantization(quantization, n_in, load_);
    if (quantization == Quantization::None) {
        n_weight_bytes_ += static_cast<int64_t>(values.size() * sizeof(float));
        layer.w = dense_weight(backend_.upload(values, {n_out, n_in}));
    } else {
        n_weight_bytes_ += quantized_bytes(quantization, n_out, n_in, load_.group_size);
        layer.w = backend_.upload(quantize(values, n_out, n_in, quantization, load_.group_size));
    }
    if (bias) {
        n_weight_bytes_ += static_cast<int64_t>(biases.size() * sizeof(float));
        layer.b = backend_.upload(biases, {n_out});
    }
    return layer;
}

Tensor apply(Backend& backend, const Linear& layer, const Tensor& x, LinearSpec spec) {
    spec.bias = layer.b.empty() ? nullptr : &layer.b;
    return backend.linear(x, layer.w, spec);
}

LinearSpec rms_normed(const Tensor& norm_w, float eps) {
    return {.norm = LinearNorm::Rms, .norm_w = &norm_w, .eps = eps};
}

LinearSpec layer_normed(const Tensor& norm_w, const Tensor& norm_b, float eps) {
    return {.norm = LinearNorm::Layer, .norm_w = &norm_w, .norm_b = &norm_b, .eps = eps};
}

}  // namespace folio
