// The serving runtime on the fixture model: batched, chunked, preempted and prefix-cached requests give
// exactly the tokens of the same request run alone, under stress the pool ends empty, and bad requests are
// refused with clear errors. Built twice: on the CPU backend, and with FOLIO_TEST_CUDA on the CUDA backend
// (skipped where no CUDA device is present).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serving-fixture.h"

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
    std::vector<int64_t> cached;  // each request's first output says what the prefix cache held
    for (const Request* r : {&ocr, &table}) {
        const int64_t id = engine.submit(*r);
        while (engine.has_unfinished()) {
            for (const RequestOutput& out : engine.step()) {
                if (out.id == id && out.n_cached_tokens >= 0) {
                    cached.push_back(out.n_cached_tokens);
                }
            }
        }
    }
    const EngineStats s = engine.stats();
    EXPECT_EQ(s.n_prefix_hit_blocks, static_cast<int64_t>(common / 4));
    EXPECT_EQ(cached, (std::vector<int64_t>{0, static_cast<int64_t>(common / 4 * 4)}))
        << "once, with the first token: nothing for the first request, the shared blocks for the second";
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

TEST_F(Serving, StopStringsCutTextThatComesOnlyAtTheEnd) {
    // A decoder that joins the tokens and then replaces two characters gives all its text when the answer
    // ends (a later token could change text given before): stop strings apply to that text too.
    nlohmann::json vocab = nlohmann::json::object();
    for (int64_t id = 0; id < files_->config().text.vocab_size; ++id) {
        vocab["w" + std::to_string(id) + "."] = id;
    }
    const nlohmann::json file = {
        {"added_tokens", nlohmann::json::array()},
        {"normalizer", nullptr},
        {"pre_tokenizer", nullptr},
        {"decoder",
         {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Fuse"}}, {{"type", "Replace"}, {"pattern", {{"String", ".w"}}}, {"content", " "}}}}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
    const auto joined = Tokenizer::from_tokenizer_json(file.dump(), "joined/tokenizer.json");
    const Case& c = cases_[5];
    const std::string full = joined->decode(c.expected);
    ASSERT_GT(full.size(), 12u) << full;
    const std::string stop = full.substr(full.size() / 2, 4);
    const std::string before = full.substr(0, full.find(stop));

    EngineCore engine(*model_, base_config(), joined.get());
    Request r = c.request;
    r.stop_strings = {stop};
    engine.submit(r);
    std::string text;
    std::optional<FinishReason> finish;
    int n_outputs_with_text = 0;
    while (engine.has_unfinished()) {
        for (const RequestOutput& out : engine.step()) {
            text += out.text;
            n_outputs_with_text += out.text.empty() ? 0 : 1;
            finish = out.finish;
        }
    }
    EXPECT_EQ(text, before);
    EXPECT_EQ(n_outputs_with_text, 1);
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
    // The activations the plan keeps back come first, then the cache.
    EXPECT_EQ(logged.rfind("activations: ", 0), 0u) << logged;
    EXPECT_NE(logged.find(" MiB for the image encoder\n"), std::string::npos) << logged;
    EXPECT_TRUE(logged.ends_with("\nkv cache: 64 blocks, 1024 tokens\n")) << logged;
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
    // Token counts in the folder's tokenizer, for budgets that must hold (Ask the document).
    const std::vector<std::string> texts = {"Sales grew by 12% in the north.", "", "表格识别 OCR: Ünïcode"};
    const std::vector<int64_t> counts = service.count_tokens({}, texts);
    ASSERT_EQ(counts.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
        EXPECT_EQ(counts[i], static_cast<int64_t>(tokenizer_->encode(texts[i]).size())) << texts[i];
    }
    EXPECT_GT(counts[0], 0);
    EXPECT_THROW(service.count_tokens("no-such-model", texts), Error);
    // Image tokens counted from sizes: those the prompts above expand each page to.
    std::vector<MediaSize> sizes;
    std::vector<int64_t> image_tokens;
    for (const auto& [images, task] : inputs) {
        const Request r = make_request(images, task);
        for (size_t i = 0; i < images.size(); ++i) {
            sizes.push_back({MediaKind::Image, images[i].width, images[i].height, 1});
            image_tokens.push_back(r.images.grids[i].n_patches() / 4);
        }
    }
    EXPECT_EQ(service.count_media({}, sizes), image_tokens);
    const std::vector<int64_t> bounded = service.count_media({}, sizes, ImagePixelBounds{784, 3136});
    for (size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_LE(bounded[i], 3136 / 784) << "within the request's pixel bounds";
    }
    EXPECT_THROW(service.count_media({}, {{MediaKind::Image, 0, 5, 1}}), Error) << "no such image";
    EXPECT_THROW(service.count_media({}, sizes, ImagePixelBounds{3136, 784}), Error) << "no range";
    EXPECT_THROW(service.count_media({}, {{MediaKind::Video, 56, 56, 2}}), Error)
        << "asked of a model without video";
    EXPECT_EQ(service.stats().engine.n_images_hashed, 0) << "images hashed on the preparation threads";
    service.unload();
    EXPECT_THROW(service.count_tokens({}, texts), Error) << "nothing loaded to count with";
    EXPECT_THROW(service.count_media({}, sizes), Error) << "nothing loaded to count with";
}
