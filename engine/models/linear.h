// Linear layers as the models store them (float32, bfloat16, or quantized at load time), their loading from a
// WeightSource with counts of parameters and bytes, and their application as one backend linear operation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/quantization.h"

namespace folio {

class Collectives;
class WeightSource;

// A tensor-parallel rank's part of a model: its share of each layer's heads and MLP columns, and the
// collectives that sum a row-parallel layer's partial outputs. One rank (the default) holds everything.
struct TensorSplit {
    int rank = 0;
    int n_ranks = 1;
    Collectives* collectives = nullptr;  // the rank's view of its group; needed with more than one rank

    // The units (heads, columns) of n this rank holds: [first, first + count). n over the ranks where they
    // divide it; where n divides the ranks instead (fewer K/V heads than ranks), each unit is held whole by
    // n_ranks / n ranks. Throws folio::Error naming `what` otherwise.
    struct Part {
        int64_t first = 0;
        int64_t count = 0;
    };
    Part part(int64_t n, const char* what) const;
};

// How the weights are stored: dense float32, or the linear layers quantized at load time.
struct ModelLoadParams {
    Quantization quantization = Quantization::None;  // applies to the language model's linear layers
    int64_t group_size = 128;                        // WINT4 group size: 64 or 128
    bool quantize_vision = false;                    // the vision encoder's linear layers too
    // The vision encoder's linear layers in FP8 with activations rounded per row (Backend::fp8_refusal says
    // where not), in place of quantize_vision.
    bool vision_fp8 = false;
    // Linear layers left unquantized, and the LM head, kept in bfloat16; attention then at bfloat16
    // precision.
    bool bf16_weights = false;
    TensorSplit split;  // which part of each split layer this model holds
};

// The attention precision weights loaded with these parameters ask for.
inline AttentionPrecision attention_precision(const ModelLoadParams& load) {
    return load.bf16_weights ? AttentionPrecision::Bf16 : AttentionPrecision::F32;
}

// A linear layer: w [out, in] in any format, bias [out] when present. A row-parallel layer of a
// tensor-parallel rank holds some of the input columns; its output is the sum over the ranks (`reduce`).
struct Linear {
    Weight w;
    Tensor b;
    Collectives* reduce = nullptr;
};

// How one linear layer of n_in inputs asked to be stored as q is stored. WINT4 groups must tile a row; a
// layer whose input size they do not divide (the vision MLP's 4304) is kept in WINT8 instead. Unquantized
// layers are bfloat16 when asked.
Quantization layer_quantization(Quantization q, int64_t n_in, const ModelLoadParams& load);

// How the vision encoder's linear layers asked to be stored: FP8 where vision_fp8, the language model's
// quantization where quantize_vision, unquantized otherwise.
Quantization vision_quantization(const ModelLoadParams& load);

// What a WeightLoader tells of its quantization pass as it goes (the service's loading progress).
class QuantizationObserver {
public:
    virtual ~QuantizationObserver() = default;
    // The pass begins with n_weights values to quantize; a load without WINT8 or WINT4 layers has no pass.
    virtual void quantization_begins(int64_t n_weights) = 0;
    // A layer (named by its first weight) is quantized and in its place: n_weights values.
    virtual void layer_quantized(const std::string& layer, int64_t n_weights) = 0;
};

// Loads tensors onto the backend, counting parameters and the bytes they take there, in two passes: every
// tensor kept as it is stored (float32, or bfloat16 where asked) as it is loaded, while a linear layer
// quantized to WINT8 or WINT4 only takes its place on the backend then; quantize_layers() reads and
// quantizes those afterwards, one layer at a time, so that the host holds one layer's float values at most.
class WeightLoader {
public:
    WeightLoader(Backend& backend, WeightSource& weights, const ModelLoadParams& load,
                 QuantizationObserver* observer = nullptr)
        : backend_(backend), weights_(weights), load_(load), observer_(observer) {}

    Tensor load(const std::string& name, std::vector<int64_t> shape);
    // vision_quantization(params()), after checking that the backend takes FP8 where it is asked for
    // (folio::Error with the backend's reason otherwise).
    Quantization vision_quantization() const;
    // A token embedding table [vocab, d]: in bfloat16 where the weights are bfloat16 and the backend keeps
    // bfloat16 (its rows are read one at a time, and it is half of float32's memory), else float32; a
    // backend's table (Backend::upload_table), which a device keeps in host memory, unless it is the head's
    // weight as well (a tied head in float32). With keep_values, its float32 values stay in `values` for the
    // caller (a tied bfloat16 head made from them).
    Tensor load_embedding(const std::string& name, int64_t vocab, int64_t d, bool keep_values,
                          std::vector<float>& values, bool also_head = false);
    Tensor load_optional_bias(const std::string& name, int64_t n, bool present);
    Linear load_linear(const std::string& prefix, int64_t n_out, int64_t n_in, bool bias,
                       Quantization quantization);
    // Layers with the same input stacked into one: the weights' rows (and biases) one after another. A layer
    // quantized to WINT8 or WINT4 holds its values once quantize_layers() has run.
    Linear load_stacked_linear(const std::vector<std::string>& prefixes, const std::vector<int64_t>& n_outs,
                               int64_t n_in, bool bias, Quantization quantization);
    // Tensor parallelism (params().split): a column-parallel layer holds the rank's part of each stacked
    // layer's rows, which come in n_units[i] units (heads of head_dim rows, or single rows for an MLP's
    // columns), so its output is the rank's heads or columns; n_outs are the whole layers'. With one rank
    // this is load_stacked_linear.  ->  rows [sum of the parts' rows, n_in]
    Linear load_column_parallel(const std::vector<std::string>& prefixes, const std::vector<int64_t>& n_outs,
                                const std::vector<int64_t>& n_units, int64_t n_in, bool bias,
                                Quantization quantization);
    // A row-parallel layer holds the input columns of the rank's part of n_units units of the whole n_in (the
    // heads or columns the column-parallel layer before it gave), and its output is summed over the ranks;
    // the bias is the first rank's alone.  ->  [n_out, the part's columns]
    Linear load_row_parallel(const std::string& prefix, int64_t n_out, int64_t n_in, int64_t n_units,
                             bool bias, Quantization quantization);
    // Row-parallel layers of the same input stacked into one (a pool's experts), each holding those columns.
    Linear load_row_parallel(const std::vector<std::string>& prefixes, const std::vector<int64_t>& n_outs,
                             int64_t n_in, int64_t n_units, bool bias, Quantization quantization);
    // The quantization pass: the weights of the layers waiting for it read, quantized and written into their
    // places, in the order they were loaded. The model calls it once all its layers are loaded.
    void quantize_layers();
    bool has(const std::string& name) const;
    // Bytes held on the backend that were not loaded through this loader (a copy of a table, say).
    void add_bytes(int64_t n) { n_weight_bytes_ += n; }

    Backend& backend() const { return backend_; }
    const ModelLoadParams& params() const { return load_; }
    int64_t n_params() const { return n_params_; }
    int64_t n_weight_bytes() const { return n_weight_bytes_; }
    // Layers waiting for quantize_layers().
    int64_t n_waiting() const { return static_cast<int64_t>(waiting_.size()); }

private:
    // The block of a stored [n_rows, n_cols] tensor a layer holds.
    struct Block {
        int64_t n_rows = 0, n_cols = 0;  // the whole tensor's
        int64_t row = 0, n_block_rows = 0;
        int64_t col = 0, n_block_cols = 0;

        // The tensor's shape as stored: [n_rows, n_cols], or [n_rows] for a vector (n_cols 0).
        std::vector<int64_t> tensor_shape() const {
            return n_rows > 0 && n_cols > 0 ? std::vector<int64_t>{n_rows, n_cols}
                                            : std::vector<int64_t>{n_rows};
        }
        // Whether the block is the whole tensor.
        bool is_whole() const {
            return row == 0 && n_block_rows == n_rows && col == 0 &&
                   n_block_cols == std::max<int64_t>(n_cols, 1);
        }
    };
    // A layer loaded without its weights' values: where they go and where they come from.
    struct WaitingLayer {
        std::vector<std::string> names;
        std::vector<Block> blocks;
        Weight w;
    };

    // Stacked layers of the given blocks of their weights (and, with bias, the same rows of their biases).
    Linear load_blocks(const std::vector<std::string>& prefixes, const std::vector<Block>& blocks, bool bias,
                       Quantization quantization);
    // A block's values, row after row.  ->  [n_block_rows * n_block_cols]
    std::vector<float> load_block(const std::string& name, const Block& block);
    // The same into out, straight from the source where the block is the whole tensor.
    void load_block_into(const std::string& name, const Block& block, std::span<float> out);

    Backend& backend_;
    WeightSource& weights_;
    ModelLoadParams load_;
    QuantizationObserver* observer_;
    std::vector<WaitingLayer> waiting_;
    int64_t n_params_ = 0;
    int64_t n_weight_bytes_ = 0;
};

// Backend::linear of the layer as spec describes it, with the layer's bias.  x [n, in]  ->  as
// Backend::linear
Tensor apply(Backend& backend, const Linear& layer, const Tensor& x, LinearSpec spec = {});

// Specs of a linear operation whose input is normed first.  norm_w, norm_b [in]
LinearSpec rms_normed(const Tensor& norm_w, float eps);
LinearSpec layer_normed(const Tensor& norm_w, const Tensor& norm_b, float eps);

// The tensor with another shape of as many elements.
Tensor reshaped(const Tensor& t, std::vector<int64_t> shape);

}  // namespace folio
