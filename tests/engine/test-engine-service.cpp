// The engine service driven by fake models on the CPU backend: loading in the background with progress (its
// phases also with the fixture model), cancellation and errors, unloading and reloading, requests from
// several threads with priorities, groups, per-request errors, callbacks that throw, handles that outlive the
// service, and the statistics snapshot. Also built under ThreadSanitizer (the tsan preset).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine-service-fixture.h"
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/models/layout-model.h"
#include "engine/service/engine-service.h"
#include "fake-model.h"
#include "fixture-reference.h"

using namespace folio;
using namespace folio::testing;
using namespace std::chrono_literals;

namespace {

TEST_F(EngineServiceTest, LoadsInTheBackgroundWithProgressThenServes) {
    FakeFactory factory;
    factory.n_chunks = 20;
    factory.chunk_delay = 5ms;
    EngineService service;
    EXPECT_EQ(service.status().state, ServiceState::Empty);
    EXPECT_THROW(service.submit(spec(text_request({1}, 2))), Error) << "nothing loaded";
    service.load(params_for(factory));
    std::set<LoadPhase> phases;
    int64_t max_read = 0;
    for (ServiceStatus s = service.status(); s.state == ServiceState::Loading; s = service.status()) {
        phases.insert(s.progress.phase);
        EXPECT_GE(s.progress.bytes_read, max_read) << "bytes read only grow";
        max_read = s.progress.bytes_read;
        std::this_thread::sleep_for(1ms);
    }
    const ServiceStatus ready = service.status();
    ASSERT_EQ(ready.state, ServiceState::Ready) << ready.error;
    EXPECT_TRUE(phases.contains(LoadPhase::Weights));
    EXPECT_GT(max_read, 0);
    EXPECT_EQ(ready.progress.phase, LoadPhase::Ready);
    EXPECT_EQ(ready.progress.bytes_read, 20 * FakeFactory::kChunkBytes);
    EXPECT_EQ(ready.progress.bytes_total, ready.progress.bytes_read);

    RequestHandle h = service.submit(spec(text_request({3, 4}, 5)));
    const Collected c = collect(h);
    EXPECT_EQ(c.tokens, chain(4, 5));
    ASSERT_TRUE(c.last);
    EXPECT_EQ(c.last->finish, FinishReason::Length);
    EXPECT_EQ(c.last->error_kind, ErrorKind::None);
    EXPECT_TRUE(h.finished());
}

// The fixture model through the PaddleOCR-VL factory on the CPU backend, every report of its loading in
// order: with WINT8 or WINT4 the quantization pass is a phase of its own between the weights and the memory
// plan, counting its weights and reading the quantized layers' bytes; without quantization there is no such
// phase.
TEST_F(EngineServiceTest, LoadingReportsQuantizationAsAPhaseOfItsOwn) {
    for (const Quantization type : {Quantization::None, Quantization::Wint8, Quantization::Wint4}) {
        SCOPED_TRACE(quantization_name(type));
        ModelLoadParams load;
        load.quantization = type;
        load.group_size = 64;
        ServiceParams params;
        params.device.make_backend = [] { return make_cpu_backend(1); };
        params.models.push_back({ModelRole::Recognition, tiny_model_dir(), load});
        params.engine = service_config();
        std::vector<LoadProgress> reports;  // written on the engine thread, read once it is Ready
        params.on_progress = [&reports](const LoadProgress& p) { reports.push_back(p); };
        EngineService service;
        service.load(std::move(params));
        ASSERT_EQ(service.wait_loaded(60s), ServiceState::Ready) << service.status().error;

        std::vector<std::string> phases;  // each phase once, as it began; idle until the slot's first
        for (const LoadProgress& p : reports) {
            if (p.phase != LoadPhase::Idle && (phases.empty() || phases.back() != load_phase_name(p.phase))) {
                phases.push_back(load_phase_name(p.phase));
            }
        }
        std::vector<std::string> expected = {"opening", "weights", "memory plan", "graph capture", "ready"};
        if (type != Quantization::None) {
            expected.insert(expected.begin() + 2, "quantization");
        }
        EXPECT_EQ(phases, expected);

        const LoadProgress& last = reports.back();
        EXPECT_EQ(last.bytes_read, last.bytes_total);
        EXPECT_GT(last.bytes_total, 0);
        EXPECT_EQ(last.n_quantized, last.n_to_quantize);
        EXPECT_EQ(service.status().progress.n_quantized, last.n_quantized);
        EXPECT_EQ(type == Quantization::None, last.n_to_quantize == 0);
        int64_t n_quantized = 0;
        int64_t bytes_read = 0;
        for (const LoadProgress& p : reports) {
            EXPECT_GE(p.n_quantized, n_quantized) << "weights quantized only grow";
            EXPECT_GE(p.bytes_read, bytes_read) << "bytes read only grow";
            if (p.phase != LoadPhase::Quantization && p.phase < LoadPhase::MemoryPlan) {
                EXPECT_EQ(p.n_quantized, 0) << load_phase_name(p.phase);
            }
            if (p.phase == LoadPhase::Quantization && n_quantized == 0 && p.n_quantized == 0) {
                EXPECT_GT(p.n_to_quantize, 0);
                EXPECT_LT(p.bytes_read, p.bytes_total) << "the quantized layers are read in their phase";
            }
            n_quantized = p.n_quantized;
            bytes_read = p.bytes_read;
        }
    }
}

// Cancelled halfway through the weights: the models, tensors and backend made so far are released (the
// ASan build checks that nothing leaks), the state is Empty again and a new load works.
TEST_F(EngineServiceTest, LoadingCancelledHalfwayLeavesNothingBehind) {
    FakeFactory factory;
    factory.n_chunks = 200;
    factory.chunk_delay = 2ms;
    EngineService service;
    service.load(params_for(factory));
    while (service.status().progress.bytes_read < 100 * FakeFactory::kChunkBytes) {
        ASSERT_EQ(service.status().state, ServiceState::Loading);
        std::this_thread::sleep_for(1ms);
    }
    service.cancel_load();
    EXPECT_EQ(service.status().state, ServiceState::Empty);
    EXPECT_EQ(g_live_models.load(), 0);
    EXPECT_EQ(service.status().progress.bytes_read, 0);

    factory.n_chunks = 2;
    factory.chunk_delay = 0ms;
    load_ready(service, factory);
    EXPECT_EQ(g_live_models.load(), 1);
}

TEST_F(EngineServiceTest, ALoadThatFailsNamesTheFileAndTheProblem) {
    FakeFactory factory;
    factory.fail_message = "truncated: 12 of 4096 bytes";
    EngineService service;
    service.load(params_for(factory));
    EXPECT_EQ(service.wait_loaded(10s), ServiceState::Failed);
    const ServiceStatus s = service.status();
    EXPECT_EQ(s.error, "fake-model/model.safetensors: truncated: 12 of 4096 bytes");
    EXPECT_EQ(s.error_kind, ErrorKind::Failed);
    EXPECT_EQ(g_live_models.load(), 0);
    try {
        service.submit(spec(text_request({1}, 2)));
        ADD_FAILURE() << "a failed service took a request";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }

    // The real factory: a missing folder is named, for either role.
    ServiceParams missing;
    missing.device.make_backend = [] { return make_cpu_backend(1); };
    missing.models.push_back({ModelRole::Recognition, "/nonexistent/paddleocr-vl", {}});
    service.load(missing);
    EXPECT_EQ(service.wait_loaded(10s), ServiceState::Failed);
    EXPECT_NE(service.status().error.find("/nonexistent/paddleocr-vl"), std::string::npos)
        << service.status().error;
    missing.models.front() = {ModelRole::Recognition, FOLIO_FIXTURES_DIR "/paddleocr-vl-tiny", {}};
    missing.models.push_back({ModelRole::Layout, "/nonexistent/PP-DocLayoutV3", {}});
    service.load(missing);
    EXPECT_EQ(service.wait_loaded(60s), ServiceState::Failed);
    EXPECT_NE(service.status().error.find("/nonexistent/PP-DocLayoutV3"), std::string::npos)
        << service.status().error;
}

// The real factory loads a layout model beside PaddleOCR-VL; it runs on the engine thread between steps.
TEST_F(EngineServiceTest, LoadsLayoutModelBesideRecognition) {
    ServiceParams p;
    p.device.make_backend = [] { return make_cpu_backend(1); };
    p.models.push_back({ModelRole::Recognition, FOLIO_FIXTURES_DIR "/paddleocr-vl-tiny", {}});
    p.models.push_back({ModelRole::Layout, FOLIO_FIXTURES_DIR "/../layout/pp-doclayout-v3-tiny", {}});
    p.models.back().layout_batch = 2;
    p.engine.max_model_len = 4096;
    EngineService service;
    service.load(p);
    ASSERT_EQ(service.wait_loaded(60s), ServiceState::Ready) << service.status().error;
    std::vector<LayoutRawOutput> outputs;
    service.run_on_engine_thread([&](EngineContext& context) {
        ASSERT_EQ(context.models.size(), 2U);
        EXPECT_EQ(context.models[0]->layout(), nullptr);
        const LayoutModel* layout = context.models[1]->layout();
        ASSERT_NE(layout, nullptr);
        EXPECT_EQ(layout->max_batch(), 2);
        const std::vector<uint8_t> page = layout->page_preparation()(make_image(64, 48));
        outputs = layout->detect_prepared(std::vector<std::vector<uint8_t>>(2, page), 0.0F);
    });
    ASSERT_EQ(outputs.size(), 2U);
    EXPECT_GT(outputs[0].n_queries, 0);
    EXPECT_TRUE(outputs[0].has_masks());
    EXPECT_EQ(outputs[0].logits, outputs[1].logits);  // the same page twice in one batch
}

// A settings change: unload frees everything, and a load with other options plans anew.
TEST_F(EngineServiceTest, UnloadsAndReloadsWithOtherOptions) {
    FakeFactory factory;
    EngineService service;
    load_ready(service, factory);
    RequestHandle h = service.submit(spec(text_request({1}, 3)));
    EXPECT_EQ(collect(h).tokens, chain(1, 3));
    EXPECT_EQ(service.stats().n_kv_blocks, 4096);
    service.unload();
    EXPECT_EQ(service.status().state, ServiceState::Empty);
    EXPECT_EQ(g_live_models.load(), 0);
    EngineConfig other = service_config();
    other.num_gpu_blocks_override = 512;
    load_ready(service, factory, other);
    EXPECT_EQ(service.stats().n_kv_blocks, 512);
    RequestHandle again = service.submit(spec(text_request({5}, 3)));
    EXPECT_EQ(collect(again).tokens, chain(5, 3));
}

// A layout model loaded beside the recognition model takes its share of the one memory plan.
TEST_F(EngineServiceTest, ModelsLoadedTogetherPlanTheirMemoryTogether) {
    FakeFactory factory;
    EngineConfig planned = service_config();
    planned.num_gpu_blocks_override = 0;
    ServiceParams p = params_for(factory, planned);
    p.models.push_back({ModelRole::Layout, "fake-layout", {}});
    factory.reserved_bytes = make_cpu_backend(1)->total_memory();  // leaves nothing for the cache
    EngineService service;
    service.load(p);
    EXPECT_EQ(service.wait_loaded(10s), ServiceState::Failed);
    EXPECT_NE(service.status().error.find("other models'"), std::string::npos) << service.status().error;
    factory.reserved_bytes = 1 << 20;
    service.load(p);
    ASSERT_EQ(service.wait_loaded(10s), ServiceState::Ready) << service.status().error;
    EXPECT_EQ(g_live_models.load(), 2);
    RequestHandle h = service.submit(spec(text_request({2}, 3)));
    EXPECT_EQ(collect(h).tokens, chain(2, 3));
}

// An OCR model and a chat model side by side: an engine each, their caches planned together out of the memory
// one model alone would have, each request reaching the model it names.
TEST_F(EngineServiceTest, TwoGenerativeModelsSideBySideEachRequestReachingItsModel) {
    FakeFactory factory;
    // Blocks of 32 KiB and 9 MiB free on the device: a few hundred blocks, fewer than a model can use.
    factory.configure = [](FakeModel& m) { m.kv_head_dim = 1024; };
    EngineConfig planned = service_config();
    planned.num_gpu_blocks_override = 0;
    const auto free_memory = [] { return int64_t{9} << 20; };
    int64_t alone_blocks = 0;
    {
        EngineService alone;
        ServiceParams one = params_for(factory, planned);
        one.device.free_memory = free_memory;
        alone.load(one);
        ASSERT_EQ(alone.wait_loaded(10s), ServiceState::Ready) << alone.status().error;
        alone_blocks = alone.stats().n_kv_blocks;
        ASSERT_GT(alone_blocks, 100);
        ASSERT_LT(alone_blocks, 512) << "below what max_num_seqs sequences can use";
    }
    factory.loaded.clear();
    ServiceParams p = params_for(factory, planned);
    p.device.free_memory = free_memory;
    p.models.push_back({ModelRole::Chat, "fake-chat", {}});
    p.models.push_back({ModelRole::Layout, "fake-layout", {}});
    EngineService service;
    service.load(p);
    ASSERT_EQ(service.wait_loaded(10s), ServiceState::Ready) << service.status().error;
    const std::vector<ModelDescription> models = service.models();
    ASSERT_EQ(models.size(), 3u);
    EXPECT_EQ(models[1].name, "fake-chat");
    EXPECT_EQ(models[1].role, ModelRole::Chat);

    const ServiceStats stats = service.stats();
    ASSERT_EQ(stats.engines.size(), 2u);
    EXPECT_EQ(stats.engines[0].model, "fake-model");
    EXPECT_EQ(stats.engines[1].model, "fake-chat");
    // Equal shares of what one model alone had, less the second model's weights.
    for (const ModelEngineStats& e : stats.engines) {
        EXPECT_GT(e.n_kv_blocks, alone_blocks * 4 / 10) << e.model;
        EXPECT_LE(e.n_kv_blocks, alone_blocks / 2) << e.model;
        EXPECT_EQ(e.memory_plan.n_blocks, e.n_kv_blocks);
    }
    EXPECT_EQ(stats.n_kv_blocks, stats.engines[0].n_kv_blocks + stats.engines[1].n_kv_blocks);
    EXPECT_EQ(service.limits("fake-chat").max_model_len, 256);
    EXPECT_EQ(service.limits("nothing").max_model_len, 0);

    ASSERT_EQ(factory.loaded.size(), 3u);
    std::vector<RequestHandle> handles;
    for (int i = 0; i < 8; ++i) {
        RequestSpec s = spec(text_request({static_cast<int32_t>(10 + i)}, 5));
        s.model = i % 2 == 0 ? "" : "fake-chat";
        handles.push_back(service.submit(std::move(s)));
    }
    for (int i = 0; i < 8; ++i) {
        const Collected c = collect(handles[static_cast<size_t>(i)]);
        EXPECT_EQ(c.tokens, chain(10 + i, 5)) << "request " << i;
        ASSERT_TRUE(c.last && c.last->finish) << "request " << i;
    }
    // Each prompt reached the model its request named, and only that one.
    const auto saw = [&](size_t model, int32_t token) {
        const std::vector<Fed>& fed = factory.loaded[model]->model.fed;
        // As the prompt's first token (position 0), not as a token some request generated.
        return std::any_of(fed.begin(), fed.end(),
                           [&](const Fed& f) { return f.token == token && f.pos[0] == 0; });
    };
    for (int i = 0; i < 8; ++i) {
        const int32_t first = 10 + i;
        EXPECT_EQ(saw(0, first), i % 2 == 0) << "request " << i;
        EXPECT_EQ(saw(1, first), i % 2 == 1) << "request " << i;
    }
    try {
        RequestSpec unknown = spec(text_request({3}, 2));
        unknown.model = "PaddleOCR-VL-1.5";
        service.submit(std::move(unknown));
        ADD_FAILURE() << "a request for a model not loaded was taken";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("serving fake-model, fake-chat"), std::string::npos) << e.what();
    }
    EXPECT_EQ(service.stats().n_kv_blocks_used, 0);

    // Reconfigured, both engines are built again.
    service.reconfigure(planned);
    EXPECT_EQ(service.stats().engines.size(), 2u);
    RequestSpec again = spec(text_request({40}, 2));
    again.model = "fake-chat";
    RequestHandle h = service.submit(std::move(again));
    EXPECT_EQ(collect(h).tokens, chain(40, 2));

    // Two generative models of one name cannot be told apart.
    ServiceParams twins = params_for(factory, planned);
    twins.models.push_back({ModelRole::Chat, "other/fake-model", {}});
    service.load(twins);
    EXPECT_EQ(service.wait_loaded(10s), ServiceState::Failed);
    EXPECT_NE(service.status().error.find("both named"), std::string::npos) << service.status().error;
}

// What other processes use on the card is measured before loading, and the free bytes are reported.
TEST_F(EngineServiceTest, StatsSnapshotForStatusBars) {
    FakeFactory factory;
    factory.configure = [](FakeModel& m) { m.step_delay = 1ms; };
    ServiceParams p = params_for(factory);
    const int64_t total = make_cpu_backend(1)->total_memory();
    p.device.free_memory = [total] { return total - (int64_t{3} << 30); };
    EngineService service;
    service.load(p);
    ASSERT_EQ(service.wait_loaded(10s), ServiceState::Ready);
    std::vector<RequestHandle> handles;
    for (int i = 0; i < 12; ++i) {
        handles.push_back(service.submit(spec(text_request({static_cast<int32_t>(i)}, 150))));
    }
    Request chat = text_request({50}, 150);
    handles.push_back(service.submit(spec(chat), options(Priority::Interactive)));
    ServiceStats during;
    for (int i = 0; i < 2000; ++i) {
        during = service.stats();
        if (during.n_running[0] == 1 && during.n_running[1] + during.n_waiting[1] == 12 &&
            during.tokens_per_second > 0) {
            break;
        }
        std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(during.n_running[static_cast<size_t>(Priority::Interactive)], 1);
    EXPECT_EQ(during.n_running[static_cast<size_t>(Priority::Batch)], 7);
    EXPECT_EQ(during.n_waiting[static_cast<size_t>(Priority::Batch)], 5);
    EXPECT_GT(during.n_kv_blocks_used, 0);
    EXPECT_EQ(during.n_kv_blocks_used + during.n_kv_blocks_free, during.n_kv_blocks);
    EXPECT_GT(during.tokens_per_second, 0.0);
    EXPECT_GT(during.vram_used_bytes, 0);
    EXPECT_EQ(during.vram_other_bytes, int64_t{3} << 30);
    EXPECT_EQ(during.vram_free_bytes, total - (int64_t{3} << 30));
    for (RequestHandle& h : handles) {
        collect(h);
    }
    const ServiceStats after = service.stats();
    EXPECT_EQ(after.n_finished, 13);
    EXPECT_EQ(after.n_kv_blocks_used, 0);
    EXPECT_EQ(after.engine.n_images_hashed, 0);
}

TEST_F(EngineServiceTest, ACallbackThatThrowsDoesNotHarmTheEngine) {
    FakeFactory factory;
    std::atomic<int> n_calls{0};
    std::atomic<bool> got_final{false};
    std::atomic<int> n_other_calls{0};
    EngineService service;
    load_ready(service, factory);
    service.submit(spec(text_request({1}, 6)), with_callback([&](const RequestOutput& out) {
                       ++n_calls;
                       if (out.finish) {
                           got_final = true;
                       }
                       throw std::runtime_error("a callback that throws");
                   }));
    service.submit(spec(text_request({2}, 3)), with_callback([&](const RequestOutput&) {
                       ++n_other_calls;
                       throw 42;
                   }));
    RequestHandle queued = service.submit(spec(text_request({10}, 8)));
    EXPECT_EQ(collect(queued).tokens, chain(10, 8));
    for (int i = 0; i < 5000 && (!got_final || n_other_calls < 3); ++i) {
        std::this_thread::sleep_for(1ms);
    }
    EXPECT_TRUE(got_final);
    EXPECT_EQ(n_calls.load(), 6);
    EXPECT_EQ(n_other_calls.load(), 3);
    for (int i = 0; i < 5000 && service.stats().n_callback_errors < 9; ++i) {
        std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(service.stats().n_callback_errors, 9);
    RequestHandle after = service.submit(spec(text_request({20}, 2)));
    EXPECT_EQ(collect(after).tokens, chain(20, 2));
}

// A handle reads as finished only after its callback has returned from the final output: a caller that
// waits on finished() then finds what the callback recorded (here a refusal's error, recorded slowly).
TEST_F(EngineServiceTest, AHandleFinishesOnlyAfterTheCallbackReturnsFromTheFinalOutput) {
    FakeFactory factory;
    EngineService service;
    load_ready(service, factory);
    std::mutex mutex;
    std::string error;
    bool saw_final = false;
    Request too_many = image_request(30, 2, 4);
    too_many.images.grids.push_back({1, 1, 2});  // 2 images, one image run: refused as it is built
    RequestHandle h = service.submit(spec(too_many), with_callback([&](const RequestOutput& out) {
                                         std::this_thread::sleep_for(50ms);
                                         const std::lock_guard lock(mutex);
                                         error = out.error;
                                         saw_final = out.finish.has_value();
                                     }));
    for (int i = 0; i < 5000 && !h.finished(); ++i) {
        std::this_thread::sleep_for(1ms);
    }
    ASSERT_TRUE(h.finished());
    const std::lock_guard lock(mutex);
    EXPECT_TRUE(saw_final);
    EXPECT_FALSE(error.empty());
}

// Among fifty requests, one the model fails on and one refused as it is built end alone.
TEST_F(EngineServiceTest, ARequestThatFailsAmongManyThatFinish) {
    FakeFactory factory;
    factory.configure = [](FakeModel& m) { m.fail_on_image_width = 7; };
    EngineService service;
    load_ready(service, factory);
    std::vector<RequestHandle> good;
    RequestHandle bad_image, refused;
    for (int i = 0; i < 50; ++i) {
        if (i == 20) {
            bad_image = service.submit(spec(image_request(30, 7, 4)));
        } else if (i == 30) {
            Request too_many = image_request(30, 2, 4);
            too_many.images.grids.push_back({1, 1, 2});  // 2 images, one image run
            refused = service.submit(spec(too_many));
        }
        good.push_back(service.submit(spec(image_request(static_cast<int32_t>(i % 40), 1 + i % 5, 6))));
    }
    for (int i = 0; i < 50; ++i) {
        const Collected c = collect(good[static_cast<size_t>(i)]);
        EXPECT_EQ(c.tokens, chain(i % 40, 6)) << "request " << i;
        EXPECT_EQ(c.last->finish, FinishReason::Length) << "request " << i;
    }
    const Collected failed = collect(bad_image);
    EXPECT_EQ(failed.last->finish, FinishReason::Error);
    EXPECT_EQ(failed.last->error_kind, ErrorKind::Failed);
    EXPECT_NE(failed.last->error.find("7 patches wide"), std::string::npos);
    const Collected invalid = collect(refused);
    EXPECT_EQ(invalid.last->finish, FinishReason::Error);
    EXPECT_EQ(invalid.last->error_kind, ErrorKind::InvalidRequest);
    EXPECT_EQ(service.status().state, ServiceState::Ready);
    EXPECT_TRUE(service.status().can_continue);
    const ServiceStats s = service.stats();
    EXPECT_EQ(s.n_failed, 2);
    EXPECT_EQ(s.n_finished, 50);
}

TEST_F(EngineServiceTest, ALostDeviceIsReportedAndTheServiceSaysItCannotGoOn) {
    FakeFactory factory;
    factory.configure = [](FakeModel& m) {
        m.fail_on_token = 60;
        m.fail_message = "cudaMemcpyAsync failed: unspecified launch failure";
    };
    EngineService service;
    load_ready(service, factory);
    RequestHandle a = service.submit(spec(text_request({57}, 6)));
    EXPECT_EQ(collect(a).last->error_kind, ErrorKind::DeviceLost);
    for (int i = 0; i < 5000 && service.status().state != ServiceState::Failed; ++i) {
        std::this_thread::sleep_for(1ms);
    }
    const ServiceStatus s = service.status();
    EXPECT_EQ(s.state, ServiceState::Failed);
    EXPECT_EQ(s.error_kind, ErrorKind::DeviceLost);
    EXPECT_FALSE(s.can_continue);
    EXPECT_THROW(service.submit(spec(text_request({1}, 2))), Error);
}

// Handles outlive the service: the requests it was running end with ErrorKind::Stopped, and the handles can
// still be read, polled and cancelled.
TEST_F(EngineServiceTest, StopWithLiveHandles) {
    FakeFactory factory;
    factory.configure = [](FakeModel& m) { m.step_delay = 1ms; };
    std::vector<RequestHandle> handles;
    std::atomic<int> n_finals{0};
    {
        EngineService service;
        load_ready(service, factory);
        for (int i = 0; i < 20; ++i) {
            handles.push_back(service.submit(spec(text_request({static_cast<int32_t>(i)}, 250))));
        }
        service.submit(spec(text_request({1}, 200)),
                       with_callback([&](const RequestOutput& out) { n_finals += out.finish ? 1 : 0; }));
        // Until one of them has a token (they reach the engine in the order their preparation ends).
        for (bool running = false; !running;) {
            for (RequestHandle& h : handles) {
                running = running || h.wait_for(1ms).has_value();
            }
        }
    }
    EXPECT_EQ(g_live_models.load(), 0);
    EXPECT_EQ(n_finals.load(), 1);
    int n_stopped = 0;
    for (RequestHandle& h : handles) {
        h.cancel();  // the service is gone: nothing happens
        const Collected c = collect(h);
        ASSERT_TRUE(c.last);
        ++n_stopped;
        EXPECT_EQ(c.last->finish, FinishReason::Cancelled);
        EXPECT_EQ(c.last->error_kind, ErrorKind::Stopped);
        EXPECT_EQ(c.last->error, "the service stopped");
        EXPECT_FALSE(h.poll());
        EXPECT_FALSE(h.wait_for(1ms));
        EXPECT_TRUE(h.finished());
    }
    EXPECT_EQ(n_stopped, 20);
}

// A document's 500 block requests cancel together while they run, from another thread; the group reports it.
TEST_F(EngineServiceTest, CancelsAGroupOf500RequestsWhileTheyRun) {
    FakeFactory factory;
    factory.configure = [](FakeModel& m) { m.step_delay = 200us; };
    EngineService service;
    load_ready(service, factory);
    const int64_t document = service.create_group();
    const int64_t other = service.create_group();
    std::vector<RequestHandle> handles;
    for (int i = 0; i < 500; ++i) {
        handles.push_back(service.submit(spec(text_request({static_cast<int32_t>(i % 60)}, 30)),
                                         options(Priority::Batch, document)));
    }
    RequestHandle outside = service.submit(spec(text_request({3}, 30)), options(Priority::Batch, other));
    while (service.group_progress(document).n_tokens == 0) {
        std::this_thread::sleep_for(100us);
    }
    std::thread canceller([&] { service.cancel_group(document); });
    canceller.join();
    int n_cancelled = 0;
    for (RequestHandle& h : handles) {
        const Collected c = collect(h);
        n_cancelled += c.last->finish == FinishReason::Cancelled;
    }
    EXPECT_GT(n_cancelled, 450);
    const GroupProgress g = service.group_progress(document);
    EXPECT_TRUE(g.done());
    EXPECT_TRUE(g.cancelled);
    EXPECT_EQ(g.n_requests, 500);
    EXPECT_EQ(g.n_cancelled, n_cancelled);
    EXPECT_EQ(g.n_finished + g.n_cancelled, 500);
    EXPECT_EQ(collect(outside).tokens, chain(3, 30)) << "another group goes on";
    EXPECT_EQ(service.group_progress(other).n_finished, 1);
    RequestHandle late = service.submit(spec(text_request({1}, 3)), options(Priority::Batch, document));
    EXPECT_EQ(collect(late).last->finish, FinishReason::Cancelled) << "a cancelled group takes nothing new";
    EXPECT_EQ(service.stats().n_kv_blocks_used, 0);
    service.forget_group(document);
    EXPECT_THROW(service.group_progress(document), Error);
}

// A chat turn submitted behind 1,000 queued block requests starts at once and finishes before them.
TEST_F(EngineServiceTest, AChatTurnBehindAThousandQueuedRequestsFinishesFirst) {
    FakeFactory factory;
    factory.configure = [](FakeModel& m) { m.step_delay = 200us; };
    std::mutex m;  // before the service, whose stop may still call the callbacks
    std::vector<int64_t> finished;
    EngineService service;
    load_ready(service, factory);
    const auto record = [&](const RequestOutput& out) {
        if (out.finish) {
            const std::lock_guard lock(m);
            finished.push_back(out.id);
        }
    };
    for (int i = 0; i < 1000; ++i) {
        service.submit(spec(text_request({static_cast<int32_t>(i % 60)}, 8)), with_callback(record));
    }
    size_t n_done_before = 0;
    {
        const std::lock_guard lock(m);
        n_done_before = finished.size();
    }
    RequestHandle chat =
        service.submit(spec(text_request({41, 42}, 4)), options(Priority::Interactive, 0, record));
    while (!chat.finished()) {
        std::this_thread::sleep_for(100us);
    }
    const std::lock_guard lock(m);
    const auto at =
        static_cast<size_t>(std::find(finished.begin(), finished.end(), chat.id()) - finished.begin());
    EXPECT_LT(n_done_before, 900u) << "the block requests were still queued";
    EXPECT_LE(at - n_done_before, 16u)
        << "only block requests already running (8) may finish before the chat turn";
}

// Holds the engine thread from construction to release(), so that requests submitted meanwhile are prepared
// and wait for it together.
class EngineHold {
public:
    explicit EngineHold(EngineService& service)
        : thread_([this, &service, released = released_.get_future()] {
              service.run_on_engine_thread([&](EngineContext&) {
                  held_ = true;
                  released.wait();
              });
          }) {
        while (!held_) {
            std::this_thread::sleep_for(100us);
        }
    }
    ~EngineHold() { release(); }
    EngineHold(const EngineHold&) = delete;
    EngineHold& operator=(const EngineHold&) = delete;
    void release() {
        if (thread_.joinable()) {
            released_.set_value();
            thread_.join();
        }
    }

private:
    std::atomic<bool> held_{false};
    std::promise<void> released_;
    std::thread thread_;
};

// The rows of each decoder step of the fake model, once a page of n_blocks blocks (prompts of 7, 8, ...
// tokens), and then a chat turn of two tokens where asked, were submitted together to an idle engine and had
// finished.
std::vector<int64_t> steps_of_a_burst(int n_blocks, bool chat) {
    FakeFactory factory;
    FakeModel* model = nullptr;
    factory.configure = [&](FakeModel& m) { model = &m; };
    EngineService service;
    service.load(params_for(factory));
    if (service.wait_loaded(10s) != ServiceState::Ready) {
        ADD_FAILURE() << service.status().error;
        return {};
    }
    const int64_t page = service.create_group();
    std::vector<RequestHandle> handles;
    {
        EngineHold hold(service);
        for (int32_t i = 0; i < n_blocks; ++i) {
            handles.push_back(
                service.submit(spec(image_request(10 + i, 5 + i, 3)), options(Priority::Batch, page)));
        }
        if (chat) {
            handles.push_back(
                service.submit(spec(text_request({41, 42}, 3)), options(Priority::Interactive)));
        }
        while (service.stats().n_preparing > 0) {
            std::this_thread::sleep_for(100us);
        }
    }
    for (RequestHandle& h : handles) {
        EXPECT_EQ(collect(h).last->finish, FinishReason::Length);
    }
    std::vector<int64_t> rows;
    service.run_on_engine_thread([&](EngineContext&) { rows = model->rows_per_step; });
    return rows;
}

// A page's blocks reaching an idle engine together: the first block starts in a step of its own, so that its
// first token does not wait for every other block's image and prompt; the rest follow together.
TEST_F(EngineServiceTest, AnIdleEngineStartsAPagesFirstBlockAlone) {
    const std::vector<int64_t> rows = steps_of_a_burst(4, false);
    ASSERT_GE(rows.size(), 2u);
    EXPECT_EQ(rows[0], 7) << "the first block alone";
    // The step queued ahead of the first one's tokens (its next token alone), then the others together.
    EXPECT_NE(std::find(rows.begin() + 1, rows.end(), 1 + 8 + 9 + 10), rows.end())
        << "the other blocks' prompts in one step beside the first one's next token";
}

// A chat turn submitted behind a page's blocks while the engine is held starts first, alone.
TEST_F(EngineServiceTest, AnIdleEngineStartsAChatTurnBeforeQueuedBlocks) {
    const std::vector<int64_t> rows = steps_of_a_burst(3, true);
    ASSERT_GE(rows.size(), 1u);
    EXPECT_EQ(rows[0], 2) << "the chat turn's prompt alone";
}

// Submitted from several threads at once, each request gets its own tokens.
TEST_F(EngineServiceTest, ClientsOnSeveralThreads) {
    FakeFactory factory;
    EngineService service;
    load_ready(service, factory);
    std::vector<std::thread> clients;
    std::atomic<int> n_right{0};
    for (int t = 0; t < 4; ++t) {
        clients.emplace_back([&, t] {
            for (int i = 0; i < 25; ++i) {
                const auto first = static_cast<int32_t>((t * 25 + i) % 60);
                RequestHandle h =
                    service.submit(spec(text_request({first}, 5)),
                                   options(i % 5 == 0 ? Priority::Interactive : Priority::Batch));
                if (i % 7 == 3) {
                    h.cancel();
                    collect(h);
                    ++n_right;
                    continue;
                }
                std::vector<int32_t> tokens;
                for (;;) {
                    const std::optional<RequestOutput> out = h.wait_for(5s);
                    if (!out) {
                        break;
                    }
                    tokens.insert(tokens.end(), out->tokens.begin(), out->tokens.end());
                    if (out->finish) {
                        break;
                    }
                }
                n_right += tokens == chain(first, 5) ? 1 : 0;
                (void)service.stats();
            }
        });
    }
    for (std::thread& c : clients) {
        c.join();
    }
    EXPECT_EQ(n_right.load(), 100);
}

// Work that needs the device and the models runs on the engine thread between steps.
TEST_F(EngineServiceTest, RunsWorkOnTheEngineThread) {
    FakeFactory factory;
    EngineService service;
    load_ready(service, factory);
    RequestHandle h = service.submit(spec(text_request({1}, 20)));
    std::thread::id engine_thread;
    int64_t max_num_seqs = 0;
    size_t n_models = 0;
    service.run_on_engine_thread([&](EngineContext& c) {
        engine_thread = std::this_thread::get_id();
        max_num_seqs = c.core.config().max_num_seqs;
        n_models = c.models.size();
    });
    EXPECT_NE(engine_thread, std::this_thread::get_id());
    EXPECT_EQ(max_num_seqs, 8);
    EXPECT_EQ(n_models, 1u);
    EXPECT_THROW(service.run_on_engine_thread([](EngineContext&) { fail("work that fails"); }), Error);
    EXPECT_EQ(collect(h).tokens, chain(1, 20)) << "the requests go on";
    service.unload();
    EXPECT_THROW(service.run_on_engine_thread([](EngineContext&) {}), Error);
}

// Engine options change without reloading the models; a configuration that cannot be built leaves the
// previous one in place.
TEST_F(EngineServiceTest, ReconfiguresTheEngineKeepingTheModels) {
    FakeFactory factory;
    factory.configure = [](FakeModel& m) { m.step_delay = 1ms; };
    EngineService service;
    load_ready(service, factory);
    RequestHandle running = service.submit(spec(text_request({1}, 200)));
    ASSERT_TRUE(running.next());
    EngineConfig smaller = service_config();
    smaller.num_gpu_blocks_override = 512;
    smaller.max_num_seqs = 2;
    service.reconfigure(smaller);
    const Collected ended = collect(running);
    EXPECT_EQ(ended.last->error_kind, ErrorKind::Stopped);
    EXPECT_EQ(service.stats().n_kv_blocks, 512);
    EXPECT_EQ(g_live_models.load(), 1) << "the models stayed";
    EngineConfig impossible = smaller;
    impossible.max_model_len = 100000;  // over the model's context
    EXPECT_THROW(service.reconfigure(impossible), Error);
    EXPECT_EQ(service.status().state, ServiceState::Ready);
    EXPECT_EQ(service.limits().max_model_len, 256);
    RequestHandle after = service.submit(spec(text_request({5}, 3)));
    EXPECT_EQ(collect(after).tokens, chain(5, 3));
}

}  // namespace
