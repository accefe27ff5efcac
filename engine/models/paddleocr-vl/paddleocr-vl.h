// PaddleOCR-VL: the SigLIP-style vision encoder, the 2x2-merge projector and the ERNIE-4.5 language model,
// written once against the Backend operations, served through the GenerativeModel interface.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/image/image-preprocess.h"
#include "engine/models/linear.h"
#include "engine/models/paddleocr-vl/config.h"
#include "engine/models/paddleocr-vl/ernie-decoder.h"
#include "engine/models/paddleocr-vl/projector.h"
#include "engine/models/paddleocr-vl/vision-encoder.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/model.h"

namespace folio {

class WeightSource;

// Bytes the weights of a model of this configuration take when loaded with these parameters.
int64_t weight_bytes(const ModelConfig& config, const ModelLoadParams& load);
// Bytes of weights one decode step reads: the language model's layers, final norm and LM head.
int64_t decode_weight_bytes(const ModelConfig& config, const ModelLoadParams& load);

class PaddleOcrVl : public GenerativeModel {
public:
    // The WINT8/WINT4 layers are quantized after every other weight is loaded, a pass the observer hears of.
    PaddleOcrVl(Backend& backend, const ModelConfig& config, WeightSource& weights,
                const ModelLoadParams& load = {}, QuantizationObserver* observer = nullptr);

    const ModelConfig& config() const { return config_; }
    Backend& backend() const override { return backend_; }
    int64_t n_params() const { return n_params_; }
    int64_t n_weight_bytes() const override { return n_weight_bytes_; }
    ModelLimits limits() const override;

    // Vision encoder over images packed in one sequence, attention within each image. The pixel values come
    // in parts that follow each other (each image's own array, say), uploaded without joining them first.
    // pixels [n_patches, channels * patch * patch] in parts  ->  [n_patches, vision_hidden] (after
    // post_layernorm)
    Tensor encode_vision(std::span<const std::span<const float>> pixels, std::span<const ImageGrid> grids) {
        return vision().encode(pixels, grids);
    }
    Tensor encode_vision(std::span<const float> pixel_values, std::span<const ImageGrid> grids) {
        return encode_vision(std::span(&pixel_values, 1), grids);
    }
    // The same with the pixels as 8-bit levels (PreprocessedImages::levels) in parts, each level standing
    // for its channel's value in level_values; only the levels go to the backend's device.
    Tensor encode_vision(std::span<const std::span<const uint8_t>> levels, const ChannelLevels& level_values,
                         std::span<const ImageGrid> grids) {
        return vision().encode(levels, level_values, grids);
    }
    // Projector: LayerNorm, 2x2 merge, Linear-GELU-Linear.  [n_patches, vision_hidden] -> [n_patches / 4,
    // hidden]
    Tensor project(const Tensor& vision_features, std::span<const ImageGrid> grids) {
        return projector().project(vision_features, grids);
    }

    // GenerativeModel: images through the vision encoder and the projector.
    void check_images(const PreprocessedImages& images) const override;
    int64_t n_image_tokens(const ImageGrid& grid) const override;
    Tensor encode_images(std::span<const std::span<const uint8_t>> levels, const ChannelLevels& level_values,
                         std::span<const ImageGrid> grids) override {
        return project(encode_vision(levels, level_values, grids), grids);
    }
    Tensor encode_images(std::span<const std::span<const float>> values,
                         std::span<const ImageGrid> grids) override {
        return project(encode_vision(values, grids), grids);
    }
    int64_t image_activation_bytes(int64_t n_image_tokens, bool with_video) override;
    // 3D mRoPE positions (compute_mrope_positions).
    int n_position_axes() const override { return 3; }
    PromptPositions prompt_positions(std::span<const TokenModality> modality,
                                     std::span<const ImageGrid> grids) const override;

    Tensor embed(std::span<const int32_t> ids) override { return decoder_.embed(ids); }
    // Not checked on the backend: an id outside the vocabulary gives zeros on the GPU.
    Tensor embed(const Tensor& ids, const Tensor& pending) override { return decoder_.embed(ids, pending); }
    using GenerativeModel::forward_text;
    Tensor forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) override {
        return decoder_.forward(std::move(embeds), step, cache);
    }
    Tensor logits(const Tensor& hidden) override { return decoder_.logits(hidden); }
    KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const override {
        return decoder_.kv_cache_params(n_blocks, block_size);
    }

private:
    PaddleOcrVl(Backend& backend, const ModelConfig& config, WeightLoader&& weights);
    VisionEncoder& vision() const;
    Projector& projector() const;

    Backend& backend_;
    ModelConfig config_;
    // Images run on rank 0 alone (TensorParallelModel): the other ranks of a split model hold no vision
    // encoder or projector, and vision() and projector() throw there.
    std::unique_ptr<VisionEncoder> vision_;
    std::unique_ptr<Projector> projector_;
    ErnieDecoder decoder_;
    int64_t n_params_ = 0;
    int64_t n_weight_bytes_ = 0;
};

}  // namespace folio
