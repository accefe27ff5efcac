// The serving engine on a thread of its own: submit() validates a request and returns a handle at once; the
// engine thread runs steps while there is work, and each request's outputs reach its handle's queue or a
// callback. Requests can be cancelled at any moment, from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine-core.h"

namespace folio {

class Engine;

class RequestHandle {
public:
    int64_t id() const { return id_; }
    // The next output, waiting for it; nothing once the final output (the one with finish set) was taken,
    // or when the request delivers to a callback instead.
    std::optional<RequestOutput> next();
    // Ends the request; its final output says FinishReason::Cancelled unless it had already finished.
    void cancel();

private:
    friend class Engine;
    struct State {
        std::mutex mutex;
        std::condition_variable ready;
        std::deque<RequestOutput> outputs;
        bool taken = false;  // the final output was taken by next()
        std::function<void(const RequestOutput&)> on_output;
    };

    RequestHandle(int64_t id, std::shared_ptr<State> state, Engine* engine)
        : id_(id), state_(std::move(state)), engine_(engine) {}

    int64_t id_;
    std::shared_ptr<State> state_;
    Engine* engine_;
};

class Engine {
public:
    Engine(GenerativeModel& model, const EngineConfig& config, const Tokenizer* tokenizer = nullptr);
    // Stops the thread; requests still running end with FinishReason::Cancelled.
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Throws folio::Error for a request that can never run. With on_output, every output is passed to it on
    // the engine thread; otherwise outputs wait in the handle.
    RequestHandle submit(Request request, std::function<void(const RequestOutput&)> on_output = {});
    void cancel(int64_t id);

    const EngineCore& core() const { return core_; }

private:
    void run();
    void deliver(const RequestOutput& output);

    EngineCore core_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<std::pair<int64_t, Request>> pending_;
    std::vector<int64_t> cancels_;
    std::unordered_map<int64_t, std::shared_ptr<RequestHandle::State>> handles_;
    int64_t next_id_ = 0;
    bool stop_ = false;
    std::thread thread_;  // last: it starts once everything above exists
};

}  // namespace folio
