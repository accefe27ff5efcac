// Error checks for CUDA runtime and cuBLAS calls: failures throw folio::Error naming the call and the code.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/common/error.h"

#define CUDA_CHECK(expr)                                                       \
    do {                                                                       \
        const cudaError_t folio_cuda_status = (expr);                          \
        if (folio_cuda_status != cudaSuccess) {                                \
            ::folio::fail(#expr, " failed at ", __FILE__, ":", __LINE__, ": ", \
                          cudaGetErrorString(folio_cuda_status));              \
        }                                                                      \
    } while (0)

#define CUBLAS_CHECK(expr)                                                                   \
    do {                                                                                     \
        const cublasStatus_t folio_cublas_status = (expr);                                   \
        if (folio_cublas_status != CUBLAS_STATUS_SUCCESS) {                                  \
            ::folio::fail(#expr, " failed at ", __FILE__, ":", __LINE__, ": cuBLAS status ", \
                          static_cast<int>(folio_cublas_status));                            \
        }                                                                                    \
    } while (0)
