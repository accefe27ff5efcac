// The ERNIE-4.5-VL fixture model on the CUDA backend against the reference implementation's outputs (image
// features, prompt logits, greedy tokens); skipped where no CUDA device is present.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "engine/backend/cuda/make-cuda-backend.h"
#include "engine/runtime/generator.h"
#include "ernie45-vl-fixture.h"
#include "kernels/elementwise.h"

namespace folio {
namespace {

using testing::relative_error;

// The reference is float32, and so is every path of the CUDA backend at these settings.
constexpr double kTolerance = 1e-4;

class CudaErnie45VlTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
        // New tensors NaN-filled, so that a read of memory no operation wrote shows in the results.
        static testing::ErnieFixture f(make_cuda_backend(CudaBackendOptions{0, true}));
        f_ = &f;
    }
    testing::ErnieFixture* f_ = nullptr;
};

TEST_P(CudaErnie45VlTest, ImageFeaturesAndPromptLogitsMatchReference) {
    const std::string& key = GetParam();
    if (f_->has_images(key)) {
        const PreprocessedImages im = f_->images(key);
        const std::span<const float> part(im.pixel_values);
        const Tensor features = f_->model->encode_images(std::span(&part, 1), im.grids);
        const double err =
            relative_error(f_->backend->download(features), f_->reference.f32(key + ".image_features"));
        std::cout << key << ": image features relative error " << err << "\n";
        EXPECT_LT(err, kTolerance);
    }
    const double err =
        relative_error(f_->backend->download(f_->prompt_logits(key)), f_->reference.f32(key + ".logits"));
    std::cout << key << ": prompt logits relative error " << err << "\n";
    EXPECT_LT(err, kTolerance);
}

TEST_P(CudaErnie45VlTest, GreedyTokensMatchReference) {
    const std::string& key = GetParam();
    const std::vector<int64_t> expected = f_->reference.i64(key + ".greedy_tokens");
    GenerateParams params;
    params.max_tokens = static_cast<int>(expected.size());
    const GenerateResult result =
        generate(*f_->model, f_->prompt(key), f_->images(key), params, [](int32_t) { return true; });
    EXPECT_EQ(std::vector<int64_t>(result.tokens.begin(), result.tokens.end()), expected);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaErnie45VlTest, ::testing::ValuesIn(testing::ernie_prompt_keys()));

}  // namespace
}  // namespace folio
