// The serving runtime on the fixture model: batched, chunked, preempted and prefix-cached requests give
// exactly the tokens of the same request run alone, under stress the pool ends empty, and bad requests are
// refused with clear errors. Built twice: on the CPU backend, and with FOLIO_TEST_CUDA on the CUDA backend
// (skipped where no CUDA device is present).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#ifdef FOLIO_TEST_CUDA
#include "engine/backend/cuda/make-cuda-backend.h"
#include "kernels/elementwise.h"
#endif
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/files/weight-source.h"
#include "engine/image/image-preprocess.h"
#include "engine/models/paddleocr-vl/chat-prompt.h"
#include "engine/models/paddleocr-vl/model-files.h"
#include "engine/models/paddleocr-vl/paddleocr-vl.h"
#include "engine/runtime/engine-core.h"
#include "engine/runtime/generator.h"
#include "engine/service/engine-service.h"
#include "engine/service/request-builder.h"
#include "engine/tokenizer/tokenizer.h"
#include "fixture-reference.h"

using namespace folio;

namespace {

struct Case {
    Request request;
    std::vector<int32_t> expected;  // greedy tokens of the request run alone
    FinishReason expected_finish = FinishReason::Length;
};

// A seeded image of noise: its grid has width / 14 x height / 14 patches.
Image noise_image(int width, int height, uint32_t seed) {
    Image image = make_image(width, height);
    std::mt19937 rng(seed);
    for (uint8_t& v : image.rgb) {
        v = static_cast<uint8_t>(rng() & 0xff);
    }
    return image;
}

class Serving : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
#ifdef FOLIO_TEST_CUDA
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
#endif
        previous_sink_ = set_log_sink([](std::string_view) {});
        try {
            set_up_suite();
        } catch (const std::exception& e) {
            // Every test then fails with the reason, and what was made is released at once, in order.
            set_up_error_ = e.what();
            release_suite();
        }
    }

    static void set_up_suite() {
#ifdef FOLIO_TEST_CUDA
        backend_ = make_cuda_backend();
#else
        backend_ = make_cpu_backend(2);
#endif
        files_ = ModelFiles::open(folio::testing::tiny_model_dir());
        tokenizer_ = Tokenizer::load(folio::testing::tiny_model_dir());
        const auto weights = make_file_weight_source(*files_);
        model_ = std::make_unique<PaddleOcrVl>(*backend_, files_->config(), *weights);
        // Four pages of 4, 8, 12 and 16 image tokens.
        const std::vector<std::pair<int, int>> sizes{{56, 56}, {112, 56}, {84, 112}, {112, 112}};
        for (size_t i = 0; i < sizes.size(); ++i) {
            pages_.push_back(noise_image(sizes[i].first, sizes[i].second, static_cast<uint32_t>(i + 1)));
        }
        std::mt19937 rng(7);
        const std::vector<std::string> words{"OCR:", "Table", "Recognition:", "the",   "page",
                                             "of",   "a",     "formula",      "chart", "read",
                                             "text", "2026",  "héllo",        "文档"};
        for (int i = 0; i < 32; ++i) {
            std::vector<Image> images;
            const int n_images = i % 4 == 0 ? 0 : (i % 4 == 3 ? 2 : 1);
            for (int k = 0; k < n_images; ++k) {
                images.push_back(pages_[(i + k) % pages_.size()]);
            }
            std::string task;
            const int n_words = 1 + static_cast<int>(rng() % (i % 3 == 0 ? 40 : 8));
            for (int w = 0; w < n_words; ++w) {
                task += (w ? " " : "") + words[rng() % words.size()];
            }
            Case c;
            c.request = make_request(images, task);
            c.request.max_tokens = 4 + static_cast<int64_t>(rng() % 21);
            cases_.push_back(std::move(c));
        }
        for (Case& c : cases_) {
            GenerateParams params;
            params.max_tokens = static_cast<int>(c.request.max_tokens);
            const GenerateResult alone =
                generate(*model_, c.request.prompt, c.request.images, params, [](int32_t) { return true; });
            c.expected = alone.tokens;
            c.expected_finish = alone.finish;
        }
    }

    void SetUp() override {
        if (!set_up_error_.empty()) {
            FAIL() << "setting up the suite: " << set_up_error_;
        }
        if (!model_) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
    }

    static void TearDownTestSuite() {
        release_suite();
        set_log_sink(std::move(previous_sink_));
    }

    static void release_suite() {
        cases_.clear();
        pages_.clear();
        model_.reset();
        backend_.reset();
        tokenizer_.reset();
        files_.reset();
    }

    static Request make_request(const std::vector<Image>& images, const std::string& task) {
        Request r;
        r.images = preprocess_images(images, files_->preprocessor());
        std::vector<int64_t> n_tokens;
        for (const ImageGrid& g : r.images.grids) {
            n_tokens.push_back(g.n_patches() / 4);
        }
        const ModelConfig& cfg = files_->config();
        r.prompt = build_chat_prompt(*tokenizer_, *paddleocr_vl_chat_template(files_->dir()),
                                     {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id},
                                     n_tokens, task);
        return r;
    }

    struct RunResult {
        std::vector<std::vector<int32_t>> tokens;
        std::vector<FinishReason> finish;
        EngineStats stats;
    };

    // Submits `per_step` requests before every step, so that new prompts keep joining running decodes.
    static RunResult run(const EngineConfig& config, int per_step) {
        EngineCore engine(*model_, config);
        RunResult result;
        result.tokens.resize(cases_.size());
        result.finish.resize(cases_.size(), FinishReason::Cancelled);
        std::map<int64_t, size_t> index;
        size_t next = 0;
        while (next < cases_.size() || engine.has_unfinished()) {
            for (int k = 0; k < per_step && next < cases_.size(); ++k, ++next) {
                index[engine.submit(cases_[next].request)] = next;
            }
            for (const RequestOutput& out : engine.step()) {
                const size_t i = index.at(out.id);
                result.tokens[i].insert(result.tokens[i].end(), out.tokens.begin(), out.tokens.end());
                if (out.finish) {
                    result.finish[i] = *out.finish;
                }
            }
        }
        result.stats = engine.stats();
        EXPECT_EQ(result.stats.n_free_blocks, result.stats.n_kv_blocks) << "every block is back in the pool";
        return result;
    }

    static void expect_alone_equivalence(const RunResult& r) {
        for (size_t i = 0; i < cases_.size(); ++i) {
            EXPECT_EQ(r.tokens[i], cases_[i].expected) << "request " << i;
            EXPECT_EQ(r.finish[i], cases_[i].expected_finish) << "request " << i;
        }
    }

    static inline std::unique_ptr<ModelFiles> files_;
    static inline std::unique_ptr<Tokenizer> tokenizer_;
    static inline std::unique_ptr<Backend> backend_;
    static inline std::unique_ptr<PaddleOcrVl> model_;
    static inline std::vector<Image> pages_;
    static inline std::vector<Case> cases_;
    static inline LogSink previous_sink_;
    static inline std::string set_up_error_;
};

std::string label_of(bool use_cudagraph, bool async_scheduling) {
    return std::string("use_cudagraph ") + (use_cudagraph ? "on" : "off") + ", async_scheduling " +
           (async_scheduling ? "on" : "off");
}

EngineConfig base_config() {
    EngineConfig c;
    c.max_model_len = 512;
    c.max_num_seqs = 32;
    c.block_size = 16;
    c.enable_prefix_caching = false;
    c.num_gpu_blocks_override = 512;
    return c;
}

}  // namespace

// Steps scheduled and queued while the one before runs, or each after the last one's tokens are in.
TEST_F(Serving, ContinuousBatchingWithChunkedPrefillMatchesRequestsRunAlone) {
    for (const bool async_scheduling : {true, false}) {
        EngineConfig c = base_config();
        c.max_num_batched_tokens = 16;
        c.async_scheduling = async_scheduling;
        const RunResult r = run(c, 4);
        expect_alone_equivalence(r);
        EXPECT_GT(r.stats.runner.n_steps, 32) << "prompts went through in chunks";
        if (async_scheduling) {
            EXPECT_GT(r.stats.n_steps_ahead, 10);
        } else {
            EXPECT_EQ(r.stats.n_steps_ahead, 0);
        }
    }
}

// Decode steps run with their inputs on the backend, padded to a capture size and replayed where the backend
// records work (the CUDA backend; every size recorded as the engine starts), or directly, their pending
// tokens read where the step ahead made them or each step waited for: the tokens are those of each request
// run alone either way.
TEST_F(Serving, RecordedAndDirectDecodeStepsMatchRequestsRunAlone) {
    for (const bool use_cudagraph : {true, false}) {
        for (const bool async_scheduling : {true, false}) {
            EngineConfig c = base_config();
            c.use_cudagraph = use_cudagraph;
            c.async_scheduling = async_scheduling;
            const RunResult r = run(c, 3);
            expect_alone_equivalence(r);
            const std::string how = label_of(use_cudagraph, async_scheduling);
            EXPECT_GT(r.stats.runner.n_decode_steps, 10) << how;
            if (use_cudagraph && backend_->can_record()) {
                EXPECT_EQ(r.stats.runner.n_replays, r.stats.runner.n_decode_steps)
                    << "every decode step replays work recorded as the engine started, " << how;
            } else {
                EXPECT_EQ(r.stats.runner.n_replays, 0) << how;
            }
            EXPECT_EQ(r.stats.n_steps_ahead > r.stats.runner.n_decode_steps / 2, async_scheduling) << how;
        }
    }
}

// Sampled requests draw the same numbers in the same order however their steps are queued, so their tokens
// match; requests with a repetition penalty need their tokens on the host and keep every step waiting.
TEST_F(Serving, SampledTokensMatchWhetherStepsAreQueuedAhead) {
    const auto run_sampled = [&](bool async_scheduling, float repetition_penalty) {
        EngineConfig c = base_config();
        c.async_scheduling = async_scheduling;
        EngineCore engine(*model_, c);
        std::map<int64_t, std::vector<int32_t>> tokens;
        for (int i = 0; i < 8; ++i) {
            Request r = cases_[static_cast<size_t>(i)].request;
            r.sampling.temperature = 0.9f;
            r.sampling.top_p = 0.95f;
            r.sampling.seed = 100 + static_cast<uint64_t>(i);
            r.sampling.repetition_penalty = repetition_penalty;
            tokens[engine.submit(std::move(r))];
        }
        while (engine.has_unfinished()) {
            for (const RequestOutput& out : engine.step()) {
                tokens[out.id].insert(tokens[out.id].end(), out.tokens.begin(), out.tokens.end());
            }
        }
        return std::make_pair(tokens, engine.stats().n_steps_ahead);
    };
    const auto [waited, n_waited_ahead] = run_sampled(false, 1.0f);
    const auto [ahead, n_ahead] = run_sampled(true, 1.0f);
    EXPECT_EQ(ahead, waited);
    EXPECT_EQ(n_waited_ahead, 0);
    EXPECT_GT(n_ahead, 5);
    const auto [penalised, n_penalised_ahead] = run_sampled(true, 1.3f);
    EXPECT_EQ(n_penalised_ahead, 0);
    EXPECT_EQ(penalised, run_sampled(false, 1.3f).first);
    EXPECT_NE(penalised, waited) << "the penalty changes the tokens";
}

TEST_F(Serving, ForcedPreemptionMatchesRequestsRunAlone) {
    EngineConfig c = base_config();
    c.max_num_batched_tokens = 64;
    c.block_size = 4;
    int64_t largest = 0;
    for (const Case& k : cases_) {
        largest = std::max(largest, static_cast<int64_t>(k.request.prompt.ids.size()) + k.request.max_tokens);
    }
    c.num_gpu_blocks_override = (largest + 3) / 4 + 4;  // room for the largest request and little more
    const RunResult r = run(c, 32);
    expect_alone_equivalence(r);
    EXPECT_GT(r.stats.n_preemptions, 0);
    std::cout << "preemptions: " << r.stats.n_preemptions << "\n";
}

TEST_F(Serving, PrefixCachingMatchesRequestsRunAlone) {
    EngineConfig c = base_config();
    c.max_num_batched_tokens = 32;
    c.block_size = 4;
    c.enable_prefix_caching = true;
    const RunResult r = run(c, 2);
    expect_alone_equivalence(r);
    EXPECT_GT(r.stats.n_prefix_hit_blocks, 0);
    std::cout << "prefix cache: " << r.stats.n_prefix_hit_blocks << " of " << r.stats.n_prefix_lookup_blocks
              << " blocks hit\n";
}

TEST_F(Serving, TheSamePageAskedTwiceReusesTheImagePrefix) {
    EngineConfig c = base_config();
    c.block_size = 4;
    c.enable_prefix_caching = true;
    EngineCore engine(*model_, c);
    const Request ocr = make_request({pages_[3]}, "OCR:");
    const Request table = make_request({pages_[3]}, "Table Recognition:");
    size_t common = 0;
    while (common < ocr.prompt.ids.size() && ocr.prompt.ids[common] == table.prompt.ids[common]) {
        ++common;
    }
    ASSERT_GT(common, 16u) << "the prompts share the image";
    for (const Request* r : {&ocr, &table}) {
        engine.submit(*r);
        while (engine.has_unfinished()) {
            engine.step();
        }
    }
    const EngineStats s = engine.stats();
    EXPECT_EQ(s.n_prefix_hit_blocks, static_cast<int64_t>(common / 4));
}

namespace {

uint64_t hash_of(std::span<const float> pixels, const ImageGrid& grid, ThreadPool* pool = nullptr) {
    return image_content_hash(std::as_bytes(pixels), {}, grid, pool);
}

}  // namespace

// The prefix cache keys an image's tokens by this hash: every pixel value and the grid must reach it. 37
// floats are 148 bytes: whole 32-byte strides and a tail.
TEST(ImageContentHash, EveryValueAndTheGridChangeIt) {
    std::vector<float> pixels(37);
    std::iota(pixels.begin(), pixels.end(), 0.5f);
    const ImageGrid grid{1, 37, 1};
    const uint64_t h = hash_of(pixels, grid);
    EXPECT_EQ(hash_of(pixels, grid), h);
    std::set<uint64_t> seen = {h};
    for (size_t i = 0; i < pixels.size(); ++i) {
        std::vector<float> changed = pixels;
        changed[i] = std::nextafter(changed[i], 1e9f);  // the lowest bit of one value
        EXPECT_TRUE(seen.insert(hash_of(changed, grid)).second) << "value " << i;
    }
    EXPECT_TRUE(seen.insert(hash_of(pixels, ImageGrid{1, 1, 37})).second) << "grid";
    EXPECT_TRUE(seen.insert(hash_of(std::span(pixels).first(36), grid)).second) << "one value fewer";
}

// Images of several mebibytes hash in segments, on threads where a pool is given: the value is the same
// either way, and a value in any segment, or the order of two segments, changes it.
TEST(ImageContentHash, SegmentsOnThreadsGiveTheSameValue) {
    constexpr size_t kSegmentFloats = (size_t{1} << 20) / sizeof(float);
    std::vector<float> pixels(2 * kSegmentFloats + 1000);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::generate(pixels.begin(), pixels.end(), [&] { return dist(rng); });
    const ImageGrid grid{1, 2, static_cast<int64_t>(pixels.size() / 2)};
    ThreadPool pool(3);
    const uint64_t h = hash_of(pixels, grid);
    EXPECT_EQ(hash_of(pixels, grid, &pool), h);
    std::set<uint64_t> seen = {h};
    for (const size_t i : {size_t{0}, kSegmentFloats - 1, kSegmentFloats, pixels.size() - 1}) {
        std::vector<float> changed = pixels;
        changed[i] = std::nextafter(changed[i], 1e9f);
        const uint64_t with_pool = hash_of(changed, grid, &pool);
        EXPECT_EQ(hash_of(changed, grid), with_pool) << "value " << i;
        EXPECT_TRUE(seen.insert(with_pool).second) << "value " << i;
    }
    std::vector<float> swapped = pixels;
    std::swap_ranges(swapped.begin(), swapped.begin() + kSegmentFloats, swapped.begin() + kSegmentFloats);
    EXPECT_TRUE(seen.insert(hash_of(swapped, grid, &pool)).second) << "segments swapped";
}

// Levels hash with what they stand for: the same levels under another table are another image.
TEST(ImageContentHash, TheLevelTableChangesIt) {
    std::vector<uint8_t> levels(300);
    std::iota(levels.begin(), levels.end(), uint8_t{0});
    ChannelLevels table{};
    std::iota(table.begin(), table.end(), -1.0f);
    const ImageGrid grid{1, 1, 100};
    const auto hash = [&](const ChannelLevels& t) {
        return image_content_hash(std::as_bytes(std::span(levels)), std::as_bytes(std::span(t)), grid);
    };
    const uint64_t h = hash(table);
    EXPECT_EQ(hash(table), h);
    std::set<uint64_t> seen = {h};
    for (const size_t i : {size_t{0}, size_t{255}, size_t{256}, table.size() - 1}) {
        ChannelLevels changed = table;
        changed[i] = std::nextafter(changed[i], 1e9f);
        EXPECT_TRUE(seen.insert(hash(changed)).second) << "table value " << i;
    }
    EXPECT_TRUE(seen.insert(image_content_hash(std::as_bytes(std::span(levels)), {}, grid)).second)
        << "the same bytes as float values";
}

TEST_F(Serving, StressWithRandomArrivalsCancellationsAndLengths) {
    EngineConfig c = base_config();
    c.max_num_batched_tokens = 48;
    c.max_num_seqs = 16;
    c.block_size = 8;
    c.enable_prefix_caching = true;
    c.num_gpu_blocks_override = 40;
    EngineCore engine(*model_, c);
    std::mt19937 rng(2026);
    const int n_requests = 2000;
    std::map<int64_t, int64_t> max_tokens;
    std::map<int64_t, int64_t> n_tokens;
    std::map<int64_t, FinishReason> finished;
    std::set<int64_t> active;
    int n_submitted = 0;
    int64_t n_cancel_calls = 0;
    while (n_submitted < n_requests || engine.has_unfinished()) {
        const int arrivals = static_cast<int>(rng() % 3);
        for (int k = 0; k < arrivals && n_submitted < n_requests; ++k, ++n_submitted) {
            Request r;
            if (rng() % 8 == 0) {
                r = cases_[1 + 4 * (rng() % 8)].request;  // a request with an image
            } else {
                const int n = 1 + static_cast<int>(rng() % 48);
                for (int t = 0; t < n; ++t) {
                    r.prompt.ids.push_back(static_cast<int32_t>(3 + rng() % 597));
                    r.prompt.modality.push_back(TokenModality::Text);
                }
            }
            r.max_tokens = 1 + static_cast<int64_t>(rng() % 12);
            r.sampling.temperature = rng() % 2 ? 0.0f : 0.8f;
            r.sampling.seed = rng();
            const int64_t n_max = r.max_tokens;
            const int64_t id = engine.submit(std::move(r));
            max_tokens[id] = n_max;
            active.insert(id);
        }
        if (!active.empty() && rng() % 10 == 0) {
            auto it = active.begin();
            std::advance(it, static_cast<long>(rng() % active.size()));
            engine.cancel(*it);
            ++n_cancel_calls;
        }
        for (const RequestOutput& out : engine.step()) {
            ASSERT_FALSE(finished.contains(out.id)) << "output after the final one for request " << out.id;
            n_tokens[out.id] += static_cast<int64_t>(out.tokens.size());
            if (out.finish) {
                finished[out.id] = *out.finish;
                active.erase(out.id);
            }
        }
    }
    EXPECT_EQ(finished.size(), static_cast<size_t>(n_requests));
    int64_t n_cancelled = 0;
    for (const auto& [id, finish] : finished) {
        EXPECT_LE(n_tokens[id], max_tokens[id]);
        if (finish == FinishReason::Length) {
            EXPECT_EQ(n_tokens[id], max_tokens[id]);
        }
        n_cancelled += finish == FinishReason::Cancelled;
    }
    const BlockPool& pool = engine.block_pool();
    EXPECT_EQ(pool.n_free(), pool.n_blocks());
    for (int32_t b = 0; b < pool.n_blocks(); ++b) {
        ASSERT_EQ(pool.ref_count(b), 0) << "block " << b;
    }
    const EngineStats s = engine.stats();
    std::cout << "stress: " << engine.scheduler().n_steps() << " steps, " << n_cancelled << " cancelled of "
              << n_cancel_calls << " cancel calls, " << s.n_preemptions << " preemptions, "
              << s.n_prefix_hit_blocks << " prefix blocks hit, longest wait "
              << engine.scheduler().max_wait_steps() << " steps\n";
    EXPECT_GT(n_cancelled, 0);
    EXPECT_GT(s.n_preemptions, 0);
    // First come, first served with preempted sequences at the front: nobody starves. Arrivals average one
    // request a step, below what the engine serves, so the queue stays short and drains in under this many
    // steps.
    EXPECT_LE(engine.scheduler().max_wait_steps(), 150);
}

TEST_F(Serving, StopStringsEndTheRequestAndCutTheText) {
    const Case& c = cases_[5];
    IncrementalDetokenizer detok(*tokenizer_);
    std::string full;
    for (const int32_t t : c.expected) {
        full += detok.push(t);
    }
    full += detok.flush();
    ASSERT_GT(full.size(), 6u);
    const std::string stop = full.substr(full.size() / 2, 3);
    const std::string before = full.substr(0, full.find(stop));

    EngineCore engine(*model_, base_config(), tokenizer_.get());
    Request r = c.request;
    r.stop_strings = {stop};
    const int64_t id = engine.submit(r);
    std::string text;
    std::optional<FinishReason> finish;
    while (engine.has_unfinished()) {
        for (const RequestOutput& out : engine.step()) {
            ASSERT_EQ(out.id, id);
            text += out.text;
            finish = out.finish;
        }
    }
    EXPECT_EQ(text, before);
    EXPECT_EQ(finish, FinishReason::Stop);
}

TEST_F(Serving, PlansTheCacheFromMemoryAndSaysSo) {
    std::string logged;
    const LogSink quiet = set_log_sink([&](std::string_view m) { logged += std::string(m) + "\n"; });
    EngineConfig c = base_config();
    c.num_gpu_blocks_override = 0;
    c.max_num_seqs = 4;
    c.max_model_len = 256;
    const EngineCore engine(*model_, c);
    set_log_sink(quiet);
    // The host has far more memory than 4 sequences of 256 tokens need, so that is what is planned.
    EXPECT_EQ(engine.memory_plan().n_blocks, 4 * 256 / 16);
    EXPECT_EQ(logged, "kv cache: 64 blocks, 1024 tokens\n");
    EXPECT_EQ(engine.stats().n_kv_blocks, 64);
}

TEST_F(Serving, RefusesBadRequestsWithClearErrors) {
    EngineConfig c = base_config();
    c.limit_mm_per_prompt = 1;
    c.max_num_batched_tokens = 12;
    EngineCore engine(*model_, c);
    const auto message = [&](const Request& r) {
        try {
            engine.validate(r);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    Request empty;
    EXPECT_NE(message(empty).find("empty prompt"), std::string::npos);
    Request two_images = make_request({pages_[0], pages_[1]}, "OCR:");
    EXPECT_NE(message(two_images).find("more than limit_mm_per_prompt 1"), std::string::npos);
    Request no_tokens = make_request({pages_[0]}, "OCR:");
    no_tokens.max_tokens = 0;
    EXPECT_NE(message(no_tokens).find("max_tokens must be at least 1"), std::string::npos);
    Request big_page = make_request({pages_[3]}, "OCR:");  // 16 image tokens, budget 12: taken whole
    EXPECT_EQ(message(big_page), "accepted");
    Request too_long;
    too_long.prompt.ids.assign(600, 5);
    too_long.prompt.modality.assign(600, TokenModality::Text);
    EXPECT_NE(message(too_long).find("max_model_len"), std::string::npos);
    Request short_pixels = make_request({pages_[0]}, "OCR:");
    short_pixels.images.levels.pop_back();
    EXPECT_NE(message(short_pixels).find("values (588 a patch), got"), std::string::npos)
        << message(short_pixels);
    Request both_forms = make_request({pages_[0]}, "OCR:");
    both_forms.images.pixel_values = both_forms.images.values();
    EXPECT_NE(message(both_forms).find("images given both as"), std::string::npos) << message(both_forms);
    Request floats = make_request({pages_[0]}, "OCR:");
    floats.images.pixel_values = floats.images.values();
    floats.images.levels.clear();
    EXPECT_EQ(message(floats), "accepted");
    EXPECT_EQ(message(make_request({pages_[0]}, "OCR:")), "accepted");
    try {
        parse_quantization("int3");
        ADD_FAILURE() << "an unknown quantization was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("unknown quantization \"int3\""), std::string::npos);
    }
}

// A chat's template kwargs (a request's chat_template_kwargs) reach the template as variables beside the
// model's values, over those of the same name, as transformers' apply_chat_template passes them; the chat's
// own messages and generation prompt stay.
TEST_F(Serving, ChatTemplateKwargsAreTemplateVariables) {
    PromptFormat format;
    format.tokenizer = tokenizer_.get();
    format.chat_template = std::make_shared<const ChatTemplate>(ChatTemplate::parse(
        "{{ bos_token }}{% for m in messages %}{{ m['content'][0]['text'] }}{% endfor %}"
        "{% if add_generation_prompt %}Assistant: {% endif %}"
        "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
        "{% else %}<think>\n{% endif %}",
        "inline template"));
    format.template_values = special_token_values(*tokenizer_);
    const ChatMessage hi{ChatMessage::Role::User, "Hi", {}};
    const std::string bos = format.template_values.value("bos_token", "");
    ASSERT_FALSE(bos.empty());
    EXPECT_EQ(render_chat(format, {hi}), bos + "HiAssistant: <think>\n");
    EXPECT_EQ(render_chat(format, {hi}, {{"enable_thinking", false}}),
              bos + "HiAssistant: <think>\n\n</think>\n\n");
    EXPECT_EQ(render_chat(format, {hi}, {{"enable_thinking", true}}), bos + "HiAssistant: <think>\n");
    EXPECT_EQ(render_chat(format, {hi}, {{"bos_token", "[B]"}}), "[B]HiAssistant: <think>\n");
    EXPECT_EQ(render_chat(format, {hi},
                          {{"messages", nlohmann::ordered_json::array()}, {"add_generation_prompt", false}}),
              bos + "HiAssistant: <think>\n");
    try {
        render_chat(format, {hi}, nlohmann::ordered_json::array({1, 2}));
        ADD_FAILURE() << "kwargs that are not an object were taken";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("chat_template_kwargs must be an object"), std::string::npos)
            << e.what();
    }

    // Through the request builder: the prompt's ids are the rendered text's.
    format.special = {files_->config().image_token_id, files_->config().vision_start_token_id,
                      files_->config().vision_end_token_id};
    format.preprocessor = files_->preprocessor();
    format.n_image_tokens = [](const ImageGrid& g) { return g.n_patches() / 4; };
    const RequestBuilder builder(format, {512, 3, 0});
    const Request thinking = builder.build({Chat{{hi}}, {}});
    const Request plain = builder.build({Chat{{hi}, {{"enable_thinking", false}}}, {}});
    EXPECT_EQ(plain.prompt.ids,
              tokenizer_->encode(render_chat(format, {hi}, {{"enable_thinking", false}}), true));
    EXPECT_EQ(thinking.prompt.ids, tokenizer_->encode(render_chat(format, {hi}), true));
    EXPECT_GT(plain.prompt.ids.size(), thinking.prompt.ids.size());

    // Without the generation prompt the text ends with the messages, and the chat may end with the
    // assistant's turn; with it, it may not.
    EXPECT_EQ(render_chat(format, {hi}, nlohmann::ordered_json::object(), false), bos + "Hi<think>\n");
    Chat open{{hi}};
    open.add_generation_prompt = false;
    EXPECT_EQ(builder.build({open, {}}).prompt.ids, tokenizer_->encode(bos + "Hi<think>\n", true));
    const ChatMessage answer{ChatMessage::Role::Assistant, "Yes", {}};
    Chat continued{{hi, answer}};
    continued.add_generation_prompt = false;
    EXPECT_EQ(builder.build({continued, {}}).prompt.ids, tokenizer_->encode(bos + "HiYes<think>\n", true));
    continued.add_generation_prompt = true;
    EXPECT_THROW(builder.build({continued, {}}), Error);
}

// The chat through the folder's chat_template.jinja: one user turn is the single-turn prompt, and a
// conversation alternates "User: ...\n" and "Assistant: ...<|end_of_sentence|>".
TEST_F(Serving, RequestBuilderFollowsTheChatTemplate) {
    const ModelConfig& cfg = files_->config();
    PromptFormat format;
    format.tokenizer = tokenizer_.get();
    format.chat_template = paddleocr_vl_chat_template(files_->dir());
    format.template_values = special_token_values(*tokenizer_);
    EXPECT_EQ(format.chat_template->origin(), (files_->dir() / "chat_template.jinja").string());

    ChatMessage first{ChatMessage::Role::User, "OCR:", {pages_[0]}};
    EXPECT_EQ(render_chat(format, {first}), chat_prompt_text(*format.chat_template, 1, "OCR:"));
    ChatMessage answer{ChatMessage::Role::Assistant, "Hello", {}};
    ChatMessage second{ChatMessage::Role::User, "And this one?", {pages_[1], pages_[2]}};
    EXPECT_EQ(render_chat(format, {first, answer, second}),
              "<|begin_of_sentence|>User: <|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>OCR:\n"
              "Assistant: Hello<|end_of_sentence|>User: <|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>"
              "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>And this one?\nAssistant: ");
    // Without a template a chat is refused with the reason.
    PromptFormat no_template = format;
    no_template.chat_template.reset();
    try {
        render_chat(no_template, {first});
        ADD_FAILURE() << "a chat without a template was rendered";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos) << e.what();
    }

    format.special = {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id};
    format.preprocessor = files_->preprocessor();
    format.n_image_tokens = [](const ImageGrid& g) { return g.n_patches() / 4; };
    const RequestBuilder builder(format, {512, 3, 0});
    const Request task = builder.build({ImageTask{{pages_[1]}, "OCR:"}, {}});
    const Request reference = make_request({pages_[1]}, "OCR:");
    EXPECT_EQ(task.prompt.ids, reference.prompt.ids);
    EXPECT_EQ(task.prompt.modality, reference.prompt.modality);
    EXPECT_EQ(task.images.grids, reference.images.grids);
    EXPECT_EQ(task.image_hashes.size(), 1u) << "hashed where the request is built";
    EXPECT_EQ(task.max_tokens, 512 - static_cast<int64_t>(task.prompt.ids.size()));

    const Request chat = builder.build({Chat{{first, answer, second}}, {}});
    EXPECT_EQ(chat.images.grids.size(), 3u);
    int64_t n_image_tokens = 0;
    for (const ImageGrid& g : chat.images.grids) {
        n_image_tokens += g.n_patches() / 4;
    }
    EXPECT_EQ(std::count(chat.prompt.modality.begin(), chat.prompt.modality.end(), TokenModality::Image),
              n_image_tokens);
    EXPECT_EQ(chat.prompt.ids.front(), tokenizer_->encode("<|begin_of_sentence|>", true).front());
    const auto message = [&](RequestSpec spec) {
        try {
            builder.build(std::move(spec));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(message({ImageTask{{pages_[0], pages_[1], pages_[2], pages_[3]}, "OCR:"}, {}})
                  .find("4 images in one request, more than limit_mm_per_prompt 3"),
              std::string::npos);
    GenerationOptions too_long;
    too_long.max_tokens = 600;
    EXPECT_NE(message({ImageTask{{pages_[0]}, "OCR:"}, too_long}).find("max_tokens 600"), std::string::npos);
    too_long.fit_max_tokens = true;
    const Request fitted = builder.build({ImageTask{{pages_[0]}, "OCR:"}, too_long});
    EXPECT_EQ(fitted.max_tokens, 512 - static_cast<int64_t>(fitted.prompt.ids.size()));
    Image broken = pages_[0];
    broken.rgb.pop_back();
    EXPECT_NE(message({ImageTask{{broken}, "OCR:"}, {}}).find("message 0 image 0"), std::string::npos);
    EXPECT_NE(message({Chat{{first, answer}}, {}}).find("must end with the user's message"),
              std::string::npos);
    EXPECT_EQ(message({RawText{"OCR: plain text"}, {}}), "accepted");

    // A request's own pixel bounds: the image is resized within them, not the model's.
    PreprocessorConfig small = format.preprocessor;
    small.min_pixels = 28 * 28;
    small.max_pixels = 56 * 56;
    const std::vector<Image> one{pages_[1]};
    const ImageGrid expected = preprocess_images(one, small).grids.at(0);
    RequestSpec bounded{ImageTask{{pages_[1]}, "OCR:"}, {}};
    bounded.image_pixels = ImagePixelBounds{small.min_pixels, small.max_pixels};
    const Request resized = builder.build(bounded);
    EXPECT_EQ(resized.images.grids.at(0), expected);
    EXPECT_NE(resized.images.grids.at(0), task.images.grids.at(0));
    // Bounds wholly above the model's give way to its own.
    RequestSpec wide{ImageTask{{pages_[1]}, "OCR:"}, {}};
    wide.image_pixels =
        ImagePixelBounds{format.preprocessor.max_pixels * 2, format.preprocessor.max_pixels * 4};
    EXPECT_EQ(builder.build(wide).images.grids.at(0), task.images.grids.at(0));
    RequestSpec inverted{ImageTask{{pages_[1]}, "OCR:"}, {}};
    inverted.image_pixels = ImagePixelBounds{100, 10};
    EXPECT_NE(message(inverted).find("image pixel bounds 100..10"), std::string::npos);
}

// Videos beside images: a template that places both, the frames cut into a temporal grid, the placeholders
// marked as video, and clear refusals where the model or the template takes no video.
TEST_F(Serving, RequestBuilderTakesVideosWhereTheModelDoes) {
    const ModelConfig& cfg = files_->config();
    PromptFormat format;
    format.tokenizer = tokenizer_.get();
    format.chat_template = std::make_shared<const ChatTemplate>(ChatTemplate::parse(
        "{%- for message in messages -%}{%- for c in message['content'] -%}"
        "{%- if c['type'] == 'image' -%}<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>"
        "{%- elif c['type'] == 'video' -%}<|IMAGE_START|><|VIDEO_PLACEHOLDER|><|IMAGE_END|>"
        "{%- else -%}{{ c['text'] }}{%- endif -%}{%- endfor -%}{%- endfor -%}",
        "video-template"));
    const std::optional<int32_t> video_token = tokenizer_->find_token("<|VIDEO_PLACEHOLDER|>");
    ASSERT_TRUE(video_token.has_value());
    format.special = {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id, *video_token};
    format.preprocessor = files_->preprocessor();
    format.preprocessor.temporal_patch_size = 2;
    format.n_image_tokens = [](const ImageGrid& g) { return g.n_patches() / 4; };
    const RequestBuilder builder(format, {100000, 4, 0});

    // Three frames of one size: padded to four, two temporal patches.
    Video video;
    for (int f = 0; f < 3; ++f) {
        video.frames.push_back(pages_[0]);
        std::fill(video.frames.back().rgb.begin(), video.frames.back().rgb.begin() + 3 * f, uint8_t{40});
    }
    ChatMessage message{ChatMessage::Role::User, "Describe.", {pages_[1]}};
    message.videos = {video};
    const Request r = builder.build({Chat{{message}}, {}});
    ASSERT_EQ(r.images.grids.size(), 2u);
    EXPECT_EQ(r.images.kinds, (std::vector<MediaKind>{MediaKind::Image, MediaKind::Video}));
    const ImageGrid frame = preprocess_images(std::span(&pages_[0], 1), format.preprocessor).grids.at(0);
    EXPECT_EQ(r.images.grids[1], (ImageGrid{2, frame.h, frame.w}));
    const auto n_of = [&](TokenModality m) {
        return std::count(r.prompt.modality.begin(), r.prompt.modality.end(), m);
    };
    EXPECT_EQ(n_of(TokenModality::Image), r.images.grids[0].n_patches() / 4);
    EXPECT_EQ(n_of(TokenModality::Video), r.images.grids[1].n_patches() / 4);
    // The image's run comes first, as the template places it, and the video's placeholders carry its token.
    const auto first_video =
        std::find(r.prompt.modality.begin(), r.prompt.modality.end(), TokenModality::Video);
    const auto last_image =
        std::find(r.prompt.modality.rbegin(), r.prompt.modality.rend(), TokenModality::Image);
    EXPECT_LT(std::distance(r.prompt.modality.begin(), last_image.base()),
              std::distance(r.prompt.modality.begin(), first_video));
    EXPECT_EQ(r.prompt.ids[static_cast<size_t>(first_video - r.prompt.modality.begin())], *video_token);
    EXPECT_EQ(r.image_hashes.size(), 2u);
    // The temporal patches hold consecutive frames: the video's first patch differs from a still of frame 0.
    const std::span<const uint8_t> video_levels = r.images.image_levels(1);
    PreprocessedImages still;
    append_image(still, pages_[0], format.preprocessor, "still");
    EXPECT_EQ(video_levels.size(), 2 * still.levels.size());
    EXPECT_FALSE(std::equal(still.levels.begin(), still.levels.end(), video_levels.begin()));

    const auto message_of = [&](const RequestBuilder& b, RequestSpec spec) {
        try {
            b.build(std::move(spec));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    PromptFormat no_video = format;
    no_video.special.video_token_id = -1;
    EXPECT_NE(
        message_of(RequestBuilder(no_video, {100000, 4, 0}), {Chat{{message}}, {}}).find("takes no video"),
        std::string::npos);
    PromptFormat drops_video = format;
    drops_video.chat_template = paddleocr_vl_chat_template(files_->dir());
    EXPECT_NE(message_of(RequestBuilder(drops_video, {100000, 4, 0}), {Chat{{message}}, {}})
                  .find("0 video placeholders"),
              std::string::npos);
    Video mixed = video;
    mixed.frames[1] = pages_[1];
    ChatMessage bad{ChatMessage::Role::User, "Describe.", {}};
    bad.videos = {mixed};
    EXPECT_NE(message_of(builder, {Chat{{bad}}, {}}).find("message 0 video 0: frame 1"), std::string::npos);
    bad.videos = {Video{}};
    EXPECT_NE(message_of(builder, {Chat{{bad}}, {}}).find("0 frames"), std::string::npos);
    // A step takes a video whole: its frames together within the largest image's tokens.
    ChatMessage only_video{ChatMessage::Role::User, "Describe.", {}, {video}};
    const int64_t video_tokens = r.images.grids[1].n_patches() / 4;
    EXPECT_NE(message_of(RequestBuilder(format, {100000, 4, video_tokens - 1}), {Chat{{only_video}}, {}})
                  .find("video 0 takes " + std::to_string(video_tokens) + " tokens"),
              std::string::npos);
    EXPECT_EQ(message_of(RequestBuilder(format, {100000, 4, video_tokens}), {Chat{{only_video}}, {}}),
              "accepted");
    // Images and videos are counted each on their own: one of each fits limits of one image and one video, a
    // second video does not, and no video fits a video limit of 0 whatever the image limit.
    EXPECT_EQ(message_of(RequestBuilder(format, {100000, 1, 0, 1}), {Chat{{message}}, {}}), "accepted");
    ChatMessage two_videos{ChatMessage::Role::User, "Describe.", {}, {video, video}};
    EXPECT_NE(message_of(RequestBuilder(format, {100000, 4, 0, 1}), {Chat{{two_videos}}, {}})
                  .find("2 videos in one request, more than limit_mm_per_prompt's video limit 1"),
              std::string::npos);
    EXPECT_NE(message_of(RequestBuilder(format, {100000, 4, 0, 0}), {Chat{{only_video}}, {}})
                  .find("1 video in one request, more than limit_mm_per_prompt's video limit 0"),
              std::string::npos);
    ChatMessage two_images{ChatMessage::Role::User, "Describe.", {pages_[0], pages_[1]}, {video}};
    EXPECT_NE(message_of(RequestBuilder(format, {100000, 1, 0, 4}), {Chat{{two_images}}, {}})
                  .find("2 images in one request, more than limit_mm_per_prompt 1"),
              std::string::npos);
}

// The service on the fixture folder, through the PaddleOCR-VL factory: requests built from images and a task
// give the tokens of the same request run alone.
TEST_F(Serving, ServiceServesTheModelFolderAsRequestsRunAlone) {
    EngineService service;
    ServiceParams params;
    // The suite's device, made on the service's engine thread.
#ifdef FOLIO_TEST_CUDA
    params.device.make_backend = [] { return make_cuda_backend(); };
#else
    params.device.make_backend = [] { return make_cpu_backend(2); };
#endif
    params.models.push_back({ModelRole::Recognition, folio::testing::tiny_model_dir(), {}});
    params.engine = base_config();
    service.load(params);
    ASSERT_EQ(service.wait_loaded(std::chrono::seconds(60)), ServiceState::Ready) << service.status().error;
    EXPECT_EQ(service.status().progress.bytes_read, service.status().progress.bytes_total);
    const std::vector<std::pair<std::vector<Image>, std::string>> inputs = {
        {{pages_[0]}, "OCR:"}, {{pages_[1], pages_[3]}, "Table Recognition:"}, {{}, "the chart"}};
    std::vector<RequestHandle> handles;
    std::vector<std::vector<int32_t>> expected;
    for (const auto& [images, task] : inputs) {
        GenerationOptions options;
        options.max_tokens = 9;
        handles.push_back(service.submit({ImageTask{images, task}, options}));
        GenerateParams alone;
        alone.max_tokens = 9;
        const Request r = make_request(images, task);
        expected.push_back(generate(*model_, r.prompt, r.images, alone, [](int32_t) { return true; }).tokens);
    }
    for (size_t i = 0; i < handles.size(); ++i) {
        std::vector<int32_t> tokens;
        std::string text;
        while (const std::optional<RequestOutput> out = handles[i].next()) {
            tokens.insert(tokens.end(), out->tokens.begin(), out->tokens.end());
            text += out->text;
            EXPECT_TRUE(out->error.empty()) << out->error;
        }
        EXPECT_EQ(tokens, expected[i]) << "request " << i;
        EXPECT_FALSE(text.empty()) << "the service has the folder's tokenizer";
    }
    EXPECT_EQ(service.stats().engine.n_images_hashed, 0) << "images hashed on the preparation threads";
}
