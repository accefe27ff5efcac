// The PaddleOCR-VL fixture model on the CUDA backend against the reference implementation's outputs;
// skipped where no CUDA device is present. FOLIO_FIXTURES_DIR in the environment overrides the fixtures'
// build-time path, for runs on another machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/make-cuda-backend.h"
#include "engine/files/safetensors.h"
#include "engine/files/weight-source.h"
#include "engine/image/image-preprocess.h"
#include "engine/models/paddleocr-vl/chat-prompt.h"
#include "engine/models/paddleocr-vl/model-files.h"
#include "engine/models/paddleocr-vl/paddleocr-vl.h"
#include "engine/models/paddleocr-vl/positions.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/kv-cache.h"
#include "fixture-model.h"
#include "fixture-reference.h"
#include "kernels/elementwise.h"

namespace folio {
namespace {

using testing::relative_error;

// As the CPU backend's model test: the reference is float32, and so is every path of the CUDA backend.
constexpr double kTolerance = 1e-4;

using testing::fixtures_dir;
using testing::prompt_case_name;
using testing::prompt_cases;
using testing::PromptCase;

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
          reference() {}

    std::vector<float> f32(const std::string& name) const { return reference.f32(name); }
    std::vector<int64_t> i64(const std::string& name) const { return reference.i64(name); }

    std::unique_ptr<ModelFiles> files;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<PaddleOcrVl> model;
    testing::Reference reference;
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
        return testing::reference_images(fixture_->reference, c);
    }
    ChatPromptTokens reference_prompt(const PromptCase& c) const {
        return testing::reference_prompt(fixture_->reference, c, fixture_->files->config().image_token_id);
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

    const Tensor logits = testing::prompt_logits(model, reference_prompt(c), images);
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

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaModelTest, ::testing::ValuesIn(prompt_cases()), prompt_case_name);

}  // namespace
}  // namespace folio
