#include <cstdint>

#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/norm.h"
#include "kernels/output-value.cuh"
#include "kernels/reduce.cuh"

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

constexpr int kLayerNormWarpRows = kBlock / kWarpSize;  // rows of a block of layer_norm_rows_kernel
constexpr int kLayerNormQuads = 16;  // float4s of a row each lane of layer_norm_rows_kernel keeps at most
constexpr int64_t kLayerNormRowsMaxWidth = int64_t{kWarpSize} * 4 * kLayerNormQuads;

// A warp per row, for rows of a multiple of 4 values up to kLayerNormRowsMaxWidth with x, w, b and y aligned
// to four of their elements: a lane reads every 32nd quad of the row once, with 16-byte loads, and keeps it
// in registers for the mean, the variance and the output, so that the reductions are the warp's shuffles
// and the stores are four values wide. T: float or __nv_bfloat16.
// x [n_rows, d], w, b [d]  ->  y [n_rows, d]
template <typename T>
__global__ void __launch_bounds__(kBlock)
    layer_norm_rows_kernel(const float* x, const float* w, const float* b, T* y, int64_t n_rows, int d,
                           float eps) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kLayerNormWarpRows + threadIdx.x / kWarpSize;
    if (row >= n_rows) {
        return;
    }
    const int n_quads = d / 4;
    const auto* xr = reinterpret_cast<const float4*>(x + row * d);  // [n_quads]
    float4 v[kLayerNormQuads];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kLayerNormQuads; ++k) {
        const int i = lane + k * kWarpSize;
        v[k] = i < n_quads ? xr[i] : float4{0.0f, 0.0f, 0.0f, 0.0f};
        sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    const float mean = warp_sum(sum) / static_cast<float>(d);
    float sq = 0.0f;
#pragma unroll
    for (int k = 0; k < kLayerNormQuads; ++k) {
        if (lane + k * kWarpSize < n_quads) {
            const float cx = v[k].x - mean, cy = v[k].y - mean, cz = v[k].z - mean, cw = v[k].w - mean;
            sq += (cx * cx + cy * cy) + (cz * cz + cw * cw);
        }
    }
    const float inv = rsqrtf(warp_sum(sq) / static_cast<float>(d) + eps);
    const auto* w4 = reinterpret_cast<const float4*>(w);  // [n_quads]
    const auto* b4 = reinterpret_cast<const float4*>(b);  // [n_quads]
    T* yr = y + row * d;                                  // [d]
#pragma unroll
    for (int k = 0; k < kLayerNormQuads; ++k) {
        const int i = lane + k * kWarpSize;
        if (i < n_quads) {
            const float4 wi = w4[i], bi = b4[i];
            store_four(yr + 4 * i,
                       float4{(v[k].x - mean) * inv * wi.x + bi.x, (v[k].y - mean) * inv * wi.y + bi.y,
                              (v[k].z - mean) * inv * wi.z + bi.z, (v[k].w - mean) * inv * wi.w + bi.w});
        }
    }
}

constexpr int kHeldValues = 16;  // values of a row each thread of rms_norm keeps in registers

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
    const auto aligned = [](const void* p, size_t bytes) {
        return reinterpret_cast<uintptr_t>(p) % bytes == 0;
    };
    if (d % 4 == 0 && d <= kLayerNormRowsMaxWidth && aligned(x, 16) && aligned(w, 16) && aligned(b, 16) &&
        aligned(y, 4 * sizeof(T))) {
        const auto n_blocks =
            static_cast<unsigned int>((n_rows + kLayerNormWarpRows - 1) / kLayerNormWarpRows);
        layer_norm_rows_kernel<T>
            <<<n_blocks, kBlock, 0, stream>>>(x, w, b, y, n_rows, static_cast<int>(d), eps);
    } else {
        layer_norm_kernel<T><<<static_cast<unsigned int>(n_rows), kBlock, 0, stream>>>(x, w, b, y, d, eps);
    }
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
