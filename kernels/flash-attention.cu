#include <cmath>
#include <type_traits>

#include <cuda_bf16.h>

#include "attention-keys.cuh"
#include "cuda-check.h"
#include "dispatch.cuh"
#include "error.h"
#include "flash-attention.h"
#include "reduce.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kFlashWarps = 4;
constexpr int kFlashThreads = kFlashWarps * kWarpSize;
constexpr int kRowsPerWarp = 16;  // the rows of one mma tile
constexpr int kKeyBlock = 64;     // keys loaded to shared memory at a time
constexpr int kKeyTiles = kKeyBlock / 8;
static_assert(kFlashWarps * kRowsPerWarp == kFlashTileRows);

// Two floats as a bfloat16 pair, the first in the low half (the lower column of an mma fragment).
__device__ inline uint32_t pack_bf16(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}

// Elements d and d + 1 of a row of head_dim floats as a bfloat16 pair, zero past the row.
__device__ inline uint32_t load_pair(const float* row, int64_t d, int64_t head_dim) {
    return pack_bf16(d < head_dim ? row[d] : 0.0f, d + 1 < head_dim ? row[d + 1] : 0.0f);
}

// c += a · b on the tensor cores: a [16, 16] bf16 (row-major fragment), b [16, 8] bf16 (column fragment),
// c [16, 8] float32.
__device__ inline void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ inline uint32_t shared_pair(const __nv_bfloat16* p) {
    return *reinterpret_cast<const uint32_t*>(p);
}

// A block of kKeyBlock keys from bfloat16 rows of kDim values (16-byte pieces): K rows as they are, V
// transposed two keys at a time so that each store writes a pair of neighbouring keys. Every load of a
// thread is issued before its stores.
// k, v [n_kv_total, n_kv_head, kDim] as 16-byte pieces, kv_rows [kKeyBlock] (-1: zeros)
template <int kDim, int kKStride, int kVStride>
__device__ inline void load_padded_block(const uint4* __restrict__ k, const uint4* __restrict__ v,
                                         const int64_t* kv_rows, int64_t n_kv_head, int64_t kv_head,
                                         __nv_bfloat16* k_block, __nv_bfloat16* v_block) {
    constexpr int kPieces = kDim / 8;                             // 16-byte pieces per row
    constexpr int kKLoads = kKeyBlock * kPieces / kFlashThreads;  // per thread
    constexpr int kVLoads = (kKeyBlock / 2 * kPieces + kFlashThreads - 1) / kFlashThreads;
    static_assert(kKLoads * kFlashThreads == kKeyBlock * kPieces);
    uint4 kp[kKLoads];
#pragma unroll
    for (int u = 0; u < kKLoads; ++u) {
        const int i = static_cast<int>(threadIdx.x) + u * kFlashThreads;
        const int64_t row = kv_rows[i / kPieces];
        kp[u] = row >= 0 ? k[(row * n_kv_head + kv_head) * kPieces + i % kPieces] : uint4{};
    }
    uint4 vp[kVLoads][2];
#pragma unroll
    for (int u = 0; u < kVLoads; ++u) {
        const int i = static_cast<int>(threadIdx.x) + u * kFlashThreads;
        const int key = i / kPieces * 2, c = i % kPieces;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int64_t row = i < kKeyBlock / 2 * kPieces ? kv_rows[key + e] : -1;
            vp[u][e] = row >= 0 ? v[(row * n_kv_head + kv_head) * kPieces + c] : uint4{};
        }
    }
#pragma unroll
    for (int u = 0; u < kKLoads; ++u) {
        const int i = static_cast<int>(threadIdx.x) + u * kFlashThreads;
        *reinterpret_cast<uint4*>(&k_block[i / kPieces * kKStride + i % kPieces * 8]) = kp[u];
    }
#pragma unroll
    for (int u = 0; u < kVLoads; ++u) {
        const int i = static_cast<int>(threadIdx.x) + u * kFlashThreads;
        if (i >= kKeyBlock / 2 * kPieces) {
            continue;
        }
        const int key = i / kPieces * 2, d0 = i % kPieces * 8;
        const auto* lo = reinterpret_cast<const uint16_t*>(&vp[u][0]);
        const auto* hi = reinterpret_cast<const uint16_t*>(&vp[u][1]);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            *reinterpret_cast<uint32_t*>(&v_block[(d0 + e) * kVStride + key]) =
                static_cast<uint32_t>(lo[e]) | static_cast<uint32_t>(hi[e]) << 16;
        }
    }
}

// One thread per 16-byte piece: rows of head_dim float32 values as rows of n_padded bfloat16, zero past
// head_dim.  x [n_rows, head_dim]  ->  y [n_rows, n_padded]
__global__ void pad_rows_bf16_kernel(const float* __restrict__ x, uint4* __restrict__ y, int64_t n_rows,
                                     int64_t head_dim, int64_t n_padded) {
    const int64_t pieces = n_padded / 8;
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n_rows * pieces) {
        return;
    }
    const float* row = x + i / pieces * head_dim;  // [head_dim]
    const int64_t d0 = i % pieces * 8;
    uint32_t packed[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const int64_t d = d0 + 2 * e;
        packed[e] = pack_bf16(d < head_dim ? row[d] : 0.0f, d + 1 < head_dim ? row[d + 1] : 0.0f);
    }
    y[i] = uint4{packed[0], packed[1], packed[2], packed[3]};
}

// One block per (span of up to kFlashTileRows query rows, head); each warp owns 16 rows. Blocks of kKeyBlock
// keys are loaded to shared memory in bfloat16 (K as rows, V transposed), then each warp takes S = Q Kᵀ and
// O += P V on the tensor cores with an online softmax on S between. In the fragments a lane holds rows
// g = lane / 4 and g + 8 of its warp's 16, and columns 2 (lane % 4) + {0, 1} of every 8.
// kPadded: k and v hold bfloat16 rows of kChunks * 16 values, zero past head_dim (pad_rows_bf16 makes them),
// read 16 bytes at a time; otherwise float32 rows of head_dim, rounded as they are loaded.
// q, out [n_q_total, n_head, head_dim], k, v [n_kv_total, n_kv_head, head_dim or kChunks * 16],
// spans [gridDim.x]
template <int kChunks, typename Keys, bool kPadded>  // kChunks: head_dim in pieces of 16, rounded up
__global__ void __launch_bounds__(kFlashThreads)
    flash_attention_bf16_kernel(const float* __restrict__ q, const void* __restrict__ k_rows,
                                const void* __restrict__ v_rows, float* __restrict__ out,
                                const AttentionSpan* spans, Keys keys, int64_t n_head, int64_t n_kv_head,
                                int64_t head_dim, float scale_log2) {
    constexpr int kDim = kChunks * 16;   // head_dim padded with zeros
    constexpr int kDimTiles = kDim / 8;  // output columns in tiles of 8
    constexpr int kKStride = kDim + 8;   // bf16 per key row: the padding spreads fragment reads over banks
    constexpr int kVStride = kKeyBlock + 8;                           // bf16 per row of transposed V
    constexpr int kLoadSteps = kKeyBlock * kDim / 2 / kFlashThreads;  // pairs per thread, K and V alike
    constexpr int kLoadBatch = kLoadSteps % 8 == 0 ? 8 : 4;
    static_assert(kLoadSteps * kFlashThreads == kKeyBlock * kDim / 2 && kLoadSteps % kLoadBatch == 0);
    __shared__ __align__(16) __nv_bfloat16 k_block[kKeyBlock * kKStride];  // [kKeyBlock, kKStride]
    __shared__ __align__(16) __nv_bfloat16 v_block[kDim * kVStride];       // [kDim, kVStride]: V transposed
    __shared__ int64_t kv_rows[kKeyBlock];                                 // -1: no key

    const AttentionSpan span = spans[blockIdx.x];
    const int64_t h = blockIdx.y;
    const int64_t kv_head = h / (n_head / n_kv_head);
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int g = lane / 4, tq = lane % 4;
    const int64_t ld_q = n_head * head_dim, ld_kv = n_kv_head * head_dim;

    const int rows[2] = {warp * kRowsPerWarp + g,
                         warp * kRowsPerWarp + g + 8};  // this lane's rows of the span
    int64_t n_visible[2];
    uint32_t qa[kChunks][4];  // Q [16, kDim] as A fragments
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const bool valid = rows[r] < span.n_rows;
        n_visible[r] = valid ? visible_keys(span, rows[r]) : 0;
        const float* qr = q + (span.q_row + (valid ? rows[r] : 0)) * ld_q + h * head_dim;  // [head_dim]
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
            const int64_t d = c * 16 + 2 * tq;
            qa[c][r] = valid ? load_pair(qr, d, head_dim) : 0u;
            qa[c][r + 2] = valid ? load_pair(qr, d + 8, head_dim) : 0u;
        }
    }
    int64_t warp_visible = max(n_visible[0], n_visible[1]);
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        warp_visible = max(warp_visible, __shfl_xor_sync(0xffffffffu, warp_visible, offset));
    }
    const int64_t span_visible = max(visible_keys(span, 0), visible_keys(span, span.n_rows - 1));

    float o[kDimTiles][4] = {};                 // O [16, kDim], unnormalized
    float row_max[2] = {-INFINITY, -INFINITY};  // running maxima of the scaled scores (base 2)
    float row_sum[2] = {0.0f, 0.0f};            // this lane's part of the running sums of exponentials

    for (int64_t j0 = 0; j0 < span_visible; j0 += kKeyBlock) {
        __syncthreads();  // the previous block is no longer read
        if (threadIdx.x < kKeyBlock) {
            const int64_t j = j0 + threadIdx.x;
            kv_rows[threadIdx.x] = j < span_visible ? keys.row(span.kv_start, j) : -1;
        }
        __syncthreads();
        if constexpr (kPadded) {
            load_padded_block<kDim, kKStride, kVStride>(static_cast<const uint4*>(k_rows),
                                                        static_cast<const uint4*>(v_rows), kv_rows, n_kv_head,
                                                        kv_head, k_block, v_block);
        } else {
            const auto* k = static_cast<const float*>(k_rows);
            const auto* v = static_cast<const float*>(v_rows);
            // Each thread moves kDim / 4 pairs of K and of V, its loads issued kLoadBatch at a time ahead of
            // the stores that wait for them.
#pragma unroll 1
            for (int i0 = 0; i0 < kLoadSteps; i0 += kLoadBatch) {
                float a[kLoadBatch], b[kLoadBatch];
#pragma unroll
                for (int u = 0; u < kLoadBatch; ++u) {
                    const int i = static_cast<int>(threadIdx.x) + (i0 + u) * kFlashThreads;
                    const int key = i / (kDim / 2), d = i % (kDim / 2) * 2;
                    const int64_t row = kv_rows[key];
                    const float* kr = k + max(row, int64_t{0}) * ld_kv + kv_head * head_dim;  // [head_dim]
                    a[u] = row >= 0 && d < head_dim ? kr[d] : 0.0f;
                    b[u] = row >= 0 && d + 1 < head_dim ? kr[d + 1] : 0.0f;
                }
#pragma unroll
                for (int u = 0; u < kLoadBatch; ++u) {
                    const int i = static_cast<int>(threadIdx.x) + (i0 + u) * kFlashThreads;
                    const int key = i / (kDim / 2), d = i % (kDim / 2) * 2;
                    *reinterpret_cast<uint32_t*>(&k_block[key * kKStride + d]) = pack_bf16(a[u], b[u]);
                }
            }
#pragma unroll 1
            for (int i0 = 0; i0 < kLoadSteps; i0 += kLoadBatch) {
                float a[kLoadBatch], b[kLoadBatch];
#pragma unroll
                for (int u = 0; u < kLoadBatch; ++u) {
                    const int i = static_cast<int>(threadIdx.x) + (i0 + u) * kFlashThreads;
                    const int d = i % kDim, key = i / kDim * 2;
                    const int64_t row0 = kv_rows[key], row1 = kv_rows[key + 1];
                    const int64_t at = kv_head * head_dim + d;
                    a[u] = row0 >= 0 && d < head_dim ? v[row0 * ld_kv + at] : 0.0f;
                    b[u] = row1 >= 0 && d < head_dim ? v[row1 * ld_kv + at] : 0.0f;
                }
#pragma unroll
                for (int u = 0; u < kLoadBatch; ++u) {
                    const int i = static_cast<int>(threadIdx.x) + (i0 + u) * kFlashThreads;
                    const int d = i % kDim, key = i / kDim * 2;
                    *reinterpret_cast<uint32_t*>(&v_block[d * kVStride + key]) = pack_bf16(a[u], b[u]);
                }
            }
        }
        __syncthreads();
        if (j0 >= warp_visible) {
            continue;  // every row of this warp is done; the others still need the block
        }

        float s[kKeyTiles][4];  // S [16, kKeyBlock]
#pragma unroll
        for (int t = 0; t < kKeyTiles; ++t) {
            s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
            const __nv_bfloat16* kr = k_block + (t * 8 + g) * kKStride + 2 * tq;
#pragma unroll
            for (int c = 0; c < kChunks; ++c) {
                mma_bf16(s[t], qa[c], shared_pair(kr + c * 16), shared_pair(kr + c * 16 + 8));
            }
        }
        float block_max[2] = {row_max[0], row_max[1]};
#pragma unroll
        for (int t = 0; t < kKeyTiles; ++t) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = e / 2, key = t * 8 + 2 * tq + e % 2;
                // Contiguous keys all exist; a paged one may lie outside the cache.
                const bool seen =
                    j0 + key < n_visible[r] && (std::is_same_v<Keys, ContiguousKeys> || kv_rows[key] >= 0);
                s[t][e] = seen ? s[t][e] * scale_log2 : -INFINITY;
                block_max[r] = fmaxf(block_max[r], s[t][e]);
            }
        }
        float correction[2], base[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 1));
            block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 2));
            correction[r] = block_max[r] == -INFINITY ? 1.0f : exp2f(row_max[r] - block_max[r]);
            base[r] = block_max[r] == -INFINITY ? 0.0f : block_max[r];
            row_max[r] = block_max[r];
            row_sum[r] *= correction[r];
        }
#pragma unroll
        for (int n = 0; n < kDimTiles; ++n) {
            o[n][0] *= correction[0];
            o[n][1] *= correction[0];
            o[n][2] *= correction[1];
            o[n][3] *= correction[1];
        }
#pragma unroll
        for (int t = 0; t < kKeyTiles; ++t) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                s[t][e] = exp2f(s[t][e] - base[e / 2]);
                row_sum[e / 2] += s[t][e];
            }
        }
        // P [16, kKeyBlock] as A fragments: key tiles 2 kc and 2 kc + 1 are the two column halves of chunk
        // kc.
        uint32_t pa[kKeyTiles / 2][4];
#pragma unroll
        for (int kc = 0; kc < kKeyTiles / 2; ++kc) {
            pa[kc][0] = pack_bf16(s[2 * kc][0], s[2 * kc][1]);
            pa[kc][1] = pack_bf16(s[2 * kc][2], s[2 * kc][3]);
            pa[kc][2] = pack_bf16(s[2 * kc + 1][0], s[2 * kc + 1][1]);
            pa[kc][3] = pack_bf16(s[2 * kc + 1][2], s[2 * kc + 1][3]);
        }
#pragma unroll
        for (int n = 0; n < kDimTiles; ++n) {
            const __nv_bfloat16* vr = v_block + (n * 8 + g) * kVStride + 2 * tq;
#pragma unroll
            for (int kc = 0; kc < kKeyTiles / 2; ++kc) {
                mma_bf16(o[n], pa[kc], shared_pair(vr + kc * 16), shared_pair(vr + kc * 16 + 8));
            }
        }
    }

#pragma unroll
    for (int r = 0; r < 2; ++r) {
        row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
        row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
        if (rows[r] >= span.n_rows) {
            continue;
        }
        float* orow = out + (span.q_row + rows[r]) * ld_q + h * head_dim;  // [head_dim]
        const float inv = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
#pragma unroll
        for (int n = 0; n < kDimTiles; ++n) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int64_t d = n * 8 + 2 * tq + e;
                if (d < head_dim) {
                    orow[d] = o[n][2 * r + e] * inv;
                }
            }
        }
    }
}

// head_dim rounded up to the tensor cores' pieces of 16.
int64_t padded_head_dim(int64_t head_dim) {
    return (head_dim + 15) / 16 * 16;
}

void check_flash_shape(int64_t n_head, int64_t n_kv_head, int64_t head_dim) {
    if (head_dim <= 0 || head_dim > kMaxFlashHeadDim || n_kv_head <= 0 || n_head % n_kv_head != 0) {
        fail("flash attention kernel: head_dim ", head_dim, " (at most ", kMaxFlashHeadDim, "), ", n_head,
             " heads over ", n_kv_head, " K/V heads");
    }
}

template <bool kPadded, typename Keys>
void launch_flash(const float* q, const void* k, const void* v, float* out, const AttentionSpan* spans,
                  int64_t n_spans, const Keys& keys, int64_t n_head, int64_t n_kv_head, int64_t head_dim,
                  float scale, cudaStream_t stream) {
    const float scale_log2 = scale * static_cast<float>(M_LOG2E);
    // head_dim is at most kMaxFlashHeadDim: 8 pieces of 16.
    with_1_to_8((head_dim + 15) / 16, [&](auto chunks) {
        constexpr int kChunks = decltype(chunks)::value;
        const dim3 grid(static_cast<unsigned int>(n_spans), static_cast<unsigned int>(n_head));
        flash_attention_bf16_kernel<kChunks, Keys, kPadded><<<grid, kFlashThreads, 0, stream>>>(
            q, k, v, out, spans, keys, n_head, n_kv_head, head_dim, scale_log2);
        CUDA_CHECK(cudaGetLastError());
    });
}

void pad_rows_bf16(const float* x, uint16_t* y, int64_t n_rows, int64_t head_dim, cudaStream_t stream) {
    const int64_t n_pieces = n_rows * padded_head_dim(head_dim) / 8;
    if (n_pieces == 0) {
        return;
    }
    constexpr int kBlock = 256;
    pad_rows_bf16_kernel<<<static_cast<unsigned int>((n_pieces + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
        x, reinterpret_cast<uint4*>(y), n_rows, head_dim, padded_head_dim(head_dim));
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

int64_t flash_scratch_bytes(int64_t n_kv_total, int64_t n_kv_head, int64_t head_dim) {
    return 2 * n_kv_total * n_kv_head * padded_head_dim(head_dim) * static_cast<int64_t>(sizeof(uint16_t));
}

void flash_attention_bf16(const float* q, const float* k, const float* v, float* out,
                          const AttentionSpan* spans, int64_t n_spans, int64_t n_kv_total, int64_t n_head,
                          int64_t n_kv_head, int64_t head_dim, float scale, void* scratch,
                          cudaStream_t stream) {
    if (n_spans == 0 || n_head == 0) {
        return;
    }
    check_flash_shape(n_head, n_kv_head, head_dim);
    // K and V once in bfloat16, rows padded to the tensor cores' width, so that the blocks of every tile of
    // queries are read in 16-byte pieces and not rounded again.
    auto* k_bf16 = static_cast<uint16_t*>(scratch);
    uint16_t* v_bf16 = k_bf16 + n_kv_total * n_kv_head * padded_head_dim(head_dim);
    pad_rows_bf16(k, k_bf16, n_kv_total * n_kv_head, head_dim, stream);
    pad_rows_bf16(v, v_bf16, n_kv_total * n_kv_head, head_dim, stream);
    launch_flash<true>(q, k_bf16, v_bf16, out, spans, n_spans, ContiguousKeys{}, n_head, n_kv_head, head_dim,
                       scale, stream);
}

void paged_flash_attention_bf16(const float* q, const float* k_cache, const float* v_cache, float* out,
                                const AttentionSpan* spans, int64_t n_spans, const int32_t* block_tables,
                                int64_t block_size, int64_t n_blocks, int64_t n_head, int64_t n_kv_head,
                                int64_t head_dim, float scale, cudaStream_t stream) {
    if (n_spans == 0 || n_head == 0) {
        return;
    }
    check_flash_shape(n_head, n_kv_head, head_dim);
    launch_flash<false>(q, k_cache, v_cache, out, spans, n_spans,
                        PagedKeys{block_tables, block_size, n_blocks}, n_head, n_kv_head, head_dim, scale,
                        stream);
}

}  // namespace folio::kernels
