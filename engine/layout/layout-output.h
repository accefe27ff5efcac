// What a layout model (PP-DocLayoutV2, PP-DocLayoutV3) hands over for one page, and the detections made of
// it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace folio {

// The raw outputs of one page, host float32, row-major, as transformers' PPDocLayoutV2ForObjectDetection and
// PPDocLayoutV3ForObjectDetection return them for one batch entry.
struct LayoutRawOutput {
    int n_queries = 0;
    int n_classes = 0;
    // [n_queries, n_classes] class logits.
    std::vector<float> logits;
    // The block kind (a label id of layout-labels.h) of each class, from the model's id2label names
    // (layout_label_kinds); empty where the classes are the 25 labels in their order.
    std::vector<int> class_kinds;
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
    // Where the masks came back as bits instead (mask_min_score above 0, masks then empty): mask_queries, the
    // queries whose best class's sigmoid score reaches mask_min_score, ascending; for each in turn, its
    // plane's pixels whose sigmoid exceeds mask_min_score, row-major, 32 a word (bit b of word w is pixel 32
    // w + b; the plane's last word padded with zeros). Post-processing then runs at mask_min_score only.
    float mask_min_score = 0.0F;
    std::vector<int> mask_queries;
    std::vector<uint32_t> mask_bits;

    bool has_masks() const { return mask_height > 0 || !masks.empty(); }
    bool has_mask_bits() const { return mask_min_score > 0.0F; }
    std::size_t mask_plane() const {
        return static_cast<std::size_t>(mask_height) * static_cast<std::size_t>(mask_width);
    }
    std::size_t mask_plane_words() const { return (mask_plane() + 31) / 32; }
    // Query q's mask as 0 or 1 a pixel [mask_height, mask_width], its sigmoid above threshold: from its
    // logits, or from its bits where threshold is mask_min_score. Throws folio::Error where neither serves.
    std::vector<uint8_t> binary_mask(int query, float threshold) const;
};

// One detected layout block of a page.
struct LayoutDetection {
    // Post-processed: the model's class id. After detect_layout_blocks: the block kind, an id of the 25
    // labels (layout-labels.h), which the class's name gave (LayoutRawOutput::class_kinds).
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
    // The model's query it came from (one query may give several detections, one a class); -1 where unknown.
    int query = -1;

    float width() const { return box[2] - box[0]; }
    float height() const { return box[3] - box[1]; }
};

}  // namespace folio
