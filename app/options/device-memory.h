// What the engine service asks of the device beyond its backend: the bytes free on it for every process.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/options/cli-options.h"
#include "engine/service/engine-service.h"

namespace folio::cli {

// For --device cuda[:N], a probe of the device's free bytes (cudaMemGetInfo, on the calling thread's view of
// that device; under --device-memory, the limit less what every process uses); empty for the CPU, whose
// memory the plan takes as Folio's alone.
std::function<int64_t()> device_free_memory(const Options& opt);
// The same for one device of engine_devices(): empty for cpu; limit as --device-memory gives it.
std::function<int64_t()> device_free_memory(const std::string& device, int64_t limit);

// The service's devices from the options (engine_device_groups): the first engine's as ServiceParams::device,
// the others' as more_devices, an engine's further tensor-parallel ranks as its more_ranks; each a backend of
// its own (--threads, split among the CPU's engines and ranks; --device-memory each).
void set_service_devices(ServiceParams& params, const Options& opt);
// How the tensor-parallel ranks on these devices sum their outputs (DeviceSpec::make_group): none where there
// is one rank, or where the ranks sum on the host.
std::function<std::shared_ptr<CollectiveGroup>(int)> collective_group_maker(
    const std::vector<std::string>& devices);

}  // namespace folio::cli
