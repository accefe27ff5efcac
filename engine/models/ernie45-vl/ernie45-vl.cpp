#include "engine/models/ernie45-vl/ernie45-vl.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/runtime/memory-planner.h"

namespace folio {

PromptPositions ernie45_vl_positions(std::span<const TokenModality> modality,
                                     std::span<const ImageGrid> grids, const Ernie45VlVisionConfig& config) {
    PromptPositions out;
    out.n_axes = 3;
    const auto n = static_cast<int64_t>(modality.size());
    const int64_t m = config.spatial_merge_size;
    int64_t next = 0, max_pos = -1;
    size_t item = 0;
    for (int64_t i = 0; i < n;) {
        if (!is_media(modality[static_cast<size_t>(i)])) {
            out.pos.insert(out.pos.end(), 3, next);
            max_pos = std::max(max_pos, next);
            ++next;
            ++i;
            continue;
        }
        if (item >= grids.size()) {
            fail("ERNIE-4.5-VL positions: more image and video runs than the ", grids.size(), " grids");
        }
        const ImageGrid& g = grids[item++];
        const int64_t pairs = g.t == 1 ? 1 : g.t / config.temporal_merge_size;
        const int64_t rows = g.h / m, cols = g.w / m;
        int64_t run = 0;
        while (i + run < n && is_media(modality[static_cast<size_t>(i + run)])) {
            ++run;
        }
        if (run != pairs * rows * cols) {
            fail("ERNIE-4.5-VL positions: a run of ", run, " media tokens for a grid of ", g.t, "x", g.h, "x",
                 g.w, " (", pairs * rows * cols, " tokens)");
        }
        for (int64_t t = 0; t < pairs; ++t) {
            for (int64_t r = 0; r < rows; ++r) {
                for (int64_t c = 0; c < cols; ++c) {
                    out.pos.insert(out.pos.end(), {next + t, next + r, next + c});
                    max_pos = std::max({max_pos, next + t, next + r, next + c});
                }
            }
        }
        next += std::max(rows, cols);
        i += run;
    }
    if (item != grids.size()) {
        fail("ERNIE-4.5-VL positions: ", grids.size(), " grids for ", item, " image and video runs");
    }
    out.delta = max_pos + 1 - n;
    return out;
}

int64_t ernie45_vl_decode_bytes(const Ernie45VlTextConfig& tc, const ModelLoadParams& load) {
    constexpr auto f32 = static_cast<int64_t>(sizeof(float));
    const auto linear = [&](int64_t n_out, int64_t n_in) {
        return quantized_bytes(layer_quantization(load.quantization, n_in, load), n_out, n_in,
                               load.group_size);
    };
    const int64_t d = tc.hidden_size, hd = tc.head_dim;
    const int64_t q_dim = tc.num_attention_heads * hd, kv_dim = tc.num_key_value_heads * hd;
    const int64_t attention = linear(q_dim, d) + 2 * linear(kv_dim, d) + linear(d, q_dim) + 2 * d * f32;
    const int64_t ff = tc.moe_intermediate_size[0];
    const int64_t expert = linear(2 * ff, d) + linear(d, ff);
    const int64_t shared = tc.n_shared_experts > 0
                               ? linear(2 * ff * tc.n_shared_experts, d) + linear(d, ff * tc.n_shared_experts)
                               : 0;
    int64_t bytes = 0;
    for (int layer = 0; layer < tc.num_hidden_layers; ++layer) {
        bytes += attention;
        if (tc.sparse_layers.at(static_cast<size_t>(layer))) {
            bytes += tc.n_experts * d * f32 + shared + tc.n_experts_per_token * expert;
        } else {
            bytes += linear(2 * tc.intermediate_size, d) + linear(d, tc.intermediate_size);
        }
    }
    const int64_t head = tc.tie_word_embeddings && !load.bf16_weights
                             ? tc.vocab_size * d * f32
                             : quantized_bytes(layer_quantization(Quantization::None, d, load), tc.vocab_size,
                                               d, load.group_size);
    return bytes + d * f32 + head;
}

Ernie45Vl::Ernie45Vl(Backend& backend, const Ernie45VlConfig& config, WeightSource& weights,
                     const ModelLoadParams& load, QuantizationObserver* observer)
    : Ernie45Vl(backend, config, WeightLoader(backend, weights, load, observer)) {}

Ernie45Vl::Ernie45Vl(Backend& backend, const Ernie45VlConfig& config, WeightLoader&& weights)
    : backend_(backend),
      config_(config),
      vision_(weights.params().split.rank == 0 ? std::make_unique<Ernie45VlVision>(weights, config)
                                               : nullptr),
      text_(weights, config.text),
      n_weight_bytes_(weights.n_weight_bytes()) {
    weights.quantize_layers();
}

Ernie45VlVision& Ernie45Vl::vision() const {
    if (!vision_) {
        fail("this tensor-parallel rank holds no vision side: rank 0 encodes the images and video");
    }
    return *vision_;
}

ModelLimits Ernie45Vl::limits() const {
    return {config_.text.vocab_size, config_.text.max_position_embeddings, config_.text.eos_token_ids};
}

std::vector<TokenModality> Ernie45Vl::step_modality(const PromptTokens& prompt) const {
    std::vector<TokenModality> out = prompt.modality;
    for (size_t i = 0; i < prompt.ids.size() && i < out.size(); ++i) {
        const int32_t id = prompt.ids[i];
        if (id == config_.image_start_token_id || id == config_.image_end_token_id) {
            out[i] = TokenModality::Image;
        } else if (id == config_.video_start_token_id || id == config_.video_end_token_id) {
            out[i] = TokenModality::Video;
        }
    }
    return out;
}

void Ernie45Vl::check_images(const PreprocessedImages& images) const {
    if (!images.kinds.empty() && images.kinds.size() != images.grids.size()) {
        fail(images.kinds.size(), " kinds for ", images.grids.size(), " images");
    }
    if (!images.levels.empty() && !images.pixel_values.empty()) {
        fail("images given both as ", images.levels.size(), " levels and as ", images.pixel_values.size(),
             " float values");
    }
    const Ernie45VlVisionConfig& vc = config_.vision;
    for (const ImageGrid& g : images.grids) {
        if (g.h % vc.spatial_merge_size != 0 || g.w % vc.spatial_merge_size != 0 ||
            (g.t > 1 && g.t % vc.temporal_merge_size != 0)) {
            fail("ERNIE-4.5-VL: a grid of ", g.t, "x", g.h, "x", g.w, " does not merge by ",
                 vc.spatial_merge_size, " (frames by ", vc.temporal_merge_size, ")");
        }
    }
    const int64_t patch_dim = vc.patch_dim();
    const auto n_given =
        static_cast<int64_t>(images.levels.empty() ? images.pixel_values.size() : images.levels.size());
    if (n_given != images.n_patches() * patch_dim) {
        fail(images.grids.size(), " images of ", images.n_patches(), " patches need ",
             images.n_patches() * patch_dim, " values (", patch_dim, " a patch), got ", n_given);
    }
}

int64_t Ernie45Vl::n_image_tokens(const ImageGrid& grid) const {
    return ernie45_vl_media_tokens(grid, config_.vision);
}

Tensor Ernie45Vl::encode_vision(std::span<const float> pixel_values, std::span<const ImageGrid> grids) {
    int64_t n = 0;
    for (const ImageGrid& g : grids) {
        n += g.n_patches();
    }
    if (static_cast<int64_t>(pixel_values.size()) != n * config_.vision.patch_dim()) {
        fail("ERNIE-4.5-VL vision: ", pixel_values.size(), " pixel values for ", n, " patches of ",
             config_.vision.patch_dim());
    }
    return vision().encode(backend_.upload(pixel_values, {n, config_.vision.patch_dim()}), grids);
}

Tensor Ernie45Vl::encode_images(std::span<const std::span<const float>> values,
                                std::span<const ImageGrid> grids) {
    int64_t n = 0;
    for (const ImageGrid& g : grids) {
        n += g.n_patches();
    }
    const Tensor patches = backend_.upload(values, {n, config_.vision.patch_dim()});
    return vision().resample(vision().encode(patches, grids), grids);
}

Tensor Ernie45Vl::encode_images(std::span<const std::span<const uint8_t>> levels,
                                const ChannelLevels& level_values, std::span<const ImageGrid> grids) {
    int64_t n = 0;
    for (const ImageGrid& g : grids) {
        n += g.n_patches();
    }
    const int64_t pd = config_.vision.patch_dim();
    const Tensor patches =
        backend_.upload_levels(levels, level_values, pd / config_.vision.in_channels, {n, pd});
    return vision().resample(vision().encode(patches, grids), grids);
}

// Images of 4x4 to 16x16 patches through the vision side, whole and with the MLPs and the resampler in small
// chunks, their peaks extrapolated to the patches of n_image_tokens tokens: a token merges m x m patches of
// an image, and of a video twice as many (two frames). Up to a chunk's patches everything grows as the whole
// samples grow; past it, as the chunked ones do.
int64_t Ernie45Vl::image_activation_bytes(int64_t n_image_tokens, bool with_video) {
    const auto peak = [this](int64_t side, bool chunked) {
        set_vision_chunk_rows(chunked ? 16 : kMlpChunkRows, chunked ? 4 : kResampleChunkRows);
        const ImageGrid grid{1, side, side};
        const std::vector<float> pixels(static_cast<size_t>(grid.n_patches() * config_.vision.patch_dim()),
                                        0.0f);
        const std::span<const float> part(pixels);
        backend_.reset_peak();
        const int64_t before = backend_.memory_stats().in_use;
        encode_images(std::span(&part, 1), std::span(&grid, 1));
        return PeakSample{grid.n_patches(), backend_.memory_stats().peak - before};
    };
    const int64_t m = config_.vision.spatial_merge_size;
    const int64_t patches_per_token = m * m * (with_video ? config_.vision.temporal_merge_size : 1);
    const int64_t chunk_patches = std::max(kMlpChunkRows, kResampleChunkRows * patches_per_token);
    const int64_t bytes =
        extrapolate_chunked_peak(peak(4, false), peak(16, false), peak(8, true), peak(16, true),
                                 chunk_patches, n_image_tokens * patches_per_token);
    set_vision_chunk_rows(kMlpChunkRows, kResampleChunkRows);
    return bytes;
}

}  // namespace folio
