// The engine service's inside, shared by its front (engine-service.cpp: handles, submission, groups) and its
// engine thread (service-impl.cpp: loading, serving, publishing): each request's state and the service's.
#pragma once

#include <algorithm>
#include <array>
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
#include "engine/service/replica-router.h"
#include "engine/service/submission-order.h"
#include "engine/service/task-queue.h"

namespace folio::detail {

inline constexpr size_t kUnrouted = static_cast<size_t>(-1);

struct RequestState {
    int64_t id = 0;
    int64_t group = 0;
    size_t engine = 0;  // the served model's engine
    // The replica that runs it once routed (kUnrouted before), and what it weighs there (prompt and
    // max_tokens).
    size_t replica = kUnrouted;
    int64_t weight = 0;
    OutputCallback on_output;
    std::atomic<bool> cancel_requested{false};
    std::atomic<int64_t> n_prompt_tokens{-1};  // once built
    bool keep_prompt_ids = false;

    std::mutex mutex;  // guards what follows
    std::condition_variable ready;
    std::deque<RequestOutput> outputs;
    bool sent_final = false;       // the final output was handed on (to the queue or the callback)
    bool delivered_final = false;  // ... and is in the queue, or the callback has returned from it
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
    size_t replica = 0;
    std::vector<LoadedModel*> models;
    std::vector<LoadedModel*> generative;             // in slot order
    std::vector<std::unique_ptr<EngineCore>>& cores;  // one a generative model, in the same order
    int64_t other_bytes = 0;
    int64_t reserved_bytes = 0;  // other models' activations
    double memory_share = 1.0;   // of the device's memory, where several replicas share it
    std::unordered_map<int64_t, std::shared_ptr<RequestState>> in_core;

    bool has_unfinished() const {
        return std::any_of(cores.begin(), cores.end(),
                           [](const auto& c) { return c && c->has_unfinished(); });
    }
};

using Job = std::function<void(Served&)>;
// A request built off the engine thread, ready for the engine.
using Prepared = std::pair<std::shared_ptr<RequestState>, Request>;

// One copy of the models on one device with an engine thread of its own. With data parallelism there are
// several (on several devices, or on one); requests are routed among them. Guarded by ServiceImpl::mutex but
// for layouts (its own lock) and thread.
struct Replica {
    size_t index = 0;
    DeviceSpec device;
    std::condition_variable wake;  // work or stop for its engine thread
    std::vector<Prepared> pending;
    std::vector<int64_t> cancels;
    std::vector<std::pair<Job, std::promise<void>>> jobs;
    LayoutQueue layouts;
    bool loaded = false;
    bool failed = false;  // its engine stopped after a failure; the others go on
    // Its part of the statistics, from its last step.
    std::vector<ModelEngineStats> engines;
    std::vector<EngineStats> engine_stats;
    DeviceStats device_stats;
    std::array<int64_t, kNumPriorities> n_running{};
    std::array<int64_t, kNumPriorities> n_waiting{};
    std::thread thread;
};

struct ServiceImpl : std::enable_shared_from_this<ServiceImpl> {
    ServiceImpl() : prepare(std::make_unique<TaskQueue>(2)) {}

    // Hands an output to the request's queue or callback; nothing after its final output.
    void deliver(RequestState& state, const RequestOutput& out);
    // A replica's engine thread: loads, then serves until stop.
    void run(const ServiceParams& params, Replica& replica);
    void serve(Served& served, Replica& replica);
    // The replica's engine failed: its requests end with the error, and the service goes on with the others
    // (or fails, when none is left).
    void fail_replica(Served& served, Replica& replica, ErrorKind kind, const std::string& message);
    // The engines and the request limits for the configuration, other processes' and models' bytes added;
    // several engines have their caches planned together.
    void build_engines(Served& served, const EngineConfig& config,
                       const std::function<void(CorePhase)>& on_phase = {});
    void publish(const Served& served, int64_t free_bytes, int64_t n_new_tokens);
    // The service's statistics from every replica's part; under the lock.
    void aggregate_stats_locked();
    void replica_by_priority(Replica& replica, const Served& served);
    // A preparation thread: builds the request and hands it to the engine thread.
    void prepare_request(const std::shared_ptr<RequestState>& state, const RequestBuilder& made,
                         RequestSpec& spec, Priority priority);
    // Every live request ends with ErrorKind::Stopped.
    void end_live();
    bool status_ready() const;
    // Stops the engine thread and waits for it; the state goes back to Empty.
    void shutdown();
    void cancel_locked(RequestState& state);

    mutable std::mutex mutex;         // guards everything below but the engine threads' own
    std::condition_variable changed;  // status changed
    ServiceStatus status;
    std::atomic<bool> stop{false};
    std::atomic<bool> abandon_load{false};  // stopping, or another replica's load failed
    bool accepting = false;
    std::vector<std::unique_ptr<Replica>> replicas;  // made by load(), threads joined by shutdown()
    std::optional<ReplicaRouter> router;
    // What other processes used on a device shared by several replicas, measured by the first before any
    // of them allocated; by DeviceSpec::name.
    std::unordered_map<std::string, int64_t> other_bytes_by_device;
    std::vector<std::shared_ptr<const RequestBuilder>> builders;  // one an engine
    std::vector<RequestLimits> limits;
    std::vector<std::string> engine_models;      // each engine's model name
    EngineConfig configured;                     // the configuration the engines were built from
    int64_t routing_block_size = 64;             // set by load() before any request
    size_t n_loaded = 0;                         // replicas ready
    std::vector<ModelDescription> descriptions;  // the loaded models', in slot order
    std::unordered_map<int64_t, std::shared_ptr<RequestState>> live;
    // A group's requests reach their replica's pending in the order they were submitted.
    SubmissionOrder<Prepared> order;
    std::unordered_map<int64_t, GroupProgress> groups;
    int64_t next_id = 0;
    int64_t next_group = 1;
    ServiceStats stats;
    TokenRate rate;
    std::atomic<int64_t> n_callback_errors{0};

    std::unique_ptr<TaskQueue> prepare;  // before the engine threads, which wait for it as they stop
};

}  // namespace folio::detail
