// Asynchronous copies from global to shared memory (compute capability 8.0 and up), waited for in groups.
#pragma once

#include <cstdint>

namespace folio::kernels {

__device__ inline uint32_t shared_address(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ inline void copy_async_16(void* shared_dst, const void* global_src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address(shared_dst)),
                 "l"(global_src)
                 : "memory");
}

// The same, or 16 zero bytes where valid is false (global_src is not read then, but must be an address).
__device__ inline void copy_async_16_or_zero(void* shared_dst, const void* global_src, bool valid) {
    const int n_read = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_address(shared_dst)),
                 "l"(global_src), "r"(n_read)
                 : "memory");
}

__device__ inline void copy_async_8(void* shared_dst, const void* global_src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(shared_address(shared_dst)), "l"(global_src)
                 : "memory");
}

__device__ inline void copy_async_4(void* shared_dst, const void* global_src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(shared_address(shared_dst)), "l"(global_src)
                 : "memory");
}

// Four bytes, or four zero bytes where valid is false (global_src is not read then, but must be an address).
__device__ inline void copy_async_4_or_zero(void* shared_dst, const void* global_src, bool valid) {
    const int n_read = valid ? 4 : 0;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(shared_address(shared_dst)),
                 "l"(global_src), "r"(n_read)
                 : "memory");
}

__device__ inline void commit_copies() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// Waits until at most kPending of this thread's committed groups of copies are still in flight.
template <int kPending>
__device__ inline void wait_copies() {
    asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

}  // namespace folio::kernels
