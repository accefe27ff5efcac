// `folio-cli bench --family ernie-4.5-vl` (or --model with a chat model's folder): a chat model's prefill and
// decode throughput on one device, against the batch-1 floor its weights' bytes set, as JSON.
#pragma once

#include "app/options/cli-options.h"

namespace folio::cli {

// Whether `opt` asks for the chat benchmark: --family, or --model naming a chat model's folder.
bool wants_chat_bench(const Options& opt);

int run_chat_bench(const Options& opt);

}  // namespace folio::cli
