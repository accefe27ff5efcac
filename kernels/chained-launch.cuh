// Chained launches (programmatic dependent launch, compute capability 9.0 and up): a kernel launched with
// launch_chained() may start while the kernel ahead of it in the stream is still running, so that its launch
// and whatever it does before wait_for_prior_grids() overlap that kernel's work. Such a kernel, in every
// block, calls wait_for_prior_grids() before it writes anything and before it exits, and once past the wait
// calls start_dependent_grids(), which lets the next chained kernel be scheduled. So when a chained kernel
// starts, every kernel before the one ahead of it has finished, and before its wait it may read what those
// wrote, but nothing the kernel ahead of it may write (uploaded weights, a decoding step's older cache
// rows). On older devices, or with FOLIO_CUDA_CHAINED_LAUNCH=0 in the environment, the launches are ordinary
// ones and both calls do nothing.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda-check.h"

namespace folio::kernels {

// Waits until the kernels this one was chained to have finished and their writes are visible.
__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next chained kernel in the stream be scheduled once every block of this one has called it.
__device__ __forceinline__ void start_dependent_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether the current device takes chained launches and they are not switched off.
bool chained_launch_enabled();

// kernel<<<grid, block, shared_bytes, stream>>>(args...), chained to the kernel before it where enabled.
template <typename... Params, typename... Args>
void launch_chained(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                    cudaStream_t stream, Args... args) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared_bytes;
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = chained_launch_enabled() ? 1 : 0;
    CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...));
}

}  // namespace folio::kernels
