// Page-locked host memory that large uploads pass through: a copy out of page-locked memory runs on the
// stream while the host goes on, where a copy out of pageable memory holds the host until the driver has
// staged every byte. Two buffers take turns, so that filling one waits only for the copy out of the other
// before it, and each grows as larger uploads come.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

#include <cuda_runtime.h>

namespace folio::kernels {

class HostStaging {
public:
    HostStaging() = default;
    HostStaging(const HostStaging&) = delete;
    HostStaging& operator=(const HostStaging&) = delete;

    // Host memory for n_bytes that no copy reads any more (waits for the copy out of it before), or null
    // when no page-locked memory of that size can be had.
    void* acquire(size_t n_bytes);
    // Marks the memory acquire() returned last as read by the work enqueued on stream so far.
    void release(cudaStream_t stream);

private:
    struct HostFree {
        void operator()(void* p) const { cudaFreeHost(p); }
    };
    struct EventDestroy {
        void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
    };
    struct Buffer {
        std::unique_ptr<void, HostFree> memory;
        size_t n_bytes = 0;
        std::unique_ptr<CUevent_st, EventDestroy> read;  // recorded after the latest copy out of it
    };
    std::array<Buffer, 2> buffers_;
    size_t next_ = 0;
};

}  // namespace folio::kernels
