#include "host-staging.h"

#include <algorithm>

#include "cuda-check.h"

namespace folio::kernels {

void* HostStaging::acquire(size_t n_bytes) {
    Buffer& b = buffers_[next_];
    if (b.read) {
        CUDA_CHECK(cudaEventSynchronize(b.read.get()));
    }
    if (b.n_bytes < n_bytes) {
        // Half as much again as before at least, so that uploads growing a little at a time (image batches
        // of more patches) page-lock memory a few times, not at each one.
        constexpr size_t kUnit = size_t{1} << 20;
        const size_t size = (std::max(n_bytes, b.n_bytes + b.n_bytes / 2) + kUnit - 1) / kUnit * kUnit;
        b.memory.reset();
        b.n_bytes = 0;
        void* p = nullptr;
        if (cudaHostAlloc(&p, size, cudaHostAllocDefault) != cudaSuccess) {
            cudaGetLastError();  // not sticky: later calls must not report it
            return nullptr;
        }
        b.memory.reset(p);
        b.n_bytes = size;
    }
    return b.memory.get();
}

void HostStaging::release(cudaStream_t stream) {
    Buffer& b = buffers_[next_];
    if (!b.read) {
        cudaEvent_t e = nullptr;
        CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        b.read.reset(e);
    }
    CUDA_CHECK(cudaEventRecord(b.read.get(), stream));
    next_ = (next_ + 1) % buffers_.size();
}

}  // namespace folio::kernels
