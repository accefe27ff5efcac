#include "engine/models/paddleocr-vl/vision-encoder.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/common/error.h"
#include "engine/models/layers.h"
#include "engine/models/paddleocr-vl/positions.h"

namespace folio {

VisionEncoder::VisionEncoder(WeightLoader& weights, const VisionConfig& config)
    : backend_(weights.backend()),
      config_(config),
      precision_(attention_precision(weights.params())),
      rope_(config.head_dim(), config.rope_theta) {
    const Quantization q = weights.vision_quantization();
    const VisionConfig& vc = config;
    const int64_t vd = vc.hidden_size, vff = vc.intermediate_size;
    const int64_t side = vc.image_size / vc.patch_size;
    const std::string vp = "model.visual.vision_model.";

    patch_w_ = weights.load(vp + "embeddings.patch_embedding.weight",
                            {vd, vc.num_channels, vc.patch_size, vc.patch_size});
    patch_w_.shape = {vd, vc.patch_dim()};
    patch_b_ = weights.load(vp + "embeddings.patch_embedding.bias", {vd});
    position_grid_ = weights.load(vp + "embeddings.position_embedding.weight", {side * side, vd});
    for (int l = 0; l < vc.num_hidden_layers; ++l) {
        const std::string p = vp + "encoder.layers." + std::to_string(l) + ".";
        VisionLayer& L = layers_.emplace_back();
        L.ln1_w = weights.load(p + "layer_norm1.weight", {vd});
        L.ln1_b = weights.load(p + "layer_norm1.bias", {vd});
        L.qkv_proj = weights.load_stacked_linear(
            {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"}, {vd, vd, vd}, vd, true,
            q);
        L.o_proj = weights.load_linear(p + "self_attn.out_proj", vd, vd, true, q);
        L.ln2_w = weights.load(p + "layer_norm2.weight", {vd});
        L.ln2_b = weights.load(p + "layer_norm2.bias", {vd});
        L.fc1 = weights.load_linear(p + "mlp.fc1", vff, vd, true, q);
        L.fc2 = weights.load_linear(p + "mlp.fc2", vd, vff, true, q);
    }
    post_ln_w_ = weights.load(vp + "post_layernorm.weight", {vd});
    post_ln_b_ = weights.load(vp + "post_layernorm.bias", {vd});
}

Tensor VisionEncoder::encode(std::span<const std::span<const float>> pixels,
                             std::span<const ImageGrid> grids) {
    const int64_t n = patches_of(grids, total_size(pixels), "pixel values");
    return encode_patches(backend_.upload(pixels, {n, patch_dim()}), grids);
}

Tensor VisionEncoder::encode(std::span<const std::span<const uint8_t>> levels,
                             const ChannelLevels& level_values, std::span<const ImageGrid> grids) {
    const int64_t n = patches_of(grids, total_size(levels), "levels");
    const int64_t pd = patch_dim();
    if (pd % 3 != 0) {
        fail("vision encoder: patches of ", pd, " values are not three channels");
    }
    return encode_patches(backend_.upload_levels(levels, level_values, pd / 3, {n, pd}), grids);
}

int64_t VisionEncoder::patches_of(std::span<const ImageGrid> grids, int64_t n_values,
                                  const char* what) const {
    int64_t n = 0;
    for (const ImageGrid& g : grids) {
        n += g.n_patches();
    }
    if (n_values != n * patch_dim()) {
        fail("vision encoder: ", n_values, " ", what, " for ", n, " patches of ", patch_dim());
    }
    return n;
}

Tensor VisionEncoder::encode_patches(const Tensor& patches, std::span<const ImageGrid> grids) {
    const VisionConfig& vc = config_;
    const int64_t vd = vc.hidden_size, n_head = vc.num_attention_heads, hd = vd / n_head;
    std::vector<AttentionSegment> segments;
    for (int64_t first = 0; const ImageGrid& g : grids) {
        segments.push_back({first, g.n_patches(), first, g.n_patches(), false, 0});
        first += g.n_patches();
    }
    // Patch embedding (a stride-14 convolution is a linear map of each flattened patch) plus the learned
    // position grid resampled to each image.
    Tensor x = backend_.linear(patches, patch_w_, &patch_b_);  // [n, vd]
    // The learned position grid, resampled onto each image: four bilinear taps a patch.
    const PositionTaps taps = vision_position_taps(grids, static_cast<int>(vc.image_size / vc.patch_size));
    backend_.add_weighted_rows(x, position_grid_, taps.rows, taps.weights);
    const auto [cos, sin] = rope_.rows(backend_, grids);  // [n, hd] each
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (const VisionLayer& L : layers_) {
        layer_norm_attention_add(backend_, x,
                                 {L.ln1_w, L.ln1_b, vc.layer_norm_eps, L.qkv_proj, L.o_proj, n_head}, cos,
                                 sin, segments, scale, precision_);
        layer_norm_mlp_add(backend_, x, L.fc1, L.fc2, L.ln2_w, L.ln2_b, vc.layer_norm_eps,
                           Activation::GeluTanh, mlp_chunk_rows_);
    }
    return backend_.layer_norm(x, post_ln_w_, post_ln_b_, vc.layer_norm_eps);
}

}  // namespace folio
