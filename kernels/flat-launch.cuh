// A launch of one thread per element: the block size, the blocks for n elements, and a thread's element.
#pragma once

#include <cstdint>

namespace folio::kernels {

inline constexpr int kBlock = 256;

inline unsigned int n_blocks(int64_t n) {
    return static_cast<unsigned int>((n + kBlock - 1) / kBlock);
}

__device__ inline int64_t global_index() {
    return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

}  // namespace folio::kernels
