// The CUDA backend's device memory: cudaMalloc'd blocks kept for reuse by later tensors, the buffers that
// tensors hold, and the device addresses of this backend's tensors.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include <cuda_runtime.h>

#include "engine/backend/backend-checks.h"
#include "engine/backend/backend.h"

namespace folio::cuda {

// cudaMalloc; null when the device is out of memory.
void* try_cuda_malloc(size_t n_bytes);

// Throws folio::Error naming the request and the device's free memory.
[[noreturn]] void fail_out_of_memory(size_t n_bytes, int device);

// A bound on the device memory a backend's pools hold (live and cached blocks together), so that a large
// card behaves as a smaller one would: requests beyond it fail as on a full device.
struct DeviceMemoryLimit {
    explicit DeviceMemoryLimit(int64_t limit_bytes) : limit(limit_bytes) {}
    const int64_t limit;
    std::atomic<int64_t> held{0};

    // Counts n_bytes as held where they fit under the limit.
    bool reserve(int64_t n_bytes);
    void release(int64_t n_bytes) { held.fetch_sub(n_bytes); }
};

// The device memory of one backend: cudaMalloc'd blocks, kept for reuse when their tensors go, since a
// cudaMalloc and cudaFree pair costs tens of microseconds and cudaFree waits for the device. All work of the
// backend runs on its one stream, so a block handed out again is written only after the work that read it.
// Shared with the buffers, which may outlive the backend.
class DevicePool {
public:
    // A pool that is not releasable keeps its cached blocks until it goes: recorded work reuses them. With a
    // limit (shared by the backend's pools), its blocks count against it.
    DevicePool(int device, bool releasable, std::shared_ptr<DeviceMemoryLimit> limit = nullptr)
        : device_(device), releasable_(releasable), limit_(std::move(limit)) {}
    ~DevicePool() { free_cached(); }
    DevicePool(const DevicePool&) = delete;
    DevicePool& operator=(const DevicePool&) = delete;

    struct Block {
        void* ptr = nullptr;
        size_t size = 0;
    };

    // A block of at least n_bytes (> 0): the smallest cached block that holds them without wasting more than
    // they take, else a new one. When the device is full the cached blocks are freed and cudaMalloc tried
    // again; after that, throws folio::Error naming the request and the device's free memory.
    Block take(size_t n_bytes);

    // Takes back a block that take() returned.
    void give(const Block& block);

    // Frees the cached blocks of a releasable pool; cudaFree waits for the work that may still use them.
    void release_cached();

private:
    // Requests round up to 512 bytes below 1 MiB and to whole MiB above, so that blocks are reused across
    // tensors of nearly the same size.
    static size_t block_size(size_t n_bytes);

    void free_cached();

    // cudaMalloc within the limit; null where the device or the limit is full.
    void* allocate(size_t size);

    int device_;
    bool releasable_;
    std::shared_ptr<DeviceMemoryLimit> limit_;
    std::mutex mutex_;
    std::multimap<size_t, void*> cached_;  // free blocks by size
};

struct DeviceBuffer final : Buffer {
    DeviceBuffer(size_t n_bytes, std::shared_ptr<DevicePool> pool, std::shared_ptr<MemoryCounter> counter);
    ~DeviceBuffer() override;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* data() override { return block_.ptr; }
    size_t n_bytes() const override { return n_bytes_; }

private:
    DevicePool::Block block_;
    size_t n_bytes_;
    std::shared_ptr<DevicePool> pool_;
    std::shared_ptr<MemoryCounter> counter_;
};

// Pinned host memory mapped into the device's address space: kernels read it over the bus, so a table read a
// few rows at a time costs no device memory. data() is the device's address of it, host() the host's.
struct MappedHostBuffer final : Buffer {
    explicit MappedHostBuffer(size_t n_bytes);
    ~MappedHostBuffer() override;
    MappedHostBuffer(const MappedHostBuffer&) = delete;
    MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;

    void* data() override { return device_; }
    size_t n_bytes() const override { return n_bytes_; }
    void* host() { return host_; }

private:
    void* host_ = nullptr;
    void* device_ = nullptr;
    size_t n_bytes_;
};

struct CudaFree {
    void operator()(void* p) const { cudaFree(p); }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;

// Whether t is a tensor of this backend whose buffer holds its shape: in device memory, or in mapped host
// memory the device reads.
bool on_device(const Tensor& t);

// The device address of a tensor of this backend, after checking that it is one and holds its shape.
void* device_data(const Tensor& t, const char* op);

// The same for a float32 tensor.
float* device_f32(const Tensor& t, const char* op);

int32_t* device_i32(const Tensor& t, const char* op);

}  // namespace folio::cuda
