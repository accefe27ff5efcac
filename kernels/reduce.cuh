// Warp and block reductions shared by the kernels.
#pragma once

namespace folio::kernels {

constexpr int kWarpSize = 32;

__device__ inline float warp_sum(float v) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    return v;
}

// Sum of v over the block, returned to every thread. blockDim.x must be a multiple of 32, at most 1024.
__device__ inline float block_sum(float v) {
    __shared__ float partial[kWarpSize];
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int n_warps = static_cast<int>(blockDim.x) / kWarpSize;
    v = warp_sum(v);
    __syncthreads();  // partial may still be read by a previous call
    if (lane == 0) {
        partial[warp] = v;
    }
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < n_warps; ++w) {
        total += partial[w];
    }
    return total;
}

__device__ inline float warp_max(float v) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    return v;
}

}  // namespace folio::kernels
