// The layout models' golden fixtures (tests/fixtures/layout, made by tests/fixtures/make_layout_fixtures.py),
// for the CPU and the GPU tests.
#pragma once

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/files/safetensors.h"
#include "engine/layout/layout-output.h"
#include "fixture-reference.h"

namespace folio::testing {

inline std::filesystem::path layout_dir() {
    return testing::fixtures_dir().parent_path() / "layout";
}

struct LayoutFixture {
    // A fixture under `root` (the checked-in ones by default).
    explicit LayoutFixture(const std::string& name, const std::filesystem::path& root = layout_dir())
        : model_dir(root / name),
          reference_dir(root / (name + "-reference")),
          reference(SafetensorsFile::open(reference_dir / "reference.safetensors")) {}

    std::vector<float> f32(const std::string& key) const { return to_f32(reference->get(key)); }
    const std::vector<int64_t>& shape(const std::string& key) const { return reference->get(key).shape; }

    std::filesystem::path model_dir;
    std::filesystem::path reference_dir;
    std::unique_ptr<SafetensorsFile> reference;
};

// The page's values of a [n, ...] output, joined over the pages.
template <typename Get>
inline std::vector<float> joined(const std::vector<LayoutRawOutput>& pages, Get get) {
    std::vector<float> out;
    for (const LayoutRawOutput& page : pages) {
        const std::vector<float>& v = get(page);
        out.insert(out.end(), v.begin(), v.end());
    }
    return out;
}

// V3's outputs against the fixture's, each within relative error 1e-4.
inline void expect_v3_outputs_match(const std::vector<LayoutRawOutput>& pages, const LayoutFixture& fx,
                                    const std::string& name) {
    const double logits = relative_error(joined(
                                             pages, [](auto& p) -> auto& { return p.logits; }),
                                         fx.f32("logits"));
    const double boxes = relative_error(joined(
                                            pages, [](auto& p) -> auto& { return p.pred_boxes; }),
                                        fx.f32("pred_boxes"));
    const double masks = relative_error(joined(
                                            pages, [](auto& p) -> auto& { return p.masks; }),
                                        fx.f32("out_masks"));
    const double order = relative_error(joined(
                                            pages, [](auto& p) -> auto& { return p.order_logits; }),
                                        fx.f32("order_logits"));
    std::cout << name << ": relative error logits " << logits << ", boxes " << boxes << ", masks " << masks
              << ", order logits " << order << "\n";
    EXPECT_LT(logits, 1e-4);
    EXPECT_LT(boxes, 1e-4);
    EXPECT_LT(masks, 1e-4);
    EXPECT_LT(order, 1e-4);
    EXPECT_EQ(pages[0].mask_height, fx.shape("out_masks")[2]);
}

// For each row of want [q, 4] in turn, the nearest row of boxes [q, 4] by L1 distance not taken before.
inline std::vector<size_t> nearest_box_rows(const float* boxes, const float* want, size_t q) {
    std::vector<size_t> rows;
    std::vector<bool> used(q, false);
    for (size_t r = 0; r < q; ++r) {
        size_t best = q;
        float best_d = 0.0f;
        for (size_t m = 0; m < q; ++m) {
            float d = 0.0f;
            for (size_t e = 0; e < 4; ++e) {
                d += std::fabs(boxes[m * 4 + e] - want[r * 4 + e]);
            }
            if (!used[m] && (best == q || d < best_d)) {
                best = m;
                best_d = d;
            }
        }
        used[best] = true;
        rows.push_back(best);
    }
    return rows;
}

// V2 sorts its queries with torch.argsort, which leaves the order of equal keys to the implementation: its
// pages' rows are matched to the reference's, each reference row to the nearest unused row of ours by box,
// and the relative errors of the logits and the boxes taken over the matched rows.
inline std::pair<double, double> matched_errors(const std::vector<LayoutRawOutput>& pages,
                                                const LayoutFixture& fx) {
    const std::vector<float> ref_logits = fx.f32("logits");
    const std::vector<float> ref_boxes = fx.f32("pred_boxes");
    std::vector<float> logits, boxes, expected_logits, expected_boxes;
    for (size_t b = 0; b < pages.size(); ++b) {
        const auto q = static_cast<size_t>(pages[b].n_queries);
        const auto k = static_cast<size_t>(pages[b].n_classes);
        const std::vector<size_t> matched =
            nearest_box_rows(pages[b].pred_boxes.data(), ref_boxes.data() + b * q * 4, q);
        for (size_t r = 0; r < q; ++r) {
            const float* want = ref_boxes.data() + (b * q + r) * 4;
            const size_t best = matched[r];
            for (size_t e = 0; e < 4; ++e) {
                boxes.push_back(pages[b].pred_boxes[best * 4 + e]);
                expected_boxes.push_back(want[e]);
            }
            for (size_t e = 0; e < k; ++e) {
                logits.push_back(pages[b].logits[best * k + e]);
                expected_logits.push_back(ref_logits[(b * q + r) * k + e]);
            }
        }
    }
    return {relative_error(logits, expected_logits), relative_error(boxes, expected_boxes)};
}

}  // namespace folio::testing
