// ERNIE-4.5-VL on the CPU backend against the reference implementation's outputs (the fixture model made by
// tests/fixtures/make_ernie45_vl_fixtures.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "app/images/image-loader.h"
#include "engine/backend/backend.h"
#include "engine/backend/expert-routing.h"
#include "engine/common/error.h"
#include "engine/common/mapped-file.h"
#include "engine/files/safetensors.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/ernie45-vl/ernie45-vl.h"
#include "engine/models/ernie45-vl/moe.h"
#include "engine/models/ernie45-vl/weights.h"
#include "engine/models/model-registry.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/kv-cache.h"
#include "engine/service/request-builder.h"
#include "ernie45-vl-fixture.h"
#include "fixture-reference.h"
#include "safetensors-writer.h"
#include "temp-dir.h"

namespace folio {
namespace {

using testing::relative_error;

using testing::ernie_dir;
using Fixture = testing::ErnieFixture;

Fixture& fixture() {
    static Fixture f(make_cpu_backend(2));
    return f;
}

class Ernie45VlTest : public ::testing::TestWithParam<std::string> {
protected:
    Fixture& f = fixture();

    PromptTokens prompt() const { return f.prompt(GetParam()); }
    bool has_images() const { return f.has_images(GetParam()); }
    std::vector<ImageGrid> grids() const { return f.grids(GetParam()); }
    PreprocessedImages images() const { return f.images(GetParam()); }
};

TEST_P(Ernie45VlTest, PositionsMatchReference) {
    const PromptTokens p = prompt();
    const PromptPositions positions = f.model->prompt_positions(p.modality, grids());
    const std::vector<int64_t> expected = f.reference.i64(GetParam() + ".position_ids");  // [3, n]
    const size_t n = p.ids.size();
    ASSERT_EQ(positions.pos.size(), 3 * n);
    for (size_t i = 0; i < n; ++i) {
        for (size_t axis = 0; axis < 3; ++axis) {
            ASSERT_EQ(positions.pos[3 * i + axis], expected[axis * n + i])
                << "token " << i << " axis " << axis;
        }
    }
    EXPECT_EQ(positions.delta, f.meta["prompts"][GetParam()]["rope_delta"].get<int64_t>());
}

TEST_P(Ernie45VlTest, StepModalityRoutesMarkersWithTheirImage) {
    const std::vector<TokenModality> step = f.model->step_modality(prompt());
    const std::vector<int64_t> expected = f.reference.i64(GetParam() + ".moe_token_types");
    ASSERT_EQ(step.size(), expected.size());
    for (size_t i = 0; i < step.size(); ++i) {
        EXPECT_EQ(static_cast<int64_t>(step[i]), expected[i]) << "token " << i;
    }
}

TEST_P(Ernie45VlTest, ImageFeaturesMatchReference) {
    if (!has_images()) {
        GTEST_SKIP() << GetParam() << " has no image";
    }
    const PreprocessedImages im = images();
    const std::span<const float> part(im.pixel_values);
    const Tensor features = f.model->encode_images(std::span(&part, 1), im.grids);
    EXPECT_EQ(features.shape, f.reference.shape(GetParam() + ".image_features"));
    const double err =
        relative_error(f.backend->download(features), f.reference.f32(GetParam() + ".image_features"));
    std::cout << GetParam() << ": image features relative error " << err << "\n";
    EXPECT_LT(err, 1e-4);
    // The MLPs 3 rows at a time and the resampler 2 windows and 2 tokens at a time give the same features.
    f.model->set_vision_chunk_rows(3, 2);
    const Tensor chunked = f.model->encode_images(std::span(&part, 1), im.grids);
    f.model->set_vision_chunk_rows(kMlpChunkRows, kResampleChunkRows);
    EXPECT_EQ(chunked.shape, features.shape);
    EXPECT_LT(relative_error(f.backend->download(chunked), f.backend->download(features)), 1e-6);
}

// The vision encoder's linear layers in FP8 (--quantize-vision fp8): the image features stay within E4M3's
// rounding of the reference's (QuickGELU runs after the product, as its own pass), and the model's own
// bytes shrink. The bound sits above what was measured.
TEST_P(Ernie45VlTest, Fp8VisionEncoderStaysNearTheReference) {
    if (!has_images()) {
        GTEST_SKIP() << GetParam() << " has no image";
    }
    ModelLoadParams load;
    load.vision_fp8 = true;
    const auto weights = make_ernie45_vl_weight_source(*f.store, f.config);
    Ernie45Vl fp8(*f.backend, f.config, *weights, load);
    EXPECT_LT(fp8.n_weight_bytes(), f.model->n_weight_bytes());
    const PreprocessedImages im = images();
    const std::span<const float> part(im.pixel_values);
    const double err = relative_error(f.backend->download(fp8.encode_images(std::span(&part, 1), im.grids)),
                                      f.reference.f32(GetParam() + ".image_features"));
    std::cout << GetParam() << ": FP8 vision encoder, image features relative error " << err << "\n";
    EXPECT_GT(err, 1e-4) << "the features come from E4M3 products";
    EXPECT_LT(err, 0.12);
}

TEST_P(Ernie45VlTest, PromptLogitsMatchReference) {
    const Tensor logits = f.prompt_logits(GetParam());
    EXPECT_EQ(logits.shape, f.reference.shape(GetParam() + ".logits"));
    const double err = relative_error(f.backend->download(logits), f.reference.f32(GetParam() + ".logits"));
    std::cout << GetParam() << ": prompt logits relative error " << err << "\n";
    EXPECT_LT(err, 1e-4);
}

TEST_P(Ernie45VlTest, GreedyTokensMatchReference) {
    const std::vector<int64_t> expected = f.reference.i64(GetParam() + ".greedy_tokens");
    GenerateParams params;
    params.max_tokens = static_cast<int>(expected.size());
    const GenerateResult result =
        generate(*f.model, prompt(), images(), params, [](int32_t) { return true; });
    const std::vector<int64_t> tokens(result.tokens.begin(), result.tokens.end());
    EXPECT_EQ(tokens, expected);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Ernie45VlTest, ::testing::ValuesIn(testing::ernie_prompt_keys()));

// The path a user takes: the folder through the model registry, PNG files, the folder's chat template and
// tokenizer, the request builder's preprocessing, generation.
TEST(Ernie45VlFolder, ChatFromFilesMatchesReference) {
    Fixture& f = fixture();
    const std::filesystem::path dir = ernie_dir() / "ernie45-vl-tiny";
    const ModelFamily& family = ModelRegistry::builtin().family_of(dir);
    EXPECT_EQ(family.name(), "ernie-4.5-vl");
    EXPECT_EQ(family.role(), ModelRole::Chat);
    std::atomic<bool> cancelled{false};
    LoadContext context([](const LoadProgress&) {}, cancelled);
    const std::unique_ptr<LoadedModel> loaded =
        family.load(ModelSlot(ModelRole::Chat, dir), *f.backend, context);
    EXPECT_EQ(context.progress().bytes_read, context.progress().bytes_total);
    EXPECT_TRUE(loaded->description().takes(Modality::Video));
    // Video frames resize within video_preprocessor_config.json's size, images within the image processor's.
    const PreprocessorConfig pre = loaded->prompt_format()->preprocessor;
    EXPECT_EQ(pre.video_min_pixels, 3136);
    EXPECT_EQ(pre.video_max_pixels, 9408);
    EXPECT_NE(pre.max_pixels, pre.video_max_pixels);
    const RequestBuilder builder(loaded->prompt_format(), {4096, 8, loaded->max_image_tokens()});
    for (const std::string key : {"text", "system_text", "two_images"}) {
        const nlohmann::json& entry = f.meta["prompts"][key];
        Chat chat;
        for (const auto& m : entry["messages"]) {
            ChatMessage message;
            const std::string role = m["role"];
            message.role = role == "system" ? ChatMessage::Role::System
                           : role == "user" ? ChatMessage::Role::User
                                            : ChatMessage::Role::Assistant;
            for (const auto& part : m["content"]) {
                if (part["type"] == "image") {
                    message.images.push_back(load_image(testing::fixtures_dir() / "images" /
                                                        (part["name"].get<std::string>() + ".png")));
                } else {
                    message.text = part["text"];
                }
            }
            chat.messages.push_back(std::move(message));
        }
        EXPECT_EQ(render_chat(*loaded->prompt_format(), chat.messages), entry["text"].get<std::string>())
            << key;
        const std::vector<int64_t> media = builder.count_media(media_sizes(chat.messages));
        const Request request = builder.build(RequestSpec(std::move(chat)));
        // Counted from the sizes alone: the placeholder tokens the prompt expands to.
        EXPECT_EQ(std::accumulate(media.begin(), media.end(), int64_t{0}),
                  std::count_if(request.prompt.modality.begin(), request.prompt.modality.end(),
                                [](TokenModality m) { return m != TokenModality::Text; }))
            << key;
        EXPECT_EQ(std::vector<int64_t>(request.prompt.ids.begin(), request.prompt.ids.end()),
                  f.reference.i64(key + ".input_ids"))
            << key;
        const std::vector<int64_t> expected = f.reference.i64(key + ".greedy_tokens");
        GenerateParams params;
        params.max_tokens = static_cast<int>(expected.size());
        const GenerateResult result = generate(*loaded->generative(), request.prompt, request.images, params,
                                               [](int32_t) { return true; });
        EXPECT_EQ(std::vector<int64_t>(result.tokens.begin(), result.tokens.end()), expected) << key;
    }
}

// A video in a chat, as the desktop app's chat sends the frames it sampled: the folder's template marks it
// with
// <|VIDEO_START|> and <|VIDEO_END|>, which the request builder takes for the video's, and the prompt and the
// answer are the reference's.
TEST(Ernie45VlFolder, VideoChatFromFramesMatchesReference) {
    Fixture& f = fixture();
    const std::filesystem::path dir = ernie_dir() / "ernie45-vl-tiny";
    std::atomic<bool> cancelled{false};
    LoadContext context([](const LoadProgress&) {}, cancelled);
    const std::unique_ptr<LoadedModel> loaded =
        ModelRegistry::builtin().family_of(dir).load(ModelSlot(ModelRole::Chat, dir), *f.backend, context);
    const RequestBuilder builder(loaded->prompt_format(), {4096, 8, loaded->max_image_tokens()});
    const std::vector<int64_t> shape = f.reference.shape("video_frames.clip");  // [frames, height, width, 3]
    ASSERT_EQ(shape.size(), 4u);
    const std::vector<int64_t> levels = f.reference.i64("video_frames.clip");
    Video video;
    const int64_t frame_size = shape[1] * shape[2] * 3;
    for (int64_t i = 0; i < shape[0]; ++i) {
        Image frame = make_image(static_cast<int>(shape[2]), static_cast<int>(shape[1]));
        for (int64_t k = 0; k < frame_size; ++k) {
            frame.rgb[static_cast<size_t>(k)] =
                static_cast<uint8_t>(levels[static_cast<size_t>(i * frame_size + k)]);
        }
        video.frames.push_back(std::move(frame));
    }
    // An odd count's last frame repeated, as the reference's processor pads the clip to whole frame pairs.
    if (video.frames.size() % 2 == 1) {
        video.frames.push_back(video.frames.back());
    }
    const nlohmann::json& entry = f.meta["prompts"]["video"];
    Chat chat;
    chat.messages.push_back(ChatMessage(ChatMessage::Role::User, "What happens?", {}, {video}));
    chat.template_kwargs = entry["chat_template_kwargs"];
    EXPECT_EQ(render_chat(*loaded->prompt_format(), chat.messages, chat.template_kwargs),
              entry["text"].get<std::string>());
    const std::vector<int64_t> media = builder.count_media(media_sizes(chat.messages));
    const Request request = builder.build(RequestSpec(std::move(chat)));
    EXPECT_EQ(std::vector<int64_t>(request.prompt.ids.begin(), request.prompt.ids.end()),
              f.reference.i64("video.input_ids"));
    ASSERT_EQ(media.size(), 1u);
    EXPECT_EQ(media[0], std::count(request.prompt.modality.begin(), request.prompt.modality.end(),
                                   TokenModality::Video))
        << "the video's tokens counted from its size and frames";
    const std::vector<int64_t> expected = f.reference.i64("video.greedy_tokens");
    GenerateParams params;
    params.max_tokens = static_cast<int>(expected.size());
    const GenerateResult result =
        generate(*loaded->generative(), request.prompt, request.images, params, [](int32_t) { return true; });
    EXPECT_EQ(std::vector<int64_t>(result.tokens.begin(), result.tokens.end()), expected);
}

TEST(Ernie45VlFolder, RefusesAPaddleCheckpoint) {
    // A folder whose tensors carry PaddlePaddle's names: the message names the transformers repository.
    Fixture& f = fixture();
    const test::TempDir tmp;
    std::filesystem::copy_file(ernie_dir() / "ernie45-vl-tiny" / "config.json", tmp.path() / "config.json");
    test::write_file(tmp.path() / "model.safetensors",
                     test::safetensors_image({test::make_tensor("ernie.embed_tokens.weight", "F32", {2, 2},
                                                                std::vector<float>(4, 0.0f))}));
    const ModelFamily& family = ModelRegistry::builtin().family_of(tmp.path());
    std::atomic<bool> cancelled{false};
    LoadContext context([](const LoadProgress&) {}, cancelled);
    std::string message;
    try {
        family.load(ModelSlot(ModelRole::Chat, tmp.path()), *f.backend, context);
    } catch (const Error& e) {
        message = e.what();
    }
    EXPECT_NE(message.find("PaddlePaddle"), std::string::npos) << message;
    EXPECT_NE(message.find("baidu/ERNIE-4.5-VL-28B-A3B-PT"), std::string::npos) << message;
}

// A config.json that asks for more experts than the checkpoint holds: the load stops, naming the folder, the
// tensor and both shapes.
TEST(Ernie45VlFolder, RefusesExpertCountsTheCheckpointDoesNotHave) {
    Fixture& f = fixture();
    const test::TempDir tmp;
    const std::filesystem::path source = ernie_dir() / "ernie45-vl-tiny";
    for (const char* name : {"model.safetensors", "tokenizer.model", "tokenizer_config.json",
                             "chat_template.jinja", "preprocessor_config.json"}) {
        std::filesystem::copy_file(source / name, tmp.path() / name);
    }
    nlohmann::json config = nlohmann::json::parse(read_file_text(source / "config.json"));
    nlohmann::json& text = config.contains("text_config") ? config["text_config"] : config;
    const int n_experts = text["moe_num_experts"].get<int>();
    text["moe_num_experts"] = n_experts + 2;
    test::write_file(tmp.path() / "config.json", config.dump());
    std::atomic<bool> cancelled{false};
    LoadContext context([](const LoadProgress&) {}, cancelled);
    std::string message;
    try {
        ModelRegistry::builtin().load(ModelSlot(ModelRole::Chat, tmp.path()), *f.backend, context);
    } catch (const Error& e) {
        message = e.what();
    }
    EXPECT_NE(message.find(tmp.path().string()), std::string::npos) << message;
    // The first tensor sized by the expert count: the score-correction biases of both pools.
    const std::string shapes = "has shape [2, " + std::to_string(n_experts) + "], expected [2, " +
                               std::to_string(n_experts + 2) + "] from config.json";
    EXPECT_NE(message.find(shapes), std::string::npos) << message;
}

TEST(Ernie45VlRouting, TopKByBiasedScoresWeightsByProbabilities) {
    // Two tokens over four experts: the bias moves expert 3 ahead of expert 1 for the first token but the
    // weights stay the softmax probabilities, renormalised over the chosen experts.
    const std::vector<float> logits = {2.0f, 1.0f, 0.0f, 0.5f, 0.0f, 0.0f, 3.0f, 0.0f};
    const std::vector<float> bias = {0.0f, 0.0f, 0.0f, 0.2f};
    const ExpertChoice c = route_top_k(logits, bias, 2, 1e-12f);
    ASSERT_EQ(c.experts.size(), 4u);
    EXPECT_EQ(c.experts[0], 0);
    EXPECT_EQ(c.experts[1], 3);
    const double e0 = std::exp(2.0), e3 = std::exp(0.5);
    EXPECT_NEAR(c.weights[0], e0 / (e0 + e3), 1e-6);
    EXPECT_NEAR(c.weights[1], e3 / (e0 + e3), 1e-6);
    EXPECT_EQ(c.experts[2], 2);
    EXPECT_EQ(c.experts[3], 3) << "among equal probabilities the bias ranks expert 3 next";
    EXPECT_THROW(route_top_k(logits, bias, 5, 1e-12f), Error);
}

TEST(Ernie45VlConfig, RefusesSizesThatDoNotFit) {
    EXPECT_THROW(
        parse_ernie45_vl_config(R"({"text_config": {"moe_num_experts": 4, "moe_k": 6}})", "config.json"),
        Error);
    EXPECT_THROW(
        parse_ernie45_vl_config(R"({"text_config": {"rope_parameters": {"mrope_section": [20, 22, 22]}}})",
                                "config.json"),
        Error);
    EXPECT_THROW(parse_ernie45_vl_config(R"({"text_config": {"mlp_layer_types": ["dense"]}})", "config.json"),
                 Error);
    const Ernie45VlConfig c = parse_ernie45_vl_config("{}", "config.json");
    EXPECT_EQ(c.text.n_experts, 64);
    EXPECT_EQ(c.text.n_experts_per_token, 6);
    EXPECT_FALSE(c.text.sparse_layers[0]);
    EXPECT_TRUE(c.text.sparse_layers[27]);
}

TEST(Ernie45VlConfig, RefusesValuesOutOfRangeNamingTheKey) {
    const struct {
        const char* text;
        const char* message;
    } cases[] = {
        {R"({"text_config": {"rms_norm_eps": 0}})", R"("text_config.rms_norm_eps" must be positive, got 0)"},
        {R"({"text_config": {"rms_norm_eps": 1e-60}})", R"("text_config.rms_norm_eps" must be positive)"},
        {R"({"text_config": {"rope_theta": 1e300}})", R"("text_config.rope_theta" is too large)"},
        {R"({"text_config": {"moe_norm_min": -1}})",
         R"("text_config.moe_norm_min" must be positive, got -1)"},
        {R"({"text_config": {"max_position_embeddings": 0}})", R"("text_config.max_position_embeddings")"},
        {R"({"text_config": {"vocab_size": 1000, "eos_token_id": [2, 1000]}, "image_token_id": 5,
            "image_start_token_id": 5, "image_end_token_id": 5, "video_token_id": 5,
            "video_start_token_id": 5, "video_end_token_id": 5})",
         R"("text_config.eos_token_id" 1000 lies outside the vocabulary of 1000)"},
        {R"({"text_config": {"bos_token_id": -2}})", R"("text_config.bos_token_id" -2 lies outside)"},
        {R"({"vision_config": {"rms_norm_eps": -1e-6}})", R"("vision_config.rms_norm_eps" must be positive)"},
        {R"({"vision_config": {"rope_parameters": {"rope_theta": 0}}})", R"("vision_config.rope_theta")"},
    };
    for (const auto& c : cases) {
        try {
            parse_ernie45_vl_config(c.text, "/m/config.json");
            ADD_FAILURE() << c.text << " was accepted";
        } catch (const Error& e) {
            const std::string message = e.what();
            EXPECT_NE(message.find("/m/config.json: "), std::string::npos) << message;
            EXPECT_NE(message.find(c.message), std::string::npos) << message;
        }
    }
}

}  // namespace
}  // namespace folio
