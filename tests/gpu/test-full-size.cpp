// The full-size PaddleOCR-VL architecture on the CUDA backend with bfloat16 weights against the reference
// implementation's bfloat16 run of the same random weights (tests/gpu/make_full_size_reference.py): logits at
// the last prompt position within relative error 2e-2 and identical greedy tokens for 64 steps, on a text
// prompt and prompts of one and two images. Where the reference's own top two logits are closer than
// kMinMargin (bfloat16 logits of random weights can tie exactly), its choice is arbitrary: the tokens are
// compared up to that step, and the test says how far that was. Skipped where no CUDA device is present or
// FOLIO_FULL_SIZE_DIR does not name the script's output.
// The same for the full-width ERNIE-4.5-VL architecture (its decoder cut to the layers the script was given)
// from tests/gpu/make_full_size_ernie45_vl_reference.py, with FOLIO_FULL_SIZE_ERNIE_DIR naming its output;
// and for the full-size Llama architecture (DeepSeek-R1-Distill-Llama-8B's) from
// tests/gpu/make_full_size_llama_reference.py, with FOLIO_FULL_SIZE_LLAMA_DIR naming its output, loaded as
// a user's folder is (the model registry, bfloat16 weights).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <numeric>

#include "engine/backend/cuda/make-cuda-backend.h"
#include "engine/files/safetensors.h"
#include "engine/files/weight-source.h"
#include "engine/models/ernie45-vl/ernie45-vl.h"
#include "engine/models/ernie45-vl/weights.h"
#include "engine/models/model-registry.h"
#include "engine/models/paddleocr-vl/model-files.h"
#include "engine/models/paddleocr-vl/paddleocr-vl.h"
#include "engine/runtime/generator.h"
#include "ernie45-vl-fixture.h"
#include "fixture-model.h"
#include "kernels/elementwise.h"
#include "reversed-blocks.h"

namespace folio {
namespace {

constexpr double kLogitsBound = 2e-2;
// With the 8-bit cache: each key and value rounded to 1/254 of its row's largest magnitude on top of the
// bfloat16 run's error (docs/performance.md gives both).
constexpr double kInt8CacheLogitsBound = 3e-2;
// With the vision encoder in FP8: E4M3 rows through its 27 layers (docs/performance.md states the error).
constexpr double kFp8VisionLogitsBound = 0.15;
constexpr float kMinMargin = 0.25f;

// The last prompt position of all (logits at every position) against the reference's, within bound.
void expect_last_logits(const std::vector<float>& all, const SafetensorsFile& reference,
                        const std::string& key, const std::string& label, double bound = kLogitsBound) {
    const std::vector<float> expected = to_f32(reference.get(key + ".logits"));
    ASSERT_GE(all.size(), expected.size());
    const std::vector<float> last(all.end() - static_cast<std::ptrdiff_t>(expected.size()), all.end());
    const double err = testing::relative_error(last, expected);
    std::cout << label << ": last-position logits relative error " << err << "\n";
    EXPECT_LT(err, bound);
}

// The generated tokens against the reference's greedy tokens, up to its first choice closer than kMinMargin.
void expect_greedy_tokens(const SafetensorsFile& reference, const std::string& key,
                          const std::vector<int32_t>& generated) {
    const std::vector<int64_t> greedy = to_i64(reference.get(key + ".greedy_tokens"));
    const std::vector<float> margins = to_f32(reference.get(key + ".margins"));
    size_t n_decidable = 0;
    while (n_decidable < margins.size() && margins[n_decidable] >= kMinMargin) {
        ++n_decidable;
    }
    const std::vector<int64_t> tokens(generated.begin(), generated.end());
    size_t n_same = 0;
    while (n_same < std::min(tokens.size(), greedy.size()) && tokens[n_same] == greedy[n_same]) {
        ++n_same;
    }
    std::cout << key << ": " << n_same << " of " << greedy.size()
              << " greedy tokens as the reference; its first " << n_decidable
              << " choices have a margin of at least " << kMinMargin << "\n";
    ASSERT_GE(tokens.size(), n_decidable);
    EXPECT_EQ(
        std::vector<int64_t>(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n_decidable)),
        std::vector<int64_t>(greedy.begin(), greedy.begin() + static_cast<std::ptrdiff_t>(n_decidable)));
}

class FullSize : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
        const char* dir = std::getenv("FOLIO_FULL_SIZE_DIR");
        if (dir == nullptr || *dir == '\0') {
            GTEST_SKIP() << "skipped: FOLIO_FULL_SIZE_DIR does not name make_full_size_reference.py's output";
        }
        dir_ = dir;
    }

    std::filesystem::path dir_;
};

TEST_P(FullSize, LogitsAndGreedyTokensMatchTheReference) {
    const std::string& key = GetParam();
    const auto files = ModelFiles::open(dir_ / "model");
    const auto reference = SafetensorsFile::open(dir_ / "reference.safetensors");
    const auto backend = make_cuda_backend();
    ModelLoadParams load;
    load.bf16_weights = true;
    const auto weights = make_file_weight_source(*files);
    PaddleOcrVl model(*backend, files->config(), *weights, load);

    ChatPromptTokens prompt;
    for (const int64_t id : to_i64(reference->get(key + ".input_ids"))) {
        prompt.ids.push_back(static_cast<int32_t>(id));
        prompt.modality.push_back(id == files->config().image_token_id ? TokenModality::Image
                                                                       : TokenModality::Text);
    }
    PreprocessedImages images;
    if (reference->find(key + ".pixel_values") != nullptr) {
        images.pixel_values = to_f32(reference->get(key + ".pixel_values"));
        const std::vector<int64_t> grids = to_i64(reference->get(key + ".grid_thw"));
        for (size_t i = 0; i + 2 < grids.size(); i += 3) {
            images.grids.push_back({grids[i], grids[i + 1], grids[i + 2]});
        }
    }

    expect_last_logits(backend->download(testing::prompt_logits(model, prompt, images)), *reference, key,
                       key);

    GenerateParams params;
    params.max_tokens = 64;
    const GenerateResult result = generate(model, prompt, images, params, [](int32_t) { return true; });
    expect_greedy_tokens(*reference, key, result.tokens);
}

// The vision encoder's linear layers in FP8 (--quantize-vision fp8) beside the bfloat16 model: its features
// against the bfloat16 encoder's, the last-position logits against the reference's, and how far the greedy
// tokens follow the reference's (said, not required: FP8's error moves choices whose margins bfloat16 keeps).
// The bounds state the error FP8 brings.
TEST_P(FullSize, Fp8VisionEncoderStaysNearBfloat16) {
    const std::string& key = GetParam();
    if (key == "text") {
        GTEST_SKIP() << "skipped: no image in the text prompt";
    }
    const auto backend = make_cuda_backend();
    if (const std::string why = backend->fp8_refusal(); !why.empty()) {
        GTEST_SKIP() << "skipped: " << why;
    }
    const auto files = ModelFiles::open(dir_ / "model");
    const auto reference = SafetensorsFile::open(dir_ / "reference.safetensors");
    ModelLoadParams load;
    load.bf16_weights = true;
    std::vector<float> bf16_features;
    PreprocessedImages images;
    images.pixel_values = to_f32(reference->get(key + ".pixel_values"));
    const std::vector<int64_t> grids = to_i64(reference->get(key + ".grid_thw"));
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        images.grids.push_back({grids[i], grids[i + 1], grids[i + 2]});
    }
    {
        PaddleOcrVl bf16(*backend, files->config(), *make_file_weight_source(*files), load);
        bf16_features = backend->download(bf16.encode_vision(images.pixel_values, images.grids));
    }
    load.vision_fp8 = true;
    PaddleOcrVl model(*backend, files->config(), *make_file_weight_source(*files), load);
    const double features_err = testing::relative_error(
        backend->download(model.encode_vision(images.pixel_values, images.grids)), bf16_features);
    std::cout << key << ": FP8 vision features relative error to bfloat16 " << features_err << "\n";
    EXPECT_LT(features_err, 0.12);

    ChatPromptTokens prompt;
    for (const int64_t id : to_i64(reference->get(key + ".input_ids"))) {
        prompt.ids.push_back(static_cast<int32_t>(id));
        prompt.modality.push_back(id == files->config().image_token_id ? TokenModality::Image
                                                                       : TokenModality::Text);
    }
    expect_last_logits(backend->download(testing::prompt_logits(model, prompt, images)), *reference, key,
                       key + ", FP8 vision encoder", kFp8VisionLogitsBound);

    GenerateParams params;
    params.max_tokens = 64;
    const GenerateResult result = generate(model, prompt, images, params, [](int32_t) { return true; });
    const std::vector<int64_t> greedy = to_i64(reference->get(key + ".greedy_tokens"));
    size_t n_same = 0;
    while (n_same < std::min(result.tokens.size(), greedy.size()) &&
           result.tokens[n_same] == greedy[n_same]) {
        ++n_same;
    }
    std::cout << key << ": FP8 vision encoder, " << n_same << " of " << greedy.size()
              << " greedy tokens as the reference's\n";
}

INSTANTIATE_TEST_SUITE_P(Prompts, FullSize, ::testing::Values("text", "one_image", "two_images"));

class FullSizeErnie : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
        const char* dir = std::getenv("FOLIO_FULL_SIZE_ERNIE_DIR");
        if (dir == nullptr || *dir == '\0') {
            GTEST_SKIP() << "skipped: FOLIO_FULL_SIZE_ERNIE_DIR does not name "
                            "make_full_size_ernie45_vl_reference.py's output";
        }
        dir_ = dir;
    }

    std::filesystem::path dir_;
};

TEST_P(FullSizeErnie, LogitsAndGreedyTokensMatchTheReference) {
    const std::string& key = GetParam();
    // Loaded once for the prompts: the weights are gigabytes.
    struct Loaded {
        explicit Loaded(const std::filesystem::path& dir)
            : store(TensorStore::open(dir / "model")),
              config(load_ernie45_vl_config(dir / "model" / "config.json")),
              backend(make_cuda_backend()),
              model([this] {
                  ModelLoadParams load;
                  load.bf16_weights = true;
                  const auto weights = make_ernie45_vl_weight_source(*store, config);
                  return std::make_unique<Ernie45Vl>(*backend, config, *weights, load);
              }()) {}
        std::unique_ptr<TensorStore> store;
        Ernie45VlConfig config;
        std::unique_ptr<Backend> backend;
        std::unique_ptr<Ernie45Vl> model;
    };
    static Loaded loaded(dir_);
    const Ernie45VlConfig& config = loaded.config;
    Backend* backend = loaded.backend.get();
    Ernie45Vl& model = *loaded.model;
    const auto reference = SafetensorsFile::open(dir_ / "reference.safetensors");

    PromptTokens prompt;
    for (const int64_t id : to_i64(reference->get(key + ".input_ids"))) {
        prompt.ids.push_back(static_cast<int32_t>(id));
        prompt.modality.push_back(id == config.image_token_id ? TokenModality::Image : TokenModality::Text);
    }
    PreprocessedImages images;
    if (reference->find(key + ".pixel_values") != nullptr) {
        const std::vector<int64_t> grids = to_i64(reference->get(key + ".grid_thw"));
        for (size_t i = 0; i + 2 < grids.size(); i += 3) {
            images.grids.push_back({grids[i], grids[i + 1], grids[i + 2]});
            images.kinds.push_back(MediaKind::Image);
        }
        images.pixel_values = testing::raster_patches(to_f32(reference->get(key + ".pixel_values")),
                                                      images.grids, config.vision.patch_dim());
    }

    expect_last_logits(backend->download(testing::ernie_prompt_logits(*backend, model, prompt, images)),
                       *reference, key,
                       "ERNIE-4.5-VL, " + std::to_string(config.text.num_hidden_layers) + " layers, " + key);

    GenerateParams params;
    params.max_tokens = 32;
    const GenerateResult result = generate(model, prompt, images, params, [](int32_t) { return true; });
    expect_greedy_tokens(*reference, key, result.tokens);
}

INSTANTIATE_TEST_SUITE_P(Prompts, FullSizeErnie, ::testing::Values("text", "one_image", "two_images"));

class FullSizeLlama : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
        const char* dir = std::getenv("FOLIO_FULL_SIZE_LLAMA_DIR");
        if (dir == nullptr || *dir == '\0') {
            GTEST_SKIP() << "skipped: FOLIO_FULL_SIZE_LLAMA_DIR does not name "
                            "make_full_size_llama_reference.py's output";
        }
        dir_ = dir;
    }

    std::filesystem::path dir_;
};

// The prompt's last logits and greedy tokens against the reference, with the cache's elements as the model
// keeps them or as 8-bit levels (int8_cache).
void expect_llama_matches_reference(const std::filesystem::path& dir, const std::string& key,
                                    bool int8_cache) {
    // Loaded once for the prompts, through the registry as a user's folder is: the weights are gigabytes.
    struct Loaded {
        explicit Loaded(const std::filesystem::path& dir) : backend(make_cuda_backend()) {
            ModelLoadParams load;
            load.bf16_weights = true;
            std::atomic<bool> cancelled{false};
            LoadContext context([](const LoadProgress&) {}, cancelled);
            model = ModelRegistry::builtin().load(ModelSlot(ModelRole::Chat, dir, load), *backend, context);
        }
        std::unique_ptr<Backend> backend;
        std::unique_ptr<LoadedModel> model;
    };
    static Loaded loaded(dir / "model");
    GenerativeModel& model = *loaded.model->generative();
    Backend& backend = *loaded.backend;
    const auto reference = SafetensorsFile::open(dir / "reference.safetensors");

    PromptTokens prompt;
    for (const int64_t id : to_i64(reference->get(key + ".input_ids"))) {
        prompt.ids.push_back(static_cast<int32_t>(id));
    }
    prompt.modality.assign(prompt.ids.size(), TokenModality::Text);
    const auto n = static_cast<int64_t>(prompt.ids.size());
    const int64_t block_size = 16, n_blocks = (n + block_size - 1) / block_size;
    KvCacheParams cache_params = model.kv_cache_params(n_blocks, block_size);
    if (int8_cache) {
        cache_params.dtype = ScalarType::Q8;
    }
    PagedKvCache cache(backend, cache_params);
    const KvBatch batch = testing::reversed_block_batch(n, block_size);
    std::vector<int32_t> positions(static_cast<size_t>(n));
    std::iota(positions.begin(), positions.end(), 0);
    const Tensor hidden = model.forward_text(model.embed(prompt.ids), positions, {}, cache, batch);
    const std::vector<int64_t> last_row = {n - 1};
    const Tensor last = backend.gather_rows(hidden, last_row);
    expect_last_logits(backend.download(model.logits(last)), *reference, key,
                       "Llama, " + loaded.model->description().name + ", " + key + " (" + std::to_string(n) +
                           " tokens" + (int8_cache ? ", int8 cache)" : ")"),
                       int8_cache ? kInt8CacheLogitsBound : kLogitsBound);

    GenerateParams params;
    params.max_tokens = 32;
    params.kv_cache_dtype = int8_cache ? KvCacheDtype::Int8 : KvCacheDtype::Auto;
    // Nothing stops the answer: the reference's greedy tokens go on past end-of-sequence tokens.
    params.stop_ids = {static_cast<int32_t>(model.limits().vocab_size)};
    const GenerateResult result = generate(model, prompt, {}, params, [](int32_t) { return true; });
    expect_greedy_tokens(*reference, key, result.tokens);
}

TEST_P(FullSizeLlama, LogitsAndGreedyTokensMatchTheReference) {
    expect_llama_matches_reference(dir_, GetParam(), false);
}

// Keys and values as 8-bit levels with a scale a token and head, within the same bounds.
TEST_P(FullSizeLlama, Int8CacheLogitsAndGreedyTokensMatchTheReference) {
    expect_llama_matches_reference(dir_, GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(Prompts, FullSizeLlama, ::testing::Values("chat", "long"));

}  // namespace
}  // namespace folio
