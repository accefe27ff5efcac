// The server's Prometheus metrics under FastDeploy's names (fastdeploy:...): requests received, succeeded,
// failed and cancelled, running and waiting, tokens, KV cache use, and histograms of the time to the first
// token, the time per output token and the whole request. Kept by prometheus-cpp, written in Prometheus' text
// format here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/service/service-stats.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace folio::server {

enum class RequestOutcome {
    Succeeded,  // ended by a stop or its length
    Failed,     // refused, or failed as it ran
    Cancelled,  // its client went away, or the server stopped
};

// One request's figures as it ends.
struct RequestRecord {
    RequestOutcome outcome = RequestOutcome::Failed;
    int64_t n_prompt_tokens = 0;
    int64_t n_generated_tokens = 0;
    double seconds_to_first_token = -1.0;  // -1: no token came
    double seconds_total = 0.0;
    int64_t max_tokens = 0;  // as asked, or what the context left
    // False for a document parsed through the pipeline: counted and its latency observed, while its blocks'
    // tokens are not a request's prompt or generation.
    bool generation = true;
};

class ServerMetrics {
public:
    ServerMetrics();
    ~ServerMetrics();
    ServerMetrics(const ServerMetrics&) = delete;
    ServerMetrics& operator=(const ServerMetrics&) = delete;

    void request_received();
    // Token counts as they come, so that the counters move while requests run.
    void prompt_tokens(int64_t n);
    void generated_tokens(int64_t n);
    void request_ended(const RequestRecord& record);
    // Every metric in Prometheus' text format, the gauges from this snapshot of the service: each family's
    // HELP and TYPE, a histogram's buckets before its _sum and _count.
    std::string text(const ServiceStats& stats);

private:
    std::shared_ptr<prometheus::Registry> registry_;
    prometheus::Counter* requests_ = nullptr;
    prometheus::Counter* successes_ = nullptr;
    prometheus::Counter* failures_ = nullptr;
    prometheus::Counter* cancellations_ = nullptr;
    prometheus::Counter* prompt_tokens_ = nullptr;
    prometheus::Counter* generation_tokens_ = nullptr;
    prometheus::Gauge* running_ = nullptr;
    prometheus::Gauge* waiting_ = nullptr;
    prometheus::Gauge* cache_usage_ = nullptr;
    prometheus::Gauge* free_blocks_ = nullptr;
    prometheus::Gauge* total_blocks_ = nullptr;
    prometheus::Gauge* prefix_hit_rate_ = nullptr;
    prometheus::Histogram* ttft_ = nullptr;
    prometheus::Histogram* tpot_ = nullptr;
    prometheus::Histogram* e2e_ = nullptr;
    prometheus::Histogram* prompt_lengths_ = nullptr;
    prometheus::Histogram* generation_lengths_ = nullptr;
    prometheus::Histogram* max_tokens_ = nullptr;
    // With the models on several devices: each device's requests, memory, cache use and whether it failed,
    // labelled by its index and name; made with the first snapshot that has several.
    prometheus::Family<prometheus::Gauge>* device_requests_ = nullptr;
    prometheus::Family<prometheus::Gauge>* device_memory_ = nullptr;
    prometheus::Family<prometheus::Gauge>* device_cache_usage_ = nullptr;
    prometheus::Family<prometheus::Gauge>* device_failed_ = nullptr;
};

}  // namespace folio::server
