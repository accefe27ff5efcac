// The CUDA backend: float32 activations and weights in device memory (bfloat16 or quantized weights, and
// at bfloat16 attention precision a bfloat16 key/value cache), cuBLAS for the matrix products and Folio's
// kernels for the rest. Tensors take cudaMalloc'd blocks that are kept for reuse by later tensors of
// about the same size, and freed when the device runs out; memory_stats() counts the bytes of live tensors,
// not the blocks kept for reuse. Built only where CUDA is enabled (FOLIO_WITH_CUDA); its implementation is
// the library folio-backend-cuda.
#pragma once

#include <memory>

#include "engine/backend/backend.h"

namespace folio {

struct CudaBackendOptions {
    int device = 0;
    // Fill the tensors that operations and uploads return with NaN (all bits set) before writing them, so
    // that an element an operation fails to write shows up in the results; alloc() still returns zeros.
    // For tests; costs a memset per tensor.
    bool poison_allocations = false;
    // Plan and allocate as if the device had this many bytes (0: its own memory): an 8 GB card simulated on
    // a larger one. total_memory() reports it, and tensors beyond it fail as on a full device.
    int64_t memory_limit_bytes = 0;
};

// Throws folio::Error when there is no CUDA device or no device of that number.
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options);
std::unique_ptr<Backend> make_cuda_backend(int device = 0);
// The stream a CUDA backend queues its work on (a cudaStream_t), for work of others that must run in order
// with it (NCCL's collectives). Throws folio::Error for a backend of another kind.
void* cuda_backend_stream(Backend& backend);

}  // namespace folio
