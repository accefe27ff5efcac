#include "app/server/server-metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <numeric>
#include <sstream>

namespace folio::server {

namespace {

using prometheus::Histogram;

// vLLM's and FastDeploy's bucket bounds.
const Histogram::BucketBoundaries kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                                  0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
const Histogram::BucketBoundaries kTpotBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                  0.3,  0.4,   0.5,  0.75,  1.0, 2.5};
const Histogram::BucketBoundaries kLatencyBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,  2.0,  2.5, 5.0,
                                                     10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0};
const Histogram::BucketBoundaries kTokenBuckets = {1,   2,    5,    10,   20,    50,    100,  200,
                                                   500, 1000, 2000, 5000, 10000, 20000, 50000};

prometheus::Counter& counter(prometheus::Registry& registry, const char* name, const char* help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

prometheus::Gauge& gauge(prometheus::Registry& registry, const char* name, const char* help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

prometheus::Histogram& histogram(prometheus::Registry& registry, const char* name, const char* help,
                                 const Histogram::BucketBoundaries& buckets) {
    return prometheus::BuildHistogram().Name(name).Help(help).Register(registry).Add({}, buckets);
}

}  // namespace

ServerMetrics::ServerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
    prometheus::Registry& r = *registry_;
    requests_ = &counter(r, "fastdeploy:requests_number", "Total number of received requests");
    successes_ = &counter(r, "fastdeploy:request_success_total", "Number of successfully processed requests");
    failures_ = &counter(r, "folio:request_failure_total",
                         "Requests that ended without success (refused, cancelled, disconnected or failed)");
    prompt_tokens_ = &counter(r, "fastdeploy:prompt_tokens_total", "Total number of prompt tokens processed");
    generation_tokens_ =
        &counter(r, "fastdeploy:generation_tokens_total", "Total number of generated tokens");
    running_ = &gauge(r, "fastdeploy:num_requests_running", "Number of requests currently running");
    waiting_ = &gauge(r, "fastdeploy:num_requests_waiting", "Number of requests currently waiting");
    cache_usage_ = &gauge(r, "fastdeploy:gpu_cache_usage_perc", "KV cache usage, 1 meaning every block used");
    free_blocks_ = &gauge(r, "fastdeploy:available_gpu_block_num", "Free KV cache blocks");
    total_blocks_ = &gauge(r, "folio:kv_blocks_total", "KV cache blocks planned");
    prefix_hit_rate_ =
        &gauge(r, "folio:prefix_cache_hit_rate", "Prefix cache blocks found over blocks looked up");
    ttft_ = &histogram(r, "fastdeploy:time_to_first_token_seconds", "Time to the first token (TTFT)",
                       kTtftBuckets);
    tpot_ = &histogram(r, "fastdeploy:time_per_output_token_seconds", "Time between generated tokens (TPOT)",
                       kTpotBuckets);
    e2e_ = &histogram(r, "fastdeploy:e2e_request_latency_seconds", "End-to-end request latency",
                      kLatencyBuckets);
    prompt_lengths_ =
        &histogram(r, "fastdeploy:request_prompt_tokens", "Prompt tokens of each request", kTokenBuckets);
    generation_lengths_ = &histogram(r, "fastdeploy:request_generation_tokens",
                                     "Generated tokens of each request", kTokenBuckets);
    max_tokens_ = &histogram(r, "fastdeploy:request_params_max_tokens", "The max_tokens of each request",
                             kTokenBuckets);
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::request_received() {
    requests_->Increment();
}

void ServerMetrics::request_ended(const RequestRecord& record) {
    (record.succeeded ? successes_ : failures_)->Increment();
    prompt_tokens_->Increment(static_cast<double>(record.n_prompt_tokens));
    generation_tokens_->Increment(static_cast<double>(record.n_generated_tokens));
    if (record.n_prompt_tokens > 0) {
        prompt_lengths_->Observe(static_cast<double>(record.n_prompt_tokens));
    }
    if (!record.succeeded) {
        return;
    }
    generation_lengths_->Observe(static_cast<double>(record.n_generated_tokens));
    max_tokens_->Observe(static_cast<double>(record.max_tokens));
    e2e_->Observe(record.seconds_total);
    if (record.seconds_to_first_token >= 0.0) {
        ttft_->Observe(record.seconds_to_first_token);
        if (record.n_generated_tokens > 1) {
            tpot_->Observe((record.seconds_total - record.seconds_to_first_token) /
                           static_cast<double>(record.n_generated_tokens - 1));
        }
    }
}

std::string ServerMetrics::text(const ServiceStats& stats) {
    running_->Set(
        static_cast<double>(std::accumulate(stats.n_running.begin(), stats.n_running.end(), int64_t{0})));
    waiting_->Set(static_cast<double>(
        std::accumulate(stats.n_waiting.begin(), stats.n_waiting.end(), stats.n_preparing)));
    cache_usage_->Set(stats.n_kv_blocks > 0 ? static_cast<double>(stats.n_kv_blocks_used) /
                                                  static_cast<double>(stats.n_kv_blocks)
                                            : 0.0);
    free_blocks_->Set(static_cast<double>(stats.n_kv_blocks_free));
    total_blocks_->Set(static_cast<double>(stats.n_kv_blocks));
    prefix_hit_rate_->Set(stats.prefix_cache_hit_rate);
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_->Collect());
    return out.str();
}

}  // namespace folio::server
