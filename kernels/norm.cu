#include "cuda-check.h"
#include "norm.h"
#include "reduce.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kBlock = 256;

// One block per row.  x, y [n_rows, d], w, b [d]
__global__ void layer_norm_f32_kernel(const float* x, const float* w, const float* b, float* y, int64_t d,
                                      float eps) {
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * d;  // [d]
    float* yr = y + static_cast<int64_t>(blockIdx.x) * d;        // [d]
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        sum += xr[i];
    }
    const float mean = block_sum(sum) / static_cast<float>(d);
    float sq = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        const float c = xr[i] - mean;
        sq += c * c;
    }
    const float inv = rsqrtf(block_sum(sq) / static_cast<float>(d) + eps);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        yr[i] = (xr[i] - mean) * inv * w[i] + b[i];
    }
}

// One block per row.  x, y [n_rows, d], w [d]
__global__ void rms_norm_f32_kernel(const float* x, const float* w, float* y, int64_t d, float eps) {
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * d;  // [d]
    float* yr = y + static_cast<int64_t>(blockIdx.x) * d;        // [d]
    float sq = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        sq += xr[i] * xr[i];
    }
    const float inv = rsqrtf(block_sum(sq) / static_cast<float>(d) + eps);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        yr[i] = w[i] * (xr[i] * inv);
    }
}

// One block per row: x += y, then out = the RMSNorm of x.  x, y, out [n_rows, d], w [d]
__global__ void add_rms_norm_f32_kernel(float* x, const float* y, const float* w, float* out, int64_t d,
                                        float eps) {
    float* xr = x + static_cast<int64_t>(blockIdx.x) * d;        // [d]
    const float* yr = y + static_cast<int64_t>(blockIdx.x) * d;  // [d]
    float* outr = out + static_cast<int64_t>(blockIdx.x) * d;    // [d]
    float sq = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        const float s = xr[i] + yr[i];
        xr[i] = s;
        sq += s * s;
    }
    const float inv = rsqrtf(block_sum(sq) / static_cast<float>(d) + eps);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        outr[i] = w[i] * (xr[i] * inv);
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void layer_norm_f32(const float* x, const float* w, const float* b, float* y, int64_t n_rows, int64_t d,
                    float eps, cudaStream_t stream) {
    if (n_rows == 0 || d == 0) {
        return;
    }
    layer_norm_f32_kernel<<<static_cast<unsigned int>(n_rows), kBlock, 0, stream>>>(x, w, b, y, d, eps);
    CUDA_CHECK(cudaGetLastError());
}

void rms_norm_f32(const float* x, const float* w, float* y, int64_t n_rows, int64_t d, float eps,
                  cudaStream_t stream) {
    if (n_rows == 0 || d == 0) {
        return;
    }
    rms_norm_f32_kernel<<<static_cast<unsigned int>(n_rows), kBlock, 0, stream>>>(x, w, y, d, eps);
    CUDA_CHECK(cudaGetLastError());
}

void add_rms_norm_f32(float* x, const float* y, const float* w, float* out, int64_t n_rows, int64_t d,
                      float eps, cudaStream_t stream) {
    if (n_rows == 0 || d == 0) {
        return;
    }
    add_rms_norm_f32_kernel<<<static_cast<unsigned int>(n_rows), kBlock, 0, stream>>>(x, y, w, out, d, eps);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
