#include "engine/layout/layout-pipeline.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "engine/common/error.h"
#include "engine/layout/layout-labels.h"

namespace folio {
namespace {

std::vector<int> label_ids(std::initializer_list<std::string_view> names) {
    std::vector<int> ids;
    for (const std::string_view name : names) {
        ids.push_back(layout_label_id(name));
    }
    return ids;
}

// PaddleOCR-VL's and PaddleOCR-VL-1.5's layout_merge_bboxes_mode: "large" for these labels, "union" else.
std::vector<LayoutMergeMode> paddleocr_vl_merge_modes() {
    std::vector<LayoutMergeMode> modes(kLayoutLabelCount, LayoutMergeMode::Union);
    for (const int id :
         label_ids({"chart", "display_formula", "doc_title", "inline_formula", "paragraph_title"})) {
        modes[static_cast<std::size_t>(id)] = LayoutMergeMode::Large;
    }
    return modes;
}

// result.py's SKIP_ORDER_LABELS together with the pipelines' markdown_ignore_labels.
std::vector<int> paddleocr_vl_unordered_labels() {
    return label_ids({"figure_title", "vision_footnote", "image", "chart", "table", "header", "header_image",
                      "footer", "footer_image", "footnote", "aside_text", "number"});
}

OverlapFilter paddleocr_vl_overlap_filter(bool use_polygons) {
    OverlapFilter f;
    f.min_side = 4.0F;
    f.max_overlap = 0.7;
    f.keep_pair_label = layout_label_id("image");
    f.drop_label = layout_label_id("reference");
    f.use_polygons = use_polygons;
    return f;
}

}  // namespace

void label_by_kind(std::vector<LayoutDetection>& detections, const std::vector<int>& class_kinds) {
    if (class_kinds.empty()) {
        return;
    }
    for (LayoutDetection& d : detections) {
        if (d.label < 0 || static_cast<std::size_t>(d.label) >= class_kinds.size()) {
            fail("layout: class ", d.label, " outside the model's ", class_kinds.size(), " labels");
        }
        d.label = class_kinds[static_cast<std::size_t>(d.label)];
    }
}

float LayoutRules::lowest_threshold() const {
    float lowest = default_threshold;
    for (const float t : thresholds) {
        lowest = std::min(lowest, t);
    }
    return lowest;
}

LayoutRules paddleocr_vl_layout_rules() {
    LayoutRules r;
    r.thresholds.assign(kLayoutLabelCount, 0.5F);
    for (const int id : label_ids({"display_formula", "doc_title", "inline_formula", "paragraph_title",
                                   "text", "vertical_text"})) {
        r.thresholds[static_cast<std::size_t>(id)] = 0.4F;
    }
    r.thresholds[static_cast<std::size_t>(layout_label_id("seal"))] = 0.45F;
    r.default_threshold = 0.5F;
    r.merge_modes = paddleocr_vl_merge_modes();
    r.drop_without_polygon = false;
    r.overlap = paddleocr_vl_overlap_filter(false);
    r.unordered_labels = paddleocr_vl_unordered_labels();
    return r;
}

LayoutRules paddleocr_vl_1_5_layout_rules() {
    LayoutRules r;
    r.thresholds.assign(kLayoutLabelCount, 0.3F);
    r.default_threshold = 0.3F;
    r.merge_modes = paddleocr_vl_merge_modes();
    r.drop_without_polygon = true;
    r.overlap = paddleocr_vl_overlap_filter(true);
    r.unordered_labels = paddleocr_vl_unordered_labels();
    return r;
}

std::vector<LayoutDetection> apply_layout_rules(
    std::vector<LayoutDetection> detections, int page_width, int page_height, const LayoutRules& rules,
    const std::function<void(std::vector<LayoutDetection>&)>& outline) {
    if (page_width < 1 || page_height < 1) {
        fail("layout rules for a ", page_width, "x", page_height, " page");
    }
    round_layout_boxes(detections);
    detections = filter_layout_scores(std::move(detections), rules.thresholds, rules.default_threshold);
    if (rules.nms) {
        detections = layout_nms(std::move(detections), rules.nms_iou_same, rules.nms_iou_diff);
    }
    if (rules.drop_page_sized_images) {
        detections =
            drop_page_sized_images(std::move(detections), page_width, page_height, layout_label_id("image"));
    }
    detections = merge_layout_boxes(std::move(detections), rules.merge_modes);
    if (outline) {
        outline(detections);
    }
    unclip_layout_boxes(detections, rules.unclip_ratio[0], rules.unclip_ratio[1]);
    detections =
        clip_layout_boxes(std::move(detections), page_width, page_height, rules.drop_without_polygon);
    detections = filter_overlapping_blocks(std::move(detections), rules.overlap);
    number_reading_order(detections, rules.unordered_labels);
    return detections;
}

std::vector<LayoutDetection> detect_layout_blocks(const LayoutRawOutput& raw, int page_width, int page_height,
                                                  const LayoutRules& rules, LayoutInputSize input) {
    const float threshold = rules.lowest_threshold();
    std::vector<LayoutDetection> detections =
        post_process_layout_boxes(raw, page_width, page_height, threshold, input);
    label_by_kind(detections, raw.class_kinds);
    if (raw.has_masks()) {
        return apply_layout_rules(
            std::move(detections), page_width, page_height, rules, [&](std::vector<LayoutDetection>& kept) {
                outline_layout_detections(raw, kept, page_width, page_height, threshold, input);
            });
    }
    // Without masks there are no outlines to require or compare (PaddleX's "rect" shape mode).
    LayoutRules without_outlines = rules;
    without_outlines.drop_without_polygon = false;
    without_outlines.overlap.use_polygons = false;
    return apply_layout_rules(std::move(detections), page_width, page_height, without_outlines);
}

}  // namespace folio
