// The axial 2D rotary embedding of the vision transformers (PaddleOCR-VL's and ERNIE-4.5-VL's): a patch's
// rotary row holds head_dim / 4 frequencies turned by its row, the same turned by its column, and the pair
// again to fill the head, in rotate-half form.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"

namespace folio {

struct ImageGrid;

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

// The rotary rows of packed images' patches, gathered on the backend from axis tables kept there (cos rows
// then sin rows) for the longest side seen so far: their rows do not depend on how many there are.
class VisionRope {
public:
    VisionRope(int64_t head_dim, float theta) : head_dim_(head_dim), theta_(theta) {}

    // cos, sin [n_patches, head_dim] for the grids' patches in raster order (every frame alike).
    std::pair<Tensor, Tensor> rows(Backend& backend, std::span<const ImageGrid> grids);

private:
    int64_t head_dim_ = 0;
    float theta_ = 0.0f;
    Tensor axis_;  // [2 side_, head_dim / 4]
    int64_t side_ = 0;
};

}  // namespace folio
