#include "app/options/device-memory.h"

#include <algorithm>
#include <string>

#ifdef FOLIO_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace folio::cli {

std::function<int64_t()> device_free_memory(const Options& opt) {
    const std::string device = opt.text("--device", "cpu");
    if (device == "cpu") {
        return {};
    }
#ifdef FOLIO_WITH_CUDA
    const int index = device.size() > 5 ? std::stoi(device.substr(5)) : 0;  // make_backend checked the form
    const int64_t limit = device_memory_limit(opt);
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
    return {};
#endif
}

}  // namespace folio::cli
