#include "app/server/server-metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cmath>
#include <cstdio>
#include <numeric>

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

std::string number(double v) {
    if (std::isnan(v)) {
        return "NaN";
    }
    if (std::isinf(v)) {
        return v > 0 ? "+Inf" : "-Inf";
    }
    char text[32];
    if (v == std::floor(v) && std::abs(v) < 1e15) {
        std::snprintf(text, sizeof text, "%.0f", v);
    } else {
        std::snprintf(text, sizeof text, "%.17g", v);
    }
    return text;
}

std::string escaped(const std::string& s, bool quotes) {
    std::string out;
    for (const char c : s) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '"' && quotes) {
            out += "\\\"";
        } else {
            out += c;
        }
    }
    return out;
}

// A sample line: name{labels} value, with an extra label (a bucket's le) where given.
void sample(std::string& out, const std::string& name,
            const std::vector<prometheus::ClientMetric::Label>& labels, double value,
            const char* extra_name = nullptr, const std::string& extra_value = {}) {
    out.append(name);
    if (!labels.empty() || extra_name) {
        out.push_back('{');
        bool first = true;
        const auto label = [&](const std::string& label_name, const std::string& label_value) {
            if (!first) {
                out.push_back(',');
            }
            first = false;
            out.append(label_name).append("=\"").append(escaped(label_value, true)).push_back('"');
        };
        for (const auto& l : labels) {
            label(l.name, l.value);
        }
        if (extra_name) {
            label(extra_name, extra_value);
        }
        out.push_back('}');
    }
    out.push_back(' ');
    out.append(number(value)).push_back('\n');
}

// Prometheus' text format (0.0.4) as strict parsers read it: HELP and TYPE once before a family's samples,
// a histogram's buckets (cumulative, +Inf last) before its _sum and _count.
std::string serialize(const std::vector<prometheus::MetricFamily>& families) {
    std::string out;
    for (const prometheus::MetricFamily& family : families) {
        const char* type = "untyped";
        switch (family.type) {
            case prometheus::MetricType::Counter:
                type = "counter";
                break;
            case prometheus::MetricType::Gauge:
                type = "gauge";
                break;
            case prometheus::MetricType::Histogram:
                type = "histogram";
                break;
            case prometheus::MetricType::Summary:
                type = "summary";
                break;
            default:
                break;
        }
        out.append("# HELP ")
            .append(family.name)
            .append(" ")
            .append(escaped(family.help, false))
            .push_back('\n');
        out.append("# TYPE ").append(family.name).append(" ").append(type).push_back('\n');
        for (const prometheus::ClientMetric& m : family.metric) {
            switch (family.type) {
                case prometheus::MetricType::Counter:
                    sample(out, family.name, m.label, m.counter.value);
                    break;
                case prometheus::MetricType::Gauge:
                    sample(out, family.name, m.label, m.gauge.value);
                    break;
                case prometheus::MetricType::Histogram:
                    for (const auto& bucket : m.histogram.bucket) {
                        sample(out, family.name + "_bucket", m.label,
                               static_cast<double>(bucket.cumulative_count), "le",
                               number(bucket.upper_bound));
                    }
                    sample(out, family.name + "_sum", m.label, m.histogram.sample_sum);
                    sample(out, family.name + "_count", m.label,
                           static_cast<double>(m.histogram.sample_count));
                    break;
                default:
                    sample(out, family.name, m.label, m.untyped.value);
                    break;
            }
        }
    }
    return out;
}

}  // namespace

ServerMetrics::ServerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
    prometheus::Registry& r = *registry_;
    requests_ = &counter(r, "fastdeploy:requests_number", "Total number of received requests");
    successes_ = &counter(r, "fastdeploy:request_success_total", "Number of successfully processed requests");
    failures_ = &counter(r, "folio:request_failure_total", "Requests refused, or that failed as they ran");
    cancellations_ = &counter(r, "folio:request_cancelled_total",
                              "Requests cancelled: their client went away, or the server stopped");
    prompt_tokens_ = &counter(r, "fastdeploy:prompt_tokens_total", "Total number of prompt tokens processed");
    generation_tokens_ =
        &counter(r, "fastdeploy:generation_tokens_total", "Total number of generated tokens");
    running_ = &gauge(r, "fastdeploy:num_requests_running", "Number of requests currently running");
    waiting_ = &gauge(r, "fastdeploy:num_requests_waiting", "Number of requests currently waiting");
    cache_usage_ = &gauge(r, "fastdeploy:gpu_cache_usage_perc", "KV cache usage, 1 meaning every block used");
    free_blocks_ = &gauge(r, "fastdeploy:available_gpu_block_num", "Free KV cache blocks");
    total_blocks_ = &gauge(r, "folio:kv_blocks", "KV cache blocks planned");
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

void ServerMetrics::prompt_tokens(int64_t n) {
    prompt_tokens_->Increment(static_cast<double>(n));
}

void ServerMetrics::generated_tokens(int64_t n) {
    generation_tokens_->Increment(static_cast<double>(n));
}

void ServerMetrics::request_ended(const RequestRecord& record) {
    switch (record.outcome) {
        case RequestOutcome::Succeeded:
            successes_->Increment();
            break;
        case RequestOutcome::Failed:
            failures_->Increment();
            break;
        case RequestOutcome::Cancelled:
            cancellations_->Increment();
            break;
    }
    if (record.n_prompt_tokens > 0) {
        prompt_lengths_->Observe(static_cast<double>(record.n_prompt_tokens));
    }
    if (record.outcome != RequestOutcome::Succeeded) {
        return;
    }
    if (!record.generation) {
        e2e_->Observe(record.seconds_total);
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
    if (stats.devices.size() > 1) {
        if (device_requests_ == nullptr) {
            const auto family = [&](const char* name, const char* help) {
                return &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
            };
            device_requests_ =
                family("folio:device_requests", "Requests running and waiting on each device's engines");
            device_memory_ = family("folio:device_memory_used_bytes", "Folio's tensors on each device");
            device_cache_usage_ = family("folio:device_kv_cache_usage_perc",
                                         "KV cache usage on each device, 1 meaning every block used");
            device_failed_ =
                family("folio:device_failed", "1 where the device's engine stopped after a failure");
        }
        for (size_t i = 0; i < stats.devices.size(); ++i) {
            const DeviceStats& d = stats.devices[i];
            const prometheus::Labels labels = {{"index", std::to_string(i)}, {"device", d.device}};
            device_requests_->Add(labels).Set(static_cast<double>(d.n_running + d.n_waiting));
            device_memory_->Add(labels).Set(static_cast<double>(d.vram_used_bytes));
            device_cache_usage_->Add(labels).Set(d.n_kv_blocks > 0 ? static_cast<double>(d.n_kv_blocks_used) /
                                                                         static_cast<double>(d.n_kv_blocks)
                                                                   : 0.0);
            device_failed_->Add(labels).Set(d.failed ? 1.0 : 0.0);
        }
    }
    return serialize(registry_->Collect());
}

}  // namespace folio::server
