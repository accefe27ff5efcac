// The Llama fixture model on the CUDA backend against the reference implementation's outputs (prompt logits,
// greedy tokens, and a 30,000-token prompt's greedy tokens); skipped where no CUDA device is present.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "engine/backend/cuda/make-cuda-backend.h"
#include "engine/runtime/generator.h"
#include "kernels/elementwise.h"
#include "llama-fixture.h"

namespace folio {
namespace {

using testing::relative_error;

// The reference is float32, and so is every path of the CUDA backend at these settings.
constexpr double kTolerance = 1e-4;

class CudaLlamaTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
        // New tensors NaN-filled, so that a read of memory no operation wrote shows in the results.
        static testing::LlamaFixture f(make_cuda_backend(CudaBackendOptions{0, true}));
        f_ = &f;
    }

    std::vector<int64_t> greedy(const PromptTokens& prompt, size_t n,
                                KvCacheDtype cache = KvCacheDtype::Auto) const {
        GenerateParams params;
        params.max_tokens = static_cast<int>(n);
        params.kv_cache_dtype = cache;
        const GenerateResult result = generate(*f_->model, prompt, {}, params, [](int32_t) { return true; });
        return {result.tokens.begin(), result.tokens.end()};
    }

    testing::LlamaFixture* f_ = nullptr;
};

TEST_F(CudaLlamaTest, PromptLogitsAndGreedyTokensMatchReference) {
    for (const std::string& key : testing::llama_prompt_keys()) {
        const double err =
            relative_error(f_->backend->download(f_->prompt_logits(key)), f_->reference.f32(key + ".logits"));
        std::cout << key << ": prompt logits relative error " << err << "\n";
        EXPECT_LT(err, kTolerance) << key;
        const std::vector<int64_t> expected = f_->reference.i64(key + ".greedy_tokens");
        EXPECT_EQ(greedy(f_->prompt(key), expected.size()), expected) << key;
    }
}

// 30,000 positions: the llama3-scaled frequencies at long range, and attention over many blocks.
TEST_F(CudaLlamaTest, LongPromptGreedyTokensMatchReference) {
    const std::vector<int64_t> expected = f_->reference.i64("long.greedy_tokens");
    EXPECT_EQ(greedy(f_->prompt("long"), expected.size()), expected);
}

// An 8-bit cache: the CPU backend's levels and logits (a level may round the other way where the backends'
// keys differ in their last bits), and the long prompt's greedy tokens where the reference's margins decide
// them (its first two choices lead by more than 1.3).
TEST_F(CudaLlamaTest, Int8CacheMatchesTheCpuBackend) {
    static testing::LlamaFixture cpu(make_cpu_backend(2));
    for (const std::string& key : testing::llama_prompt_keys()) {
        const double err = relative_error(f_->backend->download(f_->prompt_logits(key, true)),
                                          cpu.backend->download(cpu.prompt_logits(key, true)));
        std::cout << key << ": prompt logits with an int8 cache, relative error to the CPU's " << err << "\n";
        EXPECT_LT(err, 5e-3) << key;
    }
    const std::vector<int64_t> expected = f_->reference.i64("long.greedy_tokens");
    const std::vector<int64_t> tokens = greedy(f_->prompt("long"), expected.size(), KvCacheDtype::Int8);
    ASSERT_EQ(tokens.size(), expected.size());
    EXPECT_EQ(std::vector<int64_t>(tokens.begin(), tokens.begin() + 2),
              std::vector<int64_t>(expected.begin(), expected.begin() + 2));
}

}  // namespace
}  // namespace folio
