#include "engine/backend/cuda/cuda-memory-pool.h"

#include <cuda_runtime.h>

#include "engine/common/error.h"
#include "kernels/cuda-check.h"

namespace folio::cuda {

void* try_cuda_malloc(size_t n_bytes) {
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, n_bytes);
    if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // not sticky: clear it so that later launches do not report it
        return nullptr;
    }
    CUDA_CHECK(status);
    return p;
}

[[noreturn]] void fail_out_of_memory(size_t n_bytes, int device) {
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    fail("cuda: out of memory allocating ", n_bytes, " bytes on device ", device, " (", free,
         " bytes free of ", total, ")");
}

bool DeviceMemoryLimit::reserve(int64_t n_bytes) {
    int64_t now = held.load();
    while (now + n_bytes <= limit) {
        if (held.compare_exchange_weak(now, now + n_bytes)) {
            return true;
        }
    }
    return false;
}

void* DevicePool::allocate(size_t size) {
    if (limit_ && !limit_->reserve(static_cast<int64_t>(size))) {
        return nullptr;
    }
    void* p = try_cuda_malloc(size);
    if (p == nullptr && limit_) {
        limit_->release(static_cast<int64_t>(size));
    }
    return p;
}

DevicePool::Block DevicePool::take(size_t n_bytes) {
    const size_t size = block_size(n_bytes);
    {
        const std::lock_guard lock(mutex_);
        const auto it = cached_.lower_bound(size);
        if (it != cached_.end() && it->first <= 2 * size) {
            const Block block{it->second, it->first};
            cached_.erase(it);
            return block;
        }
    }
    void* p = allocate(size);
    if (p == nullptr && releasable_) {
        release_cached();
        p = allocate(size);
    }
    if (p == nullptr) {
        if (limit_ && limit_->held.load() + static_cast<int64_t>(size) > limit_->limit) {
            fail("cuda: out of memory allocating ", n_bytes, " bytes on device ", device_, " (its limit of ",
                 limit_->limit, " bytes is held but for ", limit_->limit - limit_->held.load(), ")");
        }
        fail_out_of_memory(n_bytes, device_);
    }
    return {p, size};
}

void DevicePool::give(const Block& block) {
    const std::lock_guard lock(mutex_);
    cached_.emplace(block.size, block.ptr);
}

void DevicePool::release_cached() {
    if (releasable_) {
        free_cached();
    }
}

size_t DevicePool::block_size(size_t n_bytes) {
    constexpr size_t kSmall = 512, kLarge = size_t{1} << 20;
    const size_t unit = n_bytes < kLarge ? kSmall : kLarge;
    return (n_bytes + unit - 1) / unit * unit;
}

void DevicePool::free_cached() {
    const std::lock_guard lock(mutex_);
    for (const auto& [size, p] : cached_) {
        cudaFree(p);
        if (limit_) {
            limit_->release(static_cast<int64_t>(size));
        }
    }
    cached_.clear();
}

DeviceBuffer::DeviceBuffer(size_t n_bytes, std::shared_ptr<DevicePool> pool,
                           std::shared_ptr<MemoryCounter> counter)
    : block_(n_bytes > 0 ? pool->take(n_bytes) : DevicePool::Block{}),
      n_bytes_(n_bytes),
      pool_(std::move(pool)),
      counter_(std::move(counter)) {
    counter_->add(static_cast<int64_t>(n_bytes_));
}

DeviceBuffer::~DeviceBuffer() {
    if (block_.ptr != nullptr) {
        pool_->give(block_);
    }
    counter_->add(-static_cast<int64_t>(n_bytes_));
}

MappedHostBuffer::MappedHostBuffer(size_t n_bytes) : n_bytes_(n_bytes) {
    if (n_bytes == 0) {
        return;
    }
    // Portable: every backend's device may read it; the device address comes from the context of the
    // device current now.
    const cudaError_t status = cudaHostAlloc(&host_, n_bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (status != cudaSuccess) {
        host_ = nullptr;
        fail("cuda: ", n_bytes, " bytes of pinned host memory for a table: ", cudaGetErrorString(status));
    }
    const cudaError_t mapped = cudaHostGetDevicePointer(&device_, host_, 0);
    if (mapped != cudaSuccess) {
        cudaFreeHost(host_);
        fail("cuda: host memory mapped for the device: ", cudaGetErrorString(mapped));
    }
}

MappedHostBuffer::~MappedHostBuffer() {
    if (host_ != nullptr) {
        cudaFreeHost(host_);
    }
}

bool on_device(const Tensor& t) {
    const Buffer* b = t.buffer.get();
    return (dynamic_cast<const DeviceBuffer*>(b) != nullptr ||
            dynamic_cast<const MappedHostBuffer*>(b) != nullptr) &&
           t.fits_buffer();
}

void* device_data(const Tensor& t, const char* op) {
    if (!on_device(t)) {
        fail(op, ": tensor ", shape_string(t.shape), " of ", dtype_name(t.dtype),
             " is not in this backend's device memory");
    }
    return static_cast<std::byte*>(t.buffer->data()) + t.offset * element_size(t.dtype);
}

float* device_f32(const Tensor& t, const char* op) {
    if (!on_device(t) || t.dtype != ScalarType::F32) {
        fail(op, ": tensor ", shape_string(t.shape), " is not float32 in this backend's device memory");
    }
    return t.f32();
}

int32_t* device_i32(const Tensor& t, const char* op) {
    if (!on_device(t) || t.dtype != ScalarType::I32) {
        fail(op, ": tensor ", shape_string(t.shape), " is not int32 in this backend's device memory");
    }
    return t.i32();
}

}  // namespace folio::cuda
