// The engine service's tests' fakes: model slots that count the live ones, a factory that loads them with
// progress, delays or errors, the requests and the fixture the tests share.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/service/engine-service.h"
#include "fake-model.h"

namespace folio::testing {

using namespace std::chrono_literals;

// Fake models alive now, so that a test sees everything released.
inline std::atomic<int> g_live_models{0};

// A fake model as a loaded slot; counts the live ones, so that a test sees everything released.
class FakeLoaded final : public LoadedModel {
public:
    FakeLoaded(Backend& backend, ModelRole role, int64_t reserved, std::string name)
        : model(backend), role_(role), reserved_(reserved), name_(std::move(name)) {
        ++g_live_models;
    }
    ~FakeLoaded() override { --g_live_models; }
    ModelRole role() const override { return role_; }
    GenerativeModel* generative() override { return role_ != ModelRole::Layout ? &model : nullptr; }
    ModelDescription description() const override {
        ModelDescription d;
        d.name = name_;
        d.role = role_;
        return d;
    }
    int64_t max_image_tokens() const override { return 32; }
    int64_t reserved_activation_bytes() const override { return reserved_; }

    FakeModel model;

private:
    ModelRole role_;
    int64_t reserved_;
    std::string name_;
};

// Loads a slot as n_chunks "tensors" of chunk_bytes, each an allocation on the backend, chunk_delay apart.
class FakeFactory final : public ModelFactory {
public:
    std::unique_ptr<LoadedModel> load(const ModelSlot& slot, Backend& backend,
                                      LoadContext& context) const override {
        context.set_phase(LoadPhase::Opening);
        if (!fail_message.empty()) {
            fail(slot.dir.string(), "/model.safetensors: ", fail_message);
        }
        context.add_total(n_chunks * kChunkBytes);
        context.set_phase(LoadPhase::Weights);
        std::vector<Tensor> weights;
        for (int i = 0; i < n_chunks; ++i) {
            weights.push_back(backend.alloc({kChunkBytes / 4}));
            context.add_read(kChunkBytes, "tensor." + std::to_string(i));
            std::this_thread::sleep_for(chunk_delay);
        }
        auto made =
            std::make_unique<FakeLoaded>(backend, slot.role, reserved_bytes, slot.dir.filename().string());
        if (configure) {
            configure(made->model);
        }
        const std::lock_guard lock(loaded_mutex);
        loaded.push_back(made.get());
        return made;
    }

    static constexpr int64_t kChunkBytes = 4096;
    int n_chunks = 4;
    std::chrono::milliseconds chunk_delay{0};
    std::string fail_message;
    int64_t reserved_bytes = 0;
    std::function<void(FakeModel&)> configure;
    // Every model loaded, in order (valid while the service holds them).
    mutable std::mutex loaded_mutex;
    mutable std::vector<FakeLoaded*> loaded;
};

inline EngineConfig service_config() {
    EngineConfig c;
    c.max_model_len = 256;
    c.max_num_seqs = 8;
    c.max_num_batched_tokens = 64;
    c.block_size = 4;
    c.num_gpu_blocks_override = 4096;
    c.limit_mm_per_prompt = 2;
    return c;
}

inline ServiceParams params_for(const FakeFactory& factory, EngineConfig config = service_config()) {
    ServiceParams p;
    p.device.make_backend = [] { return make_cpu_backend(1); };
    p.models.push_back({ModelRole::Recognition, "fake-model", {}});
    p.engine = config;
    p.factory = &factory;
    return p;
}

inline Request text_request(std::vector<int32_t> ids, int64_t max_tokens) {
    Request r;
    r.prompt.ids = std::move(ids);
    r.prompt.modality.assign(r.prompt.ids.size(), TokenModality::Text);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
}

inline SubmitOptions options(Priority priority, int64_t group = 0, OutputCallback on_output = {}) {
    SubmitOptions o;
    o.priority = priority;
    o.group = group;
    o.on_output = std::move(on_output);
    return o;
}

inline SubmitOptions with_callback(OutputCallback on_output) {
    return options(Priority::Batch, 0, std::move(on_output));
}

inline RequestSpec spec(Request r) {
    return RequestSpec{std::move(r), {}};
}

inline Request image_request(int32_t first, int64_t width, int64_t max_tokens) {
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

inline std::vector<int32_t> chain(int32_t first, int n) {
    std::vector<int32_t> t;
    for (int i = 1; i <= n; ++i) {
        t.push_back(static_cast<int32_t>((first + i) % kVocab));
    }
    return t;
}

struct Collected {
    std::vector<int32_t> tokens;
    std::optional<RequestOutput> last;
};

// Every output of the handle until its final one.
inline Collected collect(RequestHandle& handle) {
    Collected c;
    while (std::optional<RequestOutput> out = handle.next()) {
        c.tokens.insert(c.tokens.end(), out->tokens.begin(), out->tokens.end());
        c.last = std::move(out);
    }
    return c;
}

class EngineServiceTest : public ::testing::Test {
protected:
    void SetUp() override {
        previous_sink_ = set_log_sink([](std::string_view) {});
    }
    void TearDown() override { set_log_sink(std::move(previous_sink_)); }

    void load_ready(EngineService& service, const FakeFactory& factory,
                    EngineConfig config = service_config()) {
        service.load(params_for(factory, config));
        ASSERT_EQ(service.wait_loaded(10s), ServiceState::Ready) << service.status().error;
    }

    LogSink previous_sink_;
};

}  // namespace folio::testing
