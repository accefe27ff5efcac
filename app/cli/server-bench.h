// folio-cli bench --server: the local server's overhead over the engine service for block-sized requests.
#pragma once

#include "app/options/cli-options.h"

namespace folio::cli {

extern const char* const kServerBenchUsage;

int run_server_bench(const Options& opt);

}  // namespace folio::cli
