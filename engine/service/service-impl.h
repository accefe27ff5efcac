// The engine service's inside, shared by its front (engine-service.cpp: handles, submission, groups) and its
// engine thread (service-impl.cpp: loading, serving, publishing): each request's state and the service's.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "engine/service/engine-service.h"
#include "engine/service/layout-queue.h"
#include "engine/service/submission-order.h"
#include "engine/service/task-queue.h"

namespace folio::detail {

struct RequestState {
    int64_t id = 0;
    int64_t group = 0;
    size_t engine = 0;  // the served model's engine
    OutputCallback on_output;
    std::atomic<bool> cancel_requested{false};
    std::atomic<int64_t> n_prompt_tokens{-1};  // once built
    bool keep_prompt_ids = false;

    std::mutex mutex;  // guards what follows
    std::condition_variable ready;
    std::deque<RequestOutput> outputs;
    bool delivered_final = false;
    bool taken_final = false;
    std::vector<int32_t> prompt_ids;  // with keep_prompt_ids, once built
};

inline RequestOutput final_output(int64_t id, FinishReason finish, ErrorKind kind, std::string message) {
    RequestOutput out;
    out.id = id;
    out.finish = finish;
    out.error_kind = kind;
    out.error = std::move(message);
    return out;
}

inline RequestOutput stopped_output(int64_t id) {
    return final_output(id, FinishReason::Cancelled, ErrorKind::Stopped, "the service stopped");
}

// What the engine thread serves with: the device, the models and an engine for each generative one, which
// reconfigure() rebuilds.
struct Served {
    Backend& backend;
    std::vector<LoadedModel*> models;
    std::vector<LoadedModel*> generative;             // in slot order
    std::vector<std::unique_ptr<EngineCore>>& cores;  // one a generative model, in the same order
    int64_t other_bytes = 0;
    int64_t reserved_bytes = 0;  // other models' activations
    std::unordered_map<int64_t, std::shared_ptr<RequestState>> in_core;

    bool has_unfinished() const {
        return std::any_of(cores.begin(), cores.end(),
                           [](const auto& c) { return c && c->has_unfinished(); });
    }
};

using Job = std::function<void(Served&)>;
// A request built off the engine thread, ready for the engine.
using Prepared = std::pair<std::shared_ptr<RequestState>, Request>;

struct ServiceImpl : std::enable_shared_from_this<ServiceImpl> {
    ServiceImpl() : prepare(std::make_unique<TaskQueue>(2)) {}

    // Hands an output to the request's queue or callback; nothing after its final output.
    void deliver(RequestState& state, const RequestOutput& out);
    // The engine thread: loads, then serves until stop.
    void run(const ServiceParams& params);
    void serve(Served& served, const DeviceSpec& device);
    // The engines and the request limits for the configuration, other processes' and models' bytes added;
    // several engines have their caches planned together.
    void build_engines(Served& served, const EngineConfig& config,
                       const std::function<void(CorePhase)>& on_phase = {});
    void publish(const Served& served, int64_t free_bytes, int64_t n_new_tokens);
    // A preparation thread: builds the request and hands it to the engine thread.
    void prepare_request(const std::shared_ptr<RequestState>& state, const RequestBuilder& made,
                         RequestSpec& spec, Priority priority);
    // Every live request ends with ErrorKind::Stopped.
    void end_live();
    // Stops the engine thread and waits for it; the state goes back to Empty.
    void shutdown();
    void cancel_locked(RequestState& state);

    mutable std::mutex mutex;         // guards everything below but the engine thread's own
    std::condition_variable wake;     // work or stop for the engine thread
    std::condition_variable changed;  // status changed
    ServiceStatus status;
    std::atomic<bool> stop{false};
    bool accepting = false;
    std::vector<std::shared_ptr<const RequestBuilder>> builders;  // one an engine
    std::vector<RequestLimits> limits;
    std::vector<std::string> engine_models;  // each engine's model name
    EngineConfig configured;                 // the configuration the engines were built from (engine thread)
    std::vector<ModelDescription> descriptions;  // the loaded models', in slot order
    std::unordered_map<int64_t, std::shared_ptr<RequestState>> live;
    std::vector<Prepared> pending;
    // A group's requests reach pending in the order they were submitted.
    SubmissionOrder<Prepared> order;
    std::vector<int64_t> cancels;
    std::vector<std::pair<Job, std::promise<void>>> jobs;
    LayoutQueue layouts;  // its own lock, taken inside this one
    std::unordered_map<int64_t, GroupProgress> groups;
    int64_t next_id = 0;
    int64_t next_group = 1;
    ServiceStats stats;
    TokenRate rate;
    std::atomic<int64_t> n_callback_errors{0};

    std::unique_ptr<TaskQueue> prepare;  // before the engine thread, which waits for it as it stops
    std::thread engine_thread;
};

}  // namespace folio::detail
