// PaddleOCR-VL: the SigLIP-style vision encoder, the 2x2-merge projector and the ERNIE-4.5 language model,
// written once against the Backend operations.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "backend.h"
#include "image-preprocess.h"
#include "kv-cache.h"
#include "model-config.h"
#include "quantization.h"
#include "rope.h"

namespace folio {

class WeightSource;

// How the weights are stored: dense float32, or the linear layers quantized at load time.
struct ModelLoadParams {
    Quantization quantization = Quantization::None;  // applies to the language model's linear layers
    int64_t group_size = 128;                        // WINT4 group size: 64 or 128
    bool quantize_vision = false;                    // the vision encoder's linear layers too
    // Linear layers left unquantized, and the LM head, kept in bfloat16; attention then at bfloat16
    // precision.
    bool bf16_weights = false;
};

// A linear layer: w [out, in] dense or quantized, bias [out] when present.
struct Linear {
    Tensor w;
    QuantizedTensor q;
    Tensor b;
};

// The q, k and v projections are one layer, their rows one after another; in the language model so are gate
// and up.
struct VisionLayer {
    Tensor ln1_w, ln1_b;  // [d]
    Linear qkv_proj;      // [3 d, d]
    Linear o_proj;        // [d, d]
    Tensor ln2_w, ln2_b;  // [d]
    Linear fc1;           // [d_ff, d]
    Linear fc2;           // [d, d_ff]
};

struct TextLayer {
    Tensor input_norm;    // [d]
    Linear qkv_proj;      // [(n_head + 2 n_kv_head) * hd, d]
    Linear o_proj;        // [d, n_head * hd]
    Tensor post_norm;     // [d]
    Linear gate_up_proj;  // [2 d_ff, d]
    Linear down_proj;     // [d, d_ff]
};

// The device-side inputs of one decoder step over n new tokens.
struct DecoderStep {
    Tensor positions;  // [n, 3] int32: each token's (t, h, w) rotary position
    Tensor slots;      // [n] int32: each token's cache row; negative rows are not stored (padding)
    // A decode step (one new token per sequence) gives its attention metadata on the device; any other step
    // gives the host-side batch.
    Tensor seq_lens;      // [n] int32: tokens in the cache per sequence, the new one included
    Tensor block_tables;  // [n, max_blocks] int32
    const KvBatch* batch = nullptr;
};

// Bytes the weights of a model of this configuration take when loaded with these parameters.
int64_t weight_bytes(const ModelConfig& config, const ModelLoadParams& load);
// Bytes of weights one decode step reads: the language model's layers, final norm and LM head.
int64_t decode_weight_bytes(const ModelConfig& config, const ModelLoadParams& load);

class PaddleOcrVl {
public:
    PaddleOcrVl(Backend& backend, const ModelConfig& config, WeightSource& weights,
                const ModelLoadParams& load = {});

    const ModelConfig& config() const { return config_; }
    Backend& backend() const { return backend_; }
    int64_t n_params() const { return n_params_; }
    // Bytes of the weights as the backend holds them.
    int64_t n_weight_bytes() const { return n_weight_bytes_; }

    // Vision encoder over images packed in one sequence, attention within each image. The pixel values come
    // in parts that follow each other (each image's own array, say), uploaded without joining them first.
    // pixels [n_patches, channels * patch * patch] in parts  ->  [n_patches, vision_hidden] (after
    // post_layernorm)
    Tensor encode_vision(std::span<const std::span<const float>> pixels, std::span<const ImageGrid> grids);
    Tensor encode_vision(std::span<const float> pixel_values, std::span<const ImageGrid> grids) {
        return encode_vision(std::span(&pixel_values, 1), grids);
    }
    // The same with the pixels as 8-bit levels (PreprocessedImages::levels) in parts, each level standing
    // for its channel's value in level_values; only the levels go to the backend's device.
    Tensor encode_vision(std::span<const std::span<const uint8_t>> levels, const ChannelLevels& level_values,
                         std::span<const ImageGrid> grids);
    // Projector: LayerNorm, 2x2 merge, Linear-GELU-Linear.  [n_patches, vision_hidden] -> [n_patches / 4,
    // hidden]
    Tensor project(const Tensor& vision_features, std::span<const ImageGrid> grids);

    // Token embeddings.  ids [n]  ->  [n, hidden]
    Tensor embed(std::span<const int32_t> ids);
    // The same with the ids on the backend, a negative id -p - 1 standing for the token pending[p] that a
    // step still running samples (not checked there: an id outside the vocabulary gives zeros on the GPU).
    // ids [n], pending [n_pending] int32  ->  [n, hidden]
    Tensor embed(const Tensor& ids, const Tensor& pending);
    // Runs the decoder over the new tokens of a batch of sequences, writing their keys and values into the
    // cache slots the batch names and attending through the sequences' block tables. embeds becomes the
    // residual stream: its rows are updated in place and returned, before the final norm (logits applies it
    // to the rows it takes).
    // embeds [n, hidden], positions [n][t, h, w]  ->  hidden states [n, hidden]
    Tensor forward_text(Tensor embeds, std::span<const std::array<int64_t, 3>> positions, PagedKvCache& cache,
                        const KvBatch& batch);
    // The same with the step's inputs already on the backend: the form that can be recorded.
    Tensor forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache& cache);
    // The final norm and the LM head.  hidden [n, hidden]  ->  logits [n, vocab]
    Tensor logits(const Tensor& hidden);
    // The cache forward_text takes for n_blocks blocks of block_size tokens: the decoder's layers and K/V
    // heads, in the element type the backend keeps keys and values in at the model's attention precision.
    KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const;

private:
    // Patches of the grids, after checking that n_values (of what) fill them.
    int64_t patches_of(std::span<const ImageGrid> grids, int64_t n_values, const char* what) const;
    // The vision encoder over uploaded patches.
    // patches [n_patches, patch_dim]  ->  [n_patches, vision_hidden]
    Tensor encode_patches(const Tensor& patches, std::span<const ImageGrid> grids);
    // The vision encoder's rotary tables for the grids' patches, gathered on the backend from its axis
    // tables (vision_rope_rows).  ->  cos, sin [n_patches, vision_head_dim]
    std::pair<Tensor, Tensor> vision_rope(std::span<const ImageGrid> grids);
    Tensor load(WeightSource& weights, const std::string& name, std::vector<int64_t> shape);
    Tensor load_optional_bias(WeightSource& weights, const std::string& name, int64_t n, bool present);
    Linear load_linear(WeightSource& weights, const std::string& prefix, int64_t n_out, int64_t n_in,
                       bool bias, Quantization quantization);
    // Layers with the same input stacked into one: the weights' rows (and biases) one after another.
    Linear load_stacked_linear(WeightSource& weights, const std::vector<std::string>& prefixes,
                               const std::vector<int64_t>& n_outs, int64_t n_in, bool bias,
                               Quantization quantization);
    Tensor apply(const Linear& layer, const Tensor& x);
    // gelu_tanh(apply(layer, x)), y += apply(layer, x), apply(layer, layer_norm(x, norm_w, norm_b)),
    // x += apply(fc2, gelu_tanh(apply(fc1, layer_norm(x, norm_w, norm_b)))), apply(layer, rms_norm(x, norm)),
    // swiglu(apply(layer, rms_norm(x, norm))), x += apply(down, swiglu(apply(gate_up, rms_norm(x, norm))))
    // and rope_qkv_to_cache(apply(layer, rms_norm(x, norm)), ...): one backend call where the weights are
    // stored packed, which fuses the steps with the matrix products as far as it can.
    Tensor apply_gelu_tanh(const Linear& layer, const Tensor& x);
    void apply_add(Tensor& y, const Linear& layer, const Tensor& x);
    Tensor apply_layer_norm(const Linear& layer, const Tensor& x, const Tensor& norm_w, const Tensor& norm_b,
                            float eps);
    void apply_layer_norm_mlp_add(Tensor& x, const Linear& fc1, const Linear& fc2, const Tensor& norm_w,
                                  const Tensor& norm_b, float eps);
    Tensor apply_rms_norm(const Linear& layer, const Tensor& x, const Tensor& norm, float eps);
    Tensor apply_rms_norm_swiglu(const Linear& layer, const Tensor& x, const Tensor& norm, float eps);
    void apply_rms_norm_mlp_add(Tensor& x, const Linear& gate_up, const Linear& down, const Tensor& norm,
                                float eps);
    Tensor apply_rms_norm_rope_qkv_to_cache(const Linear& layer, const Tensor& x, const Tensor& norm,
                                            float eps, const DecoderStep& step, Tensor& k_cache,
                                            Tensor& v_cache);
    AttentionPrecision attention_precision() const {
        return load_params_.bf16_weights ? AttentionPrecision::Bf16 : AttentionPrecision::F32;
    }

    ModelLoadParams load_params_;
    Backend& backend_;
    ModelConfig config_;
    int64_t n_params_ = 0;
    int64_t n_weight_bytes_ = 0;

    Tensor patch_w, patch_b;  // [vision_hidden, channels * patch * patch], [vision_hidden]
    Tensor position_grid;     // [side * side, vision_hidden], resampled onto each image
    std::vector<VisionLayer> vision_layers;
    Tensor post_ln_w, post_ln_b;  // [vision_hidden]
    Tensor proj_ln_w, proj_ln_b;  // [vision_hidden]
    Linear proj_fc1;              // [4 * vision_hidden, 4 * vision_hidden]
    Linear proj_fc2;              // [hidden, 4 * vision_hidden]
    Tensor embed_tokens;          // [vocab, hidden]
    Linear lm_head;               // [vocab, hidden]; the embedding table when tied and kept in float32
    std::vector<TextLayer> text_layers;
    Tensor final_norm;  // [hidden]
    MropeParams text_rope;
    // The vision axis tables on the backend, cos rows then sin rows, for the longest side seen so far: their
    // rows do not depend on how many there are.  [2 * vision_rope_side_, vision_head_dim / 4]
    Tensor vision_axis_rope_;
    int64_t vision_rope_side_ = 0;
};

}  // namespace folio
