// ERNIE-4.5-VL (Ernie4_5_VLMoeForConditionalGeneration): the vision transformer and resampler, and the
// ERNIE-4.5 mixture-of-experts language model, written once against the Backend operations and served
// through the GenerativeModel interface.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/ernie45-vl/text-model.h"
#include "engine/models/ernie45-vl/vision-model.h"
#include "engine/models/linear.h"
#include "engine/runtime/model.h"

namespace folio {

class WeightSource;

// 3D rotary positions of a prompt (the reference's get_rope_index): a text token's position on all three
// axes; an image or video's tokens at (start + pair of frames, start + row, start + column) of their merged
// grid, the text after it from start + the larger of the merged rows and columns.
PromptPositions ernie45_vl_positions(std::span<const TokenModality> modality,
                                     std::span<const ImageGrid> grids, const Ernie45VlVisionConfig& config);

// Bytes of weights one text token's decode step reads at batch 1, as loaded with `load`: every layer's
// attention projections and norms, layer 0's dense MLP, the text router, the shared experts and the
// n_experts_per_token chosen text experts of each sparse layer, the final norm and the LM head (the tied
// embedding table in float32 unless weights are bfloat16).
int64_t ernie45_vl_decode_bytes(const Ernie45VlTextConfig& config, const ModelLoadParams& load);

class Ernie45Vl : public GenerativeModel {
public:
    Ernie45Vl(Backend& backend, const Ernie45VlConfig& config, WeightSource& weights,
              const ModelLoadParams& load = {}, QuantizationObserver* observer = nullptr);

    const Ernie45VlConfig& config() const { return config_; }
    Backend& backend() const override { return backend_; }
    int64_t n_weight_bytes() const override { return n_weight_bytes_; }
    ModelLimits limits() const override;

    // The vision transformer's output in raster order.  pixels [n_patches, patch_dim]  ->  [n_patches, vd]
    Tensor encode_vision(std::span<const float> pixel_values, std::span<const ImageGrid> grids);

    void check_images(const PreprocessedImages& images) const override;
    int64_t n_image_tokens(const ImageGrid& grid) const override;
    Tensor encode_images(std::span<const std::span<const uint8_t>> levels, const ChannelLevels& level_values,
                         std::span<const ImageGrid> grids) override;
    Tensor encode_images(std::span<const std::span<const float>> values,
                         std::span<const ImageGrid> grids) override;
    int64_t image_activation_bytes(int64_t n_image_tokens, bool with_video) override;
    // Rows the vision MLPs and windows and tokens the resampler take at a time (Ernie45VlVision).
    void set_vision_chunk_rows(int64_t mlp_rows, int64_t resample_rows) {
        vision().set_chunk_rows(mlp_rows, resample_rows);
    }

    int n_position_axes() const override { return 3; }
    // Image and video start and end markers go to the vision experts with the features between them.
    std::vector<TokenModality> step_modality(const PromptTokens& prompt) const override;
    PromptPositions prompt_positions(std::span<const TokenModality> modality,
                                     std::span<const ImageGrid> grids) const override {
        return ernie45_vl_positions(modality, grids, config_.vision);
    }

    Tensor embed(std::span<const int32_t> ids) override { return text_.embed(ids); }
    Tensor embed(const Tensor& ids, const Tensor& pending) override { return text_.embed(ids, pending); }
    using GenerativeModel::forward_text;
    Tensor forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) override {
        return text_.forward(std::move(embeds), step, cache);
    }
    Tensor logits(const Tensor& hidden) override { return text_.logits(hidden); }
    KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const override {
        return text_.kv_cache_params(n_blocks, block_size);
    }

private:
    Ernie45Vl(Backend& backend, const Ernie45VlConfig& config, WeightLoader&& weights);
    Ernie45VlVision& vision() const;

    Backend& backend_;
    Ernie45VlConfig config_;
    // Images and video run on rank 0 alone (TensorParallelModel): the other ranks of a split model hold no
    // vision side, and vision() throws there.
    std::unique_ptr<Ernie45VlVision> vision_;
    Ernie45VlTextModel text_;
    int64_t n_weight_bytes_ = 0;
};

}  // namespace folio
