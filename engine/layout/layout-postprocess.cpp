#include "engine/layout/layout-postprocess.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "engine/common/error.h"
#include "engine/layout/mask-polygon.h"

namespace folio {
namespace {

// a before b in a descending order with NaN first and ties by index.
bool ranks_higher(float va, int a, float vb, int b) {
    const bool na = std::isnan(va);
    const bool nb = std::isnan(vb);
    if (na || nb) {
        return na && (!nb || a < b);
    }
    return va > vb || (va == vb && a < b);
}

void check_raw(const LayoutRawOutput& raw) {
    if (raw.n_queries < 0 || raw.n_classes < 1) {
        fail("layout output with ", raw.n_queries, " queries and ", raw.n_classes, " classes");
    }
    const auto n = static_cast<std::size_t>(raw.n_queries);
    const auto c = static_cast<std::size_t>(raw.n_classes);
    if (raw.logits.size() != n * c) {
        fail("layout logits hold ", raw.logits.size(), " values, not ", n, " x ", c);
    }
    if (raw.pred_boxes.size() != n * 4) {
        fail("layout pred_boxes hold ", raw.pred_boxes.size(), " values, not ", n, " x 4");
    }
    if (raw.order_logits.size() != n * n) {
        fail("layout order_logits hold ", raw.order_logits.size(), " values, not ", n, " x ", n);
    }
    if (raw.has_masks()) {
        if (raw.mask_height < 1 || raw.mask_width < 1) {
            fail("layout masks of ", raw.mask_width, "x", raw.mask_height);
        }
        const std::size_t plane = raw.mask_plane();
        const std::size_t n_values = raw.has_mask_bits() ? 0 : n * plane;
        if (raw.masks.size() != n_values) {
            fail("layout masks hold ", raw.masks.size(), " values, not ", n_values / plane, " x ",
                 raw.mask_height, " x ", raw.mask_width);
        }
        const std::size_t n_words =
            raw.has_mask_bits() ? raw.mask_queries.size() * raw.mask_plane_words() : 0;
        if (raw.mask_bits.size() != n_words) {
            fail("layout mask bits hold ", raw.mask_bits.size(), " words, not ", n_words);
        }
        for (std::size_t i = 0; i < raw.mask_queries.size(); ++i) {
            const int q = raw.mask_queries[i];
            if (q < 0 || q >= raw.n_queries || (i > 0 && q <= raw.mask_queries[i - 1])) {
                fail("layout mask queries: ", q, " at ", i, " is not an ascending query of ", raw.n_queries);
            }
        }
    }
}

}  // namespace

float layout_sigmoid(float x) {
    return 1.0F / (1.0F + std::exp(-x));
}

std::vector<int> layout_top_k(std::span<const float> values, int k) {
    if (k < 0 || static_cast<std::size_t>(k) > values.size()) {
        fail("top-", k, " of ", values.size(), " values");
    }
    std::vector<int> index(values.size());
    std::iota(index.begin(), index.end(), 0);
    std::partial_sort(index.begin(), index.begin() + k, index.end(), [&](int a, int b) {
        return ranks_higher(values[static_cast<std::size_t>(a)], a, values[static_cast<std::size_t>(b)], b);
    });
    index.resize(static_cast<std::size_t>(k));
    return index;
}

std::vector<int> layout_order_sequence(std::span<const float> order_logits, int n) {
    if (n < 0 || order_logits.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(n)) {
        fail("order logits of ", order_logits.size(), " values for ", n, " queries");
    }
    const auto un = static_cast<std::size_t>(n);
    std::vector<float> scores(order_logits.size());
    std::transform(order_logits.begin(), order_logits.end(), scores.begin(), layout_sigmoid);
    std::vector<float> votes(un);
    for (std::size_t j = 0; j < un; ++j) {
        // triu(1).sum(dim=1): column j above the diagonal; (1 - S^T).tril(-1).sum(dim=1): row j right of it.
        float before = 0.0F;
        float after = 0.0F;
        for (std::size_t i = 0; i < un; ++i) {
            before += i < j ? scores[i * un + j] : 0.0F;
            after += i > j ? 1.0F - scores[j * un + i] : 0.0F;
        }
        votes[j] = before + after;
    }
    std::vector<int> pointers(un);
    std::iota(pointers.begin(), pointers.end(), 0);
    std::stable_sort(pointers.begin(), pointers.end(), [&](int a, int b) {
        const float va = votes[static_cast<std::size_t>(a)];
        const float vb = votes[static_cast<std::size_t>(b)];
        return !std::isnan(va) && (std::isnan(vb) || va < vb);
    });
    std::vector<int> order(un);
    for (std::size_t rank = 0; rank < un; ++rank) {
        order[static_cast<std::size_t>(pointers[rank])] = static_cast<int>(rank);
    }
    return order;
}

namespace {

// Query q's box in page pixels: x1, y1, x2, y2 from its centre and size.
std::array<float, 4> query_box(const LayoutRawOutput& raw, std::size_t q, float page_w, float page_h) {
    const float* b = raw.pred_boxes.data() + q * 4;
    return {(b[0] - 0.5F * b[2]) * page_w, (b[1] - 0.5F * b[3]) * page_h, (b[0] + 0.5F * b[2]) * page_w,
            (b[1] + 0.5F * b[3]) * page_h};
}

}  // namespace

std::vector<LayoutDetection> post_process_layout_boxes(const LayoutRawOutput& raw, int page_width,
                                                       int page_height, float threshold,
                                                       LayoutInputSize input) {
    check_raw(raw);
    if (page_width < 1 || page_height < 1) {
        fail("layout post-processing for a ", page_width, "x", page_height, " page");
    }
    if (raw.has_mask_bits() && threshold != raw.mask_min_score) {
        fail("layout masks came back as bits at ", raw.mask_min_score, "; post-processing at ", threshold,
             " needs them at that threshold");
    }
    if (input.width < 1 || input.height < 1) {
        fail("layout model input of ", input.width, "x", input.height);
    }
    const int n = raw.n_queries;
    const auto c = static_cast<std::size_t>(raw.n_classes);
    const std::vector<int> order = layout_order_sequence(raw.order_logits, n);

    std::vector<float> scores(raw.logits.size());
    std::transform(raw.logits.begin(), raw.logits.end(), scores.begin(), layout_sigmoid);
    const std::vector<int> top = layout_top_k(scores, n);

    const auto page_w = static_cast<float>(page_width);
    const auto page_h = static_cast<float>(page_height);
    std::vector<LayoutDetection> kept;
    for (const int flat : top) {
        const float score = scores[static_cast<std::size_t>(flat)];
        if (!(score >= threshold)) {
            continue;
        }
        const std::size_t q = static_cast<std::size_t>(flat) / c;
        LayoutDetection det;
        det.label = static_cast<int>(static_cast<std::size_t>(flat) % c);
        det.score = score;
        det.box = query_box(raw, q, page_w, page_h);
        det.order = order[q];
        det.query = static_cast<int>(q);
        kept.push_back(det);
    }
    std::stable_sort(kept.begin(), kept.end(),
                     [](const LayoutDetection& a, const LayoutDetection& b) { return a.order < b.order; });
    return kept;
}

void outline_layout_detections(const LayoutRawOutput& raw, std::vector<LayoutDetection>& detections,
                               int page_width, int page_height, float threshold, LayoutInputSize input) {
    if (!raw.has_masks()) {
        return;
    }
    if (page_width < 1 || page_height < 1 || input.width < 1 || input.height < 1) {
        fail("layout outlines for a ", page_width, "x", page_height, " page from a ", input.width, "x",
             input.height, " input");
    }
    const auto page_w = static_cast<float>(page_width);
    const auto page_h = static_cast<float>(page_height);
    // scale_ratio = size / target_size over 4, float32 as the reference computes it from a tensor of sizes.
    const float scale_x = static_cast<float>(input.width) / page_w / 4.0F;
    const float scale_y = static_cast<float>(input.height) / page_h / 4.0F;
    // Beyond the reference: no polygon is fitted on more pixels than four pages (at least 2^20, at most
    // 2^28).
    const int64_t max_pixels = std::clamp<int64_t>(4 * static_cast<int64_t>(page_width) * page_height,
                                                   int64_t{1} << 20, int64_t{1} << 28);
    for (LayoutDetection& d : detections) {
        if (d.query < 0 || d.query >= raw.n_queries) {
            continue;
        }
        const std::vector<uint8_t> mask = raw.binary_mask(d.query, threshold);
        d.polygon = mask_polygon(query_box(raw, static_cast<std::size_t>(d.query), page_w, page_h), mask,
                                 raw.mask_height, raw.mask_width, scale_x, scale_y, max_pixels);
    }
}

std::vector<LayoutDetection> post_process_layout(const LayoutRawOutput& raw, int page_width, int page_height,
                                                 float threshold, LayoutInputSize input) {
    std::vector<LayoutDetection> out =
        post_process_layout_boxes(raw, page_width, page_height, threshold, input);
    outline_layout_detections(raw, out, page_width, page_height, threshold, input);
    return out;
}

}  // namespace folio
