// transformers' post-processing of PP-DocLayoutV2/V3 outputs on hand-built raw outputs: sigmoid and top-k,
// the reading-order votes, boxes in page pixels, threshold and sort, V3 polygons from masks; and raw outputs
// that are broken (NaN, infinities, empty or outside boxes, no queries, sizes that disagree).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/common/error.h"
#include "engine/layout/layout-output.h"
#include "engine/layout/layout-postprocess.h"
#include "engine/layout/mask-polygon.h"

namespace folio {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The logit whose sigmoid is p.
float logit(double p) {
    return static_cast<float>(std::log(p / (1.0 - p)));
}

// A raw output of n queries and c classes: every logit `fill`, boxes all (0.5, 0.5, 0.1, 0.1), order logits
// 0.
LayoutRawOutput raw_output(int n, int c, float fill = -10.0F) {
    LayoutRawOutput raw;
    raw.n_queries = n;
    raw.n_classes = c;
    raw.logits.assign(static_cast<std::size_t>(n * c), fill);
    for (int q = 0; q < n; ++q) {
        raw.pred_boxes.insert(raw.pred_boxes.end(), {0.5F, 0.5F, 0.1F, 0.1F});
    }
    raw.order_logits.assign(static_cast<std::size_t>(n * n), 0.0F);
    return raw;
}

void set_box(LayoutRawOutput& raw, int q, float cx, float cy, float w, float h) {
    const auto i = static_cast<std::size_t>(q) * 4;
    raw.pred_boxes[i] = cx;
    raw.pred_boxes[i + 1] = cy;
    raw.pred_boxes[i + 2] = w;
    raw.pred_boxes[i + 3] = h;
}

// Order logits for n queries that put them in `sequence` (first to last): above the diagonal, i before j gets
// +4 where i comes first and -4 otherwise; below the diagonal NaN, which the votes never read.
std::vector<float> order_logits_for(const std::vector<int>& sequence) {
    const std::size_t n = sequence.size();
    std::vector<int> rank(n);
    for (std::size_t r = 0; r < n; ++r) {
        rank[static_cast<std::size_t>(sequence[r])] = static_cast<int>(r);
    }
    std::vector<float> l(n * n, kNaN);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) {
            l[i * n + j] = rank[i] < rank[j] ? 4.0F : -4.0F;
        }
    }
    return l;
}

TEST(LayoutPostprocess, SigmoidOfSpecialValues) {
    EXPECT_EQ(layout_sigmoid(0.0F), 0.5F);
    EXPECT_EQ(layout_sigmoid(kInf), 1.0F);
    EXPECT_EQ(layout_sigmoid(-kInf), 0.0F);
    EXPECT_TRUE(std::isnan(layout_sigmoid(kNaN)));
    EXPECT_NEAR(layout_sigmoid(logit(0.75)), 0.75F, 1e-6);
}

TEST(LayoutPostprocess, TopKPutsNaNFirstAndEqualValuesInIndexOrder) {
    const std::vector<float> v = {0.1F, 0.9F, 0.5F, 0.9F, kNaN, 0.5F};
    EXPECT_EQ(layout_top_k(v, 4), (std::vector<int>{4, 1, 3, 2}));
    EXPECT_EQ(layout_top_k(v, 6), (std::vector<int>{4, 1, 3, 2, 5, 0}));
    EXPECT_TRUE(layout_top_k(v, 0).empty());
    EXPECT_THROW(layout_top_k(v, 7), Error);
    EXPECT_THROW(layout_top_k(v, -1), Error);
}

// Three queries meant to be read 2, 0, 1. Only the entries above the diagonal count:
//   S[0][1] = 0.75 (0 before 1), S[0][2] = 0.25 (0 after 2), S[1][2] = 0.1 (1 after 2).
//   vote[0] = (1 - S[0][1]) + (1 - S[0][2]) = 0.25 + 0.75 = 1.0
//   vote[1] = S[0][1] + (1 - S[1][2])       = 0.75 + 0.9  = 1.65
//   vote[2] = S[0][2] + S[1][2]             = 0.25 + 0.1  = 0.35
// Ascending votes: 2, 0, 1, so the ranks are query 0 -> 1, query 1 -> 2, query 2 -> 0.
TEST(LayoutPostprocess, OrderSequenceOfAThreeByThreeExample) {
    const std::vector<float> l = {
        kNaN,  logit(0.75), logit(0.25),  // row 0: the diagonal and below never count
        50.0F, -kInf,       logit(0.1),   //
        kNaN,  kInf,        3.0F,         //
    };
    EXPECT_EQ(layout_order_sequence(l, 3), (std::vector<int>{1, 2, 0}));
}

TEST(LayoutPostprocess, OrderSequenceKeepsQueryOrderOnEqualVotes) {
    // All 0.5: vote[j] = 0.5 j + 0.5 (n - 1 - j) = 1.5 for every j of four.
    EXPECT_EQ(layout_order_sequence(std::vector<float>(16, 0.0F), 4), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(layout_order_sequence(order_logits_for({3, 1, 0, 2}), 4), (std::vector<int>{2, 1, 3, 0}));
    EXPECT_TRUE(layout_order_sequence({}, 0).empty());
    EXPECT_THROW(layout_order_sequence(std::vector<float>(5, 0.0F), 2), Error);
}

TEST(LayoutPostprocess, OrderSequencePutsNaNVotesLast) {
    // l[0][1] is read by query 1's vote (as 0 before 1) and by query 0's (as 1 - it): NaN there makes both
    // votes NaN, so query 2 comes first and the NaN votes follow in query order.
    std::vector<float> l = order_logits_for({0, 1, 2});
    l[1] = kNaN;
    EXPECT_EQ(layout_order_sequence(l, 3), (std::vector<int>{1, 2, 0}));
}

// Three queries, two classes, a 200x100 page. Scores: q0 (0.9, 0.2), q1 (0.1, 0.8), q2 (0.7, 0.65). The top
// three of the six are q0/c0 0.9, q1/c1 0.8, q2/c0 0.7; q2/c1 0.65 is fourth and never a candidate, though
// above the threshold. Reading order q1, q2, q0.
TEST(LayoutPostprocess, TopQueriesThresholdBoxesAndReadingOrder) {
    LayoutRawOutput raw = raw_output(3, 2);
    raw.logits = {logit(0.9), logit(0.2), logit(0.1), logit(0.8), logit(0.7), logit(0.65)};
    set_box(raw, 0, 0.5F, 0.5F, 0.2F, 0.4F);    // x 80..120 of 200, y 30..70 of 100
    set_box(raw, 1, 0.25F, 0.25F, 0.5F, 0.5F);  // x 0..100, y 0..50
    set_box(raw, 2, 0.75F, 0.75F, 0.5F, 0.5F);  // x 100..200, y 50..100
    raw.order_logits = order_logits_for({1, 2, 0});

    const std::vector<LayoutDetection> out = post_process_layout(raw, 200, 100, 0.6F);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].label, 1);
    EXPECT_NEAR(out[0].score, 0.8F, 1e-6);
    EXPECT_EQ(out[0].order, 0);
    EXPECT_FLOAT_EQ(out[0].box[0], 0.0F);
    EXPECT_FLOAT_EQ(out[0].box[1], 0.0F);
    EXPECT_FLOAT_EQ(out[0].box[2], 100.0F);
    EXPECT_FLOAT_EQ(out[0].box[3], 50.0F);
    EXPECT_EQ(out[1].label, 0);
    EXPECT_NEAR(out[1].score, 0.7F, 1e-6);
    EXPECT_EQ(out[1].order, 1);
    EXPECT_FLOAT_EQ(out[1].box[0], 100.0F);
    EXPECT_FLOAT_EQ(out[1].box[3], 100.0F);
    EXPECT_EQ(out[2].label, 0);
    EXPECT_NEAR(out[2].score, 0.9F, 1e-6);
    EXPECT_EQ(out[2].order, 2);
    EXPECT_FLOAT_EQ(out[2].box[0], 80.0F);
    EXPECT_FLOAT_EQ(out[2].box[1], 30.0F);
    EXPECT_FLOAT_EQ(out[2].box[2], 120.0F);
    EXPECT_FLOAT_EQ(out[2].box[3], 70.0F);
    for (const LayoutDetection& d : out) {
        EXPECT_TRUE(d.polygon.empty());
    }

    EXPECT_EQ(post_process_layout(raw, 200, 100, 0.75F).size(), 2u);
    EXPECT_EQ(post_process_layout(raw, 200, 100, 0.85F).size(), 1u);
    EXPECT_TRUE(post_process_layout(raw, 200, 100, 0.95F).empty());
    // A score equal to the threshold passes (>=).
    EXPECT_EQ(post_process_layout(raw, 200, 100, layout_sigmoid(logit(0.8))).size(), 2u);
}

TEST(LayoutPostprocess, OneQueryWinningTwoClassesKeepsBothInScoreOrder) {
    LayoutRawOutput raw = raw_output(3, 3);
    raw.logits[1] = logit(0.7);  // q0/c1
    raw.logits[2] = logit(0.9);  // q0/c2
    raw.logits[3] = logit(0.8);  // q1/c0
    raw.order_logits = order_logits_for({0, 1, 2});
    const std::vector<LayoutDetection> out = post_process_layout(raw, 100, 100, 0.5F);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].label, 2);
    EXPECT_EQ(out[0].order, 0);
    EXPECT_EQ(out[1].label, 1);
    EXPECT_EQ(out[1].order, 0);
    EXPECT_EQ(out[2].label, 0);
    EXPECT_EQ(out[2].order, 1);
}

// V3 on an 800x800 page with an 800x800 input: the mask has a quarter of the page's resolution (scale 1/4).
// The box is x, y 300..500 (mask 75..125); the mask is on at 80..120 in both directions, so the crop (50x50)
// has it at 5..45. Resized (nearest) to the box's 200x200, each mask pixel becomes 4x4: on at 20..180, an
// outline through the pixel centres 20 and 179, moved to the box's corner: 320 and 479.
LayoutRawOutput square_mask_output() {
    LayoutRawOutput raw = raw_output(1, 1, 5.0F);
    set_box(raw, 0, 0.5F, 0.5F, 0.25F, 0.25F);
    raw.mask_height = 200;
    raw.mask_width = 200;
    raw.masks.assign(200 * 200, -8.0F);
    for (int y = 80; y < 120; ++y) {
        for (int x = 80; x < 120; ++x) {
            raw.masks[static_cast<std::size_t>(y * 200 + x)] = 8.0F;
        }
    }
    return raw;
}

TEST(LayoutPostprocess, SquareMaskGivesAFourPointPolygon) {
    const std::vector<LayoutDetection> out = post_process_layout(square_mask_output(), 800, 800, 0.5F);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FLOAT_EQ(out[0].box[0], 300.0F);
    EXPECT_FLOAT_EQ(out[0].box[2], 500.0F);
    const PolygonPoints expected = {{320, 320}, {320, 479}, {479, 479}, {479, 320}};
    EXPECT_EQ(out[0].polygon, expected);
}

TEST(LayoutPostprocess, MaskThresholdIsTheScoreThreshold) {
    // Mask logits of -1 (sigmoid 0.27) around the square: on at a threshold of 0.25, so the whole crop is on
    // and the outline is the box's own 200x200 (300..499); off at 0.5.
    LayoutRawOutput raw = square_mask_output();
    for (float& v : raw.masks) {
        v = v < 0.0F ? -1.0F : v;
    }
    const std::vector<LayoutDetection> low = post_process_layout(raw, 800, 800, 0.25F);
    ASSERT_EQ(low.size(), 1u);
    EXPECT_EQ(low[0].polygon, (PolygonPoints{{300, 300}, {300, 499}, {499, 499}, {499, 300}}));
    const std::vector<LayoutDetection> high = post_process_layout(raw, 800, 800, 0.5F);
    ASSERT_EQ(high.size(), 1u);
    EXPECT_EQ(high[0].polygon, (PolygonPoints{{320, 320}, {320, 479}, {479, 479}, {479, 320}}));
}

// The square mask as bits at 0.5, as PpDocLayout brings masks back for a threshold.
LayoutRawOutput square_mask_bits() {
    LayoutRawOutput raw = square_mask_output();
    raw.mask_min_score = 0.5F;
    raw.mask_queries = {0};
    raw.mask_bits.assign(raw.mask_plane_words(), 0U);
    for (std::size_t p = 0; p < raw.mask_plane(); ++p) {
        raw.mask_bits[p / 32] |= raw.masks[p] > 0.0F ? 1U << (p % 32) : 0U;
    }
    raw.masks.clear();
    return raw;
}

TEST(LayoutPostprocess, MaskBitsGiveTheOutlineOfTheirValues) {
    const std::vector<LayoutDetection> out = post_process_layout(square_mask_bits(), 800, 800, 0.5F);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].polygon, post_process_layout(square_mask_output(), 800, 800, 0.5F)[0].polygon);
}

TEST(LayoutPostprocess, MaskBitsThatDisagreeAreRefused) {
    // Another threshold than the bits'.
    EXPECT_THROW(post_process_layout(square_mask_bits(), 800, 800, 0.4F), Error);
    LayoutRawOutput raw = square_mask_bits();
    raw.mask_bits.pop_back();
    EXPECT_THROW(post_process_layout(raw, 800, 800, 0.5F), Error);
    raw = square_mask_bits();
    raw.mask_queries = {1};  // outside the one query
    EXPECT_THROW(post_process_layout(raw, 800, 800, 0.5F), Error);
    raw = square_mask_bits();
    raw.masks.assign(raw.mask_plane(), 0.0F);  // values beside bits
    EXPECT_THROW(post_process_layout(raw, 800, 800, 0.5F), Error);
    // The detection's query has no bits.
    raw = square_mask_bits();
    raw.mask_queries.clear();
    raw.mask_bits.clear();
    EXPECT_THROW(post_process_layout(raw, 800, 800, 0.5F), Error);
}

TEST(MaskPolygon, CustomVerticesKeepConvexCornersAndMoveFortyFiveDegreeOnes) {
    const std::vector<std::array<int32_t, 2>> square = {{0, 0}, {0, 10}, {10, 10}, {10, 0}};
    EXPECT_EQ(extract_custom_vertices(square),
              (std::vector<std::array<double, 2>>{{0, 0}, {0, 10}, {10, 10}, {10, 0}}));

    // An L in contour order: (5,5) is the concave corner (its turn has a positive cross product) and goes.
    const std::vector<std::array<int32_t, 2>> ell = {{0, 0}, {0, 10}, {10, 10}, {10, 5}, {5, 5}, {5, 0}};
    EXPECT_EQ(extract_custom_vertices(ell),
              (std::vector<std::array<double, 2>>{{0, 0}, {0, 10}, {10, 10}, {10, 5}, {5, 0}}));

    // A right isosceles triangle: the 45-degree corners move along their bisector by (10 + 10 sqrt 2) / 2.
    // At (0,0) the edges point along (1,1)/sqrt2 and (0,1); their bisector is (0.38268, 0.92388), so the
    // corner moves to 12.0711 * that = (4.6194, 11.1522). At (10,10), by symmetry, to (-1.1522, 5.3806).
    const std::vector<std::array<int32_t, 2>> triangle = {{0, 0}, {0, 10}, {10, 10}};
    const std::vector<std::array<double, 2>> moved = extract_custom_vertices(triangle);
    ASSERT_EQ(moved.size(), 3u);
    EXPECT_NEAR(moved[0][0], 4.6194, 1e-4);
    EXPECT_NEAR(moved[0][1], 11.1522, 1e-4);
    EXPECT_EQ(moved[1], (std::array<double, 2>{0, 10}));
    EXPECT_NEAR(moved[2][0], -1.1522, 1e-4);
    EXPECT_NEAR(moved[2][1], 5.3806, 1e-4);

    // One or two points have no turn at all.
    EXPECT_TRUE(extract_custom_vertices(std::vector<std::array<int32_t, 2>>{{3, 4}}).empty());
    EXPECT_TRUE(extract_custom_vertices(std::vector<std::array<int32_t, 2>>{{3, 4}, {9, 4}}).empty());
}

TEST(MaskPolygon, LShapedMaskLosesItsConcaveCorner) {
    // On at x 2..7 for y 2..17 and at x 2..17 for y 12..17: the convex corners at pixel centres are (2,2),
    // (2,17), (17,17), (17,12) and (7,2); the inner corner near (7,12) is concave and dropped.
    std::vector<uint8_t> mask(20 * 20, 0);
    for (int y = 2; y < 18; ++y) {
        for (int x = 2; x < 18; ++x) {
            mask[static_cast<std::size_t>(y * 20 + x)] = (x < 8 || y >= 12) ? 1 : 0;
        }
    }
    const auto outline = mask_outline(mask, 20, 20);
    ASSERT_TRUE(outline.has_value());
    EXPECT_EQ(*outline, (std::vector<std::array<double, 2>>{{2, 2}, {2, 17}, {17, 17}, {17, 12}, {7, 2}}));
    EXPECT_FALSE(mask_outline(std::vector<uint8_t>(20 * 20, 0), 20, 20).has_value());
    EXPECT_THROW(mask_outline(mask, 10, 20), Error);
}

TEST(MaskPolygon, RectangleFallbacksAndNoOutline) {
    const PolygonPoints rect = {{10, 20}, {20, 20}, {20, 30}, {10, 30}};
    std::vector<uint8_t> mask(40 * 40, 0);
    // All zero in the crop: the rectangle.
    EXPECT_EQ(mask_polygon({10.5F, 20.9F, 20.2F, 30.7F}, mask, 40, 40, 1.0F, 1.0F, 1 << 20), rect);
    // A one-pixel line: its outline has two points, none with a turn, fewer than four: the rectangle.
    for (int x = 12; x < 18; ++x) {
        mask[static_cast<std::size_t>(25 * 40 + x)] = 1;
    }
    EXPECT_EQ(mask_polygon({10, 20, 20, 30}, mask, 40, 40, 1.0F, 1.0F, 1 << 20), rect);
    // Boxes without width or height: their (degenerate) rectangle.
    EXPECT_EQ(mask_polygon({10, 20, 10, 30}, mask, 40, 40, 1.0F, 1.0F, 1 << 20),
              (PolygonPoints{{10, 20}, {10, 20}, {10, 30}, {10, 30}}));
    EXPECT_EQ(mask_polygon({20, 20, 10, 30}, mask, 40, 40, 1.0F, 1.0F, 1 << 20),
              (PolygonPoints{{20, 20}, {10, 20}, {10, 30}, {20, 30}}));
    // Outside the mask: an empty crop, the rectangle.
    EXPECT_EQ(mask_polygon({50, 50, 60, 60}, mask, 40, 40, 1.0F, 1.0F, 1 << 20),
              (PolygonPoints{{50, 50}, {60, 50}, {60, 60}, {50, 60}}));
    // More pixels than allowed: the rectangle although the mask has an outline there.
    EXPECT_EQ(mask_polygon({10, 20, 20, 30}, mask, 40, 40, 1.0F, 1.0F, 99), rect);

    // A crop of 10x10 at scale 2 resized to the 5x5 box samples even pixels only; a lone odd pixel vanishes
    // and leaves no contour at all: no polygon (the reference's None).
    std::vector<uint8_t> lone(40 * 40, 0);
    lone[1 * 40 + 1] = 1;
    EXPECT_TRUE(mask_polygon({0, 0, 5, 5}, lone, 40, 40, 2.0F, 2.0F, 1 << 20).empty());
    lone[2 * 40 + 2] = 1;
    EXPECT_FALSE(mask_polygon({0, 0, 5, 5}, lone, 40, 40, 2.0F, 2.0F, 1 << 20).empty());

    // Coordinates that are not finite or do not fit: no polygon.
    EXPECT_TRUE(mask_polygon({kNaN, 0, 5, 5}, mask, 40, 40, 1.0F, 1.0F, 1 << 20).empty());
    EXPECT_TRUE(mask_polygon({0, 0, 1e12F, 5}, mask, 40, 40, 1.0F, 1.0F, 1 << 20).empty());
}

TEST(LayoutPostprocess, CropRoundsHalvesToEven) {
    // An 80x80 page and input: scale (80 / 80) / 4 = 0.25, a 20x20 mask. The box x 10..30, y 10..70 crops
    // columns round(2.5) = 2 to round(7.5) = 8 and rows round(2.5) = 2 to round(17.5) = 18 (halves to even;
    // rounding halves up would start at column 3). With the mask on in column 2 only, the 6x16 crop is on in
    // its first column; resized (nearest) to the box's 20x60, columns 0..3 come from it (floor(x * 6 / 20) =
    // 0), an outline at x 0..3, y 0..59, moved to the box's corner.
    LayoutRawOutput raw = raw_output(1, 1, 5.0F);
    set_box(raw, 0, 0.25F, 0.5F, 0.25F, 0.75F);
    raw.mask_height = 20;
    raw.mask_width = 20;
    raw.masks.assign(20 * 20, -8.0F);
    for (int y = 0; y < 20; ++y) {
        raw.masks[static_cast<std::size_t>(y * 20 + 2)] = 8.0F;
    }
    const std::vector<LayoutDetection> out = post_process_layout(raw, 80, 80, 0.5F, {80, 80});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].polygon, (PolygonPoints{{10, 10}, {10, 69}, {13, 69}, {13, 10}}));
    // Column 1 alone is left of the crop: all zero there, the rectangle.
    for (int y = 0; y < 20; ++y) {
        raw.masks[static_cast<std::size_t>(y * 20 + 2)] = -8.0F;
        raw.masks[static_cast<std::size_t>(y * 20 + 1)] = 8.0F;
    }
    EXPECT_EQ(post_process_layout(raw, 80, 80, 0.5F, {80, 80})[0].polygon,
              (PolygonPoints{{10, 10}, {30, 10}, {30, 70}, {10, 70}}));
}

TEST(LayoutPostprocess, NoQueries) {
    EXPECT_TRUE(post_process_layout(raw_output(0, 25), 100, 100, 0.5F).empty());
    LayoutRawOutput v3 = raw_output(0, 25);
    v3.mask_height = 200;
    v3.mask_width = 200;
    EXPECT_TRUE(post_process_layout(v3, 100, 100, 0.5F).empty());
}

TEST(LayoutPostprocess, SizesThatDisagreeAreRefused) {
    LayoutRawOutput raw = raw_output(2, 3);
    raw.logits.pop_back();
    EXPECT_THROW(post_process_layout(raw, 100, 100, 0.5F), Error);
    raw = raw_output(2, 3);
    raw.pred_boxes.push_back(0.0F);
    EXPECT_THROW(post_process_layout(raw, 100, 100, 0.5F), Error);
    raw = raw_output(2, 3);
    raw.order_logits.resize(3);
    EXPECT_THROW(post_process_layout(raw, 100, 100, 0.5F), Error);
    raw = raw_output(2, 3);
    raw.masks.assign(10, 0.0F);
    raw.mask_height = 2;
    raw.mask_width = 2;
    EXPECT_THROW(post_process_layout(raw, 100, 100, 0.5F), Error);
    raw.mask_height = 0;
    EXPECT_THROW(post_process_layout(raw, 100, 100, 0.5F), Error);
    raw = raw_output(2, 0);
    EXPECT_THROW(post_process_layout(raw, 100, 100, 0.5F), Error);
    raw = raw_output(2, 3);
    EXPECT_THROW(post_process_layout(raw, 0, 100, 0.5F), Error);
    EXPECT_THROW(post_process_layout(raw, 100, -1, 0.5F), Error);
    EXPECT_THROW(post_process_layout(raw, 100, 100, 0.5F, {0, 800}), Error);
}

// Broken values never crash: NaN scores never pass, infinite logits are scores of 0 or 1, NaN order logits
// still give every query a rank, empty, reversed, NaN and far-away boxes give detections (V3: polygons of
// some kind or none).
TEST(LayoutPostprocess, BrokenValuesDoNotCrash) {
    for (const bool masks : {false, true}) {
        LayoutRawOutput raw = raw_output(6, 2);
        // A NaN score ranks above every number, so it takes one of the six places, and never passes.
        raw.logits[1] = kNaN;                       // q0/c1
        raw.logits[0] = kInf;                       // q0/c0: score 1
        raw.logits[3] = kInf;                       // q1/c1
        raw.logits[4] = 30.0F;                      // q2/c0: score 1 in float32
        raw.logits[6] = 30.0F;                      // q3/c0
        raw.logits[8] = 30.0F;                      // q4/c0
        raw.logits[11] = -kInf;                     // q5/c1: score 0
        set_box(raw, 0, 0.5F, 0.5F, 0.0F, 0.0F);    // empty
        set_box(raw, 1, kNaN, 0.5F, 0.2F, 0.2F);    // NaN
        set_box(raw, 2, 5.0F, -3.0F, 0.2F, 0.2F);   // off the page
        set_box(raw, 3, 0.5F, 0.5F, -0.4F, -0.4F);  // reversed
        set_box(raw, 4, 0.5F, 0.5F, 50.0F, 50.0F);  // 10000x10000 pixels: more than a polygon is fitted on
        set_box(raw, 5, 0.5F, 0.5F, kInf, 1e9F);
        raw.order_logits.assign(36, kNaN);
        if (masks) {
            raw.mask_height = 50;
            raw.mask_width = 50;
            raw.masks.assign(6 * 50 * 50, 3.0F);
            raw.masks[7] = kNaN;
            raw.masks[2600] = -kInf;
        }
        const std::vector<LayoutDetection> out = post_process_layout(raw, 200, 200, 0.5F);
        ASSERT_EQ(out.size(), 5u) << "masks " << masks;
        for (const LayoutDetection& d : out) {
            EXPECT_EQ(d.score, 1.0F);
            EXPECT_GE(d.order, 0);
            EXPECT_LT(d.order, 6);
            if (masks && std::isfinite(d.box[0])) {
                // Each of these boxes falls back to its rectangle.
                EXPECT_EQ(d.polygon.size(), 4u);
            }
        }
        EXPECT_TRUE(post_process_layout(raw, 200, 200, kNaN).empty());
    }
}

}  // namespace
}  // namespace folio
