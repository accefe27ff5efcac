#include "engine/common/error.h"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/reduce.cuh"
#include "kernels/rope-pair.cuh"
#include "kernels/rotary.h"

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
constexpr int kMaxTokenPairs = 128;  // pairs of a head rope_qkv_to_cache_token_kernel takes at most
// Tokens from which a call takes the token kernel: with fewer, its blocks (one a token) leave most of the
// device idle, and a block a head does better (docs/performance.md: batch 64 lost 1-3%, batch 256 and
// prompts of 64 x 512 tokens and more gained 1% and 10-16%).
constexpr int64_t kTokenKernelMinTokens = 256;

// One block per token, chained: the cos and sin of each pair found once for the token's q and k heads, then
// a thread per pair of any of its heads.  qkv [n, (n_head + 2 n_kv_head) * head_dim], head_dim / 2 at most
// kMaxTokenPairs
__global__ void __launch_bounds__(kBlock) rope_qkv_to_cache_token_kernel(const float* qkv, RopeCacheArgs a) {
    __shared__ float turn_c[kMaxTokenPairs], turn_s[kMaxTokenPairs];
    wait_for_prior_grids();
    start_dependent_grids();
    const int r = static_cast<int>(blockIdx.x), half = static_cast<int>(a.head_dim / 2);
    const int n_heads = static_cast<int>(a.n_head + 2 * a.n_kv_head);
    for (int pair = static_cast<int>(threadIdx.x); pair < half; pair += static_cast<int>(blockDim.x)) {
        rope_pair_turn(a, r, pair, &turn_c[pair], &turn_s[pair]);
    }
    __syncthreads();
    const float* x = qkv + static_cast<int64_t>(r) * n_heads * a.head_dim;  // [n_heads, head_dim]
    for (int item = static_cast<int>(threadIdx.x); item < n_heads * half;
         item += static_cast<int>(blockDim.x)) {
        const int head = item / half, pair = item % half;
        bool turns = false;
        RopePairTarget t = rope_head_target(a, r, head, &turns);
        if (turns) {
            t.c = turn_c[pair];
            t.s = turn_s[pair];
        }
        const float* xh = x + head * a.head_dim;  // [head_dim]
        store_rope_pair(t, pair, half, xh[pair], xh[pair + half]);
    }
}

// One block per (token, head of q, k or v), chained: a thread per pair of the head.
// qkv [n, (n_head + 2 n_kv_head) * head_dim]
__global__ void rope_qkv_to_cache_f32_kernel(const float* qkv, RopeCacheArgs a) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int r = static_cast<int>(blockIdx.x), head = static_cast<int>(blockIdx.y);
    const int half = static_cast<int>(a.head_dim / 2);
    const float* x = qkv + (r * (a.n_head + 2 * a.n_kv_head) + head) * a.head_dim;  // [head_dim]
    for (int pair = static_cast<int>(threadIdx.x); pair < half; pair += static_cast<int>(blockDim.x)) {
        store_rope_pair(rope_pair_target(a, r, head, pair), pair, half, x[pair], x[pair + half]);
    }
}

// The most head_dim a cache of 8-bit levels takes: two pairs a thread of a kHeadBlock block.
constexpr int kMaxQ8HeadDim = 4 * kHeadBlock;

// rope_qkv_to_cache_f32_kernel for a cache of 8-bit levels: one block per (token, head of q, k or v),
// chained; a k or v head's turned values are met in shared memory for their largest magnitude, then stored as
// levels with their scale.  qkv [n, (n_head + 2 n_kv_head) * head_dim]
__global__ void __launch_bounds__(kHeadBlock) rope_qkv_to_q8_cache_kernel(const float* qkv, RopeCacheArgs a) {
    __shared__ float turned[kMaxQ8HeadDim];
    __shared__ float warp_top[kHeadBlock / kWarpSize];
    wait_for_prior_grids();
    start_dependent_grids();
    const int r = static_cast<int>(blockIdx.x), head = static_cast<int>(blockIdx.y);
    const int half = static_cast<int>(a.head_dim / 2), tid = static_cast<int>(threadIdx.x);
    const float* x = qkv + (r * (a.n_head + 2 * a.n_kv_head) + head) * a.head_dim;  // [head_dim]
    if (head < a.n_head) {
        for (int pair = tid; pair < half; pair += kHeadBlock) {
            store_rope_pair(rope_pair_target(a, r, head, pair), pair, half, x[pair], x[pair + half]);
        }
        return;
    }
    const int64_t slot = a.slots[r];
    if (slot < 0 || slot >= a.n_slots) {
        return;
    }
    const bool key = head - a.n_head < a.n_kv_head;
    const int64_t row = slot * a.n_kv_head + (head - a.n_head) % a.n_kv_head;
    float top = 0.0f;
    for (int pair = tid; pair < half; pair += kHeadBlock) {
        float c = 1.0f, s = 0.0f;
        if (key) {
            rope_pair_turn(a, r, pair, &c, &s);
        }
        const float x0 = x[pair], x1 = x[pair + half];
        turned[pair] = x0 * c - x1 * s;
        turned[pair + half] = x1 * c + x0 * s;
        top = fmaxf(top, fmaxf(fabsf(turned[pair]), fabsf(turned[pair + half])));
    }
    top = warp_max(top);
    if (tid % kWarpSize == 0) {
        warp_top[tid / kWarpSize] = top;
    }
    __syncthreads();
    top = 0.0f;
#pragma unroll
    for (int w = 0; w < kHeadBlock / kWarpSize; ++w) {
        top = fmaxf(top, warp_top[w]);
    }
    const float inverse = top > 0.0f ? __fdiv_rn(127.0f, top) : 0.0f;
    auto* levels = static_cast<int8_t*>(key ? a.k_cache : a.v_cache) + row * a.head_dim;  // [head_dim]
    for (int d = tid; d < 2 * half; d += kHeadBlock) {
        const float level = fminf(fmaxf(rintf(__fmul_rn(turned[d], inverse)), -127.0f), 127.0f);
        levels[d] = static_cast<int8_t>(level);
    }
    if (tid == 0) {
        (key ? a.k_scales : a.v_scales)[row] = __fdiv_rn(top, 127.0f);
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

void rope_qkv_to_cache_f32(const float* qkv, const RopeCacheArgs& a, int64_t n, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    if (a.q8_cache) {
        if (a.head_dim > kMaxQ8HeadDim) {
            fail("rope_qkv_to_cache_f32: head_dim ", a.head_dim, " above the ", kMaxQ8HeadDim,
                 " a cache of 8-bit levels takes");
        }
        const dim3 grid(static_cast<unsigned int>(n), static_cast<unsigned int>(a.n_head + 2 * a.n_kv_head));
        launch_chained(rope_qkv_to_q8_cache_kernel, grid, dim3(kHeadBlock), 0, stream, qkv, a);
        return;
    }
    if (n >= kTokenKernelMinTokens && a.head_dim / 2 <= kMaxTokenPairs) {
        launch_chained(rope_qkv_to_cache_token_kernel, dim3(static_cast<unsigned int>(n)), dim3(kBlock), 0,
                       stream, qkv, a);
        return;
    }
    const dim3 grid(static_cast<unsigned int>(n), static_cast<unsigned int>(a.n_head + 2 * a.n_kv_head));
    launch_chained(rope_qkv_to_cache_f32_kernel, grid, dim3(kHeadBlock), 0, stream, qkv, a);
}

}  // namespace folio::kernels
