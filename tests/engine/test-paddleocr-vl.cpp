// The PaddleOCR-VL model on the CPU backend against the reference implementation's outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "app/images/image-loader.h"
#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/files/weight-source.h"
#include "engine/image/image-preprocess.h"
#include "engine/models/paddleocr-vl/chat-prompt.h"
#include "engine/models/paddleocr-vl/model-files.h"
#include "engine/models/paddleocr-vl/paddleocr-vl.h"
#include "engine/models/paddleocr-vl/positions.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/kv-cache.h"
#include "engine/tokenizer/tokenizer.h"
#include "fixture-model.h"
#include "fixture-reference.h"

namespace folio {
namespace {

using testing::relative_error;

constexpr double kTolerance = 1e-4;

using testing::prompt_case_name;
using testing::prompt_cases;
using testing::PromptCase;

// The fixture model, loaded once for all tests of this file.
struct Fixture {
    Fixture()
        : files(ModelFiles::open(testing::tiny_model_dir())), backend(make_cpu_backend(2)), model([this] {
              const auto weights = make_file_weight_source(*files);
              return std::make_unique<PaddleOcrVl>(*backend, files->config(), *weights);
          }()) {}

    std::unique_ptr<ModelFiles> files;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<PaddleOcrVl> model;
    testing::Reference reference;
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

// A weight source that records what is read, and when the quantization pass began.
class RecordingSource final : public WeightSource, public QuantizationObserver {
public:
    explicit RecordingSource(WeightSource& inner) : inner_(inner) {}

    std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) override {
        std::vector<float> values = inner_.load(name, shape);
        reads.push_back(name);
        n_bytes_read += static_cast<int64_t>(values.size() * sizeof(float));
        if (n_begins > 0) {
            read_in_pass[name] = static_cast<int64_t>(values.size());
        }
        return values;
    }
    bool has(const std::string& name) const override { return inner_.has(name); }

    void quantization_begins(int64_t n_weights) override {
        ++n_begins;
        n_to_quantize = n_weights;
    }
    void layer_quantized(const std::string& layer, int64_t n_weights) override {
        layers.push_back(layer);
        n_quantized += n_weights;
    }

    std::vector<std::string> reads;
    int64_t n_bytes_read = 0;
    std::map<std::string, int64_t> read_in_pass;  // weights read in the quantization pass, with their values
    int n_begins = 0;
    int64_t n_to_quantize = 0;
    int64_t n_quantized = 0;
    std::vector<std::string> layers;

private:
    WeightSource& inner_;
};

// How closely logits q follow logits p, position by position: the mean KL divergence of q's softmax from
// p's, and the share of positions whose largest logit is the same.  p, q [n, vocab]
std::pair<double, double> agreement(const std::vector<float>& p, const std::vector<float>& q, int64_t vocab) {
    const int64_t n = static_cast<int64_t>(p.size()) / vocab;
    double kl = 0.0;
    int64_t n_agree = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float* p_logits = p.data() + i * vocab;
        const float* q_logits = q.data() + i * vocab;
        const double p_max = *std::max_element(p_logits, p_logits + vocab);
        const double q_max = *std::max_element(q_logits, q_logits + vocab);
        double p_sum = 0.0, q_sum = 0.0;
        for (int64_t v = 0; v < vocab; ++v) {
            p_sum += std::exp(p_logits[v] - p_max);
            q_sum += std::exp(q_logits[v] - q_max);
        }
        for (int64_t v = 0; v < vocab; ++v) {
            const double log_p = p_logits[v] - p_max - std::log(p_sum);
            const double log_q = q_logits[v] - q_max - std::log(q_sum);
            kl += std::exp(log_p) * (log_p - log_q);
        }
        n_agree += std::max_element(p_logits, p_logits + vocab) - p_logits ==
                   std::max_element(q_logits, q_logits + vocab) - q_logits;
    }
    return {kl / static_cast<double>(n), static_cast<double>(n_agree) / static_cast<double>(n)};
}

class PaddleOcrVlTest : public ::testing::TestWithParam<PromptCase> {
protected:
    PreprocessedImages reference_images(const PromptCase& c) const {
        return testing::reference_images(*reference_, c);
    }
    ChatPromptTokens reference_prompt(const PromptCase& c) const {
        return testing::reference_prompt(*reference_, c, files_->config().image_token_id);
    }
    Tensor prompt_logits(PaddleOcrVl& model, const PromptCase& c) const {
        return testing::prompt_logits(model, reference_prompt(c), reference_images(c));
    }

    ModelFiles* files_ = fixture().files.get();
    Backend* backend_ = fixture().backend.get();
    PaddleOcrVl* model_ = fixture().model.get();
    testing::Reference* reference_ = &fixture().reference;
};

TEST_P(PaddleOcrVlTest, VisionEncoderTakesPixelsInParts) {
    const PromptCase& c = GetParam();
    const PreprocessedImages images = reference_images(c);
    if (images.grids.empty()) {
        GTEST_SKIP() << c.key << " has no image";
    }
    const std::vector<float> whole =
        backend_->download(model_->encode_vision(images.pixel_values, images.grids));
    // Uneven parts that split rows of pixels, with an empty one between.
    const std::span<const float> all(images.pixel_values);
    const size_t cut = all.size() / 3 + 5;
    const std::vector<std::span<const float>> parts = {all.first(cut), all.subspan(cut, 0), all.subspan(cut)};
    EXPECT_EQ(backend_->download(model_->encode_vision(parts, images.grids)), whole);
    const std::vector<std::span<const float>> short_parts = {all.first(cut)};
    EXPECT_THROW(model_->encode_vision(short_parts, images.grids), Error);
    EXPECT_THROW(backend_->upload(short_parts, {static_cast<int64_t>(all.size())}), Error);
}

// Levels with their table give what their values give, bit for bit, in parts that split patches too.
TEST_P(PaddleOcrVlTest, VisionEncoderTakesLevels) {
    const PromptCase& c = GetParam();
    if (c.images.empty()) {
        GTEST_SKIP() << c.key << " has no image";
    }
    std::vector<Image> files;
    for (const auto& name : c.images) {
        files.push_back(load_image(testing::fixtures_dir() / "images" / (name + ".png")));
    }
    const PreprocessedImages images = preprocess_images(files, files_->preprocessor());
    ASSERT_FALSE(images.levels.empty());
    const std::vector<float> values = images.values();
    const std::vector<float> expected = backend_->download(model_->encode_vision(values, images.grids));
    const std::span<const uint8_t> all(images.levels);
    const size_t cut = all.size() / 3 + 7;
    const std::vector<std::span<const uint8_t>> parts = {all.first(cut), all.subspan(cut, 0),
                                                         all.subspan(cut)};
    EXPECT_EQ(backend_->download(model_->encode_vision(parts, images.level_values, images.grids)), expected);

    const std::vector<std::span<const uint8_t>> short_parts = {all.first(cut)};
    EXPECT_THROW(model_->encode_vision(short_parts, images.level_values, images.grids), Error);
    const auto n = static_cast<int64_t>(images.n_patches()), patch_dim = images.patch_dim();
    const std::span<const float> table(images.level_values);
    EXPECT_THROW(backend_->upload_levels(parts, table.first(512), patch_dim / 3, {n, patch_dim}), Error);
    EXPECT_THROW(backend_->upload_levels(parts, table, patch_dim / 3 + 1, {n, patch_dim}), Error);
    EXPECT_THROW(backend_->upload_levels(parts, table, patch_dim / 3, {n + 1, patch_dim}), Error);
}

// A step without images runs the vision encoder over nothing.
TEST(PaddleOcrVlVision, NoImagesGiveNoFeatures) {
    PaddleOcrVl& model = *fixture().model;
    const int64_t vd = model.config().vision.hidden_size;
    for (const std::vector<ImageGrid>& grids :
         {std::vector<ImageGrid>{}, std::vector<ImageGrid>{{1, 0, 4}}}) {
        EXPECT_EQ(model.encode_vision(std::span<const float>{}, grids).shape, (std::vector<int64_t>{0, vd}));
        EXPECT_EQ(model.encode_vision(std::vector<std::span<const uint8_t>>{}, ChannelLevels{}, grids).shape,
                  (std::vector<int64_t>{0, vd}));
    }
}

TEST_P(PaddleOcrVlTest, VisionEncoderMatchesReference) {
    const PromptCase& c = GetParam();
    const PreprocessedImages images = reference_images(c);
    const Tensor vision = model_->encode_vision(images.pixel_values, images.grids);
    EXPECT_EQ(vision.shape, reference_->shape(c.key + ".vision_features"));
    const double err =
        relative_error(backend_->download(vision), reference_->f32(c.key + ".vision_features"));
    EXPECT_LT(err, kTolerance) << c.key;
    std::cout << c.key << ": vision features relative error " << err << "\n";

    const Tensor projected = model_->project(vision, images.grids);
    EXPECT_EQ(projected.shape, reference_->shape(c.key + ".projector_features"));
    EXPECT_LT(relative_error(backend_->download(projected), reference_->f32(c.key + ".projector_features")),
              kTolerance);
}

// The learned 3x3 position grid resampled onto a 2x5 image, align_corners: rows land on grid rows 0 and 2,
// columns on 0, 0.5, 1, 1.5 and 2; each patch takes its four neighbours, weighted by distance. A 1x1 image
// takes grid position 0; the taps of consecutive images follow one another.
TEST(VisionPositionTaps, BilinearTapsOfEachPatch) {
    constexpr int kSide = 3;
    const std::vector<ImageGrid> grids = {{1, 2, 5}, {1, 1, 1}};
    const PositionTaps taps = vision_position_taps(grids, kSide);
    ASSERT_EQ(taps.rows.size(), 4u * 11);
    ASSERT_EQ(taps.weights.size(), 4u * 11);
    const auto patch = [&](int p) {
        return std::pair{std::vector<int64_t>(taps.rows.begin() + 4 * p, taps.rows.begin() + 4 * p + 4),
                         std::vector<float>(taps.weights.begin() + 4 * p, taps.weights.begin() + 4 * p + 4)};
    };
    // Row 0, column 1: grid (0, 0.5), between grid columns 0 and 1 of grid row 0 (row taps 0 and 1, weight 1
    // and 0).
    EXPECT_EQ(patch(1).first, (std::vector<int64_t>{0, 1, 3, 4}));
    EXPECT_EQ(patch(1).second, (std::vector<float>{0.5f, 0.5f, 0.0f, 0.0f}));
    // Row 1, column 3: grid (2, 1.5); the row's second tap is clamped to the last grid row.
    EXPECT_EQ(patch(8).first, (std::vector<int64_t>{7, 8, 7, 8}));
    EXPECT_EQ(patch(8).second, (std::vector<float>{0.5f, 0.5f, 0.0f, 0.0f}));
    // Row 1, column 4: the grid's last position.
    EXPECT_EQ(patch(9).first, (std::vector<int64_t>{8, 8, 8, 8}));
    EXPECT_EQ(patch(9).second, (std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f}));
    EXPECT_EQ(patch(10).first, (std::vector<int64_t>{0, 1, 3, 4}));
    EXPECT_EQ(patch(10).second, (std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f}));
    for (int p = 0; p < 11; ++p) {
        const auto w = patch(p).second;
        EXPECT_FLOAT_EQ(w[0] + w[1] + w[2] + w[3], 1.0f) << p;
    }
}

// A patch's rotary row is its row index's values, its column index's, then both again; the axis tables'
// rows gathered by vision_rope_rows give exactly that.
TEST(VisionRope, AxisRowsAssembleEachPatchsRow) {
    const std::vector<ImageGrid> grids = {{1, 2, 3}, {1, 4, 1}};
    const std::vector<int64_t> rows = vision_rope_rows(grids);
    ASSERT_EQ(rows.size(), 4u * 10);
    EXPECT_EQ(std::vector<int64_t>(rows.begin() + 4 * 5, rows.begin() + 4 * 6),
              (std::vector<int64_t>{1, 2, 1, 2}))
        << "the first image's last patch, row 1 column 2";
    EXPECT_EQ(std::vector<int64_t>(rows.end() - 4, rows.end()), (std::vector<int64_t>{3, 0, 3, 0}))
        << "the second image's last patch, row 3 column 0";
    const std::vector<int64_t> both = vision_rope_rows(grids, 2, 100);
    ASSERT_EQ(both.size(), 2 * rows.size());
    EXPECT_TRUE(std::equal(rows.begin(), rows.end(), both.begin()));
    for (size_t i = 0; i < rows.size(); ++i) {
        ASSERT_EQ(both[rows.size() + i], rows[i] + 100) << i;
    }

    constexpr int kHeadDim = 12;
    constexpr float kTheta = 10000.0f;
    const RopeTables axis = vision_axis_rope_tables(4, kHeadDim, kTheta);
    ASSERT_EQ(axis.cos.size(), 4u * kHeadDim / 4);
    const auto backend = make_cpu_backend(1);
    const std::vector<float> cos = backend->download(
        backend->gather_rows(backend->upload(axis.cos, {4, kHeadDim / 4}), rows));  // [10, kHeadDim]
    const std::vector<float> inv = rope_inverse_frequencies(kHeadDim / 2, kTheta);
    const auto at = [&](int64_t patch, int64_t d) { return cos[static_cast<size_t>(patch * kHeadDim + d)]; };
    for (int i = 0; i < kHeadDim / 4; ++i) {
        const int q = kHeadDim / 4;
        EXPECT_EQ(at(5, i), std::cos(1.0f * inv[i])) << i;
        EXPECT_EQ(at(5, q + i), std::cos(2.0f * inv[i])) << i;
        EXPECT_EQ(at(5, 2 * q + i), at(5, i)) << i;
        EXPECT_EQ(at(5, 3 * q + i), at(5, q + i)) << i;
        EXPECT_EQ(at(9, i), std::cos(3.0f * inv[i])) << i;
        EXPECT_EQ(at(9, q + i), 1.0f) << i;
    }
    EXPECT_THROW(vision_axis_rope_tables(4, 10, kTheta), Error);
}

TEST_P(PaddleOcrVlTest, PositionIdsMatchReference) {
    const PromptCase& c = GetParam();
    const ChatPromptTokens prompt = reference_prompt(c);
    const MropePositions positions = compute_mrope_positions(prompt.modality, reference_images(c).grids,
                                                             files_->config().vision.spatial_merge_size);
    const std::vector<int64_t> expected = reference_->i64(c.key + ".position_ids");  // [3, n]
    const size_t n = prompt.ids.size();
    ASSERT_EQ(positions.n_axes, 3);
    ASSERT_EQ(positions.pos.size(), 3 * n);
    for (size_t i = 0; i < n; ++i) {
        for (size_t axis = 0; axis < 3; ++axis) {
            ASSERT_EQ(positions.pos[3 * i + axis], expected[axis * n + i])
                << "token " << i << " axis " << axis;
        }
    }
}

TEST_P(PaddleOcrVlTest, PromptLogitsMatchReference) {
    const PromptCase& c = GetParam();
    const Tensor logits = prompt_logits(*model_, c);
    EXPECT_EQ(logits.shape, reference_->shape(c.key + ".logits"));
    const double err = relative_error(backend_->download(logits), reference_->f32(c.key + ".logits"));
    EXPECT_LT(err, kTolerance);
    std::cout << c.key << ": prompt logits relative error " << err << "\n";
}

// Weight-only quantization against the unquantized model on the fixture prompts: the mean KL divergence of
// the next-token distributions over every prompt position, and how often the top token agrees.
TEST_P(PaddleOcrVlTest, QuantizedLogitsStayCloseToUnquantized) {
    const PromptCase& c = GetParam();
    const std::vector<float> dense = backend_->download(prompt_logits(*model_, c));
    const int64_t vocab = files_->config().text.vocab_size;
    const int64_t n = static_cast<int64_t>(dense.size()) / vocab;
    struct Bound {
        Quantization type;
        double max_kl;
        double min_top1;
    };
    // The fixture model's random weights give flat distributions whose top two logits are often close, so
    // top-1 agreement is a harsh measure here; the bounds sit below what was measured, with margin.
    std::vector<double> kls;
    for (const Bound bound : {Bound{Quantization::Wint8, 2e-3, 0.85}, Bound{Quantization::Wint4, 0.3, 0.5}}) {
        ModelLoadParams load;
        load.quantization = bound.type;
        load.group_size = 64;
        const auto weights = make_file_weight_source(*files_);
        PaddleOcrVl quantized(*backend_, files_->config(), *weights, load);
        const auto [kl, top1] = agreement(dense, backend_->download(prompt_logits(quantized, c)), vocab);
        std::cout << c.key << ": " << quantization_name(bound.type) << " mean KL " << kl
                  << ", top-1 agreement " << top1 << " over " << n << " positions, weights "
                  << quantized.n_weight_bytes() << " bytes\n";
        EXPECT_LT(kl, bound.max_kl);
        EXPECT_GE(top1, bound.min_top1);
        kls.push_back(kl);
    }
    EXPECT_LT(kls[0] * 20, kls[1]) << "8 bits are far closer than 4";

    // Weights in bfloat16 (8 significant bits) stay within a percent of the float32 logits.
    ModelLoadParams load;
    load.bf16_weights = true;
    const auto weights = make_file_weight_source(*files_);
    PaddleOcrVl bf16(*backend_, files_->config(), *weights, load);
    const double err = testing::relative_error(backend_->download(prompt_logits(bf16, c)), dense);
    std::cout << c.key << ": bf16 weights, logits relative error " << err << "\n";
    EXPECT_LT(err, 1e-2);
}

// The vision encoder's linear layers in FP8 (E4M3 weights a scale a channel, rows rounded to E4M3 a scale a
// row), the language model float32: the features against the reference's, and the prompt logits against the
// float32 model's as the quantized language models are measured above (the fixture's flat distributions make
// its greedy tokens a harsh measure). The bounds sit above what was measured.
TEST_P(PaddleOcrVlTest, Fp8VisionEncoderStaysNearTheReference) {
    const PromptCase& c = GetParam();
    ModelLoadParams load;
    load.vision_fp8 = true;
    const auto weights = make_file_weight_source(*files_);
    PaddleOcrVl fp8(*backend_, files_->config(), *weights, load);
    EXPECT_LT(fp8.n_weight_bytes(), model_->n_weight_bytes());
    const PreprocessedImages images = reference_images(c);
    const double err =
        relative_error(backend_->download(fp8.encode_vision(images.pixel_values, images.grids)),
                       reference_->f32(c.key + ".vision_features"));
    const auto [kl, top1] =
        agreement(backend_->download(prompt_logits(*model_, c)), backend_->download(prompt_logits(fp8, c)),
                  files_->config().text.vocab_size);
    std::cout << c.key << ": FP8 vision encoder, features relative error " << err
              << ", prompt logits mean KL " << kl << ", top-1 agreement " << top1 << "\n";
    EXPECT_GT(err, 1e-4) << "the features come from E4M3 products";
    EXPECT_LT(err, 0.08);
    EXPECT_LT(kl, 0.02);
    EXPECT_GE(top1, 0.8);
}

TEST_P(PaddleOcrVlTest, GreedyTokensMatchReference) {
    const PromptCase& c = GetParam();
    const std::vector<int64_t> expected = reference_->i64(c.key + ".greedy_tokens");
    GenerateParams params;
    params.max_tokens = static_cast<int>(expected.size());
    const GenerateResult result =
        generate(*model_, reference_prompt(c), reference_images(c), params, [](int32_t) { return true; });
    const std::vector<int64_t> tokens(result.tokens.begin(), result.tokens.end());
    EXPECT_EQ(tokens, expected);
}

// The whole path a user takes: PNG files, preprocessing, tokenizer and chat prompt, generation.
TEST_P(PaddleOcrVlTest, EndToEndFromFilesMatchesReference) {
    const PromptCase& c = GetParam();
    std::vector<Image> images;
    for (const auto& name : c.images) {
        images.push_back(load_image(testing::fixtures_dir() / "images" / (name + ".png")));
    }
    const PreprocessedImages pre = preprocess_images(images, files_->preprocessor());
    const auto tokenizer = Tokenizer::load(testing::tiny_model_dir());
    std::vector<int64_t> n_image_tokens;
    for (const ImageGrid& g : pre.grids) {
        n_image_tokens.push_back(g.n_patches() / 4);
    }
    const ModelConfig& cfg = files_->config();
    const ChatPromptTokens prompt = build_chat_prompt(
        *tokenizer, *paddleocr_vl_chat_template(testing::tiny_model_dir()),
        {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id}, n_image_tokens, c.task);
    const std::vector<int64_t> ids(prompt.ids.begin(), prompt.ids.end());
    ASSERT_EQ(ids, reference_->i64(c.key + ".input_ids"));

    const std::vector<int64_t> expected = reference_->i64(c.key + ".greedy_tokens");
    GenerateParams params;
    params.max_tokens = static_cast<int>(expected.size());
    int n_streamed = 0;
    const GenerateResult result = generate(*model_, prompt, pre, params, [&](int32_t) {
        ++n_streamed;
        return true;
    });
    EXPECT_EQ(std::vector<int64_t>(result.tokens.begin(), result.tokens.end()), expected);
    EXPECT_EQ(n_streamed, static_cast<int>(result.tokens.size()));
}

// The same path with a tokenizer that normalizes (an nmt_nfkc tokenizer.model, which transformers converts
// with its precompiled charsmap): prompt ids and greedy tokens of the reference on that folder.
TEST_P(PaddleOcrVlTest, EndToEndWithANormalizingTokenizerMatchesReference) {
    const PromptCase& c = GetParam();
    const std::filesystem::path dir =
        testing::fixtures_dir().parent_path() / "tokenizers" / "paddleocr-vl-tiny-nfkc";
    const nlohmann::json reference = nlohmann::json::parse(std::ifstream(dir / "reference.json"));
    const nlohmann::json& expected = reference.at("prompts").at(c.key);
    const auto files = ModelFiles::open(dir);
    const auto tokenizer = Tokenizer::load(dir);
    EXPECT_EQ(tokenizer->description(), "TokenizersBackend (tokenizer.model)");
    std::vector<Image> images;
    for (const auto& name : c.images) {
        images.push_back(load_image(testing::fixtures_dir() / "images" / (name + ".png")));
    }
    const PreprocessedImages pre = preprocess_images(images, files->preprocessor());
    std::vector<int64_t> n_image_tokens;
    for (const ImageGrid& g : pre.grids) {
        n_image_tokens.push_back(g.n_patches() / 4);
    }
    const ModelConfig& cfg = files->config();
    const ChatPromptTokens prompt = build_chat_prompt(
        *tokenizer, *paddleocr_vl_chat_template(testing::tiny_model_dir()),
        {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id}, n_image_tokens, c.task);
    ASSERT_EQ(prompt.ids, expected.at("input_ids").get<std::vector<int32_t>>());
    // The normalizer makes this prompt differ from the identity tokenizer's.
    EXPECT_NE(std::vector<int64_t>(prompt.ids.begin(), prompt.ids.end()),
              reference_->i64(c.key + ".input_ids"));

    const auto greedy = expected.at("greedy_tokens").get<std::vector<int32_t>>();
    GenerateParams params;
    params.max_tokens = static_cast<int>(greedy.size());
    const GenerateResult result = generate(*model_, prompt, pre, params, [](int32_t) { return true; });
    EXPECT_EQ(result.tokens, greedy);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PaddleOcrVlTest, ::testing::ValuesIn(prompt_cases()), prompt_case_name);

TEST(PaddleOcrVlGenerate, CancelStopsAfterTheCallbackSaysSo) {
    const auto files = ModelFiles::open(testing::tiny_model_dir());
    const auto backend = make_cpu_backend(2);
    const auto weights = make_file_weight_source(*files);
    PaddleOcrVl model(*backend, files->config(), *weights);
    ChatPromptTokens prompt{{600, 10, 20, 30}, std::vector<TokenModality>(4, TokenModality::Text)};
    GenerateParams params;
    params.max_tokens = 20;
    int n_calls = 0;
    const GenerateResult result = generate(model, prompt, {}, params, [&](int32_t) { return ++n_calls < 3; });
    EXPECT_EQ(result.finish, FinishReason::Cancelled);
    EXPECT_EQ(result.tokens.size(), 3u);
}

TEST(PaddleOcrVlGenerate, RejectsBadRequests) {
    const auto files = ModelFiles::open(testing::tiny_model_dir());
    const auto backend = make_cpu_backend(1);
    const auto weights = make_file_weight_source(*files);
    PaddleOcrVl model(*backend, files->config(), *weights);
    const auto ok = [](int32_t) { return true; };
    GenerateParams params;
    EXPECT_THROW(generate(model, ChatPromptTokens{}, {}, params, ok), Error);
    params.max_tokens = 0;
    EXPECT_THROW(generate(model, ChatPromptTokens{{600}, {TokenModality::Text}}, {}, params, ok), Error);
    params.max_tokens = 1 << 20;
    EXPECT_THROW(generate(model, ChatPromptTokens{{600}, {TokenModality::Text}}, {}, params, ok), Error);
    params.max_tokens = 4;
    // Image placeholders without an image.
    EXPECT_THROW(generate(model,
                          ChatPromptTokens{{600, 602, 602},
                                           {TokenModality::Text, TokenModality::Image, TokenModality::Image}},
                          {}, params, ok),
                 Error);
    // A token id outside the vocabulary.
    EXPECT_THROW(generate(model, ChatPromptTokens{{600, 5000}, {TokenModality::Text, TokenModality::Text}},
                          {}, params, ok),
                 Error);
}

TEST(PaddleOcrVlWeights, ByteCountsMatchTheLoadedModelInEveryFormat) {
    const auto files = ModelFiles::open(testing::tiny_model_dir());
    const auto backend = make_cpu_backend(1);
    for (const Quantization type : {Quantization::None, Quantization::Wint8, Quantization::Wint4}) {
        for (const int variant : {0, 1, 2, 3}) {
            const bool vision = variant & 1, bf16 = variant & 2;
            ModelLoadParams load;
            load.quantization = type;
            load.group_size = 64;
            load.quantize_vision = vision;
            load.bf16_weights = bf16;
            const auto weights = make_file_weight_source(*files);
            const PaddleOcrVl model(*backend, files->config(), *weights, load);
            EXPECT_EQ(weight_bytes(files->config(), load), model.n_weight_bytes())
                << quantization_name(type) << (vision ? " with the vision encoder" : "")
                << (bf16 ? ", bf16" : "");
            load.vision_fp8 = true;
            const PaddleOcrVl fp8(*backend, files->config(), *make_file_weight_source(*files), load);
            EXPECT_EQ(weight_bytes(files->config(), load), fp8.n_weight_bytes())
                << quantization_name(type) << " with an FP8 vision encoder" << (bf16 ? ", bf16" : "");
        }
    }
}

// The WINT8/WINT4 layers are read and quantized in a pass of their own after every other weight: each weight
// is read once, the pass reads exactly the quantized layers' weights and tells of each layer. Without
// quantization there is no pass.
TEST(PaddleOcrVlWeights, QuantizedLayersAreReadInAPassAfterTheRest) {
    const auto files = ModelFiles::open(testing::tiny_model_dir());
    const auto backend = make_cpu_backend(1);
    const TextConfig& tc = files->config().text;
    const VisionConfig& vc = files->config().vision;
    const int64_t text_layer =
        int64_t{tc.hidden_size} * tc.head_dim * (2 * tc.num_attention_heads + 2 * tc.num_key_value_heads) +
        3 * int64_t{tc.hidden_size} * tc.intermediate_size;
    const int64_t vision_layer =
        4 * int64_t{vc.hidden_size} * vc.hidden_size + 2 * int64_t{vc.hidden_size} * vc.intermediate_size;
    for (const Quantization type : {Quantization::None, Quantization::Wint8, Quantization::Wint4}) {
        for (const bool vision : {false, true}) {
            ModelLoadParams load;
            load.quantization = type;
            load.group_size = 64;
            load.quantize_vision = vision;
            const auto file_weights = make_file_weight_source(*files);
            RecordingSource recorded(*file_weights);
            const PaddleOcrVl model(*backend, files->config(), recorded, load, &recorded);
            const std::string what = std::string(quantization_name(type)) + (vision ? " with vision" : "");

            std::vector<std::string> sorted = recorded.reads;
            std::sort(sorted.begin(), sorted.end());
            EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end())
                << what << ": read twice";
            EXPECT_EQ(sorted, files->tensor_names()) << what;
            if (type == Quantization::None) {
                EXPECT_EQ(recorded.n_begins, 0) << what;
                EXPECT_TRUE(recorded.layers.empty()) << what;
                continue;
            }
            const int64_t expected =
                tc.num_hidden_layers * text_layer + (vision ? vc.num_hidden_layers * vision_layer : 0);
            EXPECT_EQ(recorded.n_begins, 1) << what;
            EXPECT_EQ(recorded.n_to_quantize, expected) << what;
            EXPECT_EQ(recorded.n_quantized, expected) << what;
            EXPECT_EQ(recorded.layers.size(), (vision ? 4u * vc.num_hidden_layers : 0u) +
                                                  4u * static_cast<size_t>(tc.num_hidden_layers))
                << what;
            int64_t n_read_in_pass = 0;
            for (const auto& [name, n] : recorded.read_in_pass) {
                EXPECT_TRUE(name.ends_with(".weight") && name.find(".layers.") != std::string::npos &&
                            (vision || name.starts_with("model.language_model.")))
                    << what << ": " << name;
                n_read_in_pass += n;
            }
            EXPECT_EQ(n_read_in_pass, expected) << what;
        }
    }
}

TEST(PaddleOcrVlRandom, FullSizeArchitectureBuildsWithRandomWeights) {
    ModelConfig cfg = parse_model_config("{}", "defaults");
    cfg.text.num_hidden_layers = 1;  // one layer of each stack keeps the test light; the shapes are full size
    cfg.vision.num_hidden_layers = 1;
    const auto backend = make_cpu_backend(2);
    const auto random = make_random_weight_source(1);
    RecordingSource weights(*random);
    PaddleOcrVl model(*backend, cfg, weights);
    // The service counts a random source's bytes against the float32 bytes of every weight.
    EXPECT_EQ(weights.n_bytes_read, weight_bytes(cfg, ModelLoadParams{}));
    const int64_t per_text_layer =
        1024LL * 2048 + 2 * 1024LL * 256 + 2048LL * 1024 + 3 * 1024LL * 3072 + 2 * 1024;
    const int64_t per_vision_layer = 4 * (1152LL * 1152 + 1152) + 2 * 1152LL * 4304 + 4304 + 1152 + 4 * 1152;
    const int64_t embeddings = 103424LL * 1024 + 1152LL * 588 + 1152 + 27 * 27 * 1152LL;
    const int64_t projector = 2 * 1152 + 4608LL * 4608 + 4608 + 1024LL * 4608 + 1024;
    EXPECT_EQ(model.n_params(), per_text_layer + per_vision_layer + embeddings + projector + 2 * 1152 + 1024);
}

// Seeded random weights: a tensor's values follow from the seed and its name alone, so that a tensor-parallel
// rank that loads fewer tensors (no embedding table or vision encoder) draws the same values as rank 0 for
// the layers both load.
TEST(RandomWeights, ATensorsValuesFollowItsNameNotTheLoadOrder) {
    const auto first = make_random_weight_source(7);
    const std::vector<float> a = first->load("model.layers.0.mlp.down_proj.weight", {4, 8});
    const std::vector<float> b = first->load("model.embed_tokens.weight", {16, 4});
    const auto second = make_random_weight_source(7);
    EXPECT_EQ(second->load("model.embed_tokens.weight", {16, 4}), b);
    EXPECT_EQ(second->load("model.layers.0.mlp.down_proj.weight", {4, 8}), a);
    EXPECT_EQ(second->load("model.layers.0.mlp.down_proj.weight", {4, 8}), a) << "loaded twice";
    std::vector<float> in_place(32);
    second->load_into("model.layers.0.mlp.down_proj.weight", {4, 8}, in_place);
    EXPECT_EQ(in_place, a) << "written in place";
    EXPECT_THROW(second->load_into("model.layers.0.mlp.down_proj.weight", {4, 4}, in_place), Error);
    EXPECT_NE(second->load("model.layers.1.mlp.down_proj.weight", {4, 8}), a) << "another name";
    EXPECT_NE(make_random_weight_source(8)->load("model.layers.0.mlp.down_proj.weight", {4, 8}), a)
        << "another seed";
}

// The values' mean and deviation are the ones asked for, their shape near a normal's (about 68% within one
// deviation, none past 3.5), and a norm's weights lie about 1.
TEST(RandomWeights, ValuesHaveTheAskedDeviationAndANearlyNormalShape) {
    const auto source = make_random_weight_source(3, 0.05f);
    const struct {
        const char* name;
        std::vector<int64_t> shape;
        double mean, deviation;
    } cases[] = {{"model.layers.0.mlp.up_proj.weight", {1000, 1000}, 0.0, 0.05},
                 {"model.layers.0.mlp.up_proj.bias", {200000}, 0.0, 0.05},
                 {"model.layers.0.input_layernorm.weight", {200000}, 1.0, 0.1}};
    for (const auto& c : cases) {
        const std::vector<float> v = source->load(c.name, c.shape);
        double sum = 0.0, squares = 0.0, within = 0.0, worst = 0.0;
        for (const float x : v) {
            sum += x;
        }
        const double mean = sum / static_cast<double>(v.size());
        for (const float x : v) {
            const double z = (x - c.mean) / c.deviation;
            squares += (x - mean) * (x - mean);
            within += std::abs(z) < 1.0 ? 1.0 : 0.0;
            worst = std::max(worst, std::abs(z));
        }
        const double deviation = std::sqrt(squares / static_cast<double>(v.size()));
        EXPECT_NEAR(mean, c.mean, 0.01 * c.deviation) << c.name;
        EXPECT_NEAR(deviation, c.deviation, 0.01 * c.deviation) << c.name;
        EXPECT_NEAR(within / static_cast<double>(v.size()), 0.68, 0.03) << c.name;
        EXPECT_LT(worst, 3.5) << c.name;
        EXPECT_GT(worst, 2.5) << c.name << ": tails";
    }
}

}  // namespace
}  // namespace folio
