// From a layout model's raw outputs to a page's blocks as the PaddleOCR-VL pipelines produce them: the
// transformers post-processing (layout-postprocess.h), then PaddleX's rules (layout-rules.h) with the values
// PaddleOCR-VL (0.9B, PP-DocLayoutV2) and PaddleOCR-VL-1.5 (PP-DocLayoutV3) use; docs/layout-rules.md says
// where each value comes from.
#pragma once

#include <array>
#include <functional>
#include <vector>

#include "engine/layout/layout-output.h"
#include "engine/layout/layout-postprocess.h"
#include "engine/layout/layout-rules.h"

namespace folio {

struct LayoutRules {
    // Score thresholds by label id (a label beyond the table: default_threshold).
    std::vector<float> thresholds;
    float default_threshold = 0.5F;
    bool nms = true;
    double nms_iou_same = 0.6;
    double nms_iou_diff = 0.98;
    // PaddleX's large-image filter, on the label named "image".
    bool drop_page_sized_images = true;
    // layout_merge_bboxes_mode by label id (missing: Union).
    std::vector<LayoutMergeMode> merge_modes;
    // layout_unclip_ratio, width then height.
    std::array<double, 2> unclip_ratio = {1.0, 1.0};
    // With masks: blocks whose mask gave no outline are dropped, as PaddleX drops a None polygon.
    bool drop_without_polygon = false;
    OverlapFilter overlap;
    // Labels without a place in block_order.
    std::vector<int> unordered_labels;

    // The lowest threshold of any label: the threshold the post-processing keeps candidates at.
    float lowest_threshold() const;
};

// PaddleOCR-VL (0.9B) with PP-DocLayoutV2.
LayoutRules paddleocr_vl_layout_rules();

// PaddleOCR-VL-1.5 with PP-DocLayoutV3.
LayoutRules paddleocr_vl_1_5_layout_rules();

// Each detection's model class as its block kind (LayoutRawOutput::class_kinds; empty: left as they are), so
// that the rules, written for the 25 labels, see kinds. Throws folio::Error for a class beyond the list.
void label_by_kind(std::vector<LayoutDetection>& detections, const std::vector<int>& class_kinds);

// The rules in PaddleX's order on post-processed detections (in reading order): round the boxes, per-label
// thresholds, NMS, the large-image filter, merge modes, unclip, clip to the page, then the pipeline's overlap
// filter and block_order. The list that comes out is in reading order; LayoutDetection::order becomes the
// block_order of that list (1, 2, ... skipping unordered labels, which get 0), so that blocks removed by any
// rule leave no gap. `outline`, where given, adds the polygons once NMS and the merge modes have dropped what
// they drop (the rules after them are the first to read polygons).
std::vector<LayoutDetection> apply_layout_rules(
    std::vector<LayoutDetection> detections, int page_width, int page_height, const LayoutRules& rules,
    const std::function<void(std::vector<LayoutDetection>&)>& outline = {});

// post_process_layout at rules.lowest_threshold(), each detection's class then taken as its block kind
// (raw.class_kinds), then apply_layout_rules, the polygons made only for the detections that NMS and the
// merge modes keep (the same blocks, outlines and order): a page's final blocks, labelled by kind. Raw
// outputs without masks are taken without outlines whatever the rules say (no block is dropped or kept for
// its outline), as PaddleX does for a model without masks.
std::vector<LayoutDetection> detect_layout_blocks(const LayoutRawOutput& raw, int page_width, int page_height,
                                                  const LayoutRules& rules, LayoutInputSize input = {});

}  // namespace folio
