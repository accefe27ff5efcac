// A Llama-architecture text model (LlamaForCausalLM: DeepSeek-R1-Distill-Llama-8B, Llama 3): the decoder
// with the config's rotary scaling, served through the GenerativeModel interface. It takes no images.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/models/linear.h"
#include "engine/models/llama-decoder.h"
#include "engine/models/llama/config.h"
#include "engine/runtime/model.h"

namespace folio {

class WeightSource;

// Bytes of weights one decode step reads, as loaded with `load`: every layer's projections and norms, the
// final norm and the head (the tied embedding table in float32 unless weights are bfloat16).
int64_t llama_decode_bytes(const LlamaConfig& config, const ModelLoadParams& load);

class Llama : public GenerativeModel {
public:
    // The WINT8/WINT4 layers are quantized after every other weight is loaded, a pass the observer hears of.
    Llama(Backend& backend, const LlamaConfig& config, WeightSource& weights,
          const ModelLoadParams& load = {}, QuantizationObserver* observer = nullptr);

    const LlamaConfig& config() const { return config_; }
    Backend& backend() const override { return backend_; }
    int64_t n_weight_bytes() const override { return n_weight_bytes_; }
    ModelLimits limits() const override;

    // No image encoder: every image is refused.
    void check_images(const PreprocessedImages& images) const override;
    int64_t n_image_tokens(const ImageGrid& grid) const override;
    Tensor encode_images(std::span<const std::span<const uint8_t>> levels, const ChannelLevels& level_values,
                         std::span<const ImageGrid> grids) override;
    Tensor encode_images(std::span<const std::span<const float>> values,
                         std::span<const ImageGrid> grids) override;
    int64_t image_activation_bytes(int64_t /*n_image_tokens*/, bool /*with_video*/) override { return 0; }

    // One position axis: a token's index in the sequence.
    int n_position_axes() const override { return 1; }
    PromptPositions prompt_positions(std::span<const TokenModality> modality,
                                     std::span<const ImageGrid> grids) const override;

    Tensor embed(std::span<const int32_t> ids) override { return decoder_.embed(ids); }
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
    Llama(Backend& backend, const LlamaConfig& config, WeightLoader&& weights);

    Backend& backend_;
    LlamaConfig config_;
    LlamaDecoder decoder_;
    int64_t n_weight_bytes_ = 0;
};

}  // namespace folio
