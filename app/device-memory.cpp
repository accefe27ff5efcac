#include "device-memory.h"

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
    return [index]() -> int64_t {
        size_t free = 0, total = 0;
        if (cudaSetDevice(index) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) {
            fail("cannot read the free memory of CUDA device ", index);
        }
        return static_cast<int64_t>(free);
    };
#else
    return {};
#endif
}

}  // namespace folio::cli
