// Position ids and rotary tables of PaddleOCR-VL: 3D multimodal positions for the language model, axial 2D
// positions for the vision encoder, and the bilinear resampling of the learned vision position grid.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace folio {

struct ImageGrid;

// Temporal/height/width position of every prompt token, and the offset that decoding adds to the
// sequence index (max position + 1 - n_tokens).
struct MropePositions {
    std::vector<std::array<int64_t, 3>> pos;  // [n_tokens][t, h, w]
    int64_t delta = 0;
};

// Text runs count up on all three axes; each run of image tokens takes the positions of its merged grid,
// offset by the position where it starts, and advances the position by max(grid_h, grid_w) / merge.
MropePositions compute_mrope_positions(std::span<const uint8_t> is_image, std::span<const ImageGrid> grids,
                                       int spatial_merge_size);

// 1 / theta^(2i / dim) for i < dim / 2.
std::vector<float> rope_inverse_frequencies(int dim, float theta);

struct RopeTables {
    std::vector<float> cos;  // [n_tokens, head_dim]
    std::vector<float> sin;  // [n_tokens, head_dim]
};

// Vision tables for images packed in raster order: head_dim/4 frequencies over the row index, the same over
// the column index, the pair repeated to fill the head.
RopeTables vision_rope_tables(std::span<const ImageGrid> grids, int head_dim, float theta);

// Bilinear (align_corners) resampling of the side x side learned position grid to each image's grid:
// for every patch, four table rows and their weights.
struct PositionTaps {
    std::vector<std::array<int64_t, 4>> rows;   // [n_patches][4]
    std::vector<std::array<float, 4>> weights;  // [n_patches][4]
};
PositionTaps vision_position_taps(std::span<const ImageGrid> grids, int side);

}  // namespace folio
