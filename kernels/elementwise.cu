#include "cuda-check.h"
#include "elementwise.h"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

__global__ void add_f32_kernel(float* x, const float* y, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] += y[i];
    }
}

// y[row, col] += b[col]
__global__ void add_bias_f32_kernel(float* y, const float* b, int64_t n_rows, int64_t n_cols) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n_rows * n_cols) {
        y[i] += b[i % n_cols];
    }
}

constexpr int kBlock = 256;

unsigned int n_blocks(int64_t n) {
    return static_cast<unsigned int>((n + kBlock - 1) / kBlock);
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void add_f32(float* x, const float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    add_f32_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, y, n);
    CUDA_CHECK(cudaGetLastError());
}

void linear_f32(cublasHandle_t handle, const float* x, const float* w, const float* b, float* y, int64_t n,
                int64_t in, int64_t out, cudaStream_t stream) {
    // Row-major y[n, out] = x[n, in] · w[out, in]ᵀ is column-major yᵀ[out, n] = w · xᵀ.
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out), static_cast<int>(n),
                             static_cast<int>(in), &alpha, w, static_cast<int>(in), x, static_cast<int>(in),
                             &beta, y, static_cast<int>(out)));
    if (b != nullptr && n * out > 0) {
        add_bias_f32_kernel<<<n_blocks(n * out), kBlock, 0, stream>>>(y, b, n, out);
        CUDA_CHECK(cudaGetLastError());
    }
}

int device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

}  // namespace folio::kernels
