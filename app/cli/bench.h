// folio-cli bench: the model's throughput on one device, as JSON.
#pragma once

#include "app/options/cli-options.h"

namespace folio::cli {

extern const char* const kBenchUsage;

int run_bench(const Options& opt);

}  // namespace folio::cli
