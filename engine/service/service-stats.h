// What the service shows a status bar or a metrics endpoint: a snapshot taken by the engine thread after each
// step and read from any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/engine-core.h"

namespace folio {

// One generative model's engine.
struct ModelEngineStats {
    std::string model;  // its name
    int64_t n_kv_blocks = 0;
    int64_t n_kv_blocks_used = 0;
    int64_t n_running = 0;
    int64_t n_waiting = 0;
    MemoryPlan memory_plan;
};

// One replica of the models (data parallelism: one a device, or several sharing one).
struct DeviceStats {
    std::string device;           // DeviceSpec::name
    bool failed = false;          // its engine stopped after a failure; requests go to the others
    int64_t vram_used_bytes = 0;  // Folio's tensors there
    int64_t vram_free_bytes = -1;
    int64_t n_kv_blocks = 0;
    int64_t n_kv_blocks_used = 0;
    int64_t n_running = 0;
    int64_t n_waiting = 0;
    int64_t load_tokens = 0;  // prompt and max_tokens of the unfinished requests routed there
    int64_t n_requests = 0;   // requests routed there since loading
};

// Counts are of every engine together; memory_plan and engine are the first generative model's (on the first
// device); vram_used_bytes is of every device, vram_free_bytes of the first.
struct ServiceStats {
    int64_t n_kv_blocks = 0;
    int64_t n_kv_blocks_used = 0;
    int64_t n_kv_blocks_free = 0;
    std::array<int64_t, kNumPriorities> n_running{};  // by Priority
    std::array<int64_t, kNumPriorities> n_waiting{};
    int64_t n_preparing = 0;             // requests being built (images preprocessed and hashed)
    double tokens_per_second = 0.0;      // new tokens over the last few seconds
    int64_t vram_used_bytes = 0;         // Folio's tensors on the device (weights, cache, activations)
    int64_t vram_free_bytes = -1;        // free on the device for every process; -1 where unknown
    int64_t vram_other_bytes = 0;        // what other processes used when the models were loaded
    double prefix_cache_hit_rate = 0.0;  // blocks found over blocks looked up
    int64_t n_finished = 0;              // requests ended by a stop or their length
    int64_t n_cancelled = 0;
    int64_t n_failed = 0;
    int64_t n_callback_errors = 0;  // exceptions thrown by output callbacks, caught by the service
    MemoryPlan memory_plan;
    EngineStats engine;
    std::vector<ModelEngineStats> engines;  // in slot order, each model's replicas together
    std::vector<DeviceStats> devices;       // one a replica, in the order the devices were given
};

// New tokens per second over a sliding window.
class TokenRate {
public:
    using Clock = std::chrono::steady_clock;
    explicit TokenRate(std::chrono::duration<double> window = std::chrono::seconds(5)) : window_(window) {}

    void add(Clock::time_point at, int64_t n_tokens);
    // Tokens in the window over the window, or over the time since the first tokens while that is shorter.
    double per_second(Clock::time_point now);

private:
    void drop_before(Clock::time_point at);

    std::chrono::duration<double> window_;
    std::deque<std::pair<Clock::time_point, int64_t>> samples_;
    int64_t n_in_window_ = 0;
    std::optional<Clock::time_point> first_;
};

}  // namespace folio
