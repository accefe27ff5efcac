// The serving runtime (EngineCore, ModelRunner, DecodeGraphs, generate) driven by a small fake model through
// the GenerativeModel interface alone, on the CPU backend: what each step produces, stop ids, cancellation,
// preemption, priorities, failures ending one request, the request limits and the positions and image
// features the model gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/runtime/engine-core.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/model.h"
#include "fake-model.h"

using namespace folio;
using namespace folio::testing;

namespace {

EngineConfig small_config() {
    EngineConfig c;
    c.max_model_len = 64;
    c.max_num_seqs = 4;
    c.max_num_batched_tokens = 64;
    c.block_size = 4;
    c.num_gpu_blocks_override = 64;
    c.limit_mm_per_prompt = 2;
    return c;
}

Request text_request(std::vector<int32_t> ids, int64_t max_tokens) {
    Request r;
    r.prompt.ids = std::move(ids);
    r.prompt.modality.assign(r.prompt.ids.size(), TokenModality::Text);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
}

struct Finished {
    std::vector<int32_t> tokens;
    std::optional<FinishReason> finish;
};

std::map<int64_t, Finished> run_to_end(EngineCore& core) {
    std::map<int64_t, Finished> out;
    for (int guard = 0; core.has_unfinished(); ++guard) {
        if (guard > 1000) {
            ADD_FAILURE() << "the engine does not finish";
            break;
        }
        for (const RequestOutput& o : core.step()) {
            Finished& f = out[o.id];
            EXPECT_FALSE(f.finish) << "output after the final one for request " << o.id;
            f.tokens.insert(f.tokens.end(), o.tokens.begin(), o.tokens.end());
            f.finish = o.finish;
        }
    }
    return out;
}

// first + 1, first + 2, ..., n tokens.
std::vector<int32_t> chain(int32_t first, int n) {
    std::vector<int32_t> t;
    for (int i = 1; i <= n; ++i) {
        t.push_back(static_cast<int32_t>((first + i) % kVocab));
    }
    return t;
}

class EngineCoreTest : public ::testing::Test {
protected:
    std::unique_ptr<Backend> backend_ = make_cpu_backend(1);
    FakeModel model_{*backend_};
};

TEST_F(EngineCoreTest, GreedyTokensFollowTheModel) {
    EngineCore core(model_, small_config());
    const int64_t a = core.submit(text_request({3, 4, 5}, 6));
    const int64_t b = core.submit(text_request({20, 21}, 3));
    const auto out = run_to_end(core);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out.at(a).tokens, chain(5, 6));
    EXPECT_EQ(out.at(a).finish, FinishReason::Length);
    EXPECT_EQ(out.at(b).tokens, chain(21, 3));
    EXPECT_EQ(out.at(b).finish, FinishReason::Length);
    EXPECT_EQ(model_.n_position_calls, 2);
    EXPECT_GT(model_.n_decode_steps, 0);
    EXPECT_EQ(core.block_pool().n_free(), core.block_pool().n_blocks());
}

TEST_F(EngineCoreTest, PositionsComeFromTheModel) {
    EngineCore core(model_, small_config());
    const int64_t id = core.submit(text_request({3, 4, 5}, 4));
    EXPECT_EQ(run_to_end(core).at(id).tokens, chain(5, 4));
    // The prompt at (i, 2i, 3i), then the three fed-back tokens at their index plus the model's delta.
    ASSERT_GE(model_.fed.size(), 6u);  // a step queued ahead may feed one more
    for (int32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(model_.fed[i].token, 3 + i);
        EXPECT_EQ(model_.fed[i].pos, (std::vector<int32_t>{i, 2 * i, 3 * i}));
    }
    for (int32_t i = 3; i < 6; ++i) {
        EXPECT_EQ(model_.fed[i].token, 3 + i);
        const int32_t p = i + static_cast<int32_t>(kPositionDelta);
        EXPECT_EQ(model_.fed[i].pos, (std::vector<int32_t>{p, p, p}));
    }
    // Each token has its own cache row.
    std::vector<int32_t> slots;
    for (size_t i = 0; i < 6; ++i) {
        slots.push_back(model_.fed[i].slot);
    }
    std::sort(slots.begin(), slots.end());
    EXPECT_EQ(std::adjacent_find(slots.begin(), slots.end()), slots.end());
}

TEST_F(EngineCoreTest, AsyncStepsReadPendingTokensThroughTheModel) {
    EngineConfig c = small_config();
    c.async_scheduling = true;
    EngineCore core(model_, c);
    const int64_t id = core.submit(text_request({1}, 12));
    EXPECT_EQ(run_to_end(core).at(id).tokens, chain(1, 12));
    EXPECT_GT(core.stats().n_steps_ahead, 0);
    EXPECT_GT(model_.n_pending_embeds, 0);
}

TEST_F(EngineCoreTest, StopIdsAndTheModelsEos) {
    EngineCore core(model_, small_config());
    Request own = text_request({3}, 20);
    own.stop_ids = {6};
    own.ignore_eos = false;
    const int64_t stopped = core.submit(std::move(own));
    Request eos = text_request({5}, 20);
    eos.ignore_eos = false;  // stops at the model's eos, kEos
    const int64_t at_eos = core.submit(std::move(eos));
    const int64_t ignoring = core.submit(text_request({5}, 6));  // runs through kEos to max_tokens
    const auto out = run_to_end(core);
    EXPECT_EQ(out.at(stopped).tokens, (std::vector<int32_t>{4, 5, 6}));
    EXPECT_EQ(out.at(stopped).finish, FinishReason::Stop);
    EXPECT_EQ(out.at(at_eos).tokens, (std::vector<int32_t>{6, 7, 8, kEos}));
    EXPECT_EQ(out.at(at_eos).finish, FinishReason::Stop);
    EXPECT_EQ(out.at(ignoring).tokens, chain(5, 6));
    EXPECT_EQ(out.at(ignoring).finish, FinishReason::Length);
}

TEST_F(EngineCoreTest, CancelEndsOneRequestAndLeavesTheOthers) {
    EngineCore core(model_, small_config());
    const int64_t cancelled = core.submit(text_request({10}, 30));
    const int64_t kept = core.submit(text_request({30}, 8));
    std::map<int64_t, Finished> out;
    for (int i = 0; i < 2; ++i) {
        for (const RequestOutput& o : core.step()) {
            out[o.id].tokens.insert(out[o.id].tokens.end(), o.tokens.begin(), o.tokens.end());
        }
    }
    EXPECT_TRUE(core.cancel(cancelled));
    EXPECT_FALSE(core.cancel(cancelled));  // already being cancelled
    EXPECT_FALSE(core.cancel(12345));      // unknown
    for (const auto& [id, f] : run_to_end(core)) {
        out[id].tokens.insert(out[id].tokens.end(), f.tokens.begin(), f.tokens.end());
        out[id].finish = f.finish;
    }
    EXPECT_EQ(out.at(cancelled).finish, FinishReason::Cancelled);
    EXPECT_LT(out.at(cancelled).tokens.size(), 30u);
    const std::vector<int32_t> expected = chain(10, 30);
    EXPECT_TRUE(
        std::equal(out.at(cancelled).tokens.begin(), out.at(cancelled).tokens.end(), expected.begin()));
    EXPECT_EQ(out.at(kept).tokens, chain(30, 8));
    EXPECT_EQ(out.at(kept).finish, FinishReason::Length);
    EXPECT_FALSE(core.has_unfinished());
    EXPECT_EQ(core.block_pool().n_free(), core.block_pool().n_blocks());
}

TEST_F(EngineCoreTest, PreemptedRequestsGiveTheSameTokens) {
    EngineConfig c = small_config();
    c.num_gpu_blocks_override = 8;  // three requests of 20 tokens need 15 blocks of 4
    c.enable_prefix_caching = false;
    EngineCore core(model_, c);
    std::vector<int64_t> ids;
    for (const int32_t first : {2, 22, 42}) {
        ids.push_back(core.submit(text_request({first, first + 1, first + 2, first + 3}, 16)));
    }
    const auto out = run_to_end(core);
    EXPECT_GT(core.stats().n_preemptions, 0);
    for (size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(out.at(ids[i]).tokens, chain(static_cast<int32_t>(2 + 20 * i + 3), 16)) << "request " << i;
        EXPECT_EQ(out.at(ids[i]).finish, FinishReason::Length);
    }
}

TEST_F(EngineCoreTest, ImageFeaturesTakeThePlaceholdersRows) {
    EngineCore core(model_, small_config());
    Request r = text_request({7, kImageToken, kImageToken, kImageToken, kImageToken, 8}, 2);
    r.prompt.modality = modalities({0, 1, 1, 1, 1, 0});
    r.images.grids = {{1, 2, 2}};
    r.images.pixel_values.assign(4 * kPatchDim, 0.5f);
    const int64_t id = core.submit(std::move(r));
    EXPECT_EQ(run_to_end(core).at(id).tokens, chain(8, 2));
    ASSERT_EQ(model_.encoded.size(), 1u);
    EXPECT_EQ(model_.encoded[0], (ImageGrid{1, 2, 2}));
    EXPECT_EQ(model_.n_position_grids, 1);
    ASSERT_GE(model_.fed.size(), 6u);
    EXPECT_EQ(model_.fed[0].token, 7);
    for (size_t i = 1; i < 5; ++i) {
        EXPECT_EQ(model_.fed[i].token, kImageFeature) << "row " << i;
    }
    EXPECT_EQ(model_.fed[5].token, 8);
    // The decoder step tells each token's modality: the placeholders image, the rest (and what the request
    // generates) text.
    for (size_t i = 0; i < model_.fed.size(); ++i) {
        const bool placeholder = i >= 1 && i <= 4;
        EXPECT_EQ(model_.fed[i].modality, placeholder ? TokenModality::Image : TokenModality::Text)
            << "row " << i;
    }
}

TEST_F(EngineCoreTest, VideoPlaceholdersReachTheDecoderAsVideo) {
    EngineCore core(model_, small_config());
    Request r = text_request({7, kImageToken, kImageToken, kImageToken, kImageToken, 8}, 2);
    r.prompt.modality = modalities({0, 2, 2, 2, 2, 0});
    r.images.grids = {{2, 1, 2}};  // two frames
    r.images.pixel_values.assign(4 * kPatchDim, 0.5f);
    Request as_image = r;
    EXPECT_THROW(core.validate(as_image), Error) << "a video run for an item marked as an image";
    r.images.kinds = {MediaKind::Video};
    const int64_t id = core.submit(std::move(r));
    EXPECT_EQ(run_to_end(core).at(id).tokens, chain(8, 2));
    ASSERT_GE(model_.fed.size(), 6u);
    for (size_t i = 0; i < model_.fed.size(); ++i) {
        const bool placeholder = i >= 1 && i <= 4;
        EXPECT_EQ(model_.fed[i].modality, placeholder ? TokenModality::Video : TokenModality::Text)
            << "row " << i;
    }
}

class EngineCoreAxesTest : public ::testing::TestWithParam<int> {};

TEST_P(EngineCoreAxesTest, PositionsOfAnyNumberOfAxesReachTheDecoder) {
    std::unique_ptr<Backend> backend = make_cpu_backend(1);
    FakeModel model(*backend);
    model.n_axes = GetParam();
    EngineCore core(model, small_config());
    const int64_t id = core.submit(text_request({3, 4, 5}, 4));
    EXPECT_EQ(run_to_end(core).at(id).tokens, chain(5, 4));
    ASSERT_GE(model.fed.size(), 6u);
    for (int32_t i = 0; i < 6; ++i) {
        std::vector<int32_t> expected;
        for (int32_t a = 0; a < GetParam(); ++a) {
            expected.push_back(i < 3 ? (a + 1) * i : i + static_cast<int32_t>(kPositionDelta));
        }
        EXPECT_EQ(model.fed[i].pos, expected) << "token " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Axes, EngineCoreAxesTest, ::testing::Values(1, 3, 4));

TEST_F(EngineCoreTest, ValidationAsksTheModel) {
    EngineCore core(model_, small_config());
    EXPECT_THROW(core.validate(text_request({1, static_cast<int32_t>(kVocab)}, 4)), Error);  // outside vocab
    EXPECT_THROW(core.validate(text_request({}, 4)), Error);
    EXPECT_THROW(core.validate(text_request({1}, 0)), Error);

    Request image = text_request({1, kImageToken, kImageToken, 2}, 4);
    image.prompt.modality = modalities({0, 1, 1, 0});
    image.images.grids = {{1, 1, 2}};
    image.images.pixel_values.assign(2 * kPatchDim, 0.0f);
    EXPECT_NO_THROW(core.validate(image));
    Request short_run = image;
    short_run.images.grids = {{1, 2, 2}};  // 4 tokens an image, the prompt has 2
    short_run.images.pixel_values.assign(4 * kPatchDim, 0.0f);
    EXPECT_THROW(core.validate(short_run), Error);
    Request short_values = image;
    short_values.images.pixel_values.pop_back();
    EXPECT_THROW(core.validate(short_values), Error);
    Request too_many = text_request({1, kImageToken, kImageToken, kImageToken, 2}, 4);
    too_many.prompt.modality = modalities({0, 1, 1, 1, 0});
    too_many.images.grids = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};  // limit_mm_per_prompt is 2
    too_many.images.pixel_values.assign(3 * kPatchDim, 0.0f);
    EXPECT_THROW(core.validate(too_many), Error);

    FakeModel text_only(*backend_, false);
    EngineCore text_core(text_only, small_config());
    EXPECT_NO_THROW(text_core.validate(text_request({1, 2}, 4)));
    EXPECT_THROW(text_core.validate(image), Error);
}

TEST_F(EngineCoreTest, LimitsAndMemoryPlanComeFromTheModel) {
    model_.max_context = 32;
    EXPECT_THROW(EngineCore core(model_, small_config()), Error);  // max_model_len 64 over the model's 32
    model_.max_context = 4096;

    EngineConfig planned = small_config();
    planned.num_gpu_blocks_override = 0;
    planned.max_num_batched_tokens = 48;
    planned.max_image_tokens = 16;
    {
        EngineCore core(model_, planned);
        EXPECT_EQ(model_.profiled_image_tokens, 48 + 16 - 1) << "the budget and an image taken whole past it";
        EXPECT_EQ(model_.profiled_with_video, planned.limit_video_per_prompt > 0);
        EXPECT_GT(core.memory_plan().n_blocks, 0);
    }
    for (const int64_t n_videos : {0, 2}) {
        planned.limit_video_per_prompt = n_videos;
        const EngineCore core(model_, planned);
        EXPECT_EQ(model_.profiled_with_video, n_videos > 0)
            << "a video's frames counted only where one may come";
    }
    // An encoder that leaves two blocks, 8 tokens of max_model_len's 64: planned, and said.
    planned.limit_video_per_prompt = 0;
    model_.image_activation = backend_->total_memory() / 2;
    const int64_t left = EngineCore(model_, planned).memory_plan().kv_bytes;
    const int64_t block = kv_block_bytes(model_.kv_cache_params(0, planned.block_size));
    model_.image_activation += left - 2 * block - block / 2;
    std::string logged;
    const LogSink quiet = set_log_sink([&](std::string_view m) { logged += std::string(m) + "\n"; });
    MemoryPlan starved;
    {
        // Each engine's memory is given back before the next plans, as the planner counts what is in use.
        starved = EngineCore(model_, planned).memory_plan();
    }
    set_log_sink(quiet);
    EXPECT_EQ(starved.n_blocks, 2);
    EXPECT_NE(logged.find("kv cache: 8 tokens fit, fewer than max_model_len 64"), std::string::npos)
        << logged;
    EXPECT_NE(logged.find("--kv-cache-dtype int8"), std::string::npos) << logged;
    // The same memory as 8-bit keys and values: blocks of (head_dim + 4) bytes a row (test-kv-cache).
    KvCacheParams q8_cache = model_.kv_cache_params(0, planned.block_size);
    q8_cache.dtype = ScalarType::Q8;
    planned.kv_cache_dtype = KvCacheDtype::Int8;
    logged.clear();
    const LogSink quiet8 = set_log_sink([&](std::string_view m) { logged += std::string(m) + "\n"; });
    MemoryPlan int8;
    { int8 = EngineCore(model_, planned).memory_plan(); }
    set_log_sink(quiet8);
    const int64_t useful =
        planned.max_num_seqs * ((planned.max_model_len + planned.block_size - 1) / planned.block_size);
    EXPECT_EQ(int8.kv_bytes, starved.kv_bytes) << "the same bytes left";
    EXPECT_EQ(int8.n_blocks, std::min(starved.kv_bytes / kv_block_bytes(q8_cache), useful));
    EXPECT_NE(logged.find("of 8-bit keys and values"), std::string::npos) << logged;
    planned.kv_cache_dtype = KvCacheDtype::Auto;
    // An image encoder that would take all the memory leaves none for the cache.
    model_.image_activation = backend_->total_memory();
    EXPECT_THROW(EngineCore core(model_, planned), Error);
}

TEST_F(EngineCoreTest, GenerateRunsOneRequestThroughTheInterface) {
    PromptTokens prompt{{11, 12}, modalities({0, 0})};
    GenerateParams params;
    params.max_tokens = 5;
    params.stop_ids = {60};
    const GenerateResult all = generate(model_, prompt, {}, params, [](int32_t) { return true; });
    EXPECT_EQ(all.tokens, chain(12, 5));
    EXPECT_EQ(all.finish, FinishReason::Length);

    int n_seen = 0;
    const GenerateResult cancelled =
        generate(model_, prompt, {}, params, [&](int32_t) { return ++n_seen < 2; });
    EXPECT_EQ(cancelled.finish, FinishReason::Cancelled);
    EXPECT_GE(cancelled.tokens.size(), 2u);
    EXPECT_LT(cancelled.tokens.size(), 5u);

    params.max_tokens = 5000;  // with the prompt, over the model's context of 4096
    EXPECT_THROW(generate(model_, prompt, {}, params, [](int32_t) { return true; }), Error);
}

Request image_request(int32_t first, int64_t width, int64_t max_tokens) {
    Request r = text_request({first}, max_tokens);
    for (int64_t i = 0; i < width; ++i) {
        r.prompt.ids.push_back(kImageToken);
        r.prompt.modality.push_back(TokenModality::Image);
    }
    r.prompt.ids.push_back(first);
    r.prompt.modality.push_back(TokenModality::Text);
    r.images.grids = {{1, 1, width}};
    r.images.pixel_values.assign(static_cast<size_t>(width * kPatchDim), 0.25f);
    return r;
}

// FastDeploy's chunked prefill for multimodal prompts: a chunk that reaches an image takes it whole, so an
// image of more tokens than max_num_batched_tokens runs, and the memory plan counts such a step.
TEST_F(EngineCoreTest, AnImageOverTheTokenBudgetIsTakenWhole) {
    EngineConfig c = small_config();
    c.max_num_batched_tokens = 4;
    c.max_image_tokens = 20;
    EngineCore core(model_, c);
    EXPECT_EQ(core.max_step_tokens(), 4 + 20 - 1);
    const int64_t id = core.submit(image_request(3, 12, 3));
    const auto out = run_to_end(core);
    EXPECT_EQ(out.at(id).tokens, chain(3, 3));
    ASSERT_EQ(model_.encoded.size(), 1u) << "the image was encoded once, whole";
    EXPECT_THROW(core.validate(image_request(3, 21, 3)), Error) << "over max_image_tokens";
    // A text model plans its steps by max_num_batched_tokens alone.
    c.max_image_tokens = 0;
    c.takes_images = false;
    EXPECT_EQ(EngineCore(model_, c).max_step_tokens(), 4);
}

// One request whose image the model cannot encode, among many batched with it: it alone ends, with the
// model's message; the others give the tokens they give alone.
TEST_F(EngineCoreTest, ARequestThatFailsEndsAloneAmongManyThatFinish) {
    for (const bool async_scheduling : {true, false}) {
        model_.fail_on_image_width = 7;
        EngineConfig c = small_config();
        c.max_num_seqs = 8;
        c.num_gpu_blocks_override = 200;
        c.async_scheduling = async_scheduling;
        EngineCore core(model_, c);
        std::vector<int64_t> good;
        for (int32_t i = 0; i < 6; ++i) {
            good.push_back(core.submit(image_request(static_cast<int32_t>(1 + 3 * i), 2 + i % 3, 5)));
        }
        const int64_t bad = core.submit(image_request(30, 7, 5));
        for (int32_t i = 0; i < 6; ++i) {
            good.push_back(core.submit(text_request({static_cast<int32_t>(20 + i)}, 6)));
        }
        std::map<int64_t, Finished> out;
        std::map<int64_t, RequestOutput> last;
        for (int guard = 0; core.has_unfinished() && guard < 1000; ++guard) {
            for (const RequestOutput& o : core.step()) {
                out[o.id].tokens.insert(out[o.id].tokens.end(), o.tokens.begin(), o.tokens.end());
                out[o.id].finish = o.finish;
                last[o.id] = o;
            }
        }
        EXPECT_EQ(out.at(bad).finish, FinishReason::Error);
        EXPECT_EQ(last.at(bad).error_kind, ErrorKind::Failed);
        EXPECT_NE(last.at(bad).error.find("7 patches wide"), std::string::npos) << last.at(bad).error;
        for (size_t i = 0; i < good.size(); ++i) {
            const std::vector<int32_t> expected = i < 6 ? chain(static_cast<int32_t>(1 + 3 * i), 5)
                                                        : chain(static_cast<int32_t>(20 + i - 6), 6);
            EXPECT_EQ(out.at(good[i]).tokens, expected) << "request " << i;
            EXPECT_NE(out.at(good[i]).finish, FinishReason::Error) << "request " << i;
        }
        EXPECT_GT(core.stats().n_failed_steps, 0);
        EXPECT_EQ(core.fatal_error(), ErrorKind::None);
        EXPECT_EQ(core.block_pool().n_free(), core.block_pool().n_blocks());
        // The engine goes on.
        const int64_t after = core.submit(text_request({40}, 3));
        EXPECT_EQ(run_to_end(core).at(after).tokens, chain(40, 3));
        model_.fail_on_image_width = -1;
    }
}

// A failure in a decode step (the model fails on a token one request reaches) ends that request alone.
TEST_F(EngineCoreTest, ADecodeStepThatFailsEndsTheRequestThatCausedIt) {
    model_.fail_on_token = 60;
    EngineCore core(model_, small_config());
    const int64_t doomed = core.submit(text_request({55}, 10));  // feeds 56, 57, ... and fails at 60
    const int64_t a = core.submit(text_request({1}, 8));
    const int64_t b = core.submit(text_request({10}, 8));
    const auto out = run_to_end(core);
    EXPECT_EQ(out.at(doomed).finish, FinishReason::Error);
    EXPECT_EQ(out.at(a).tokens, chain(1, 8));
    EXPECT_EQ(out.at(b).tokens, chain(10, 8));
}

TEST_F(EngineCoreTest, OutOfMemoryIsReportedAsSuchAndTheEngineGoesOn) {
    model_.fail_on_token = 60;
    model_.fail_message = "cuda: out of memory allocating 1024 bytes on device 0";
    EngineCore core(model_, small_config());
    const int64_t id = core.submit(text_request({58}, 5));
    std::optional<RequestOutput> last;
    while (core.has_unfinished()) {
        for (RequestOutput& o : core.step()) {
            last = std::move(o);
        }
    }
    ASSERT_TRUE(last);
    EXPECT_EQ(last->id, id);
    EXPECT_EQ(last->finish, FinishReason::Error);
    EXPECT_EQ(last->error_kind, ErrorKind::OutOfMemory);
    EXPECT_TRUE(can_continue_after(last->error_kind));
    EXPECT_EQ(core.fatal_error(), ErrorKind::None);
    const int64_t next = core.submit(text_request({1}, 3));
    EXPECT_EQ(run_to_end(core).at(next).tokens, chain(1, 3));
}

TEST_F(EngineCoreTest, ALostDeviceEndsEveryRequestAndTheEngineSaysItCannotGoOn) {
    model_.fail_on_token = 60;
    model_.fail_message =
        "cudaStreamSynchronize(stream_) failed at x.cpp:1: an illegal memory access was encountered";
    EngineCore core(model_, small_config());
    const int64_t a = core.submit(text_request({58}, 5));
    const int64_t b = core.submit(text_request({1}, 20));
    std::map<int64_t, RequestOutput> last;
    while (core.has_unfinished()) {
        for (RequestOutput& o : core.step()) {
            last[o.id] = std::move(o);
        }
    }
    for (const int64_t id : {a, b}) {
        EXPECT_EQ(last.at(id).finish, FinishReason::Error);
        EXPECT_EQ(last.at(id).error_kind, ErrorKind::DeviceLost);
    }
    EXPECT_EQ(core.fatal_error(), ErrorKind::DeviceLost);
    EXPECT_FALSE(can_continue_after(core.fatal_error()));
    EXPECT_THROW(core.submit(text_request({1}, 3)), Error);
}

// A chat turn submitted behind a thousand queued blocks starts in the next step and finishes first.
TEST_F(EngineCoreTest, AChatTurnBehindAThousandQueuedBlocksFinishesFirst) {
    for (const bool async_scheduling : {false, true}) {
        EngineConfig c = small_config();
        c.max_num_seqs = 4;
        c.num_gpu_blocks_override = 4000;
        c.async_scheduling = async_scheduling;
        EngineCore core(model_, c);
        std::vector<int64_t> blocks;
        for (int i = 0; i < 1000; ++i) {
            blocks.push_back(core.submit(text_request({static_cast<int32_t>(1 + i % 40)}, 8)));
        }
        core.step();
        Request chat = text_request({41, 42}, 4);
        chat.priority = Priority::Interactive;
        const int64_t id = core.submit(std::move(chat));
        int n_steps_to_first = 0;
        std::vector<int64_t> finish_order;
        bool started = false;
        while (core.has_unfinished()) {
            for (const RequestOutput& o : core.step()) {
                started = started || (o.id == id && !o.tokens.empty());
                if (o.finish) {
                    finish_order.push_back(o.id);
                }
            }
            n_steps_to_first += started ? 0 : 1;
        }
        // Its first token comes with the next step's outputs, or the one after where a step was queued ahead.
        EXPECT_LE(n_steps_to_first, async_scheduling ? 1 : 0);
        const auto at = std::find(finish_order.begin(), finish_order.end(), id) - finish_order.begin();
        EXPECT_LE(at, 4) << "only blocks already running may finish before it";
        EXPECT_EQ(finish_order.size(), 1001u);
    }
}

TEST_F(EngineCoreTest, ImagesHashedWhereTheRequestWasBuiltAreNotHashedAgain) {
    EngineCore core(model_, small_config());
    Request hashed = image_request(3, 2, 2);
    hashed.image_hashes = {12345};
    core.submit(std::move(hashed));
    EXPECT_EQ(core.stats().n_images_hashed, 0);
    core.submit(image_request(3, 2, 2));
    EXPECT_EQ(core.stats().n_images_hashed, 1);
    Request wrong = image_request(3, 2, 2);
    wrong.image_hashes = {1, 2};
    EXPECT_THROW(core.submit(std::move(wrong)), Error);
    run_to_end(core);
}

}  // namespace

// With time_device the runner marks each step's parts on the backend's queue (the CPU backend's marks are the
// host clock) and sums them; without it nothing is marked.
TEST_F(EngineCoreTest, DeviceTimesOfEachPartOnlyWhenAskedFor) {
    for (const bool timed : {false, true}) {
        EngineConfig config = small_config();
        config.time_device = timed;
        EngineCore core(model_, config);
        Request r = text_request({7, kImageToken, kImageToken, kImageToken, kImageToken, 8}, 4);
        r.prompt.modality = modalities({0, 1, 1, 1, 1, 0});
        r.images.grids = {{1, 2, 2}};
        r.images.pixel_values.assign(4 * kPatchDim, 0.5f);
        core.submit(std::move(r));
        run_to_end(core);
        const RunnerStats& s = core.stats().runner;
        if (!timed) {
            EXPECT_EQ(s.vision_device_seconds, 0.0);
            EXPECT_EQ(s.text_device_seconds, 0.0);
            EXPECT_EQ(s.decode_device_seconds, 0.0);
            continue;
        }
        EXPECT_GT(s.vision_device_seconds, 0.0);
        EXPECT_GT(s.text_device_seconds, 0.0);
        EXPECT_GT(s.decode_device_seconds, 0.0);
        EXPECT_LE(s.decode_device_seconds, s.text_device_seconds);
    }
}
