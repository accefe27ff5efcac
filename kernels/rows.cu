#include <cuda_bf16.h>

#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/rows.h"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kBlock = 256;

__device__ inline float as_float(float x) {
    return x;
}

__device__ inline float as_float(__nv_bfloat16 x) {
    return __bfloat162float(x);
}

// One thread per copied value; row index i of the list, column j. T: float or bfloat16 (a table kept in
// bfloat16), widened to float32.
// out [n_rows, d] <- src [n_src, d] at rows [n_rows]
template <typename T>
__global__ void gather_rows_f32_kernel(const T* src, const int64_t* rows, float* out, int64_t n_rows,
                                       int64_t d) {
    const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < n_rows * d) {
        const int64_t i = k / d, j = k % d;
        out[k] = as_float(src[rows[i] * d + j]);
    }
}

// out [n_rows, d] <- src [n_src, d] at int32 rows [n_rows], a negative row -p - 1 standing for pending[p]
// (p < n_pending); a row outside src comes out zero. Chained.
template <typename T>
__global__ void gather_rows_i32_f32_kernel(const T* src, const int32_t* rows, float* out, int64_t n_rows,
                                           int64_t d, int64_t n_src, const int32_t* pending,
                                           int64_t n_pending) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < n_rows * d) {
        const int64_t i = k / d, j = k % d;
        int64_t row = rows[i];
        if (row < 0 && -row <= n_pending) {
            row = pending[-row - 1];
        }
        out[k] = row >= 0 && row < n_src ? as_float(src[row * d + j]) : 0.0f;
    }
}

// dst [n_dst, d] at rows [n_rows] <- src [n_src, d] at src_rows [n_rows] (or the first n_rows rows)
__global__ void scatter_rows_f32_kernel(float* dst, const int64_t* rows, const float* src,
                                        const int64_t* src_rows, int64_t n_rows, int64_t d) {
    const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < n_rows * d) {
        const int64_t i = k / d, j = k % d;
        dst[rows[i] * d + j] = src[(src_rows ? src_rows[i] : i) * d + j];
    }
}

// dst [n_dst, d] at int32 rows [n_rows] <- src [n_rows, d], rows outside dst skipped
__global__ void scatter_rows_i32_f32_kernel(float* dst, const int32_t* rows, const float* src, int64_t n_rows,
                                            int64_t d, int64_t n_dst) {
    const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < n_rows * d) {
        const int64_t i = k / d, j = k % d;
        const int64_t row = rows[i];
        if (row >= 0 && row < n_dst) {
            dst[row * d + j] = src[k];
        }
    }
}

unsigned int n_blocks(int64_t n) {
    return static_cast<unsigned int>((n + kBlock - 1) / kBlock);
}

// One thread per value of x.  x [n_rows, d], src [n_src, d], rows and weights [n_rows * n_taps]
__global__ void add_weighted_rows_f32_kernel(float* x, const float* src, const int64_t* rows,
                                             const float* weights, int64_t n_rows, int64_t n_taps,
                                             int64_t d) {
    const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < n_rows * d) {
        const int64_t i = k / d, j = k % d;
        float sum = 0.0f;
        for (int64_t t = i * n_taps; t < (i + 1) * n_taps; ++t) {
            sum += weights[t] * src[rows[t] * d + j];
        }
        x[k] += sum;
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void gather_rows_f32(const float* src, const int64_t* rows, float* out, int64_t n_rows, int64_t d,
                     cudaStream_t stream) {
    if (n_rows * d == 0) {
        return;
    }
    gather_rows_f32_kernel<<<n_blocks(n_rows * d), kBlock, 0, stream>>>(src, rows, out, n_rows, d);
    CUDA_CHECK(cudaGetLastError());
}

void gather_rows_bf16(const uint16_t* src, const int64_t* rows, float* out, int64_t n_rows, int64_t d,
                      cudaStream_t stream) {
    if (n_rows * d == 0) {
        return;
    }
    gather_rows_f32_kernel<<<n_blocks(n_rows * d), kBlock, 0, stream>>>(
        reinterpret_cast<const __nv_bfloat16*>(src), rows, out, n_rows, d);
    CUDA_CHECK(cudaGetLastError());
}

void scatter_rows_f32(float* dst, const int64_t* rows, const float* src, const int64_t* src_rows,
                      int64_t n_rows, int64_t d, cudaStream_t stream) {
    if (n_rows * d == 0) {
        return;
    }
    scatter_rows_f32_kernel<<<n_blocks(n_rows * d), kBlock, 0, stream>>>(dst, rows, src, src_rows, n_rows, d);
    CUDA_CHECK(cudaGetLastError());
}

void scatter_rows_i32_f32(float* dst, const int32_t* rows, const float* src, int64_t n_rows, int64_t d,
                          int64_t n_dst, cudaStream_t stream) {
    if (n_rows * d == 0) {
        return;
    }
    scatter_rows_i32_f32_kernel<<<n_blocks(n_rows * d), kBlock, 0, stream>>>(dst, rows, src, n_rows, d,
                                                                             n_dst);
    CUDA_CHECK(cudaGetLastError());
}

void gather_rows_i32_f32(const float* src, const int32_t* rows, float* out, int64_t n_rows, int64_t d,
                         int64_t n_src, const int32_t* pending, int64_t n_pending, cudaStream_t stream) {
    if (n_rows * d == 0) {
        return;
    }
    launch_chained(gather_rows_i32_f32_kernel<float>, dim3(n_blocks(n_rows * d)), dim3(kBlock), 0, stream,
                   src, rows, out, n_rows, d, n_src, pending, n_pending);
}

void gather_rows_i32_bf16(const uint16_t* src, const int32_t* rows, float* out, int64_t n_rows, int64_t d,
                          int64_t n_src, const int32_t* pending, int64_t n_pending, cudaStream_t stream) {
    if (n_rows * d == 0) {
        return;
    }
    launch_chained(gather_rows_i32_f32_kernel<__nv_bfloat16>, dim3(n_blocks(n_rows * d)), dim3(kBlock), 0,
                   stream, reinterpret_cast<const __nv_bfloat16*>(src), rows, out, n_rows, d, n_src, pending,
                   n_pending);
}

void add_weighted_rows_f32(float* x, const float* src, const int64_t* rows, const float* weights,
                           int64_t n_rows, int64_t n_taps, int64_t d, cudaStream_t stream) {
    const int64_t n = n_rows * d;
    if (n == 0) {
        return;
    }
    add_weighted_rows_f32_kernel<<<static_cast<unsigned int>((n + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
        x, src, rows, weights, n_rows, n_taps, d);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
