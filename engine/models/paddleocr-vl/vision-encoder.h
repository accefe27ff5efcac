// PaddleOCR-VL's SigLIP-style vision encoder: patch embedding, the learned position grid resampled onto each
// image, layers of 2D-rotary attention within each image and a GELU MLP, and the final LayerNorm. Several
// images of any size go through in one packed sequence.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/image/image-preprocess.h"
#include "engine/models/layers.h"
#include "engine/models/linear.h"
#include "engine/models/paddleocr-vl/config.h"
#include "engine/models/vision-rope.h"

namespace folio {

// The q, k and v projections are one layer, their rows one after another.
struct VisionLayer {
    Tensor ln1_w, ln1_b;  // [d]
    Linear qkv_proj;      // [3 d, d]
    Linear o_proj;        // [d, d]
    Tensor ln2_w, ln2_b;  // [d]
    Linear fc1;           // [d_ff, d]
    Linear fc2;           // [d, d_ff]
};

class VisionEncoder {
public:
    // Loads the weights under model.visual.vision_model.
    VisionEncoder(WeightLoader& weights, const VisionConfig& config);

    // Values of one patch, the patch embedding's input.
    int64_t patch_dim() const { return patch_w_.shape[1]; }

    // The encoder over images packed in one sequence, attention within each image. The pixel values come in
    // parts that follow each other (each image's own array, say), uploaded without joining them first.
    // pixels [n_patches, patch_dim] in parts  ->  [n_patches, vision_hidden] (after post_layernorm)
    Tensor encode(std::span<const std::span<const float>> pixels, std::span<const ImageGrid> grids);
    // The same with the pixels as 8-bit levels in parts, each level standing for its channel's value in
    // level_values; only the levels go to the backend's device.
    Tensor encode(std::span<const std::span<const uint8_t>> levels, const ChannelLevels& level_values,
                  std::span<const ImageGrid> grids);
    // Rows each MLP takes at a time (kMlpChunkRows unless the memory plan's measurement sets fewer).
    void set_mlp_chunk_rows(int64_t rows) { mlp_chunk_rows_ = rows; }

private:
    // Patches of the grids, after checking that n_values (of what) fill them.
    int64_t patches_of(std::span<const ImageGrid> grids, int64_t n_values, const char* what) const;
    // The encoder over uploaded patches.  patches [n_patches, patch_dim]  ->  [n_patches, vision_hidden]
    Tensor encode_patches(const Tensor& patches, std::span<const ImageGrid> grids);

    Backend& backend_;
    VisionConfig config_;
    AttentionPrecision precision_;
    Tensor patch_w_, patch_b_;  // [vision_hidden, channels * patch * patch], [vision_hidden]
    Tensor position_grid_;      // [side * side, vision_hidden], resampled onto each image
    std::vector<VisionLayer> layers_;
    Tensor post_ln_w_, post_ln_b_;  // [vision_hidden]
    VisionRope rope_;               // the patches' 2D rotary rows
    int64_t mlp_chunk_rows_ = kMlpChunkRows;
};

}  // namespace folio
