// Position ids of PaddleOCR-VL: 3D multimodal positions for the language model and the bilinear resampling of
// the learned vision position grid (the vision encoder's axial rotary tables are in models/vision-rope).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/models/vision-rope.h"
#include "engine/runtime/model.h"
#include "engine/runtime/rope.h"

namespace folio {

struct ImageGrid;

// Temporal/height/width position of every prompt token, and the offset that decoding adds to the
// sequence index (max position + 1 - n_tokens).
using MropePositions = PromptPositions;

// Text runs count up on all three axes; each run of image (or video) tokens takes the positions of its merged
// grid, offset by the position where it starts, and advances the position by max(grid_h, grid_w) / merge.
MropePositions compute_mrope_positions(std::span<const TokenModality> modality,
                                       std::span<const ImageGrid> grids, int spatial_merge_size);

// Bilinear (align_corners) resampling of the side x side learned position grid to each image's grid:
// for every patch, four table rows and their weights.
struct PositionTaps {
    std::vector<int64_t> rows;   // [n_patches * 4]
    std::vector<float> weights;  // [n_patches * 4]
};
PositionTaps vision_position_taps(std::span<const ImageGrid> grids, int side);

}  // namespace folio
