// PaddleOCR's rules for layout detections, one function each, as PaddleX applies them after the layout model
// (paddlex/inference/models/layout_analysis/processors.py, LayoutAnalysisProcess.apply, with nms,
// check_containment and unclip_boxes of models/object_detection/processors.py; the PaddleOCR-VL pipeline's
// filter_overlap_boxes in pipelines/paddleocr_vl/uilts.py; block_order from
// pipelines/paddleocr_vl/result.py). docs/layout-rules.md lists the values each PaddleOCR-VL version uses and
// where they come from.
//
// Each rule takes detections in reading order and returns the ones it keeps in the same order. Geometry is
// computed in double; PaddleX mixes float32 and float64 there, which can only matter where a ratio lands on a
// threshold to within float rounding.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "engine/layout/layout-output.h"

namespace folio {

enum class LayoutMergeMode {
    Union,  // keep every box
    Large,  // for label L: drop every box (of any label) that lies at least 90% inside an L box
    Small,  // for label L: drop every box that holds 90% of an L box, unless it lies 90% inside an L box
            // itself
};

// np.round(...).astype(int) of every box coordinate, halves to even, as PaddleX does before its rules; a
// coordinate that is not finite becomes INT64_MIN, as it does on x86, which the page clip then drops.
void round_layout_boxes(std::vector<LayoutDetection>& detections);

// Per-label score thresholds: keeps a detection whose score is above (strictly, as PaddleX)
// thresholds[label]; labels beyond the table use `default_threshold` (PaddleX's dict lookup defaults to 0.5).
std::vector<LayoutDetection> filter_layout_scores(std::vector<LayoutDetection> detections,
                                                  std::span<const float> thresholds,
                                                  float default_threshold = 0.5F);

// PaddleX's IoU for layout NMS, on sizes counted inclusively ((x2 - x1 + 1) * (y2 - y1 + 1)).
double layout_nms_iou(const std::array<float, 4>& a, const std::array<float, 4>& b);

// PaddleX's layout NMS, class-aware: from the highest score down, each chosen box removes the remaining boxes
// with an IoU of at least `iou_same` with it (same label) or `iou_diff` (other labels). Returns the chosen
// indices in the order chosen; equal scores go to the later index first (numpy's argsort reversed).
std::vector<std::size_t> layout_nms_keep(std::span<const LayoutDetection> detections, double iou_same,
                                         double iou_diff);

// The detections layout_nms_keep keeps, in their input order (PaddleX sorts them back by reading order).
std::vector<LayoutDetection> layout_nms(std::vector<LayoutDetection> detections, double iou_same = 0.6,
                                        double iou_diff = 0.98);

// PaddleX's large-image filter: where there are at least two detections, drops `image_label` boxes that cover
// (after clipping to the page) more than 82% of a landscape page (width > height) or 93% of any other page;
// keeps everything if that would drop every detection.
std::vector<LayoutDetection> drop_page_sized_images(std::vector<LayoutDetection> detections, int page_width,
                                                    int page_height, int image_label);

// is_contained: whether at least 90% of `inner`'s area lies inside `outer` (false for an inner box without
// area).
bool layout_box_contained(const std::array<float, 4>& inner, const std::array<float, 4>& outer);

// layout_merge_bboxes_mode per label (check_containment for each Large or Small label over all boxes, the
// drops of every label combined; labels beyond `modes` are Union). `formula_label`, where not negative, is a
// label whose boxes are never taken as contained in a box of another label (PaddleX's "formula" label, which
// the 25 labels of PP-DocLayoutV2 and V3 do not have).
std::vector<LayoutDetection> merge_layout_boxes(std::vector<LayoutDetection> detections,
                                                std::span<const LayoutMergeMode> modes,
                                                int formula_label = -1);

// unclip_boxes: scales each box about its centre by width_ratio and height_ratio, in float32 as PaddleX.
void unclip_layout_boxes(std::vector<LayoutDetection>& detections, double width_ratio, double height_ratio);

// restructured_boxes: clips each box to the page and cuts it to whole pixels (int() of max(0, x1), max(0,
// y1), min(width, x2), min(height, y2)); drops boxes left without width or height, boxes with a coordinate
// that is not finite (numpy makes those INT_MIN, which the same test drops), and, with `drop_without_polygon`
// (masks), boxes whose mask gave no outline.
std::vector<LayoutDetection> clip_layout_boxes(std::vector<LayoutDetection> detections, int page_width,
                                               int page_height, bool drop_without_polygon);

struct OverlapFilter {
    // Boxes narrower or lower than this (in whole pixels) are dropped.
    float min_side = 4.0F;
    // Of two boxes sharing more than this fraction of the smaller one's area, the smaller is dropped (the
    // later one where both have the same area).
    double max_overlap = 0.7;
    // Where a pair of boxes has this label and the other box another label, both stay. Negative: none.
    int keep_pair_label = -1;
    // Boxes of this label are dropped before anything else. Negative: none.
    int drop_label = -1;
    // With outlines (V3): a pair stays where their polygons share no more than max_overlap of the smaller
    // polygon, however much their boxes overlap.
    bool use_polygons = false;
};

// The PaddleOCR-VL pipeline's filter_overlap_boxes, pair by pair in list order: box i too small is dropped
// when its turn comes (so it may still have removed an earlier box), then each later box j still present is
// compared with it.
std::vector<LayoutDetection> filter_overlapping_blocks(std::vector<LayoutDetection> detections,
                                                       const OverlapFilter& filter);

// The pipeline's block_order: 1, 2, ... in list order over the blocks whose label is not in
// `unordered_labels`, 0 for the rest (PaddleOCR's null).
void number_reading_order(std::vector<LayoutDetection>& detections, std::span<const int> unordered_labels);

}  // namespace folio
