// The PaddleOCR-VL fixture model on the CUDA backend against the reference implementation's outputs;
// skipped where no CUDA device is present. FOLIO_FIXTURES_DIR in the environment overrides the fixtures'
// build-time path, for runs on another machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "backend-cuda.h"
#include "backend.h"
#include "chat-prompt.h"
#include "elementwise.h"
#include "fixture-reference.h"
#include "generator.h"
#include "image-preprocess.h"
#include "kv-cache.h"
#include "model-loader.h"
#include "paddleocr-vl.h"
#include "rope.h"
#include "safetensors.h"
#include "weight-source.h"

namespace folio {
namespace {

using testing::relative_error;

// As the CPU backend's model test: the reference is float32, and so is every path of the CUDA backend.
constexpr double kTolerance = 1e-4;

std::filesystem::path fixtures_dir() {
    const char* dir = std::getenv("FOLIO_FIXTURES_DIR");
    return dir != nullptr && *dir != '\0' ? std::filesystem::path(dir)
                                          : std::filesystem::path(FOLIO_FIXTURES_DIR);
}

struct PromptCase {
    std::string key;
    std::vector<std::string> images;
};

const std::vector<PromptCase>& prompt_cases() {
    static const std::vector<PromptCase> cases = {{"one_image", {"tall"}}, {"two_images", {"wide", "small"}}};
    return cases;
}

// The fixture model on the CUDA backend, loaded once for all tests of this file; new tensors are NaN-filled
// so that a read of memory no operation wrote shows in the results.
struct Fixture {
    Fixture()
        : files(ModelFiles::open(fixtures_dir() / "paddleocr-vl-tiny")),
          backend(make_cuda_backend(CudaBackendOptions{0, true})),
          model([this] {
              const auto weights = make_file_weight_source(*files);
              return std::make_unique<PaddleOcrVl>(*backend, files->config(), *weights);
          }()),
          reference(SafetensorsFile::open(fixtures_dir() / "reference.safetensors")) {}

    std::vector<float> f32(const std::string& name) const { return to_f32(reference->get(name)); }
    std::vector<int64_t> i64(const std::string& name) const { return to_i64(reference->get(name)); }

    std::unique_ptr<ModelFiles> files;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<PaddleOcrVl> model;
    std::unique_ptr<SafetensorsFile> reference;
};

class CudaModelTest : public ::testing::TestWithParam<PromptCase> {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
        static Fixture f;
        fixture_ = &f;
    }

    PreprocessedImages reference_images(const PromptCase& c) const {
        PreprocessedImages out;
        for (const auto& name : c.images) {
            const auto px = fixture_->f32("pixel_values." + name);
            out.pixel_values.insert(out.pixel_values.end(), px.begin(), px.end());
            const auto g = fixture_->i64("grid_thw." + name);
            out.grids.push_back({g[0], g[1], g[2]});
        }
        return out;
    }

    ChatPromptTokens reference_prompt(const PromptCase& c) const {
        ChatPromptTokens prompt;
        for (const int64_t id : fixture_->i64(c.key + ".input_ids")) {
            prompt.ids.push_back(static_cast<int32_t>(id));
            prompt.is_image.push_back(id == fixture_->files->config().image_token_id ? 1 : 0);
        }
        return prompt;
    }

    Fixture* fixture_ = nullptr;
};

TEST_P(CudaModelTest, VisionAndPromptLogitsMatchReference) {
    const PromptCase& c = GetParam();
    PaddleOcrVl& model = *fixture_->model;
    Backend& backend = *fixture_->backend;
    const PreprocessedImages images = reference_images(c);
    const Tensor vision = model.encode_vision(images.pixel_values, images.grids);
    const double vision_err =
        relative_error(backend.download(vision), fixture_->f32(c.key + ".vision_features"));
    EXPECT_LT(vision_err, kTolerance);
    std::cout << c.key << ": vision features relative error " << vision_err << "\n";

    const ChatPromptTokens prompt = reference_prompt(c);
    Tensor embeds = model.embed(prompt.ids);
    const Tensor features = model.project(vision, images.grids);
    std::vector<int64_t> rows;
    for (size_t i = 0; i < prompt.ids.size(); ++i) {
        if (prompt.is_image[i]) {
            rows.push_back(static_cast<int64_t>(i));
        }
    }
    backend.scatter_rows(embeds, rows, features);
    const ModelConfig& cfg = fixture_->files->config();
    const MropePositions positions =
        compute_mrope_positions(prompt.is_image, images.grids, cfg.vision.spatial_merge_size);
    KvCache cache(backend, {cfg.text.num_hidden_layers, cfg.text.num_key_value_heads, cfg.text.head_dim,
                            static_cast<int64_t>(prompt.ids.size())});
    const Tensor logits = model.logits(model.forward_text(embeds, positions.pos, cache, 0));
    const double logits_err = relative_error(backend.download(logits), fixture_->f32(c.key + ".logits"));
    EXPECT_LT(logits_err, kTolerance);
    std::cout << c.key << ": prompt logits relative error " << logits_err << "\n";
}

TEST_P(CudaModelTest, GreedyTokensMatchReference) {
    const PromptCase& c = GetParam();
    const std::vector<int64_t> expected = fixture_->i64(c.key + ".greedy_tokens");
    GenerateParams params;
    params.max_tokens = static_cast<int>(expected.size());
    const GenerateResult result = generate(*fixture_->model, reference_prompt(c), reference_images(c), params,
                                           [](int32_t) { return true; });
    EXPECT_EQ(std::vector<int64_t>(result.tokens.begin(), result.tokens.end()), expected);
}

std::string prompt_case_name(const ::testing::TestParamInfo<PromptCase>& param_info) {
    return param_info.param.key;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaModelTest, ::testing::ValuesIn(prompt_cases()), prompt_case_name);

}  // namespace
}  // namespace folio
