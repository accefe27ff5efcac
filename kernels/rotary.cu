#include "chained-launch.cuh"
#include "cuda-check.h"
#include "rotary.h"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kBlock = 256;

// One thread per rotated pair.  x [n, n_head, head_dim], cos, sin [n, head_dim]
__global__ void rope_f32_kernel(float* x, const float* cos, const float* sin, int64_t n, int64_t n_head,
                                int64_t head_dim) {
    const int64_t half = head_dim / 2;
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n * n_head * half) {
        return;
    }
    const int64_t pair = i % half;
    const int64_t row_head = i / half;  // row * n_head + head
    const int64_t row = row_head / n_head;
    float* v = x + row_head * head_dim;     // [head_dim]
    const float* c = cos + row * head_dim;  // [head_dim]
    const float* s = sin + row * head_dim;  // [head_dim]
    const float a = v[pair], b = v[pair + half];
    v[pair] = a * c[pair] - b * s[pair];
    v[pair + half] = b * c[pair + half] + a * s[pair + half];
}

constexpr int kHeadBlock = 64;

// One block per (token, q or k head), chained: a thread per rotated pair of the head; the block of k head j
// also stores v head j.
// qkv [n, (n_head + 2 n_kv_head) * head_dim], positions [n, 3], slots [n], inv_freq [head_dim / 2],
// q_out [n, n_head, head_dim], k_cache, v_cache [n_slots, n_kv_head, head_dim]
__global__ void rope_qkv_to_cache_f32_kernel(const float* qkv, const int32_t* positions, const int32_t* slots,
                                             const float* inv_freq, int section0, int section01, float* q_out,
                                             float* k_cache, float* v_cache, int64_t n_head,
                                             int64_t n_kv_head, int64_t head_dim, int64_t n_slots) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t r = blockIdx.x, head = blockIdx.y;
    const int64_t half = head_dim / 2;
    const float* row = qkv + r * (n_head + 2 * n_kv_head) * head_dim;  // [n_head + 2 n_kv_head, head_dim]
    const int32_t* pos = positions + r * 3;                            // [3]
    const int64_t slot = slots[r];
    const bool store = slot >= 0 && slot < n_slots;
    float* dst = nullptr;  // [head_dim]
    if (head < n_head) {
        dst = q_out + (r * n_head + head) * head_dim;
    } else if (store) {
        dst = k_cache + (slot * n_kv_head + head - n_head) * head_dim;
    } else {
        return;
    }
    for (int64_t pair = threadIdx.x; pair < half; pair += blockDim.x) {
        const int axis = pair < section0 ? 0 : pair < section01 ? 1 : 2;
        const float angle = static_cast<float>(pos[axis]) * inv_freq[pair];
        const float c = cosf(angle), s = sinf(angle);
        const float a = row[head * head_dim + pair], b = row[head * head_dim + pair + half];
        dst[pair] = a * c - b * s;
        dst[pair + half] = b * c + a * s;
    }
    if (head >= n_head) {
        const int64_t kv_head = head - n_head;
        const float* v = row + (n_head + n_kv_head + kv_head) * head_dim;  // [head_dim]
        float* v_dst = v_cache + (slot * n_kv_head + kv_head) * head_dim;  // [head_dim]
        for (int64_t i = threadIdx.x; i < head_dim; i += blockDim.x) {
            v_dst[i] = v[i];
        }
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void rope_f32(float* x, const float* cos, const float* sin, int64_t n, int64_t n_head, int64_t head_dim,
              cudaStream_t stream) {
    const int64_t n_pairs = n * n_head * (head_dim / 2);
    if (n_pairs == 0) {
        return;
    }
    const auto n_blocks = static_cast<unsigned int>((n_pairs + kBlock - 1) / kBlock);
    rope_f32_kernel<<<n_blocks, kBlock, 0, stream>>>(x, cos, sin, n, n_head, head_dim);
    CUDA_CHECK(cudaGetLastError());
}

void rope_qkv_to_cache_f32(const float* qkv, const int32_t* positions, const int32_t* slots,
                           const float* inv_freq, int section0, int section01, float* q_out, float* k_cache,
                           float* v_cache, int64_t n, int64_t n_head, int64_t n_kv_head, int64_t head_dim,
                           int64_t n_slots, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    const dim3 grid(static_cast<unsigned int>(n), static_cast<unsigned int>(n_head + n_kv_head));
    launch_chained(rope_qkv_to_cache_f32_kernel, grid, dim3(kHeadBlock), 0, stream, qkv, positions, slots,
                   inv_freq, section0, section01, q_out, k_cache, v_cache, n_head, n_kv_head, head_dim,
                   n_slots);
}

}  // namespace folio::kernels
