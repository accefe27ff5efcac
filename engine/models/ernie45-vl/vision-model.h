// ERNIE-4.5-VL's vision side: the vision transformer over each image's (or video frame's) 14x14 patches with
// 2D rotary positions, and the variable-resolution resampler that merges each 2x2 window of patches (the
// spatial merge) and each pair of frames (the temporal merge; an image is paired with itself) into one token
// of the language model.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/image/image-preprocess.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/layers.h"
#include "engine/models/linear.h"
#include "engine/models/vision-rope.h"

namespace folio {

// Tokens of the language model an image or video of this grid gives: its 2x2 windows, once per pair of
// frames (an image's single frame counts as a pair).
int64_t ernie45_vl_media_tokens(const ImageGrid& grid, const Ernie45VlVisionConfig& config);

// Windows and tokens the resampler merges at a time: a large image's merged rows are several times its
// features' width, so they are held for this many rows, not for all of them.
constexpr int64_t kResampleChunkRows = 2048;

class Ernie45VlVision {
public:
    Ernie45VlVision(WeightLoader& weights, const Ernie45VlConfig& config);

    // The vision transformer over patches in raster order (frame, row, column of each item, items one after
    // another), attention within each frame.  patches [n_patches, patch_dim]  ->  [n_patches, vision_hidden]
    Tensor encode(const Tensor& patches, std::span<const ImageGrid> grids);
    // The resampler: windows merged, frames paired, projected to the language model and normed.
    // features [n_patches, vision_hidden] (raster order)  ->  [sum of ernie45_vl_media_tokens, hidden]
    Tensor resample(const Tensor& features, std::span<const ImageGrid> grids);
    // Rows each MLP takes at a time, and windows and tokens the resampler takes at a time (kMlpChunkRows
    // and kResampleChunkRows unless the memory plan's measurement sets fewer).
    void set_chunk_rows(int64_t mlp_rows, int64_t resample_rows) {
        mlp_chunk_rows_ = mlp_rows;
        resample_chunk_rows_ = resample_rows;
    }

private:
    struct Block {
        Tensor norm1_w, norm1_b;  // [vd]
        Linear qkv;               // [3 vd, vd]
        Linear proj;              // [vd, vd]
        Tensor norm2_w, norm2_b;  // [vd]
        Linear fc1;               // [v_ff, vd]
        Linear fc2;               // [vd, v_ff]
    };
    struct MergeMlp {
        Linear fc1, fc2;
        Tensor ln_w, ln_b;
    };

    Backend& backend_;
    Ernie45VlConfig config_;
    AttentionPrecision precision_;
    Activation act_;
    int64_t mlp_chunk_rows_ = kMlpChunkRows;
    int64_t resample_chunk_rows_ = kResampleChunkRows;
    Tensor patch_w_;  // [vd, patch_dim]
    std::vector<Block> blocks_;
    Tensor ln_w_, ln_b_;  // [vd]
    MergeMlp spatial_;    // [4 vd] -> [4 vd]
    MergeMlp temporal_;   // [8 vd] -> [4 vd]
    Linear mlp_;          // [hidden, 4 vd]
    Tensor after_norm_;   // [hidden]
    VisionRope rope_;     // the patches' 2D rotary rows, every frame alike
};

}  // namespace folio
