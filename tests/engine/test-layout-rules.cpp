// PaddleOCR's rules for layout blocks, each on hand-built detections whose outcome follows from PaddleX's
// semantics (see the comment on each case), polygon areas, the PaddleOCR-VL presets, and the whole pipeline
// from raw outputs to blocks.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/layout/layout-labels.h"
#include "engine/layout/layout-pipeline.h"
#include "engine/layout/layout-rules.h"
#include "engine/layout/polygon-overlap.h"

namespace folio {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

const int kText = layout_label_id("text");
const int kImage = layout_label_id("image");
const int kTitle = layout_label_id("paragraph_title");
const int kInlineFormula = layout_label_id("inline_formula");
const int kTable = layout_label_id("table");
const int kReference = layout_label_id("reference");
const int kNumber = layout_label_id("number");

LayoutDetection det(int label, float score, std::array<float, 4> box, int order = 0) {
    LayoutDetection d;
    d.label = label;
    d.score = score;
    d.box = box;
    d.order = order;
    return d;
}

// The `order` values of the detections, which these tests use as names.
std::vector<int> names(const std::vector<LayoutDetection>& ds) {
    std::vector<int> out;
    for (const LayoutDetection& d : ds) {
        out.push_back(d.order);
    }
    return out;
}

TEST(LayoutLabels, NamesAndIds) {
    EXPECT_EQ(layout_label_name(0), "abstract");
    EXPECT_EQ(layout_label_name(14), "image");
    EXPECT_EQ(layout_label_name(24), "vision_footnote");
    EXPECT_EQ(layout_label_id("paragraph_title"), 17);
    EXPECT_EQ(layout_label_id("vertical_text"), 23);
    EXPECT_THROW(layout_label_name(25), Error);
    EXPECT_THROW(layout_label_name(-1), Error);
    EXPECT_THROW(layout_label_id("formula"), Error);
}

// A model's labels map to block kinds by name, without regard to case, spaces or hyphens, and through the
// names other PP-DocLayout checkpoints use.
TEST(LayoutLabels, KindsByName) {
    const std::vector<std::string> small = {"text", "table", "image", "doc_title", "display_formula"};
    EXPECT_EQ(layout_label_kinds(small),
              (std::vector<int>{kText, kTable, kImage, layout_label_id("doc_title"),
                                layout_label_id("display_formula")}));
    EXPECT_EQ(layout_kind_of_name("Paragraph Title"), kTitle);
    EXPECT_EQ(layout_kind_of_name("inline-formula"), kInlineFormula);
    EXPECT_EQ(layout_kind_of_name("formula"), layout_label_id("display_formula"));
    EXPECT_EQ(layout_kind_of_name("table_title"), layout_label_id("figure_title"));
    EXPECT_EQ(layout_kind_of_name("Figure"), kImage);
    EXPECT_FALSE(layout_kind_of_name("stamp").has_value());
    EXPECT_FALSE(layout_kind_of_name("LABEL_3").has_value());
}

// A name that matches no kind: the generic kind, unless the model has the 25 labels, where its id is its
// kind.
TEST(LayoutLabels, UnknownNamesFallBack) {
    const std::vector<std::string> odd = {"stamp", "Table", "LABEL_2"};
    EXPECT_EQ(layout_label_kinds(odd), (std::vector<int>{kText, kTable, kText}));
    std::vector<std::string> placeholders;
    for (int i = 0; i < kLayoutLabelCount; ++i) {
        placeholders.push_back("LABEL_" + std::to_string(i));
    }
    placeholders[3] = "table";  // a name is taken over its id
    std::vector<int> expected(kLayoutLabelCount);
    for (int i = 0; i < kLayoutLabelCount; ++i) {
        expected[static_cast<std::size_t>(i)] = i;
    }
    expected[3] = kTable;
    EXPECT_EQ(layout_label_kinds(placeholders), expected);
    EXPECT_EQ(layout_label_kinds(std::vector<std::string>(kLayoutLabels.begin(), kLayoutLabels.end())).size(),
              static_cast<std::size_t>(kLayoutLabelCount));
}

TEST(LayoutRules, RoundingIsHalfToEvenAndNaNBecomesIntegerIndefinite) {
    std::vector<LayoutDetection> ds = {det(kText, 1, {2.5F, 3.5F, -0.5F, 10.49F}),
                                       det(kText, 1, {kNaN, 1, 2, 3})};
    round_layout_boxes(ds);
    EXPECT_EQ(ds[0].box, (std::array<float, 4>{2, 4, 0, 10}));
    EXPECT_EQ(ds[1].box[0], -9223372036854775808.0F);
    EXPECT_EQ(ds[1].box[3], 3.0F);
}

TEST(LayoutRules, ScoreThresholdsPerLabelAreStrict) {
    std::vector<float> thresholds(kLayoutLabelCount, 0.5F);
    thresholds[static_cast<std::size_t>(kText)] = 0.4F;
    const std::vector<LayoutDetection> ds = {
        det(kText, 0.45F, {}, 1),   // above text's 0.4: kept
        det(kText, 0.4F, {}, 2),    // equal: dropped (PaddleX keeps score > threshold)
        det(kImage, 0.45F, {}, 3),  // below image's 0.5: dropped
        det(kImage, 0.55F, {}, 4),  // kept
        det(30, 0.55F, {}, 5),      // no threshold for label 30: the default 0.6 drops it
        det(31, 0.65F, {}, 6),      // kept by the default
    };
    EXPECT_EQ(names(filter_layout_scores(ds, thresholds, 0.6F)), (std::vector<int>{1, 4, 6}));
}

TEST(LayoutRules, NmsIouCountsPixelsInclusively) {
    // (0,0,9,9) is 10x10 = 100 pixels; shifted by 5 it shares 5x10 = 50: 50 / 150.
    EXPECT_DOUBLE_EQ(layout_nms_iou({0, 0, 9, 9}, {0, 0, 9, 9}), 1.0);
    EXPECT_DOUBLE_EQ(layout_nms_iou({0, 0, 9, 9}, {5, 0, 14, 9}), 50.0 / 150.0);
    // Apart by one pixel: nothing shared.
    EXPECT_DOUBLE_EQ(layout_nms_iou({0, 0, 9, 9}, {10, 0, 19, 9}), 0.0);
    // Touching along x = 9: one column shared, 10 / 190.
    EXPECT_DOUBLE_EQ(layout_nms_iou({0, 0, 9, 9}, {9, 0, 18, 9}), 10.0 / 190.0);
}

TEST(LayoutRules, NmsIsClassAwareWithTwoThresholds) {
    // Against A (0,0,9,9), 100 pixels: B (0,0,9,5) has IoU 60 / 100 = 0.6 exactly, C (0,0,9,4) 50 / 100 =
    // 0.5.
    const std::vector<LayoutDetection> ds = {
        det(kText, 0.5F, {0, 0, 9, 5}, 1),   // B, same label: IoU 0.6 is not below 0.6, suppressed
        det(kText, 0.9F, {0, 0, 9, 9}, 2),   // A
        det(kText, 0.4F, {0, 0, 9, 4}, 3),   // C, same label: 0.5 < 0.6, kept
        det(kTitle, 0.8F, {0, 0, 9, 8}, 4),  // IoU 0.9 with A, another label: 0.9 < 0.98, kept
        det(kImage, 0.7F, {0, 0, 9, 9}, 5),  // identical to A, another label: 1 >= 0.98, suppressed
    };
    EXPECT_EQ(names(layout_nms(ds)), (std::vector<int>{2, 3, 4}));
    // Chosen from the highest score down: A, the title, then C.
    EXPECT_EQ(layout_nms_keep(ds, 0.6, 0.98), (std::vector<std::size_t>{1, 3, 2}));
}

TEST(LayoutRules, NmsRemovesOnlyWithChosenBoxes) {
    // B overlaps A and C; C does not overlap A. A suppresses B, and B, gone, suppresses nothing: C stays.
    const std::vector<LayoutDetection> ds = {
        det(kText, 0.9F, {0, 0, 9, 9}, 1),   // A
        det(kText, 0.8F, {2, 0, 11, 9}, 2),  // B: 80 / 120 with A and with C
        det(kText, 0.7F, {4, 0, 13, 9}, 3),  // C: 60 / 140 with A
    };
    EXPECT_EQ(names(layout_nms(ds)), (std::vector<int>{1, 3}));
    // Equal scores: numpy's argsort reversed takes the later one first, which then suppresses the earlier.
    const std::vector<LayoutDetection> tie = {det(kText, 0.5F, {0, 0, 9, 9}, 1),
                                              det(kText, 0.5F, {0, 0, 9, 9}, 2)};
    EXPECT_EQ(names(layout_nms(tie)), (std::vector<int>{2}));
    EXPECT_TRUE(layout_nms({}).empty());
}

TEST(LayoutRules, PageSizedImagesGo) {
    const LayoutDetection text = det(kText, 1, {0, 0, 10, 10}, 9);
    // Portrait 100x200 (limit 93% of 20000 = 18600): an image of 19000 goes, one of 18000 stays; a table of
    // 19000 is no image and stays.
    std::vector<LayoutDetection> ds = {det(kImage, 1, {0, 0, 100, 190}, 1),
                                       det(kImage, 1, {0, 0, 100, 180}, 2),
                                       det(kTable, 1, {0, 0, 100, 190}, 3), text};
    EXPECT_EQ(names(drop_page_sized_images(ds, 100, 200, kImage)), (std::vector<int>{2, 3, 9}));
    // Landscape 200x100 (limit 82%): an image of 90% goes; clipped to the page first, so one far larger than
    // the page counts as the page.
    ds = {det(kImage, 1, {0, 0, 180, 100}, 1), det(kImage, 1, {0, 0, 160, 100}, 2),
          det(kImage, 1, {-50, -50, 500, 500}, 3), text};
    EXPECT_EQ(names(drop_page_sized_images(ds, 200, 100, kImage)), (std::vector<int>{2, 9}));
    // A lone image stays, and so does everything where every detection would go.
    ds = {det(kImage, 1, {0, 0, 100, 200}, 1)};
    EXPECT_EQ(names(drop_page_sized_images(ds, 100, 200, kImage)), (std::vector<int>{1}));
    ds = {det(kImage, 1, {0, 0, 100, 200}, 1), det(kImage, 1, {0, 0, 100, 199}, 2)};
    EXPECT_EQ(names(drop_page_sized_images(ds, 100, 200, kImage)), (std::vector<int>{1, 2}));
}

TEST(LayoutRules, ContainmentIsNinetyPercentOfTheInnerBox) {
    EXPECT_TRUE(layout_box_contained({0, 0, 10, 10}, {1, 0, 11, 10}));   // 90 of 100
    EXPECT_FALSE(layout_box_contained({0, 0, 10, 10}, {2, 0, 12, 10}));  // 80 of 100
    EXPECT_TRUE(layout_box_contained({2, 2, 4, 4}, {0, 0, 10, 10}));
    EXPECT_FALSE(layout_box_contained({0, 0, 10, 10}, {2, 2, 4, 4}));
    EXPECT_FALSE(layout_box_contained({5, 5, 5, 9}, {0, 0, 10, 10}));  // no area
}

TEST(LayoutRules, MergeModeLargeDropsWhatLiesInsideTheLabelsBoxes) {
    std::vector<LayoutMergeMode> modes(kLayoutLabelCount, LayoutMergeMode::Union);
    modes[static_cast<std::size_t>(kTitle)] = LayoutMergeMode::Large;
    const std::vector<LayoutDetection> ds = {
        det(kTitle, 1, {0, 0, 100, 20}, 1),
        det(kInlineFormula, 1, {10, 5, 30, 15}, 2),   // inside the title: goes
        det(kTitle, 1, {40, 2, 60, 18}, 3),           // a title inside the title: goes
        det(kText, 1, {90, 0, 110, 20}, 4),           // half inside: stays
        det(kText, 1, {0, 30, 100, 60}, 5),           // a text holding nothing of a title: stays
        det(kInlineFormula, 1, {10, 35, 30, 45}, 6),  // inside a text, which is Union: stays
    };
    EXPECT_EQ(names(merge_layout_boxes(ds, modes)), (std::vector<int>{1, 4, 5, 6}));
    // Two titles each inside the other: both go, as in PaddleX.
    const std::vector<LayoutDetection> twins = {det(kTitle, 1, {0, 0, 100, 20}, 1),
                                                det(kTitle, 1, {0, 0, 100, 21}, 2)};
    EXPECT_TRUE(merge_layout_boxes(twins, modes).empty());
    // All Union: nothing goes.
    EXPECT_EQ(merge_layout_boxes(ds, std::vector<LayoutMergeMode>(kLayoutLabelCount)).size(), ds.size());
}

TEST(LayoutRules, MergeModeSmallDropsWhatHoldsTheLabelsBoxes) {
    std::vector<LayoutMergeMode> modes(kLayoutLabelCount, LayoutMergeMode::Union);
    modes[static_cast<std::size_t>(kText)] = LayoutMergeMode::Small;
    const std::vector<LayoutDetection> ds = {
        det(kImage, 1, {0, 0, 100, 100}, 1),    // holds text 2: goes
        det(kText, 1, {10, 10, 20, 20}, 2),     // stays
        det(kText, 1, {200, 0, 300, 100}, 3),   // holds text 4, but lies inside text 5 itself: stays
        det(kText, 1, {210, 10, 220, 20}, 4),   // stays
        det(kText, 1, {195, -5, 305, 105}, 5),  // holds text 3 and 4: goes
        det(kTable, 1, {400, 0, 500, 100}, 6),  // holds no text: stays
    };
    EXPECT_EQ(names(merge_layout_boxes(ds, modes)), (std::vector<int>{2, 3, 4, 6}));
}

TEST(LayoutRules, MergeModesOfSeveralLabelsCombine) {
    std::vector<LayoutMergeMode> modes(kLayoutLabelCount, LayoutMergeMode::Union);
    modes[static_cast<std::size_t>(kTitle)] = LayoutMergeMode::Large;
    modes[static_cast<std::size_t>(kTable)] = LayoutMergeMode::Large;
    const std::vector<LayoutDetection> ds = {
        det(kTitle, 1, {0, 0, 100, 20}, 1), det(kText, 1, {10, 5, 30, 15}, 2),     // text inside the title
        det(kTable, 1, {0, 50, 100, 150}, 3), det(kText, 1, {10, 60, 30, 70}, 4),  // text inside the table
        det(kText, 1, {0, 200, 100, 220}, 5)};
    EXPECT_EQ(names(merge_layout_boxes(ds, modes)), (std::vector<int>{1, 3, 5}));
    // A "formula" label's boxes are never contained in another label's box.
    const int formula = kText;
    EXPECT_EQ(names(merge_layout_boxes(ds, modes, formula)), (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(LayoutRules, UnclipScalesAboutTheCentre) {
    std::vector<LayoutDetection> ds = {det(kText, 1, {10, 10, 20, 30})};
    unclip_layout_boxes(ds, 2.0, 1.0);
    EXPECT_EQ(ds[0].box, (std::array<float, 4>{5, 10, 25, 30}));
    unclip_layout_boxes(ds, 0.5, 1.5);
    EXPECT_EQ(ds[0].box, (std::array<float, 4>{10, 5, 20, 35}));
    unclip_layout_boxes(ds, 1.0, 1.0);
    EXPECT_EQ(ds[0].box, (std::array<float, 4>{10, 5, 20, 35}));
}

TEST(LayoutRules, ClipToThePageCutsToWholePixels) {
    LayoutDetection outline = det(kText, 1, {10, 10, 20, 20}, 6);
    outline.polygon = {{10, 10}, {10, 19}, {19, 19}, {19, 10}};
    const std::vector<LayoutDetection> ds = {
        det(kText, 1, {-5.5F, -3, 120.7F, 40.9F}, 1),            // (0, 0, 100, 40)
        det(kText, 1, {10.9F, 5.2F, 10.95F, 20}, 2),             // x 10..10: no width, goes
        det(kText, 1, {120, 0, 150, 10}, 3),                     // right of the page: 120..100, goes
        det(kText, 1, {kNaN, 0, 10, 10}, 4),                     // goes
        det(kText, 1, {-9223372036854775808.0F, 0, 10, 10}, 5),  // x 0..10: stays
        outline,
        det(kText, 1, {30, 30, 40, 40}, 7),  // no outline: goes where outlines are required
    };
    const std::vector<LayoutDetection> kept = clip_layout_boxes(ds, 100, 50, false);
    EXPECT_EQ(names(kept), (std::vector<int>{1, 5, 6, 7}));
    EXPECT_EQ(kept[0].box, (std::array<float, 4>{0, 0, 100, 40}));
    EXPECT_EQ(kept[1].box, (std::array<float, 4>{0, 0, 10, 10}));
    EXPECT_EQ(names(clip_layout_boxes(ds, 100, 50, true)), (std::vector<int>{6}));
}

OverlapFilter paddleocr_vl_filter(bool polygons = false) {
    OverlapFilter f;
    f.min_side = 4;
    f.max_overlap = 0.7;
    f.keep_pair_label = kImage;
    f.drop_label = kReference;
    f.use_polygons = polygons;
    return f;
}

TEST(LayoutRules, OverlapFilterDropsTheSmallerOfTwoOverlappingBoxes) {
    const std::vector<LayoutDetection> ds = {
        det(kText, 1, {0, 0, 100, 100}, 1),
        det(kText, 1, {10, 10, 50, 50}, 2),   // all inside 1: the smaller goes
        det(kText, 1, {200, 0, 210, 10}, 3),  // 100 pixels
        det(kText, 1, {203, 0, 213, 10}, 4),  // 70 of its 100 shared with 3: not over 0.7, both stay
        det(kText, 1, {300, 0, 310, 10}, 5),  // 100 pixels
        det(kText, 1, {302, 0, 312, 10}, 6),  // 80 shared, the same area: the later one goes
        det(kText, 1, {400, 0, 500, 50}, 7),  // 5000 pixels, all inside 8: the earlier one, smaller, goes
        det(kText, 1, {400, 0, 500, 60}, 8),  // 6000 pixels
    };
    EXPECT_EQ(names(filter_overlapping_blocks(ds, paddleocr_vl_filter())), (std::vector<int>{1, 3, 4, 5, 8}));
}

TEST(LayoutRules, OverlapFilterKeepsAnImageBesideAnotherLabel) {
    const std::vector<LayoutDetection> ds = {
        det(kImage, 1, {0, 0, 100, 100}, 1),
        det(kText, 1, {10, 10, 50, 50}, 2),   // inside the image, another label: both stay
        det(kImage, 1, {20, 20, 40, 40}, 3),  // an image inside an image: the smaller goes
        det(kTable, 1, {200, 0, 300, 100}, 4),
        det(kText, 1, {210, 10, 250, 50}, 5),  // inside a table: goes
    };
    EXPECT_EQ(names(filter_overlapping_blocks(ds, paddleocr_vl_filter())), (std::vector<int>{1, 2, 4}));
}

TEST(LayoutRules, OverlapFilterDropsSmallBoxesAndReferences) {
    const std::vector<LayoutDetection> ds = {
        det(kText, 1, {0, 0, 3, 100}, 1),         // 3 wide: goes
        det(kText, 1, {10, 0, 14, 4}, 2),         // 4x4: stays
        det(kReference, 1, {50, 50, 90, 90}, 3),  // a reference: goes before anything else
        det(kText, 1, {100, 0, 200, 3}, 4),       // 3 high: goes
    };
    EXPECT_EQ(names(filter_overlapping_blocks(ds, paddleocr_vl_filter())), (std::vector<int>{2}));
    // The reference, gone first, removes nothing: the text inside it stays though smaller.
    const std::vector<LayoutDetection> inside = {det(kReference, 1, {0, 0, 100, 100}, 1),
                                                 det(kText, 1, {10, 10, 50, 50}, 2)};
    EXPECT_EQ(names(filter_overlapping_blocks(inside, paddleocr_vl_filter())), (std::vector<int>{2}));
}

TEST(LayoutRules, OverlapFilterSmallBoxGoesOnlyWhenItsTurnComes) {
    // Box 2 is too narrow to stay, but box 1 meets it first: 12 of box 1's 16 pixels lie in box 2 (0.75), box
    // 1 is the smaller and goes; then box 2 goes for its width. PaddleX loses both.
    const std::vector<LayoutDetection> ds = {det(kText, 1, {0, 0, 4, 4}, 1),
                                             det(kText, 1, {0, 0, 3, 100}, 2)};
    EXPECT_TRUE(filter_overlapping_blocks(ds, paddleocr_vl_filter()).empty());
    // The other way round the narrow box goes first and the small one stays.
    const std::vector<LayoutDetection> swapped = {ds[1], ds[0]};
    EXPECT_EQ(names(filter_overlapping_blocks(swapped, paddleocr_vl_filter())), (std::vector<int>{1}));
}

TEST(LayoutRules, OverlapFilterWithOutlinesKeepsBoxesWhoseOutlinesHardlyMeet) {
    // The same box twice, one outline the lower-left triangle, the other the upper-right: the boxes overlap
    // fully, the outlines share only the diagonal.
    LayoutDetection a = det(kText, 1, {0, 0, 100, 100}, 1);
    a.polygon = {{0, 0}, {0, 100}, {100, 100}};
    LayoutDetection b = det(kText, 1, {0, 0, 100, 100}, 2);
    b.polygon = {{0, 0}, {100, 100}, {100, 0}};
    EXPECT_EQ(names(filter_overlapping_blocks({a, b}, paddleocr_vl_filter(true))), (std::vector<int>{1, 2}));
    EXPECT_EQ(names(filter_overlapping_blocks({a, b}, paddleocr_vl_filter(false))), (std::vector<int>{1}));
    // b's outline now the square less the triangle (20,0) (100,0) (100,80), which a's outline does not reach:
    // all of a's outline is shared, the boxes decide and the later one goes.
    b.polygon = {{0, 0}, {0, 100}, {100, 100}, {100, 80}, {20, 0}};
    EXPECT_EQ(names(filter_overlapping_blocks({a, b}, paddleocr_vl_filter(true))), (std::vector<int>{1}));
    // Without outline area (none given): the boxes decide.
    b.polygon.clear();
    EXPECT_EQ(names(filter_overlapping_blocks({a, b}, paddleocr_vl_filter(true))), (std::vector<int>{1}));
}

TEST(LayoutRules, ReadingOrderNumbersOrderedLabelsOnly) {
    std::vector<LayoutDetection> ds = {det(kText, 1, {}), det(kImage, 1, {}), det(kTitle, 1, {}),
                                       det(kNumber, 1, {}), det(kText, 1, {})};
    const std::vector<int> unordered = {kImage, kNumber};
    number_reading_order(ds, unordered);
    EXPECT_EQ(names(ds), (std::vector<int>{1, 0, 2, 0, 3}));
}

TEST(PolygonOverlap, AreasOfSquaresTrianglesAndAnL) {
    using P = std::vector<std::array<float, 2>>;
    const P square = {{0, 0}, {0, 10}, {10, 10}, {10, 0}};
    const P square_reversed = {{0, 0}, {10, 0}, {10, 10}, {0, 10}};
    const P shifted = {{5, 5}, {5, 15}, {15, 15}, {15, 5}};
    EXPECT_DOUBLE_EQ(polygon_area(square), 100.0);
    EXPECT_DOUBLE_EQ(polygon_area(square_reversed), 100.0);
    EXPECT_DOUBLE_EQ(polygon_intersection_area(square, square), 100.0);
    EXPECT_NEAR(polygon_intersection_area(square, shifted), 25.0, 1e-9);
    EXPECT_NEAR(polygon_intersection_area(square_reversed, shifted), 25.0, 1e-9);
    EXPECT_NEAR(polygon_intersection_area(shifted, square_reversed), 25.0, 1e-9);
    // The lower-left half of the square against the square shifted by 5: the shared 5x5 square's lower-left
    // half (12.5).
    const P triangle = {{0, 0}, {0, 10}, {10, 10}};
    EXPECT_NEAR(polygon_intersection_area(triangle, shifted), 12.5, 1e-9);
    // An L (the 10x10 square less its upper-right 5x5 quarter, in page coordinates y down: less x 5..10,
    // y 0..5) against the square shifted by 5: 25 shared, as the missing quarter is outside the shifted
    // square.
    const P ell = {{0, 0}, {0, 10}, {10, 10}, {10, 5}, {5, 5}, {5, 0}};
    EXPECT_DOUBLE_EQ(polygon_area(ell), 75.0);
    EXPECT_NEAR(polygon_intersection_area(ell, shifted), 25.0, 1e-9);
    // The L against its missing quarter: nothing.
    const P quarter = {{5, 0}, {5, 5}, {10, 5}, {10, 0}};
    EXPECT_NEAR(polygon_intersection_area(ell, quarter), 0.0, 1e-9);
    // Apart, and under three points.
    EXPECT_DOUBLE_EQ(polygon_intersection_area(square, P{{20, 20}, {20, 30}, {30, 30}, {30, 20}}), 0.0);
    EXPECT_DOUBLE_EQ(polygon_intersection_area(square, P{{0, 0}, {10, 10}}), 0.0);
    EXPECT_DOUBLE_EQ(polygon_area(P{{0, 0}, {10, 10}}), 0.0);
}

TEST(LayoutPipeline, PaddleOcrVlPresets) {
    const LayoutRules v2 = paddleocr_vl_layout_rules();
    ASSERT_EQ(v2.thresholds.size(), static_cast<std::size_t>(kLayoutLabelCount));
    EXPECT_EQ(v2.thresholds[static_cast<std::size_t>(kText)], 0.4F);
    EXPECT_EQ(v2.thresholds[static_cast<std::size_t>(layout_label_id("seal"))], 0.45F);
    EXPECT_EQ(v2.thresholds[static_cast<std::size_t>(kTable)], 0.5F);
    EXPECT_EQ(v2.lowest_threshold(), 0.4F);
    EXPECT_EQ(v2.merge_modes[static_cast<std::size_t>(layout_label_id("chart"))], LayoutMergeMode::Large);
    EXPECT_EQ(v2.merge_modes[static_cast<std::size_t>(kText)], LayoutMergeMode::Union);
    EXPECT_FALSE(v2.drop_without_polygon);
    EXPECT_FALSE(v2.overlap.use_polygons);
    EXPECT_EQ(v2.overlap.keep_pair_label, kImage);
    EXPECT_EQ(v2.overlap.drop_label, kReference);

    const LayoutRules v3 = paddleocr_vl_1_5_layout_rules();
    EXPECT_EQ(v3.lowest_threshold(), 0.3F);
    EXPECT_EQ(v3.thresholds[static_cast<std::size_t>(kTable)], 0.3F);
    EXPECT_EQ(v3.merge_modes, v2.merge_modes);
    EXPECT_TRUE(v3.drop_without_polygon);
    EXPECT_TRUE(v3.overlap.use_polygons);
    EXPECT_EQ(v3.unordered_labels, v2.unordered_labels);
    EXPECT_EQ(v3.unordered_labels.size(), 12u);
}

TEST(LayoutPipeline, RulesInOrderAndReadingOrderWithoutGaps) {
    const LayoutRules rules = paddleocr_vl_layout_rules();
    // Post-processed detections in reading order (order = rank), on a 1000x1000 page.
    const std::vector<LayoutDetection> ds = {
        det(kTitle, 0.9F, {100.4F, 50.6F, 900.5F, 99.5F}, 0),  // rounds to (100, 51, 900, 100)
        det(kText, 0.45F, {100, 120, 900, 300}, 1),            // above text's 0.4
        det(kText, 0.38F, {100, 320, 900, 400}, 2),            // under it: goes
        det(kTable, 0.8F, {100, 420, 900, 800}, 3),
        det(kTable, 0.6F, {102, 421, 899, 801}, 4),        // the table again, lower score: NMS
        det(kInlineFormula, 0.9F, {200, 60, 300, 90}, 5),  // inside the title (Large): goes
        det(kNumber, 0.9F, {480, 950, 520, 970}, 6),       // no block_order
        det(kReference, 0.9F, {100, 820, 900, 900}, 7),    // references go
        det(kText, 0.9F, {100, 910, 102, 940}, 8),         // 2 wide: goes
        det(kText, 0.9F, {100, 180, 500, 290}, 9),         // 44000 inside the 144000 text: goes
    };
    const std::vector<LayoutDetection> out = apply_layout_rules(ds, 1000, 1000, rules);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].label, kTitle);
    EXPECT_EQ(out[0].box, (std::array<float, 4>{100, 51, 900, 100}));
    EXPECT_EQ(out[0].order, 1);
    EXPECT_EQ(out[1].label, kText);
    EXPECT_EQ(out[1].order, 2);
    EXPECT_EQ(out[2].label, kTable);
    EXPECT_EQ(out[2].score, 0.8F);
    EXPECT_EQ(out[2].order, 0);  // tables have no block_order
    EXPECT_EQ(out[3].label, kNumber);
    EXPECT_EQ(out[3].order, 0);
    EXPECT_THROW(apply_layout_rules(ds, 0, 1000, rules), Error);
}

// From raw outputs to blocks with the V2 preset: four queries on a 400x200 page.
LayoutRawOutput four_query_page() {
    LayoutRawOutput raw;
    raw.n_queries = 4;
    raw.n_classes = kLayoutLabelCount;
    raw.logits.assign(4 * kLayoutLabelCount, -10.0F);
    auto set = [&](int q, int label, float logit) {
        raw.logits[static_cast<std::size_t>(q * kLayoutLabelCount + label)] = logit;
    };
    set(0, kText, 2.0F);    // 0.88
    set(1, kTitle, 1.0F);   // 0.73
    set(2, kText, -0.3F);   // 0.43: above text's 0.4
    set(3, kImage, -0.3F);  // 0.43: under image's 0.5
    raw.pred_boxes = {
        0.5F, 0.5F,   0.5F,  0.5F,  // x 100..300, y 50..150
        0.5F, 0.125F, 0.5F,  0.1F,  // x 100..300, y 15..35
        0.5F, 0.875F, 0.5F,  0.1F,  // x 100..300, y 165..185
        0.5F, 0.5F,   0.25F, 0.25F,
    };
    // Reading order: title (q1), text (q0), text (q2), image (q3).
    const std::vector<int> sequence = {1, 0, 2, 3};
    std::vector<int> rank(4);
    for (int r = 0; r < 4; ++r) {
        rank[static_cast<std::size_t>(sequence[static_cast<std::size_t>(r)])] = r;
    }
    raw.order_logits.assign(16, 0.0F);
    for (std::size_t i = 0; i < 4; ++i) {
        for (std::size_t j = i + 1; j < 4; ++j) {
            raw.order_logits[i * 4 + j] = rank[i] < rank[j] ? 5.0F : -5.0F;
        }
    }
    return raw;
}

TEST(LayoutPipeline, DetectLayoutBlocksFromRawOutputs) {
    const std::vector<LayoutDetection> out =
        detect_layout_blocks(four_query_page(), 400, 200, paddleocr_vl_layout_rules());
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].label, kTitle);
    EXPECT_EQ(out[0].box, (std::array<float, 4>{100, 15, 300, 35}));
    EXPECT_EQ(out[0].order, 1);
    EXPECT_EQ(out[1].label, kText);
    EXPECT_EQ(out[1].box, (std::array<float, 4>{100, 50, 300, 150}));
    EXPECT_EQ(out[1].order, 2);
    EXPECT_EQ(out[2].label, kText);
    EXPECT_EQ(out[2].box, (std::array<float, 4>{100, 165, 300, 185}));
    EXPECT_EQ(out[2].order, 3);
}

// A model of its own labels: class 0 "table", 1 "text", 2 "stamp" (no kind of the 25). The blocks come out by
// kind: the table under the table's rules, the stamp as generic text rather than dropped.
TEST(LayoutPipeline, ClassesBecomeTheirNamesKinds) {
    LayoutRawOutput raw;
    raw.n_queries = 3;
    raw.n_classes = 3;
    raw.class_kinds = layout_label_kinds(std::vector<std::string>{"table", "text", "stamp"});
    raw.logits = {
        3.0F,  -9.0F, -9.0F,  // query 0: table
        -9.0F, 3.0F,  -9.0F,  // query 1: text
        -9.0F, -9.0F, 3.0F,   // query 2: stamp
    };
    raw.pred_boxes = {
        0.5F, 0.2F, 0.8F, 0.2F,  // x 40..360, y 20..60
        0.5F, 0.5F, 0.8F, 0.2F,  // y 80..120
        0.5F, 0.8F, 0.8F, 0.2F,  // y 140..180
    };
    raw.order_logits = {0.0F, 5.0F, 5.0F, -5.0F, 0.0F, 5.0F, -5.0F, -5.0F, 0.0F};
    const std::vector<LayoutDetection> out = detect_layout_blocks(raw, 400, 200, paddleocr_vl_layout_rules());
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].label, kTable);
    EXPECT_EQ(out[1].label, kText);
    EXPECT_EQ(out[2].label, kText);
    EXPECT_EQ(names(out), (std::vector<int>{0, 1, 2}));  // a table takes no place in the reading order

    raw.class_kinds = {0, 1};  // a class beyond the kinds is refused, not guessed
    EXPECT_THROW(detect_layout_blocks(raw, 400, 200, paddleocr_vl_layout_rules()), Error);
}

// The V3 preset on outputs without masks: no outline is required. At 0.3 the image (0.43) passes too; it lies
// inside the first text, and an image beside another label stays.
TEST(LayoutPipeline, OutputsWithoutMasksNeedNoOutlines) {
    const std::vector<LayoutDetection> out =
        detect_layout_blocks(four_query_page(), 400, 200, paddleocr_vl_1_5_layout_rules());
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[3].label, kImage);
    EXPECT_EQ(out[3].box, (std::array<float, 4>{150, 75, 250, 125}));
    EXPECT_EQ(names(out), (std::vector<int>{1, 2, 3, 0}));
}

// V3 on a 100x100 page: the 200x200 mask is at twice the page's resolution (scale 800 / 100 / 4 = 2). Query
// 0's box (0,0,50,50) crops mask rows and columns 0..99, all on: its outline is the box's (0..49). Query 1's
// box (72,72,77,77) crops 144..153, resized to 5x5 from the even rows and columns only; its mask is on at
// (145,145) alone, which vanishes: no contour, no outline (the reference's None), and PaddleOCR-VL-1.5 drops
// the block. PaddleOCR-VL's rules do not look at outlines and keep it.
TEST(LayoutPipeline, VersionOnePointFiveDropsABlockWithoutOutline) {
    LayoutRawOutput raw;
    raw.n_queries = 2;
    raw.n_classes = kLayoutLabelCount;
    raw.logits.assign(2 * kLayoutLabelCount, -10.0F);
    raw.logits[static_cast<std::size_t>(kText)] = 3.0F;
    raw.logits[static_cast<std::size_t>(kLayoutLabelCount + kText)] = 3.0F;
    raw.pred_boxes = {0.25F, 0.25F, 0.5F, 0.5F, 0.75F, 0.75F, 0.05F, 0.05F};
    raw.order_logits = {0.0F, 5.0F, 0.0F, 0.0F};
    raw.mask_height = 200;
    raw.mask_width = 200;
    raw.masks.assign(2 * 200 * 200, -9.0F);
    for (int y = 0; y < 100; ++y) {
        for (int x = 0; x < 100; ++x) {
            raw.masks[static_cast<std::size_t>(y * 200 + x)] = 9.0F;
        }
    }
    raw.masks[static_cast<std::size_t>(200 * 200 + 145 * 200 + 145)] = 9.0F;

    const std::vector<LayoutDetection> v3 =
        detect_layout_blocks(raw, 100, 100, paddleocr_vl_1_5_layout_rules());
    ASSERT_EQ(v3.size(), 1u);
    EXPECT_EQ(v3[0].box, (std::array<float, 4>{0, 0, 50, 50}));
    EXPECT_EQ(v3[0].polygon, (std::vector<std::array<float, 2>>{{0, 0}, {0, 49}, {49, 49}, {49, 0}}));
    EXPECT_EQ(v3[0].order, 1);

    const std::vector<LayoutDetection> v2 = detect_layout_blocks(raw, 100, 100, paddleocr_vl_layout_rules());
    ASSERT_EQ(v2.size(), 2u);
    EXPECT_TRUE(v2[1].polygon.empty());
    EXPECT_EQ(names(v2), (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace folio
