#include "kernels/batched-attention.h"

#include <cmath>

#include "kernels/cuda-check.h"
#include "kernels/reduce.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kSoftmaxRowsPerBlock = 8;

// One warp per row, in place: x = softmax(x * scale).  x [n_rows, n_cols]
__global__ void softmax_rows_f32_kernel(float* x, int64_t n_rows, int64_t n_cols, float scale) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * kSoftmaxRowsPerBlock + threadIdx.x / kWarpSize;
    if (r >= n_rows) {
        return;
    }
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    float* row = x + r * n_cols;  // [n_cols]
    float m = -INFINITY;
    for (int64_t i = lane; i < n_cols; i += kWarpSize) {
        m = fmaxf(m, row[i]);
    }
    m = warp_max(m);
    float sum = 0.0f;
    for (int64_t i = lane; i < n_cols; i += kWarpSize) {
        const float e = expf((row[i] - m) * scale);
        row[i] = e;
        sum += e;
    }
    const float inv = 1.0f / warp_sum(sum);
    for (int64_t i = lane; i < n_cols; i += kWarpSize) {
        row[i] *= inv;
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void batched_attention_f32(cublasHandle_t handle, const float* const* q, const float* const* k,
                           const float* const* v, float* const* scores, float* const* out, float* scores_base,
                           int64_t n_batch, int64_t n_q, int64_t n_kv, int64_t head_dim, int64_t ld,
                           float scale, cudaStream_t stream) {
    if (n_batch == 0 || n_q == 0 || n_kv == 0) {
        return;
    }
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    const float one = 1.0f, zero = 0.0f;
    // scores [n_q, n_kv] = q kᵀ: column-major [n_kv, n_q] = k (as [head_dim, n_kv])ᵀ q.
    CUBLAS_CHECK(cublasSgemmBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n_kv),
                                    static_cast<int>(n_q), static_cast<int>(head_dim), &one, k,
                                    static_cast<int>(ld), q, static_cast<int>(ld), &zero, scores,
                                    static_cast<int>(n_kv), static_cast<int>(n_batch)));
    const int64_t n_rows = n_batch * n_q;
    softmax_rows_f32_kernel<<<static_cast<unsigned int>((n_rows + kSoftmaxRowsPerBlock - 1) /
                                                        kSoftmaxRowsPerBlock),
                              kSoftmaxRowsPerBlock * kWarpSize, 0, stream>>>(scores_base, n_rows, n_kv,
                                                                             scale);
    CUDA_CHECK(cudaGetLastError());
    // out [n_q, head_dim] = p v: column-major [head_dim, n_q] = v (as [head_dim, n_kv]) pᵀ.
    CUBLAS_CHECK(cublasSgemmBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(head_dim),
                                    static_cast<int>(n_q), static_cast<int>(n_kv), &one, v,
                                    static_cast<int>(ld), scores, static_cast<int>(n_kv), &zero, out,
                                    static_cast<int>(ld), static_cast<int>(n_batch)));
}

}  // namespace folio::kernels
