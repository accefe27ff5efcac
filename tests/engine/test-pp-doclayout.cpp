// PP-DocLayoutV2 and PP-DocLayoutV3 on the CPU backend against the reference's outputs for the small random
// configs of tests/fixtures/layout (tests/fixtures/make_layout_fixtures.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/images/image-loader.h"
#include "engine/backend/backend.h"
#include "engine/files/safetensors.h"
#include "engine/layout/layout-labels.h"
#include "engine/layout/layout-pipeline.h"
#include "engine/layout/layout-postprocess.h"
#include "engine/models/pp-doclayout/pp-doclayout.h"
#include "fixture-reference.h"
#include "layout-fixture.h"

namespace folio {
namespace {

using testing::joined;
using testing::LayoutFixture;

class PpDocLayoutTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PpDocLayoutTest, RawOutputsMatchTheReference) {
    const LayoutFixture fx(GetParam());
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout model(*backend, fx.model_dir);
    const Tensor pixels = backend->upload(fx.f32("pixel_values"), fx.shape("pixel_values"));
    const std::vector<LayoutRawOutput> pages = model.forward(pixels);
    ASSERT_EQ(pages.size(), 2u);

    ASSERT_EQ(model.config().kind, LayoutModelKind::V3);
    testing::expect_v3_outputs_match(pages, fx, GetParam());
}

TEST_P(PpDocLayoutTest, PreprocessingMatchesTheImageProcessor) {
    const LayoutFixture fx(GetParam());
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout model(*backend, fx.model_dir);
    const std::vector<float> expected = fx.f32("pixel_values");
    const auto plane =
        static_cast<size_t>(3 * model.preprocess_config().height * model.preprocess_config().width);
    for (size_t i = 0; i < 2; ++i) {
        const Image image = load_image(fx.reference_dir / ("page-" + std::to_string(i) + ".png"));
        const PageImage page{image.rgb, image.width, image.height};
        const std::vector<float> actual = preprocess_layout_page(page, model.preprocess_config());
        ASSERT_EQ(actual.size(), plane);
        // torch's 8-bit resize rounds its fixed-point weights its own way: values at most two levels apart,
        // and few of them off at all.
        int n_off = 0;
        for (size_t k = 0; k < plane; ++k) {
            const float diff = std::fabs(actual[k] - expected[i * plane + k]);
            ASSERT_LE(diff, 2.01f / 255.0f) << "value " << k << " of page " << i;
            n_off += diff > 1e-6f ? 1 : 0;
        }
        std::cout << "page " << i << ": " << n_off << " of " << plane << " values a level or two apart\n";
        EXPECT_LE(n_off, static_cast<int>(plane / 50)) << "page " << i;
    }
}

// The model's outputs through transformers' post-processing give the reference's detections: the same
// labels, reading order and polygons, scores and boxes within float32 rounding.
TEST_P(PpDocLayoutTest, DetectionsMatchTheReference) {
    const LayoutFixture fx(GetParam());
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout model(*backend, fx.model_dir);
    const std::vector<LayoutRawOutput> pages =
        model.forward(backend->upload(fx.f32("pixel_values"), fx.shape("pixel_values")));
    const nlohmann::json ref = nlohmann::json::parse(std::ifstream(fx.reference_dir / "reference.json"));
    const auto threshold = ref["threshold"].get<float>();
    const LayoutInputSize input{model.preprocess_config().width, model.preprocess_config().height};
    for (size_t i = 0; i < pages.size(); ++i) {
        const nlohmann::json& expected = ref["detections"][i];
        const int height = ref["target_sizes"][i][0].get<int>();
        const int width = ref["target_sizes"][i][1].get<int>();
        const std::vector<LayoutDetection> got =
            post_process_layout(pages[i], width, height, threshold, input);
        ASSERT_EQ(got.size(), expected["scores"].size()) << "page " << i;
        for (size_t k = 0; k < got.size(); ++k) {
            EXPECT_EQ(got[k].label, expected["labels"][k].get<int>());
            EXPECT_EQ(got[k].order, expected["order_seq"][k].get<int>());
            EXPECT_NEAR(got[k].score, expected["scores"][k].get<float>(), 1e-5);
            for (size_t c = 0; c < 4; ++c) {
                EXPECT_NEAR(got[k].box[c], expected["boxes"][k][c].get<float>(), 1e-3);
            }
            if (expected.contains("polygon_points")) {
                const nlohmann::json& polygon = expected["polygon_points"][k];
                ASSERT_EQ(got[k].polygon.size(), polygon.size()) << "page " << i << " detection " << k;
                for (size_t p = 0; p < polygon.size(); ++p) {
                    EXPECT_NEAR(got[k].polygon[p][0], polygon[p][0].get<float>(), 1e-3);
                    EXPECT_NEAR(got[k].polygon[p][1], polygon[p][1].get<float>(), 1e-3);
                }
            }
        }
    }
}

// Bringing back only the masks of queries that can pass a threshold, as bits at that threshold, changes
// nothing post-processing at that threshold gives; post-processing at another refuses rather than fitting
// outlines to masks it does not have.
TEST_P(PpDocLayoutTest, MaskBitsForAThresholdGiveTheSameDetections) {
    const LayoutFixture fx(GetParam());
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout model(*backend, fx.model_dir);
    const Tensor pixels = backend->upload(fx.f32("pixel_values"), fx.shape("pixel_values"));
    const std::vector<LayoutRawOutput> all = model.forward(pixels);
    const nlohmann::json ref = nlohmann::json::parse(std::ifstream(fx.reference_dir / "reference.json"));
    const auto threshold = ref["threshold"].get<float>();
    const std::vector<LayoutRawOutput> some = model.forward(pixels, {.mask_min_score = threshold});
    const LayoutInputSize input{model.preprocess_config().width, model.preprocess_config().height};
    ASSERT_EQ(all.size(), some.size());
    for (size_t i = 0; i < all.size(); ++i) {
        const LayoutRawOutput& a = all[i];
        const LayoutRawOutput& s = some[i];
        ASSERT_FALSE(a.has_mask_bits());
        ASSERT_TRUE(s.has_mask_bits());
        EXPECT_TRUE(s.masks.empty());
        EXPECT_EQ(s.logits, a.logits);
        const auto k = static_cast<size_t>(a.n_classes);
        std::vector<int> expected_queries;
        for (int q = 0; q < a.n_queries; ++q) {
            const float* row = a.logits.data() + static_cast<size_t>(q) * k;
            if (layout_sigmoid(*std::max_element(row, row + k)) >= threshold) {
                expected_queries.push_back(q);
            }
        }
        EXPECT_EQ(s.mask_queries, expected_queries) << "page " << i;
        ASSERT_FALSE(expected_queries.empty()) << "page " << i << ": no query reaches the threshold";
        ASSERT_LT(expected_queries.size(), static_cast<size_t>(a.n_queries)) << "page " << i;
        EXPECT_EQ(s.mask_bits.size(), expected_queries.size() * a.mask_plane_words());
        for (const int q : s.mask_queries) {
            EXPECT_EQ(s.binary_mask(q, threshold), a.binary_mask(q, threshold)) << "query " << q;
        }
        const int height = ref["target_sizes"][i][0].get<int>();
        const int width = ref["target_sizes"][i][1].get<int>();
        const std::vector<LayoutDetection> from_all = post_process_layout(a, width, height, threshold, input);
        const std::vector<LayoutDetection> from_bits =
            post_process_layout(s, width, height, threshold, input);
        ASSERT_EQ(from_bits.size(), from_all.size()) << "page " << i;
        ASSERT_FALSE(from_all.empty()) << "page " << i;
        for (size_t d = 0; d < from_all.size(); ++d) {
            EXPECT_EQ(from_bits[d].label, from_all[d].label);
            EXPECT_EQ(from_bits[d].box, from_all[d].box);
            EXPECT_EQ(from_bits[d].order, from_all[d].order);
            EXPECT_EQ(from_bits[d].polygon, from_all[d].polygon);
        }
        // The bits hold one threshold's masks, and only the masks of queries that reach it.
        EXPECT_THROW(post_process_layout(s, width, height, threshold + 0.01f, input), std::runtime_error);
        int below = 0;
        while (std::binary_search(expected_queries.begin(), expected_queries.end(), below)) {
            ++below;
        }
        EXPECT_THROW(s.binary_mask(below, threshold), std::runtime_error);
    }
}

// The pipeline fits outlines only to the detections NMS and the merge modes keep: the same blocks, boxes,
// order and polygons as outlining every detection first.
TEST_P(PpDocLayoutTest, OutlinesFittedAfterNmsGiveTheSameBlocks) {
    const LayoutFixture fx(GetParam());
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout model(*backend, fx.model_dir);
    const Tensor pixels = backend->upload(fx.f32("pixel_values"), fx.shape("pixel_values"));
    const nlohmann::json ref = nlohmann::json::parse(std::ifstream(fx.reference_dir / "reference.json"));
    const auto threshold = ref["threshold"].get<float>();
    const std::vector<LayoutRawOutput> raw = model.forward(pixels, {.mask_min_score = threshold});
    const LayoutInputSize input{model.preprocess_config().width, model.preprocess_config().height};
    LayoutRules rules = paddleocr_vl_1_5_layout_rules();
    rules.thresholds.assign(rules.thresholds.size(), threshold);
    rules.default_threshold = threshold;
    size_t n_blocks = 0, n_dropped = 0;
    for (size_t i = 0; i < raw.size(); ++i) {
        const int height = ref["target_sizes"][i][0].get<int>();
        const int width = ref["target_sizes"][i][1].get<int>();
        std::vector<LayoutDetection> all = post_process_layout(raw[i], width, height, threshold, input);
        label_by_kind(all, raw[i].class_kinds);
        const std::vector<LayoutDetection> first = apply_layout_rules(all, width, height, rules);
        const std::vector<LayoutDetection> after = detect_layout_blocks(raw[i], width, height, rules, input);
        ASSERT_EQ(after.size(), first.size()) << "page " << i;
        for (size_t d = 0; d < first.size(); ++d) {
            EXPECT_EQ(after[d].label, first[d].label);
            EXPECT_EQ(after[d].score, first[d].score);
            EXPECT_EQ(after[d].box, first[d].box);
            EXPECT_EQ(after[d].order, first[d].order);
            EXPECT_EQ(after[d].polygon, first[d].polygon);
            EXPECT_FALSE(after[d].polygon.empty());
        }
        n_blocks += first.size();
        n_dropped += all.size() - first.size();
    }
    EXPECT_GT(n_blocks, 0u);
    EXPECT_GT(n_dropped, 0u);  // the rules dropped detections, whose outlines the pipeline never fits
}

INSTANTIATE_TEST_SUITE_P(Models, PpDocLayoutTest, ::testing::Values("pp-doclayout-v3-tiny"));

// PaddleOCR-VL-1.5's rules at the reference's threshold (the random fixture models score low), every block
// kept whether its mask gives an outline or not.
LayoutRules fixture_rules(const nlohmann::json& ref) {
    LayoutRules rules = paddleocr_vl_1_5_layout_rules();
    const auto threshold = ref["threshold"].get<float>();
    rules.thresholds.assign(rules.thresholds.size(), threshold);
    rules.default_threshold = threshold;
    rules.drop_without_polygon = false;
    return rules;
}

// The fixtures' five labels (text, table, image, doc_title, display_formula at ids 0..4) reach the rules as
// those kinds by name, not as the kinds of ids 0..4 (abstract, algorithm, ...); with labels no kind matches,
// every block becomes the generic kind and none is dropped for it.
TEST(PpDocLayoutLabels, FixtureLabelsMapByName) {
    for (const std::string name : {"pp-doclayout-v2-tiny", "pp-doclayout-v3-tiny"}) {
        const LayoutFixture fx(name);
        std::unique_ptr<Backend> backend = make_cpu_backend();
        const PpDocLayout model(*backend, fx.model_dir);
        ASSERT_EQ(model.config().labels.size(), 5u) << name;
        std::vector<int> expected;
        for (const std::string& label : model.config().labels) {
            expected.push_back(layout_label_id(label));
        }
        const Tensor pixels = backend->upload(fx.f32("pixel_values"), fx.shape("pixel_values"));
        const std::vector<LayoutRawOutput> raw = model.forward(pixels);
        ASSERT_FALSE(raw.empty());
        EXPECT_EQ(raw[0].class_kinds, expected) << name;
        const nlohmann::json ref = nlohmann::json::parse(std::ifstream(fx.reference_dir / "reference.json"));
        const LayoutRules rules = fixture_rules(ref);
        const LayoutInputSize input{model.preprocess_config().width, model.preprocess_config().height};
        size_t n_blocks = 0;
        for (size_t i = 0; i < raw.size(); ++i) {
            const int height = ref["target_sizes"][i][0].get<int>();
            const int width = ref["target_sizes"][i][1].get<int>();
            for (const LayoutDetection& d : detect_layout_blocks(raw[i], width, height, rules, input)) {
                EXPECT_NE(std::find(expected.begin(), expected.end(), d.label), expected.end())
                    << name << ": block of kind " << layout_label_name(d.label);
                ++n_blocks;
            }
        }
        EXPECT_GT(n_blocks, 0u) << name;
    }
}

TEST(PpDocLayoutLabels, UnknownLabelsBecomeTheGenericKind) {
    const LayoutFixture fx("pp-doclayout-v3-tiny");
    const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "layout-own-labels";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const char* file : {"model.safetensors", "preprocessor_config.json"}) {
        std::filesystem::copy_file(fx.model_dir / file, dir / file);
    }
    nlohmann::json config = nlohmann::json::parse(std::ifstream(fx.model_dir / "config.json"));
    config["id2label"] = {{"0", "stamp"}, {"1", "barcode"}, {"2", "LABEL_2"}, {"3", "logo"}, {"4", "margin"}};
    config["label2id"] = {{"stamp", 0}, {"barcode", 1}, {"LABEL_2", 2}, {"logo", 3}, {"margin", 4}};
    std::ofstream(dir / "config.json") << config.dump(1);

    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout model(*backend, dir);
    const Tensor pixels = backend->upload(fx.f32("pixel_values"), fx.shape("pixel_values"));
    const std::vector<LayoutRawOutput> raw = model.forward(pixels);
    const int text = layout_label_id(kGenericLayoutLabel);
    EXPECT_EQ(raw.at(0).class_kinds, std::vector<int>(5, text));
    const nlohmann::json ref = nlohmann::json::parse(std::ifstream(fx.reference_dir / "reference.json"));
    const LayoutRules rules = fixture_rules(ref);
    const LayoutInputSize input{model.preprocess_config().width, model.preprocess_config().height};
    size_t n_blocks = 0;
    for (size_t i = 0; i < raw.size(); ++i) {
        const int height = ref["target_sizes"][i][0].get<int>();
        const int width = ref["target_sizes"][i][1].get<int>();
        for (const LayoutDetection& d : detect_layout_blocks(raw[i], width, height, rules, input)) {
            EXPECT_EQ(d.label, text);
            ++n_blocks;
        }
    }
    EXPECT_GT(n_blocks, 0u);
    std::filesystem::remove_all(dir);
}

// V2 sorts its queries with torch.argsort, which leaves the order of equal keys to the implementation: its
// detector outputs are compared as sets of rows, each of the reference's rows matched to the nearest of ours.
TEST(PpDocLayoutV2, DetectorMatchesTheReferenceUpToTheQueryOrder) {
    const LayoutFixture fx("pp-doclayout-v2-tiny");
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout model(*backend, fx.model_dir);
    const std::vector<LayoutRawOutput> pages =
        model.forward(backend->upload(fx.f32("pixel_values"), fx.shape("pixel_values")));
    const auto [logits_error, boxes_error] = testing::matched_errors(pages, fx);
    std::cout << "pp-doclayout-v2-tiny: relative error logits " << logits_error << ", boxes " << boxes_error
              << "\n";
    EXPECT_LT(logits_error, 1e-4);
    EXPECT_LT(boxes_error, 1e-4);
    for (const LayoutRawOutput& page : pages) {
        EXPECT_EQ(page.order_logits.size(), static_cast<size_t>(page.n_queries * page.n_queries));
    }
}

// With bfloat16 products the linear layers of the decoder and the reading-order network are stored in
// bfloat16 (half their bytes) and the outputs move by their rounding, no more.
TEST(PpDocLayoutV2, Bfloat16ProductsStoreTheLinearLayersInBfloat16) {
    const LayoutFixture fx("pp-doclayout-v2-tiny");
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout exact(*backend, fx.model_dir);
    const PpDocLayout rounded(*backend, fx.model_dir, {.conv_precision = ConvPrecision::Bfloat16});
    EXPECT_LT(rounded.n_weight_bytes(), exact.n_weight_bytes());
    const Tensor pixels = backend->upload(fx.f32("pixel_values"), fx.shape("pixel_values"));
    const auto [logits_error, boxes_error] = testing::matched_errors(rounded.forward(pixels), fx);
    std::cout << "pp-doclayout-v2-tiny, bfloat16 linear layers: relative error logits " << logits_error
              << ", boxes " << boxes_error << "\n";
    EXPECT_GT(logits_error, 1e-4);  // the float32 model's bound: the rounding shows
    EXPECT_LT(logits_error, 3e-2);
    EXPECT_LT(boxes_error, 3e-2);
}

// The reading-order network on the reference's detector outputs, in the reference's order.
TEST(PpDocLayoutV2, ReadingOrderMatchesTheReference) {
    const LayoutFixture fx("pp-doclayout-v2-tiny");
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout model(*backend, fx.model_dir);
    const int q = model.config().num_queries;
    const int k = model.config().num_labels();
    const std::vector<float> ref_logits = fx.f32("logits");
    const std::vector<float> ref_boxes = fx.f32("pred_boxes");
    std::vector<LayoutRawOutput> pages(2);
    for (size_t b = 0; b < pages.size(); ++b) {
        pages[b].n_queries = q;
        pages[b].n_classes = k;
        pages[b].logits.assign(ref_logits.begin() + static_cast<std::ptrdiff_t>(b * q * k),
                               ref_logits.begin() + static_cast<std::ptrdiff_t>((b + 1) * q * k));
        pages[b].pred_boxes.assign(ref_boxes.begin() + static_cast<std::ptrdiff_t>(b * q * 4),
                                   ref_boxes.begin() + static_cast<std::ptrdiff_t>((b + 1) * q * 4));
    }
    model.add_v2_order_logits(pages);
    const double order = testing::relative_error(joined(
                                                     pages, [](auto& p) -> auto& { return p.order_logits; }),
                                                 fx.f32("order_logits"));
    std::cout << "pp-doclayout-v2-tiny: relative error order logits " << order << "\n";
    EXPECT_LT(order, 1e-4);

    // And the detections made of them.
    const nlohmann::json ref = nlohmann::json::parse(std::ifstream(fx.reference_dir / "reference.json"));
    const LayoutInputSize input{model.preprocess_config().width, model.preprocess_config().height};
    for (size_t i = 0; i < pages.size(); ++i) {
        const nlohmann::json& expected = ref["detections"][i];
        const std::vector<LayoutDetection> got =
            post_process_layout(pages[i], ref["target_sizes"][i][1].get<int>(),
                                ref["target_sizes"][i][0].get<int>(), ref["threshold"].get<float>(), input);
        ASSERT_EQ(got.size(), expected["scores"].size());
        for (size_t d = 0; d < got.size(); ++d) {
            EXPECT_EQ(got[d].label, expected["labels"][d].get<int>());
            EXPECT_EQ(got[d].order, expected["order_seq"][d].get<int>());
        }
    }
}

TEST(PpDocLayoutFiles, PaddleInferenceFolderNamesTheSafetensorsRepository) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "folio-paddle-layout";
    std::filesystem::create_directories(dir);
    for (const char* f : {"inference.json", "inference.pdiparams"}) {
        std::ofstream(dir / f) << "x";
    }
    std::ofstream(dir / "inference.yml") << "Global:\n  model_name: PP-DocLayoutV2\n";
    try {
        open_layout_model_files(dir);
        ADD_FAILURE() << "a Paddle inference folder was accepted";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("PaddlePaddle/PP-DocLayoutV2_safetensors"), std::string::npos)
            << e.what();
    }
    std::filesystem::remove_all(dir);
}

// A page of one pixel and a blank page go through the image processor and the model like any other.
TEST(PpDocLayoutFiles, TinyAndBlankPagesRun) {
    const LayoutFixture fx("pp-doclayout-v3-tiny");
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PpDocLayout model(*backend, fx.model_dir);
    const std::vector<uint8_t> dot{10, 20, 30};
    const std::vector<uint8_t> blank(300 * 200 * 3, 255);
    const PageImage pages[] = {{dot, 1, 1}, {blank, 300, 200}};
    const std::vector<LayoutRawOutput> out = model.detect(pages);
    ASSERT_EQ(out.size(), 2u);
    for (const LayoutRawOutput& page : out) {
        EXPECT_EQ(page.logits.size(), static_cast<size_t>(page.n_queries * page.n_classes));
        EXPECT_TRUE(
            std::all_of(page.logits.begin(), page.logits.end(), [](float v) { return std::isfinite(v); }));
    }
}

TEST(PpDocLayoutFiles, HugePageRefusedBeforeAnyWork) {
    const LayoutPreprocessConfig config;
    const PageImage page{{}, 20000, 20000};
    EXPECT_THROW(preprocess_layout_page(page, config), std::runtime_error);
}

}  // namespace
}  // namespace folio
