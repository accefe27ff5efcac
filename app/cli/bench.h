// folio-cli bench: the model's throughput on one device, as JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/options/cli-options.h"
#include "engine/backend/backend.h"
#include "engine/service/engine-service.h"

namespace folio::cli {

extern const char* const kBenchUsage;

int run_bench(const Options& opt);

// Decode throughput at one batch size through the service, its engine rebuilt for the batch: `batch`
// requests of n_prompt distinct text tokens (ids below vocab_size), timed from when every request has its
// first token to the end; also the prompts' prefill rate (to the last first token). The prompts go in as
// one step unless chunked, where base's max_num_batched_tokens (a given --max-num-batched-tokens) stands.
nlohmann::json bench_decode(EngineService& service, int64_t vocab_size, const EngineConfig& base,
                            int64_t batch, int64_t n_prompt, int64_t n_decode, bool chunked = false);

// --batch's comma-separated sizes (fallback where it is not given), each at least 1.
std::vector<int64_t> parse_batch_sizes(const Options& opt, const std::string& fallback);

// Bytes per second a device-to-device copy of a large tensor moves (each byte read once and written once).
double copy_bandwidth(Backend& backend);

}  // namespace folio::cli
