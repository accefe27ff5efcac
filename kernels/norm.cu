#include "chained-launch.cuh"
#include "cuda-check.h"
#include "norm.h"
#include "output-value.cuh"
#include "reduce.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kBlock = 256;

constexpr int kLayerNormHeld = 8;  // values of a row each thread of layer_norm keeps in registers

// One block per row. A row of at most kBlock * kLayerNormHeld values is read once and kept in registers
// for the mean, the variance and the output. T: float or __nv_bfloat16.
// x [n_rows, d], w, b [d]  ->  y [n_rows, d]
template <typename T>
__global__ void __launch_bounds__(kBlock)
    layer_norm_kernel(const float* x, const float* w, const float* b, T* y, int64_t d, float eps) {
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * d;  // [d]
    T* yr = y + static_cast<int64_t>(blockIdx.x) * d;            // [d]
    const bool held = d <= int64_t{kBlock} * kLayerNormHeld;
    float xv[kLayerNormHeld];
    float sum = 0.0f;
    if (held) {
#pragma unroll
        for (int k = 0; k < kLayerNormHeld; ++k) {
            const int64_t i = threadIdx.x + k * kBlock;
            xv[k] = i < d ? xr[i] : 0.0f;
            sum += xv[k];
        }
    } else {
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            sum += xr[i];
        }
    }
    const float mean = block_sum(sum) / static_cast<float>(d);
    float sq = 0.0f;
    if (held) {
#pragma unroll
        for (int k = 0; k < kLayerNormHeld; ++k) {
            const float c = threadIdx.x + k * kBlock < d ? xv[k] - mean : 0.0f;
            sq += c * c;
        }
    } else {
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            const float c = xr[i] - mean;
            sq += c * c;
        }
    }
    const float inv = rsqrtf(block_sum(sq) / static_cast<float>(d) + eps);
    if (held) {
#pragma unroll
        for (int k = 0; k < kLayerNormHeld; ++k) {
            const int64_t i = threadIdx.x + k * kBlock;
            if (i < d) {
                store_output(yr + i, (xv[k] - mean) * inv * w[i] + b[i]);
            }
        }
    } else {
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            store_output(yr + i, (xr[i] - mean) * inv * w[i] + b[i]);
        }
    }
}

constexpr int kHeldValues = 4;  // values of a row each thread of rms_norm keeps in registers

// One block per row; chained. A row of at most kBlock * kHeldValues values stays in registers: its loads go
// out together, and its weights are loaded before the wait. T: float or __nv_bfloat16.
// x [n_rows, d], w [d]  ->  y [n_rows, d]
template <typename T>
__global__ void __launch_bounds__(kBlock)
    rms_norm_kernel(const float* x, const float* w, T* y, int64_t d, float eps) {
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * d;  // [d]
    T* yr = y + static_cast<int64_t>(blockIdx.x) * d;            // [d]
    const bool held = d <= int64_t{kBlock} * kHeldValues;
    float wv[kHeldValues], xv[kHeldValues];
#pragma unroll
    for (int k = 0; k < kHeldValues; ++k) {
        const int64_t i = threadIdx.x + k * kBlock;
        wv[k] = held && i < d ? w[i] : 0.0f;
    }
    wait_for_prior_grids();
    start_dependent_grids();
    float sq = 0.0f;
    if (held) {
#pragma unroll
        for (int k = 0; k < kHeldValues; ++k) {
            const int64_t i = threadIdx.x + k * kBlock;
            xv[k] = i < d ? xr[i] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < kHeldValues; ++k) {
            sq += xv[k] * xv[k];
        }
    } else {
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            sq += xr[i] * xr[i];
        }
    }
    const float inv = rsqrtf(block_sum(sq) / static_cast<float>(d) + eps);
    if (held) {
#pragma unroll
        for (int k = 0; k < kHeldValues; ++k) {
            const int64_t i = threadIdx.x + k * kBlock;
            if (i < d) {
                store_output(yr + i, wv[k] * (xv[k] * inv));
            }
        }
    } else {
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            store_output(yr + i, w[i] * (xr[i] * inv));
        }
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

namespace {

template <typename T>
void launch_layer_norm(const float* x, const float* w, const float* b, T* y, int64_t n_rows, int64_t d,
                       float eps, cudaStream_t stream) {
    if (n_rows == 0 || d == 0) {
        return;
    }
    layer_norm_kernel<T><<<static_cast<unsigned int>(n_rows), kBlock, 0, stream>>>(x, w, b, y, d, eps);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void layer_norm_f32(const float* x, const float* w, const float* b, float* y, int64_t n_rows, int64_t d,
                    float eps, cudaStream_t stream) {
    launch_layer_norm(x, w, b, y, n_rows, d, eps, stream);
}

void layer_norm_bf16(const float* x, const float* w, const float* b, uint16_t* y, int64_t n_rows, int64_t d,
                     float eps, cudaStream_t stream) {
    launch_layer_norm(x, w, b, reinterpret_cast<__nv_bfloat16*>(y), n_rows, d, eps, stream);
}

namespace {

template <typename T>
void launch_rms_norm(const float* x, const float* w, T* y, int64_t n_rows, int64_t d, float eps,
                     cudaStream_t stream) {
    if (n_rows == 0 || d == 0) {
        return;
    }
    launch_chained(rms_norm_kernel<T>, dim3(static_cast<unsigned int>(n_rows)), dim3(kBlock), 0, stream, x, w,
                   y, d, eps);
}

}  // namespace

void rms_norm_f32(const float* x, const float* w, float* y, int64_t n_rows, int64_t d, float eps,
                  cudaStream_t stream) {
    launch_rms_norm(x, w, y, n_rows, d, eps, stream);
}

void rms_norm_bf16(const float* x, const float* w, uint16_t* y, int64_t n_rows, int64_t d, float eps,
                   cudaStream_t stream) {
    launch_rms_norm(x, w, reinterpret_cast<__nv_bfloat16*>(y), n_rows, d, eps, stream);
}

}  // namespace folio::kernels
