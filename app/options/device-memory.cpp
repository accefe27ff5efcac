#include "app/options/device-memory.h"

#include <algorithm>
#include <string>
#include <thread>

#include <set>

#include "engine/backend/collectives.h"

#ifdef FOLIO_WITH_CUDA
#include <cuda_runtime.h>

#include "engine/backend/cuda/make-cuda-backend.h"
#include "engine/backend/nccl-group.h"
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
    const std::vector<std::vector<std::string>> groups = engine_device_groups(opt);
    const std::vector<std::string> devices = engine_devices(opt);
    const int64_t limit = device_memory_limit(opt);
    const auto n_cpu = std::count(devices.begin(), devices.end(), std::string("cpu"));
    int threads = static_cast<int>(opt.integer("--threads", 0));
    if (n_cpu > 1) {
        // The cores are shared among the CPU engines and ranks.
        const int cores =
            threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        threads = std::max(1, cores / static_cast<int>(n_cpu));
    }
    const auto spec_of = [&](const std::string& device) {
        DeviceSpec spec;
        spec.name = device;
        spec.make_backend = [device, threads, limit] { return make_backend(device, threads, limit); };
        spec.free_memory = device_free_memory(device, limit);
        return spec;
    };
    params.more_devices.clear();
    for (size_t i = 0; i < groups.size(); ++i) {
        DeviceSpec spec = spec_of(groups[i].front());
        for (size_t r = 1; r < groups[i].size(); ++r) {
            spec.more_ranks.push_back(spec_of(groups[i][r]));
        }
        spec.make_group = collective_group_maker(groups[i]);
        if (i == 0) {
            params.device = std::move(spec);
        } else {
            params.more_devices.push_back(std::move(spec));
        }
    }
}

std::function<std::shared_ptr<CollectiveGroup>(int)> collective_group_maker(
    const std::vector<std::string>& devices) {
    // NCCL takes one rank a device: ranks on the CPU, or two on one card, sum on the host.
    std::set<std::string> cards;
    for (const std::string& device : devices) {
        if (device == "cpu") {
            return {};
        }
        cards.insert(device == "cuda" ? "cuda:0" : device);
    }
    if (devices.size() < 2 || cards.size() < devices.size()) {
        return {};
    }
#ifdef FOLIO_WITH_CUDA
    return [](int n_ranks) -> std::shared_ptr<CollectiveGroup> {
        return NcclGroup::create(NcclLibrary::system(), n_ranks, cuda_backend_stream);
    };
#else
    return {};
#endif
}

}  // namespace folio::cli
