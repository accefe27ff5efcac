// What the engine service asks of the device beyond its backend: the bytes free on it for every process.
#pragma once

#include <cstdint>
#include <functional>

#include "app/options/cli-options.h"

namespace folio::cli {

// For --device cuda[:N], a probe of the device's free bytes (cudaMemGetInfo, on the calling thread's view of
// that device; under --device-memory, the limit less what every process uses); empty for the CPU, whose
// memory the plan takes as Folio's alone.
std::function<int64_t()> device_free_memory(const Options& opt);

}  // namespace folio::cli
