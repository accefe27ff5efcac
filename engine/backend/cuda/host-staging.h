// Page-locked host memory that uploads pass through: a copy out of page-locked memory runs on the stream
// while the host goes on, where a copy out of pageable memory holds the host until the driver has staged
// every byte, and may first wait for the stream to run everything queued before it. An upload goes through a
// ring of fixed-size chunks: each chunk's copy to the device starts as soon as a few threads have filled it,
// while the next chunk fills, and filling a chunk waits only for the copies out of it the last time round.
// Small uploads (row lists, block tables) share a chunk, one after another. Large downloads come back through
// the same ring.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include <cuda_runtime.h>

#include "engine/common/thread-pool.h"

namespace folio::kernels {

class HostStaging {
public:
    // Bytes of one chunk, and the most chunks the ring holds (page-locked as uploads first need them).
    static constexpr size_t kChunkBytes = size_t{4} << 20;
    static constexpr size_t kMaxChunks = 8;
    // Uploads within a chunk start at multiples of this many bytes.
    static constexpr size_t kCopyAlign = 64;

    // n_threads fill each chunk (0: one per hardware thread).
    explicit HostStaging(int n_threads);
    HostStaging(const HostStaging&) = delete;
    HostStaging& operator=(const HostStaging&) = delete;

    // Enqueues on stream a copy of the parts, one after another, to dst in device memory; the parts may be
    // reused as soon as this returns. Returns false, having copied nothing, when no page-locked memory can be
    // had.
    bool copy(std::span<const std::span<const std::byte>> parts, std::byte* dst, cudaStream_t stream);
    // The other way: the bytes at src in device memory, after the work queued on stream, into the parts one
    // after another, chunk by chunk, each chunk read out by a few threads while the next ones arrive. Returns
    // when every part is written; false, having copied nothing, when no page-locked memory can be had.
    bool copy_back(const std::byte* src, std::span<const std::span<std::byte>> parts, cudaStream_t stream);

private:
    struct HostFree {
        void operator()(void* p) const { cudaFreeHost(p); }
    };
    struct EventDestroy {
        void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
    };
    struct Chunk {
        std::unique_ptr<std::byte, HostFree> memory;  // [kChunkBytes]
        std::unique_ptr<CUevent_st, EventDestroy>
            read;  // recorded after the latest copy out of it or into it
    };

    // Makes the next chunk of the ring the current one, page-locked now if the ring may still grow, once the
    // copies out of it have finished; false when the ring is empty and no page-locked memory can be had.
    bool next_chunk();

    std::vector<Chunk> chunks_;
    size_t next_ = 0;            // the chunk after the current one
    size_t current_ = 0;         // the chunk being filled
    size_t used_ = kChunkBytes;  // its bytes taken (all before the first chunk)
    ThreadPool fill_threads_;
};

}  // namespace folio::kernels
