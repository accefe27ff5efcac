// Owners of CUDA resources for the GPU tests and benchmark programs: device memory, streams and events,
// released when their owner goes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>

#include <cuda_runtime.h>

#include "kernels/cuda-check.h"

namespace folio {

// Device memory of n_bytes, a copy of host's where given, freed with its owner.
using DeviceBytes = std::unique_ptr<void, cudaError_t (*)(void*)>;
inline DeviceBytes device_bytes(size_t n_bytes, const void* host = nullptr) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n_bytes, 1)));
    DeviceBytes owned(p, cudaFree);
    if (host != nullptr) {
        CUDA_CHECK(cudaMemcpy(p, host, n_bytes, cudaMemcpyHostToDevice));
    }
    return owned;
}

struct StreamDeleter {
    void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDeleter>;

inline Stream make_stream() {
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreate(&s));
    return Stream(s);
}

struct EventDeleter {
    void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDeleter>;

inline Event make_event() {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreate(&e));
    return Event(e);
}

}  // namespace folio
