#include "engine/models/linear.h"

#include <algorithm>

#include "engine/backend/collectives.h"
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

Quantization vision_quantization(const ModelLoadParams& load) {
    if (load.vision_fp8) {
        return Quantization::Fp8;
    }
    return load.quantize_vision ? load.quantization : Quantization::None;
}

Quantization WeightLoader::vision_quantization() const {
    if (load_.vision_fp8) {
        if (const std::string why = backend_.fp8_refusal(); !why.empty()) {
            fail("the vision encoder in FP8 (--quantize-vision fp8): ", why);
        }
    }
    return folio::vision_quantization(load_);
}

Tensor WeightLoader::load(const std::string& name, std::vector<int64_t> shape) {
    std::vector<float> values = weights_.load(name, shape);
    n_params_ += static_cast<int64_t>(values.size());
    n_weight_bytes_ += static_cast<int64_t>(values.size() * sizeof(float));
    return backend_.upload(values, std::move(shape));
}

Tensor WeightLoader::load_embedding(const std::string& name, int64_t vocab, int64_t d, bool keep_values,
                                    std::vector<float>& values, bool also_head) {
    std::vector<float> table = weights_.load(name, {vocab, d});
    n_params_ += static_cast<int64_t>(table.size());
    const bool bf16 = load_.bf16_weights && backend_.kv_dtype(AttentionPrecision::Bf16) == ScalarType::BF16;
    n_weight_bytes_ += static_cast<int64_t>(table.size()) * (bf16 ? 2 : 4);
    // Rounded to the element type as a bfloat16 cache is rounded. A step reads a few of its rows, so a device
    // backend keeps it in host memory and leaves its own to the cache; the head reads all of it every step.
    const ScalarType dtype = bf16 ? ScalarType::BF16 : ScalarType::F32;
    Tensor out = also_head && !bf16 ? backend_.upload(table, {vocab, d})
                                    : backend_.upload_table(table, {vocab, d}, dtype);
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

TensorSplit::Part TensorSplit::part(int64_t n, const char* what) const {
    if (n_ranks < 1 || rank < 0 || rank >= n_ranks) {
        fail("tensor-parallel rank ", rank, " of ", n_ranks);
    }
    if (n % n_ranks == 0) {
        const int64_t count = n / n_ranks;
        return {rank * count, count};
    }
    if (n > 0 && n_ranks % n == 0) {
        return {rank / (n_ranks / n), 1};
    }
    fail(n, " ", what, " do not split over ", n_ranks, " tensor-parallel ranks (neither divides the other)");
}

void WeightLoader::load_block_into(const std::string& name, const Block& block, std::span<float> out) {
    if (block.is_whole()) {
        weights_.load_into(name, block.tensor_shape(), out);
        return;
    }
    const std::vector<float> part = load_block(name, block);
    std::copy(part.begin(), part.end(), out.begin());
}

std::vector<float> WeightLoader::load_block(const std::string& name, const Block& block) {
    std::vector<float> whole = weights_.load(name, block.tensor_shape());
    if (block.is_whole()) {
        return whole;
    }
    const int64_t n_cols = std::max<int64_t>(block.n_cols, 1);
    std::vector<float> out;
    out.reserve(static_cast<size_t>(block.n_block_rows * block.n_block_cols));
    for (int64_t r = block.row; r < block.row + block.n_block_rows; ++r) {
        const auto from = whole.begin() + r * n_cols + block.col;
        out.insert(out.end(), from, from + block.n_block_cols);
    }
    return out;
}

Linear WeightLoader::load_stacked_linear(const std::vector<std::string>& prefixes,
                                         const std::vector<int64_t>& n_outs, int64_t n_in, bool bias,
                                         Quantization quantization) {
    std::vector<Block> blocks;
    for (const int64_t n_out : n_outs) {
        blocks.push_back({n_out, n_in, 0, n_out, 0, n_in});
    }
    return load_blocks(prefixes, blocks, bias, quantization);
}

Linear WeightLoader::load_column_parallel(const std::vector<std::string>& prefixes,
                                          const std::vector<int64_t>& n_outs,
                                          const std::vector<int64_t>& n_units, int64_t n_in, bool bias,
                                          Quantization quantization) {
    std::vector<Block> blocks;
    for (size_t i = 0; i < prefixes.size(); ++i) {
        const int64_t n_out = n_outs[i], units = n_units[i];
        if (units < 1 || n_out % units != 0) {
            fail(prefixes[i], ": ", n_out, " rows do not come in ", units, " units");
        }
        const TensorSplit::Part part = load_.split.part(units, (prefixes[i] + "'s units").c_str());
        const int64_t unit_rows = n_out / units;
        blocks.push_back({n_out, n_in, part.first * unit_rows, part.count * unit_rows, 0, n_in});
    }
    return load_blocks(prefixes, blocks, bias, quantization);
}

Linear WeightLoader::load_row_parallel(const std::string& prefix, int64_t n_out, int64_t n_in,
                                       int64_t n_units, bool bias, Quantization quantization) {
    return load_row_parallel(std::vector<std::string>{prefix}, {n_out}, n_in, n_units, bias, quantization);
}

Linear WeightLoader::load_row_parallel(const std::vector<std::string>& prefixes,
                                       const std::vector<int64_t>& n_outs, int64_t n_in, int64_t n_units,
                                       bool bias, Quantization quantization) {
    const std::string& first = prefixes.front();
    if (n_units < 1 || n_in % n_units != 0) {
        fail(first, ": ", n_in, " columns do not come in ", n_units, " units");
    }
    const TensorSplit& split = load_.split;
    if (split.n_ranks > 1 && n_units % split.n_ranks != 0) {
        fail(first, ": ", n_units, " units of input do not split over ", split.n_ranks,
             " tensor-parallel ranks");  // a unit held by two ranks would be summed twice
    }
    const TensorSplit::Part part = split.part(n_units, (first + "'s input units").c_str());
    const int64_t unit_cols = n_in / n_units;
    std::vector<Block> blocks;
    for (const int64_t n_out : n_outs) {
        blocks.push_back({n_out, n_in, 0, n_out, part.first * unit_cols, part.count * unit_cols});
    }
    Linear layer = load_blocks(prefixes, blocks, bias && split.rank == 0, quantization);
    if (split.n_ranks > 1) {
        if (split.collectives == nullptr) {
            fail(first, ": a row-parallel layer of rank ", split.rank, " of ", split.n_ranks,
                 " without collectives to sum its output");
        }
        layer.reduce = split.collectives;
    }
    return layer;
}

Linear WeightLoader::load_blocks(const std::vector<std::string>& prefixes, const std::vector<Block>& blocks,
                                 bool bias, Quantization quantization) {
    const int64_t n_in = blocks.front().n_block_cols;
    quantization = layer_quantization(quantization, n_in, load_);
    // WINT8 and WINT4 weights are read in the quantization pass; the rest in the order weight, bias a layer.
    const bool quantized_later = quantization == Quantization::Wint8 || quantization == Quantization::Wint4;
    std::vector<std::string> names;
    std::vector<float> values, biases;  // [sum of the blocks' rows, n_in] unless quantized later, [its rows]
    int64_t n_out = 0;
    for (size_t i = 0; i < prefixes.size(); ++i) {
        const Block& block = blocks[i];
        if (block.n_block_cols != n_in) {
            fail(prefixes[i], ": stacked with layers of ", n_in, " inputs, holds ", block.n_block_cols);
        }
        names.push_back(prefixes[i] + ".weight");
        if (!quantized_later) {
            const std::vector<float> w = load_block(names.back(), block);
            values.insert(values.end(), w.begin(), w.end());
        }
        if (bias) {
            const std::vector<float> b =
                load_block(prefixes[i] + ".bias", {block.n_rows, 0, block.row, block.n_block_rows, 0, 1});
            biases.insert(biases.end(), b.begin(), b.end());
        }
        n_out += block.n_block_rows;
    }
    n_params_ += n_out * n_in + static_cast<int64_t>(biases.size());
    n_weight_bytes_ += quantized_bytes(quantization, n_out, n_in, load_.group_size);
    Linear layer;
    if (quantized_later) {
        layer.w = backend_.alloc_weight(quantization, n_out, n_in, load_.group_size);
        waiting_.push_back({std::move(names), blocks, layer.w});
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
    // One staging buffer for every layer, as large as the largest: its pages, once touched, serve the next
    // layer, where a fresh buffer of a few GB would be paged in anew for each; each tensor is converted
    // straight into its place.
    std::vector<float> staging;
    for (const WaitingLayer& layer : waiting_) {
        const Weight& w = layer.w;
        const auto n_values = static_cast<size_t>(w.n_out * w.n_in);
        if (staging.size() < n_values) {
            staging.resize(n_values);
        }
        const std::span<float> values = std::span(staging).first(n_values);  // [w.n_out, w.n_in]
        size_t at = 0;
        for (size_t i = 0; i < layer.names.size(); ++i) {
            const Block& block = layer.blocks[i];
            const auto n = static_cast<size_t>(block.n_block_rows * std::max<int64_t>(block.n_block_cols, 1));
            if (at + n > n_values) {
                fail(layer.names[i], ": ", at + n, " values for a layer of ", n_values);
            }
            load_block_into(layer.names[i], block, values.subspan(at, n));
            at += n;
        }
        if (at != n_values) {
            fail(layer.names.front(), ": ", at, " values for a layer of ", n_values);
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
    if (layer.reduce == nullptr) {
        return backend.linear(x, layer.w, spec);
    }
    // A row-parallel layer: the ranks' partial products summed, then the residual added once.
    Tensor* residual = spec.residual;
    spec.residual = nullptr;
    spec.bf16_output = false;
    Tensor y = backend.linear(x, layer.w, spec);
    layer.reduce->all_reduce_sum(backend, y);
    if (residual == nullptr) {
        return y;
    }
    backend.add(*residual, y);
    return *residual;
}

LinearSpec rms_normed(const Tensor& norm_w, float eps) {
    return {.norm = LinearNorm::Rms, .norm_w = &norm_w, .eps = eps};
}

LinearSpec layer_normed(const Tensor& norm_w, const Tensor& norm_b, float eps) {
    return {.norm = LinearNorm::Layer, .norm_w = &norm_w, .norm_b = &norm_b, .eps = eps};
}

}  // namespace folio
