#include "engine/layout/layout-rules.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/layout/polygon-overlap.h"

namespace folio {
namespace {

std::vector<LayoutDetection> keep_where(std::vector<LayoutDetection> detections,
                                        const std::vector<bool>& keep) {
    std::vector<LayoutDetection> out;
    out.reserve(detections.size());
    for (std::size_t i = 0; i < detections.size(); ++i) {
        if (keep[i]) {
            out.push_back(std::move(detections[i]));
        }
    }
    return out;
}

double box_area(const std::array<float, 4>& b) {
    return static_cast<double>(b[2] - b[0]) * static_cast<double>(b[3] - b[1]);
}

// calculate_overlap_ratio(a, b, "small"): the shared area over the smaller area (0 where that is 0).
double overlap_of_smaller(const std::array<float, 4>& a, const std::array<float, 4>& b) {
    const double w = std::max(0.0, static_cast<double>(std::min(a[2], b[2])) - std::max(a[0], b[0]));
    const double h = std::max(0.0, static_cast<double>(std::min(a[3], b[3])) - std::max(a[1], b[1]));
    const double smaller = std::min(std::fabs(box_area(a)), std::fabs(box_area(b)));
    return smaller == 0.0 ? 0.0 : w * h / smaller;
}

}  // namespace

void round_layout_boxes(std::vector<LayoutDetection>& detections) {
    // astype(int) on x86 turns NaN, infinities and values beyond int64 into INT64_MIN.
    constexpr float kIntegerIndefinite = -9223372036854775808.0F;
    for (LayoutDetection& d : detections) {
        for (float& v : d.box) {
            v = std::isfinite(v) && std::fabs(v) < 9223372036854775808.0F ? std::nearbyint(v)
                                                                          : kIntegerIndefinite;
        }
    }
}

std::vector<LayoutDetection> filter_layout_scores(std::vector<LayoutDetection> detections,
                                                  std::span<const float> thresholds,
                                                  float default_threshold) {
    std::vector<bool> keep(detections.size());
    for (std::size_t i = 0; i < detections.size(); ++i) {
        const int label = detections[i].label;
        const float t = label >= 0 && static_cast<std::size_t>(label) < thresholds.size()
                            ? thresholds[static_cast<std::size_t>(label)]
                            : default_threshold;
        keep[i] = detections[i].score > t;
    }
    return keep_where(std::move(detections), keep);
}

double layout_nms_iou(const std::array<float, 4>& a, const std::array<float, 4>& b) {
    const double x1 = std::max(a[0], b[0]);
    const double y1 = std::max(a[1], b[1]);
    const double x2 = std::min(a[2], b[2]);
    const double y2 = std::min(a[3], b[3]);
    const double inter = std::max(0.0, x2 - x1 + 1.0) * std::max(0.0, y2 - y1 + 1.0);
    const double area_a = (static_cast<double>(a[2]) - a[0] + 1.0) * (static_cast<double>(a[3]) - a[1] + 1.0);
    const double area_b = (static_cast<double>(b[2]) - b[0] + 1.0) * (static_cast<double>(b[3]) - b[1] + 1.0);
    return inter / (area_a + area_b - inter);
}

std::vector<std::size_t> layout_nms_keep(std::span<const LayoutDetection> detections, double iou_same,
                                         double iou_diff) {
    // np.argsort(scores)[::-1]: descending, equal scores with the later index first.
    std::vector<std::size_t> order(detections.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return detections[a].score < detections[b].score; });
    std::reverse(order.begin(), order.end());

    std::vector<std::size_t> chosen;
    while (!order.empty()) {
        const std::size_t current = order.front();
        chosen.push_back(current);
        std::vector<std::size_t> rest;
        for (std::size_t k = 1; k < order.size(); ++k) {
            const LayoutDetection& other = detections[order[k]];
            const double threshold = other.label == detections[current].label ? iou_same : iou_diff;
            // Kept where the IoU is below the threshold; a NaN IoU (a box of NaN) is not below it.
            if (layout_nms_iou(detections[current].box, other.box) < threshold) {
                rest.push_back(order[k]);
            }
        }
        order.swap(rest);
    }
    return chosen;
}

std::vector<LayoutDetection> layout_nms(std::vector<LayoutDetection> detections, double iou_same,
                                        double iou_diff) {
    std::vector<bool> keep(detections.size(), false);
    for (const std::size_t i : layout_nms_keep(detections, iou_same, iou_diff)) {
        keep[i] = true;
    }
    return keep_where(std::move(detections), keep);
}

std::vector<LayoutDetection> drop_page_sized_images(std::vector<LayoutDetection> detections, int page_width,
                                                    int page_height, int image_label) {
    if (detections.size() <= 1) {
        return detections;
    }
    const double limit = page_width > page_height ? 0.82 : 0.93;
    const double page_area = static_cast<double>(page_width) * page_height;
    std::vector<bool> keep(detections.size(), true);
    bool any = false;
    for (std::size_t i = 0; i < detections.size(); ++i) {
        const LayoutDetection& d = detections[i];
        if (d.label == image_label) {
            const double x1 = std::max(0.0, static_cast<double>(d.box[0]));
            const double y1 = std::max(0.0, static_cast<double>(d.box[1]));
            const double x2 = std::min(static_cast<double>(page_width), static_cast<double>(d.box[2]));
            const double y2 = std::min(static_cast<double>(page_height), static_cast<double>(d.box[3]));
            keep[i] = (x2 - x1) * (y2 - y1) <= limit * page_area;
        }
        any = any || keep[i];
    }
    if (!any) {
        return detections;
    }
    return keep_where(std::move(detections), keep);
}

bool layout_box_contained(const std::array<float, 4>& inner, const std::array<float, 4>& outer) {
    const double inner_area = box_area(inner);
    const double w =
        std::max(0.0, static_cast<double>(std::min(inner[2], outer[2])) - std::max(inner[0], outer[0]));
    const double h =
        std::max(0.0, static_cast<double>(std::min(inner[3], outer[3])) - std::max(inner[1], outer[1]));
    const double ratio = inner_area > 0.0 ? w * h / inner_area : 0.0;
    return ratio >= 0.9;
}

std::vector<LayoutDetection> merge_layout_boxes(std::vector<LayoutDetection> detections,
                                                std::span<const LayoutMergeMode> modes, int formula_label) {
    const std::size_t n = detections.size();
    std::vector<bool> keep(n, true);
    for (std::size_t category = 0; category < modes.size(); ++category) {
        const LayoutMergeMode mode = modes[category];
        if (mode == LayoutMergeMode::Union) {
            continue;
        }
        const int label = static_cast<int>(category);
        std::vector<bool> contains_other(n, false);
        std::vector<bool> contained_by_other(n, false);
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                if (i == j) {
                    continue;
                }
                if (formula_label >= 0 && detections[i].label == formula_label &&
                    detections[j].label != formula_label) {
                    continue;
                }
                // Large: i inside a box j of the label; Small: a box i of the label inside j.
                const int of_label =
                    mode == LayoutMergeMode::Large ? detections[j].label : detections[i].label;
                if (of_label == label && layout_box_contained(detections[i].box, detections[j].box)) {
                    contained_by_other[i] = true;
                    contains_other[j] = true;
                }
            }
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (mode == LayoutMergeMode::Large) {
                keep[i] = keep[i] && !contained_by_other[i];
            } else {
                keep[i] = keep[i] && (!contains_other[i] || contained_by_other[i]);
            }
        }
    }
    return keep_where(std::move(detections), keep);
}

void unclip_layout_boxes(std::vector<LayoutDetection>& detections, double width_ratio, double height_ratio) {
    const auto rw = static_cast<float>(width_ratio);
    const auto rh = static_cast<float>(height_ratio);
    for (LayoutDetection& d : detections) {
        const float w = d.box[2] - d.box[0];
        const float h = d.box[3] - d.box[1];
        const float new_w = w * rw;
        const float new_h = h * rh;
        const float cx = d.box[0] + w / 2.0F;
        const float cy = d.box[1] + h / 2.0F;
        d.box = {cx - new_w / 2.0F, cy - new_h / 2.0F, cx + new_w / 2.0F, cy + new_h / 2.0F};
    }
}

std::vector<LayoutDetection> clip_layout_boxes(std::vector<LayoutDetection> detections, int page_width,
                                               int page_height, bool drop_without_polygon) {
    std::vector<bool> keep(detections.size(), false);
    for (std::size_t i = 0; i < detections.size(); ++i) {
        LayoutDetection& d = detections[i];
        if (!std::all_of(d.box.begin(), d.box.end(), [](float v) { return std::isfinite(v); })) {
            continue;
        }
        // int() cuts toward zero; coordinates beyond the page are clamped first, so every value fits.
        const auto x1 = std::trunc(std::max(0.0, static_cast<double>(d.box[0])));
        const auto y1 = std::trunc(std::max(0.0, static_cast<double>(d.box[1])));
        const auto x2 = std::trunc(std::min(static_cast<double>(page_width), static_cast<double>(d.box[2])));
        const auto y2 = std::trunc(std::min(static_cast<double>(page_height), static_cast<double>(d.box[3])));
        if (x2 <= x1 || y2 <= y1) {
            continue;
        }
        if (drop_without_polygon && d.polygon.empty()) {
            continue;
        }
        d.box = {static_cast<float>(x1), static_cast<float>(y1), static_cast<float>(x2),
                 static_cast<float>(y2)};
        keep[i] = true;
    }
    return keep_where(std::move(detections), keep);
}

std::vector<LayoutDetection> filter_overlapping_blocks(std::vector<LayoutDetection> detections,
                                                       const OverlapFilter& filter) {
    if (filter.drop_label >= 0) {
        std::erase_if(detections, [&](const LayoutDetection& d) { return d.label == filter.drop_label; });
    }
    const std::size_t n = detections.size();
    std::vector<bool> dropped(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        const LayoutDetection& a = detections[i];
        if (a.width() < filter.min_side || a.height() < filter.min_side) {
            dropped[i] = true;
        }
        for (std::size_t j = i + 1; j < n; ++j) {
            if (dropped[i] || dropped[j]) {
                continue;
            }
            const LayoutDetection& b = detections[j];
            if (!(overlap_of_smaller(a.box, b.box) > filter.max_overlap)) {
                continue;
            }
            if (filter.use_polygons) {
                const double smaller = std::min(polygon_area(a.polygon), polygon_area(b.polygon));
                // Outlines without area cannot be measured; the boxes decide (shapely would divide by zero).
                if (smaller > 0.0 &&
                    polygon_intersection_area(a.polygon, b.polygon) / smaller < filter.max_overlap) {
                    continue;
                }
            }
            if (filter.keep_pair_label >= 0 && a.label != b.label &&
                (a.label == filter.keep_pair_label || b.label == filter.keep_pair_label)) {
                continue;
            }
            if (std::fabs(box_area(a.box)) >= std::fabs(box_area(b.box))) {
                dropped[j] = true;
            } else {
                dropped[i] = true;
            }
        }
    }
    std::vector<bool> keep(n);
    for (std::size_t i = 0; i < n; ++i) {
        keep[i] = !dropped[i];
    }
    return keep_where(std::move(detections), keep);
}

void number_reading_order(std::vector<LayoutDetection>& detections, std::span<const int> unordered_labels) {
    int next = 1;
    for (LayoutDetection& d : detections) {
        const bool unordered =
            std::find(unordered_labels.begin(), unordered_labels.end(), d.label) != unordered_labels.end();
        d.order = unordered ? 0 : next++;
    }
}

}  // namespace folio
