#include "kernels/activation-ops.h"

#include "kernels/cuda-check.h"
#include "kernels/flat-launch.cuh"
#include "kernels/vision-activation.cuh"

namespace folio::kernels {

namespace {

__global__ void activate_kernel(float* x, int64_t n, KernelActivation act) {
    const int64_t i = global_index();
    if (i < n) {
        x[i] = activation_value(act, x[i]);
    }
}

__global__ void multiply_kernel(const float* x, const float* y, float* out, int64_t n,
                                KernelActivation y_act) {
    const int64_t i = global_index();
    if (i < n) {
        out[i] = x[i] * activation_value(y_act, y[i]);
    }
}

// Rows of x [n_rows, d]: each warp takes one, its lanes striding over the columns.
__global__ void softmax_rows_kernel(float* x, int64_t n_rows, int64_t d) {
    const int64_t row = global_index() / 32;
    const int lane = static_cast<int>(threadIdx.x % 32);
    if (row >= n_rows) {
        return;
    }
    float* xr = x + row * d;
    float max_v = -INFINITY;
    for (int64_t i = lane; i < d; i += 32) {
        max_v = fmaxf(max_v, xr[i]);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        max_v = fmaxf(max_v, __shfl_xor_sync(0xffffffffU, max_v, offset));
    }
    float sum = 0.0f;
    for (int64_t i = lane; i < d; i += 32) {
        const float e = expf(xr[i] - max_v);
        xr[i] = e;
        sum += e;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_xor_sync(0xffffffffU, sum, offset);
    }
    const float inv = 1.0f / sum;
    for (int64_t i = lane; i < d; i += 32) {
        xr[i] *= inv;
    }
}

}  // namespace

void apply_activation_f32(float* x, int64_t n, KernelActivation act, cudaStream_t stream) {
    if (n == 0 || act == KernelActivation::None) {
        return;
    }
    activate_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, n, act);
    CUDA_CHECK(cudaGetLastError());
}

void multiply_f32(const float* x, const float* y, float* out, int64_t n, KernelActivation y_act,
                  cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    multiply_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, y, out, n, y_act);
    CUDA_CHECK(cudaGetLastError());
}

void softmax_rows_f32(float* x, int64_t n_rows, int64_t d, cudaStream_t stream) {
    if (n_rows == 0) {
        return;
    }
    softmax_rows_kernel<<<n_blocks(n_rows * 32), kBlock, 0, stream>>>(x, n_rows, d);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
