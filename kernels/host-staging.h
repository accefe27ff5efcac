// Page-locked host memory that large uploads pass through: a copy out of page-locked memory runs on the
// stream while the host goes on, where a copy out of pageable memory holds the host until the driver has
// staged every byte. An upload goes through a ring of fixed-size chunks: each chunk's copy to the device
// starts as soon as a few threads have filled it, while the next chunk fills, and filling a chunk waits only
// for the copy out of it the last time round.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include <cuda_runtime.h>

#include "thread-pool.h"

namespace folio::kernels {

class HostStaging {
public:
    // Bytes of one chunk, and the most chunks the ring holds (page-locked as uploads first need them).
    static constexpr size_t kChunkBytes = size_t{4} << 20;
    static constexpr size_t kMaxChunks = 8;

    // n_threads fill each chunk (0: one per hardware thread).
    explicit HostStaging(int n_threads);
    HostStaging(const HostStaging&) = delete;
    HostStaging& operator=(const HostStaging&) = delete;

    // Enqueues on stream a copy of the parts, one after another, to dst in device memory; the parts may be
    // reused as soon as this returns. Returns false, having copied nothing, when no page-locked memory can be
    // had.
    bool copy(std::span<const std::span<const std::byte>> parts, std::byte* dst, cudaStream_t stream);

private:
    struct HostFree {
        void operator()(void* p) const { cudaFreeHost(p); }
    };
    struct EventDestroy {
        void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
    };
    struct Chunk {
        std::unique_ptr<std::byte, HostFree> memory;     // [kChunkBytes]
        std::unique_ptr<CUevent_st, EventDestroy> read;  // recorded after the latest copy out of it
    };

    // The next chunk of the ring, page-locked now if the ring may still grow, once the copy out of it has
    // finished; null when the ring is empty and no page-locked memory can be had.
    Chunk* next_chunk();

    std::vector<Chunk> chunks_;
    size_t next_ = 0;
    ThreadPool fill_threads_;
};

}  // namespace folio::kernels
