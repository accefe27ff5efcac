// What a layout model (PP-DocLayoutV2, PP-DocLayoutV3) hands over for one page, and the detections made of
// it.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace folio {

// The raw outputs of one page, host float32, row-major, as transformers' PPDocLayoutV2ForObjectDetection and
// PPDocLayoutV3ForObjectDetection return them for one batch entry.
struct LayoutRawOutput {
    int n_queries = 0;
    int n_classes = 0;
    // [n_queries, n_classes] class logits.
    std::vector<float> logits;
    // [n_queries, 4] boxes as cx, cy, w, h relative to the page (0..1 inside it).
    std::vector<float> pred_boxes;
    // [n_queries, n_queries] reading-order logits: sigmoid(order_logits[i][j]) is the belief that query i
    // comes before query j.
    std::vector<float> order_logits;
    // V3 only: [n_queries, mask_height, mask_width] mask logits at a quarter of the model's input size; empty
    // (and both sizes 0) for V2.
    int mask_height = 0;
    int mask_width = 0;
    std::vector<float> masks;

    bool has_masks() const { return !masks.empty(); }
};

// One detected layout block of a page.
struct LayoutDetection {
    // Class id, an index into the model's labels (layout-labels.h).
    int label = 0;
    float score = 0.0F;
    // x1, y1, x2, y2 in page pixels.
    std::array<float, 4> box{};
    // V3: the block's outline in page pixels, in OpenCV's contour order (from the top-left corner down the
    // left side first, counter-clockwise as the page is seen); empty for V2, and where the mask gave no
    // outline at all (transformers returns None there).
    std::vector<std::array<float, 2>> polygon;
    // After post-processing: the query's rank in the model's reading order (0 first), as transformers'
    // order_seq. After the pipeline's rules: PaddleOCR's block_order, 1, 2, ... over the blocks that take
    // part in the reading order, 0 for those that do not (PaddleOCR writes null).
    int order = 0;

    float width() const { return box[2] - box[0]; }
    float height() const { return box[3] - box[1]; }
};

}  // namespace folio
