// PaddleOCR-VL: the SigLIP-style vision encoder, the 2x2-merge projector and the ERNIE-4.5 language model,
// written once against the Backend operations.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "backend.h"
#include "model-config.h"

namespace folio {

struct ImageGrid;
class KvCache;
class WeightSource;

struct VisionLayer {
    Tensor ln1_w, ln1_b;        // [d]
    Tensor q_w, k_w, v_w, o_w;  // [d, d]
    Tensor q_b, k_b, v_b, o_b;  // [d]
    Tensor ln2_w, ln2_b;        // [d]
    Tensor fc1_w, fc1_b;        // [d_ff, d], [d_ff]
    Tensor fc2_w, fc2_b;        // [d, d_ff], [d]
};

struct TextLayer {
    Tensor input_norm;            // [d]
    Tensor q_w, k_w, v_w, o_w;    // [n_head * hd, d], [n_kv_head * hd, d] x2, [d, n_head * hd]
    Tensor q_b, k_b, v_b, o_b;    // present when use_bias
    Tensor post_norm;             // [d]
    Tensor gate_w, up_w, down_w;  // [d_ff, d] x2, [d, d_ff]
    Tensor gate_b, up_b, down_b;  // present when use_bias
};

class PaddleOcrVl {
public:
    PaddleOcrVl(Backend& backend, const ModelConfig& config, WeightSource& weights);

    const ModelConfig& config() const { return config_; }
    Backend& backend() const { return backend_; }
    int64_t n_params() const { return n_params_; }

    // Vision encoder over images packed in one sequence, attention within each image.
    // pixel_values [n_patches, channels * patch * patch]  ->  [n_patches, vision_hidden] (after
    // post_layernorm)
    Tensor encode_vision(std::span<const float> pixel_values, std::span<const ImageGrid> grids);
    // Projector: LayerNorm, 2x2 merge, Linear-GELU-Linear.  [n_patches, vision_hidden] -> [n_patches / 4,
    // hidden]
    Tensor project(const Tensor& vision_features, std::span<const ImageGrid> grids);

    // Token embeddings.  ids [n]  ->  [n, hidden]
    Tensor embed(std::span<const int32_t> ids);
    // Runs the decoder over n new tokens of one sequence whose first n_past tokens are in the cache.
    // embeds [n, hidden], positions [n][t, h, w]  ->  final-normed hidden states [n, hidden]
    Tensor forward_text(const Tensor& embeds, std::span<const std::array<int64_t, 3>> positions,
                        KvCache& cache, int64_t n_past);
    // hidden [n, hidden]  ->  logits [n, vocab]
    Tensor logits(const Tensor& hidden);

private:
    Tensor load(WeightSource& weights, const std::string& name, std::vector<int64_t> shape);
    Tensor load_optional_bias(WeightSource& weights, const std::string& name, int64_t n, bool present);

    Backend& backend_;
    ModelConfig config_;
    int64_t n_params_ = 0;

    Tensor patch_w, patch_b;                // [vision_hidden, channels * patch * patch], [vision_hidden]
    std::vector<float> position_embedding;  // [side * side, vision_hidden], resampled per image on the host
    std::vector<VisionLayer> vision_layers;
    Tensor post_ln_w, post_ln_b;    // [vision_hidden]
    Tensor proj_ln_w, proj_ln_b;    // [vision_hidden]
    Tensor proj_fc1_w, proj_fc1_b;  // [4 * vision_hidden, 4 * vision_hidden], [4 * vision_hidden]
    Tensor proj_fc2_w, proj_fc2_b;  // [hidden, 4 * vision_hidden], [hidden]
    Tensor embed_tokens;            // [vocab, hidden]
    Tensor lm_head;                 // [vocab, hidden]; the embedding table when tied
    std::vector<TextLayer> text_layers;
    Tensor final_norm;  // [hidden]
};

}  // namespace folio
