// Position ids and rotary tables of PaddleOCR-VL: 3D multimodal positions for the language model, axial 2D
// positions for the vision encoder, and the bilinear resampling of the learned vision position grid.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

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

struct RopeTables {
    std::vector<float> cos;  // [n_tokens, head_dim] or by axis index (vision_axis_rope_tables)
    std::vector<float> sin;  // the same
};

// The vision encoder's rotary values by axis index: row k holds cos (and sin) of k times each of head_dim / 4
// frequencies.  ->  cos, sin [n_positions, head_dim / 4]
RopeTables vision_axis_rope_tables(int64_t n_positions, int head_dim, float theta);

// Which rows of the axis tables make each patch's rotary row, for images packed in raster order: a patch at
// row y and column x of its image takes rows y, x, y, x one after another (head_dim / 4 frequencies over the
// row index, the same over the column index, the pair repeated to fill the head). With n_copies above 1 the
// rows follow again n_copies - 1 times, copy c offset by c * copy_offset (the sin half of a table that holds
// cos then sin).  ->  [n_copies, n_patches * 4]
std::vector<int64_t> vision_rope_rows(std::span<const ImageGrid> grids, int n_copies = 1,
                                      int64_t copy_offset = 0);

// Bilinear (align_corners) resampling of the side x side learned position grid to each image's grid:
// for every patch, four table rows and their weights.
struct PositionTaps {
    std::vector<int64_t> rows;   // [n_patches * 4]
    std::vector<float> weights;  // [n_patches * 4]
};
PositionTaps vision_position_taps(std::span<const ImageGrid> grids, int side);

}  // namespace folio
