#include "app/options/device-memory.h"

#include <algorithm>
#include <string>
#include <thread>

#ifdef FOLIO_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace folio::cli {

std::function<int64_t()> device_free_memory(const Options& opt) {
    return device_free_memory(opt.text("--device", "cpu"), device_memory_limit(opt));
}

std::function<int64_t()> device_free_memory(const std::string& device, int64_t limit) {
    if (device == "cpu") {
        return {};
    }
#ifdef FOLIO_WITH_CUDA
    const int index = device.size() > 5 ? std::stoi(device.substr(5)) : 0;  // make_backend checked the form
    return [index, limit]() -> int64_t {
        size_t free = 0, total = 0;
        if (cudaSetDevice(index) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) {
            fail("cannot read the free memory of CUDA device ", index);
        }
        // Under --device-memory the device is as large as the limit, what every process uses taken from it.
        const int64_t used = static_cast<int64_t>(total) - static_cast<int64_t>(free);
        return limit > 0 ? std::max<int64_t>(0, limit - used) : static_cast<int64_t>(free);
    };
#else
    (void)limit;
    return {};
#endif
}

void set_service_devices(ServiceParams& params, const Options& opt) {
    const std::vector<std::string> devices = engine_devices(opt);
    const int64_t limit = device_memory_limit(opt);
    const auto n_cpu = std::count(devices.begin(), devices.end(), std::string("cpu"));
    int threads = static_cast<int>(opt.integer("--threads", 0));
    if (n_cpu > 1) {
        // The cores are shared among the CPU engines.
        const int cores =
            threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        threads = std::max(1, cores / static_cast<int>(n_cpu));
    }
    params.more_devices.clear();
    for (size_t i = 0; i < devices.size(); ++i) {
        DeviceSpec spec;
        spec.name = devices[i];
        spec.make_backend = [device = devices[i], threads, limit] {
            return make_backend(device, threads, limit);
        };
        spec.free_memory = device_free_memory(devices[i], limit);
        if (i == 0) {
            params.device = std::move(spec);
        } else {
            params.more_devices.push_back(std::move(spec));
        }
    }
}

}  // namespace folio::cli
