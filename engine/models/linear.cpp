#include "engine/models/linear.h"

#include "engine/common/error.h"
#include "engine/files/weight-source.h"

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

Tensor WeightLoader::load_embedding(const std::string& name, int64_t vocab, int64_t d, bool keep_values,
                                    std::vector<float>& values) {
    std::vector<float> table = weights_.load(name, {vocab, d});
    n_params_ += static_cast<int64_t>(table.size());
    const bool bf16 = load_.bf16_weights && backend_.kv_dtype(AttentionPrecision::Bf16) == ScalarType::BF16;
    n_weight_bytes_ += static_cast<int64_t>(table.size()) * (bf16 ? 2 : 4);
    // upload_kv rounds to the element type as a bfloat16 cache is rounded.
    Tensor out =
        bf16 ? backend_.upload_kv(table, {vocab, d}, ScalarType::BF16) : backend_.upload(table, {vocab, d});
    values = keep_values ? std::move(table) : std::vector<float>{};
    return out;
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
    quantization = layer_quantization(quantization, n_in, load_);
    // WINT8 and WINT4 weights are read in the quantization pass; the rest in the order weight, bias a layer.
    const bool quantized_later = quantization == Quantization::Wint8 || quantization == Quantization::Wint4;
    std::vector<std::string> names;
    std::vector<float> values, biases;  // [sum of n_outs, n_in] unless quantized later, [sum of n_outs]
    int64_t n_out = 0;
    for (size_t i = 0; i < prefixes.size(); ++i) {
        names.push_back(prefixes[i] + ".weight");
        if (!quantized_later) {
            const std::vector<float> w = weights_.load(names.back(), {n_outs[i], n_in});
            values.insert(values.end(), w.begin(), w.end());
        }
        if (bias) {
            const std::vector<float> b = weights_.load(prefixes[i] + ".bias", {n_outs[i]});
            biases.insert(biases.end(), b.begin(), b.end());
        }
        n_out += n_outs[i];
    }
    n_params_ += n_out * n_in + static_cast<int64_t>(biases.size());
    n_weight_bytes_ += quantized_bytes(quantization, n_out, n_in, load_.group_size);
    Linear layer;
    if (quantized_later) {
        layer.w = backend_.alloc_weight(quantization, n_out, n_in, load_.group_size);
        waiting_.push_back({std::move(names), n_outs, layer.w});
    } else if (quantization == Quantization::None) {
        layer.w = dense_weight(backend_.upload(values, {n_out, n_in}));
    } else {
        layer.w = backend_.upload(quantize(values, n_out, n_in, quantization, load_.group_size));
    }
    if (bias) {
        n_weight_bytes_ += static_cast<int64_t>(biases.size() * sizeof(float));
        layer.b = backend_.upload(biases, {n_out});
    }
    return layer;
}

void WeightLoader::quantize_layers() {
    if (waiting_.empty()) {
        return;
    }
    if (observer_) {
        int64_t n_weights = 0;
        for (const WaitingLayer& layer : waiting_) {
            n_weights += layer.w.n_out * layer.w.n_in;
        }
        observer_->quantization_begins(n_weights);
    }
    for (const WaitingLayer& layer : waiting_) {
        const Weight& w = layer.w;
        std::vector<float> values;  // [w.n_out, w.n_in]
        for (size_t i = 0; i < layer.names.size(); ++i) {
            const std::vector<float> part = weights_.load(layer.names[i], {layer.n_outs[i], w.n_in});
            values.insert(values.end(), part.begin(), part.end());
        }
        backend_.write_weight(w, quantize(values, w.n_out, w.n_in, w.type, load_.group_size));
        if (observer_) {
            observer_->layer_quantized(layer.names.front(), w.n_out * w.n_in);
        }
    }
    waiting_.clear();
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
