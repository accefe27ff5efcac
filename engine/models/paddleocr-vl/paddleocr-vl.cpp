#include "engine/models/paddleocr-vl/paddleocr-vl.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/models/paddleocr-vl/positions.h"
#include "engine/runtime/memory-planner.h"

namespace folio {

namespace {

// The language model's layers, final norm and LM head as stored (the tied table only when it has its own
// copy).
int64_t text_weight_bytes(const ModelConfig& config, const ModelLoadParams& load) {
    const TextConfig& tc = config.text;
    constexpr auto f32 = static_cast<int64_t>(sizeof(float));
    const auto linear = [&](Quantization q, int64_t n_out, int64_t n_in) {
        return quantized_bytes(layer_quantization(q, n_in, load), n_out, n_in, load.group_size);
    };
    const int64_t d = tc.hidden_size, ff = tc.intermediate_size, hd = tc.head_dim;
    const int64_t q_dim = tc.num_attention_heads * hd, kv_dim = tc.num_key_value_heads * hd;
    const Quantization tq = load.quantization;
    int64_t text_layer = linear(tq, q_dim, d) + 2 * linear(tq, kv_dim, d) + linear(tq, d, q_dim) +
                         2 * linear(tq, ff, d) + linear(tq, d, ff) + 2 * d * f32;
    if (tc.use_bias) {
        text_layer += (q_dim + 2 * kv_dim + d + 2 * ff + d) * f32;
    }
    int64_t bytes = tc.num_hidden_layers * text_layer + d * f32;
    if (!tc.tie_word_embeddings || load.bf16_weights) {
        bytes += linear(Quantization::None, tc.vocab_size, d);
    }
    return bytes;
}

}  // namespace

int64_t weight_bytes(const ModelConfig& config, const ModelLoadParams& load) {
    const VisionConfig& vc = config.vision;
    const TextConfig& tc = config.text;
    constexpr auto f32 = static_cast<int64_t>(sizeof(float));
    const Quantization vq = vision_quantization(load);
    const auto linear = [&](Quantization q, int64_t n_out, int64_t n_in) {
        return quantized_bytes(layer_quantization(q, n_in, load), n_out, n_in, load.group_size);
    };
    const int64_t vd = vc.hidden_size, vff = vc.intermediate_size;
    const int64_t side = vc.image_size / vc.patch_size;
    const int64_t patch_dim = vc.patch_dim();
    const int64_t merged = vd * vc.spatial_merge_size * vc.spatial_merge_size;
    int64_t bytes =
        (vd * patch_dim + vd + side * side * vd + 2 * vd) * f32;  // patches, positions, final norm
    bytes += linear(Quantization::None, merged, merged) + linear(Quantization::None, tc.hidden_size, merged) +
             (merged + tc.hidden_size + 2 * vd) * f32;  // projector
    const int64_t vision_layer = 4 * linear(vq, vd, vd) + linear(vq, vff, vd) + linear(vq, vd, vff) +
                                 (4 * vd + 4 * vd + vff + vd) * f32;
    bytes += vc.num_hidden_layers * vision_layer;
    return bytes + text_weight_bytes(config, load) + tc.vocab_size * tc.hidden_size * f32;  // the embedding
}

int64_t decode_weight_bytes(const ModelConfig& config, const ModelLoadParams& load) {
    const TextConfig& tc = config.text;
    const int64_t head = !tc.tie_word_embeddings || load.bf16_weights
                             ? 0
                             : tc.vocab_size * tc.hidden_size * static_cast<int64_t>(sizeof(float));
    return text_weight_bytes(config, load) + head;
}

PaddleOcrVl::PaddleOcrVl(Backend& backend, const ModelConfig& config, WeightSource& weights,
                         const ModelLoadParams& load, QuantizationObserver* observer)
    : PaddleOcrVl(backend, config, WeightLoader(backend, weights, load, observer)) {}

PaddleOcrVl::PaddleOcrVl(Backend& backend, const ModelConfig& config, WeightLoader&& weights)
    : backend_(backend),
      config_(config),
      vision_(weights.params().split.rank == 0 ? std::make_unique<VisionEncoder>(weights, config.vision)
                                               : nullptr),
      projector_(weights.params().split.rank == 0 ? std::make_unique<Projector>(weights, config) : nullptr),
      decoder_(weights, config.text),
      n_params_(weights.n_params()),
      n_weight_bytes_(weights.n_weight_bytes()) {
    weights.quantize_layers();
}

VisionEncoder& PaddleOcrVl::vision() const {
    if (!vision_) {
        fail("this tensor-parallel rank holds no vision encoder: rank 0 encodes the images");
    }
    return *vision_;
}

Projector& PaddleOcrVl::projector() const {
    if (!projector_) {
        fail("this tensor-parallel rank holds no projector: rank 0 encodes the images");
    }
    return *projector_;
}

ModelLimits PaddleOcrVl::limits() const {
    const TextConfig& tc = config_.text;
    return {tc.vocab_size, tc.max_position_embeddings,
            std::vector<int32_t>(tc.eos_token_ids.begin(), tc.eos_token_ids.end())};
}

void PaddleOcrVl::check_images(const PreprocessedImages& images) const {
    if (images.n_videos() > 0) {
        fail("PaddleOCR-VL takes images only, not ", images.n_videos(), " video(s)");
    }
    if (!images.kinds.empty() && images.kinds.size() != images.grids.size()) {
        fail(images.kinds.size(), " kinds for ", images.grids.size(), " images");
    }
    if (!images.levels.empty() && !images.pixel_values.empty()) {
        fail("images given both as ", images.levels.size(), " levels and as ", images.pixel_values.size(),
             " float values");
    }
    const int64_t patch_dim = config_.vision.patch_dim();
    const auto n_given =
        static_cast<int64_t>(images.levels.empty() ? images.pixel_values.size() : images.levels.size());
    if (n_given != images.n_patches() * patch_dim) {
        fail(images.grids.size(), " images of ", images.n_patches(), " patches need ",
             images.n_patches() * patch_dim, " values (", patch_dim, " a patch), got ", n_given);
    }
}

int64_t PaddleOcrVl::n_image_tokens(const ImageGrid& grid) const {
    const int64_t merge = config_.vision.spatial_merge_size;
    return grid.n_patches() / (merge * merge);
}

PromptPositions PaddleOcrVl::prompt_positions(std::span<const TokenModality> modality,
                                              std::span<const ImageGrid> grids) const {
    return compute_mrope_positions(modality, grids, config_.vision.spatial_merge_size);
}

// Images of 8x8 and 16x16 patches through the vision encoder and the projector, whole and with the MLPs in
// chunks of 16 rows, their peaks extrapolated to the patches of n_image_tokens tokens: activations grow
// linearly with the patches past fixed workspaces, the MLPs' only up to a chunk.
int64_t PaddleOcrVl::image_activation_bytes(int64_t n_image_tokens, bool /*with_video*/) {
    constexpr int64_t kSmallChunk = 16;
    const VisionConfig& vc = config_.vision;
    const auto peak = [&](int64_t side, int64_t chunk) {
        vision().set_mlp_chunk_rows(chunk);
        const ImageGrid grid{1, side, side};
        const std::vector<float> pixels(static_cast<size_t>(grid.n_patches() * vc.patch_dim()), 0.0f);
        backend_.reset_peak();
        const int64_t before = backend_.memory_stats().in_use;
        project(encode_vision(pixels, std::span(&grid, 1)), std::span(&grid, 1));
        return PeakSample{grid.n_patches(), backend_.memory_stats().peak - before};
    };
    const int64_t bytes = extrapolate_chunked_peak(
        peak(8, kMlpChunkRows), peak(16, kMlpChunkRows), peak(8, kSmallChunk), peak(16, kSmallChunk),
        kMlpChunkRows, n_image_tokens * vc.spatial_merge_size * vc.spatial_merge_size);
    vision().set_mlp_chunk_rows(kMlpChunkRows);
    return bytes;
}

}  // namespace folio
