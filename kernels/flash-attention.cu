#include <cmath>
#include <type_traits>

#include <cuda_bf16.h>

#include "engine/common/error.h"
#include "kernels/async-copy.cuh"
#include "kernels/attention-keys.cuh"
#include "kernels/cuda-check.h"
#include "kernels/dispatch.cuh"
#include "kernels/flash-attention.h"
#include "kernels/kv-element.cuh"
#include "kernels/mma.cuh"
#include "kernels/reduce.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kRowsPerTile = 16;  // the rows of one mma tile
constexpr int kKeyBlock = 64;     // keys loaded to shared memory at a time
constexpr int kKeyTiles = kKeyBlock / 8;
constexpr int kStages = 2;  // key blocks in shared memory at once
// Dynamic shared memory a block may take without opting in.
constexpr size_t kDefaultSharedBytes = 48 * 1024;

// The tiles of rows a warp: two up to head_dim 80, so that each fragment of K and V read from
// shared memory serves two tiles; one beyond, where two tiles' Q and O would not fit the registers.
constexpr int padded_tiles_per_warp(int chunks) {
    return chunks <= 5 ? 2 : 1;
}

constexpr int padded_threads(int chunks) {
    return static_cast<int>(kFlashTileRows) / (kRowsPerTile * padded_tiles_per_warp(chunks)) * kWarpSize;
}

// 2^x on the special function unit; 0 for -inf.
__device__ inline float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Elements d and d + 1 (d even) of a row of bfloat16 as a pair.
__device__ inline uint32_t load_pair(const uint16_t* row, int64_t d) {
    return *reinterpret_cast<const uint32_t*>(row + d);
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

// A value of float32 or bfloat16 bits as float32.
__device__ inline float load_float(const float* p) {
    return *p;
}

__device__ inline float load_float(const uint16_t* p) {
    return __uint_as_float(static_cast<uint32_t>(*p) << 16);
}

// Values d and d + 1 of an output row, those below head_dim: as float32, or as one bfloat16 pair (rounded to
// nearest even; head_dim even, so that a pair never straddles it).
__device__ inline void store_pair(float* row, int64_t d, int64_t head_dim, float lo, float hi) {
    if (d < head_dim) {
        row[d] = lo;
    }
    if (d + 1 < head_dim) {
        row[d + 1] = hi;
    }
}

__device__ inline void store_pair(uint16_t* row, int64_t d, int64_t head_dim, float lo, float hi) {
    if (d < head_dim) {
        *reinterpret_cast<uint32_t*>(row + d) = pack_bf16(lo, hi);
    }
}

// Values [d0, d0 + 8) of a q, k (part 0 or 1, turned by cos c and sin s in rotate-half form as rope_f32
// turns them) or v (part 2) head x as bfloat16 pairs, zero past head_dim.  x, c, s [head_dim]
template <typename In>
__device__ inline uint4 rope_piece(const In* x, const float* c, const float* s, int d0, int part,
                                   int head_dim) {
    const int half = head_dim / 2;
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        const int d = d0 + e;
        if (d >= head_dim) {
            v[e] = 0.0f;
        } else if (part == 2) {
            v[e] = load_float(x + d);
        } else if (d < half) {
            v[e] = load_float(x + d) * c[d] - load_float(x + d + half) * s[d];
        } else {
            v[e] = load_float(x + d) * c[d] + load_float(x + d - half) * s[d];
        }
    }
    return uint4{pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]), pack_bf16(v[6], v[7])};
}

// The same for bfloat16 x whose head_dim is a multiple of 8 and half of it a multiple of 4 (so that 4 values
// never straddle half), x, c and s 16-byte aligned: the 8 values in one 16-byte load, their partners in two
// 8-byte ones, cos and sin in 16-byte loads, and v copied as it is.
__device__ inline uint4 rope_piece_x8(const uint16_t* x, const float* c, const float* s, int d0, int part,
                                      int head_dim) {
    if (d0 >= head_dim) {
        return uint4{0, 0, 0, 0};
    }
    const uint4 xv = *reinterpret_cast<const uint4*>(x + d0);
    if (part == 2) {
        return xv;
    }
    const int half = head_dim / 2;
    const uint32_t xs[4] = {xv.x, xv.y, xv.z, xv.w};
    uint32_t packed[4];
#pragma unroll
    for (int g = 0; g < 2; ++g) {
        const int d = d0 + 4 * g;
        const bool first = d < half;
        const uint2 pv = *reinterpret_cast<const uint2*>(x + (first ? d + half : d - half));
        const float4 cv = *reinterpret_cast<const float4*>(c + d);
        const float4 sv = *reinterpret_cast<const float4*>(s + d);
        const float cs[4] = {cv.x, cv.y, cv.z, cv.w}, ss[4] = {sv.x, sv.y, sv.z, sv.w};
        const uint32_t ps[2] = {pv.x, pv.y};
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const uint32_t xw = xs[2 * g + e / 2], pw = ps[e / 2];
            const float xe = __uint_as_float(e % 2 == 0 ? xw << 16 : xw & 0xffff0000u);
            const float pe = __uint_as_float(e % 2 == 0 ? pw << 16 : pw & 0xffff0000u);
            v[e] = first ? xe * cs[e] - pe * ss[e] : xe * cs[e] + pe * ss[e];
        }
        packed[2 * g] = pack_bf16(v[0], v[1]);
        packed[2 * g + 1] = pack_bf16(v[2], v[3]);
    }
    return uint4{packed[0], packed[1], packed[2], packed[3]};
}

// One block per row, a thread per piece of 8 values of a head: the q, k and v heads of stacked rows
// (float32 or bfloat16 bits, In) as rows of n_padded bfloat16 (zero past head_dim), q and k turned by the
// row's cos and sin (rope_piece, or rope_piece_x8 where kPieces).
// qkv [n, 3, n_head, head_dim], cos, sin [n, head_dim]  ->  q, k, v [n, n_head, n_padded] one after another
template <typename In, bool kPieces>
__global__ void rope_split_bf16_kernel(const In* __restrict__ qkv, const float* __restrict__ cos,
                                       const float* __restrict__ sin, uint4* __restrict__ y, int64_t n,
                                       int n_head, int head_dim, int n_padded) {
    const int64_t row = blockIdx.x;
    const int n_pieces = n_padded / 8;
    const float* c = cos + row * head_dim;  // [head_dim]
    const float* s = sin + row * head_dim;  // [head_dim]
    for (int item = static_cast<int>(threadIdx.x); item < 3 * n_head * n_pieces;
         item += static_cast<int>(blockDim.x)) {
        const int piece = item % n_pieces, head_part = item / n_pieces;  // head_part: part * n_head + head
        const int part = head_part / n_head, head = head_part % n_head;
        const In* x = qkv + (row * 3 * n_head + head_part) * head_dim;  // [head_dim]
        uint4 out;
        if constexpr (kPieces) {
            out = rope_piece_x8(x, c, s, piece * 8, part, head_dim);
        } else {
            out = rope_piece(x, c, s, piece * 8, part, head_dim);
        }
        y[((part * n + row) * n_head + head) * n_pieces + piece] = out;
    }
}

// One thread per 16-byte piece of a key row and of its value row: the keys of each run (blockIdx.y), from the
// paged cache's float32, bfloat16 or 8-bit rows (times their scales) to bfloat16 rows of n_padded values
// (zero past head_dim) at the run's rows of k and v; a block-table entry outside the cache's n_blocks gives
// zeros (the host checks the tables first).  k_cache, v_cache [n_blocks * block_size, n_kv_head, head_dim] of
// KV, k_scales, v_scales [n_blocks * block_size, n_kv_head] for 8-bit levels, runs [gridDim.y]
//   ->  k, v [rows of the runs, n_kv_head, n_padded]
template <typename KV>
__global__ void gather_paged_bf16_kernel(const KV* __restrict__ k_cache, const KV* __restrict__ v_cache,
                                         const float* __restrict__ k_scales,
                                         const float* __restrict__ v_scales,
                                         const int32_t* __restrict__ block_tables,
                                         const PagedKeyRun* __restrict__ runs, int64_t block_size,
                                         int64_t n_blocks, int n_kv_head, int head_dim, int n_padded,
                                         uint4* __restrict__ k, uint4* __restrict__ v) {
    const PagedKeyRun run = runs[blockIdx.y];
    const int n_pieces = n_padded / 8;
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // (key, head, piece)
    if (i >= run.n_kv * n_kv_head * n_pieces) {
        return;
    }
    const int piece = static_cast<int>(i % n_pieces);
    const int64_t key_head = i / n_pieces;
    const int head = static_cast<int>(key_head % n_kv_head);
    const int64_t j = key_head / n_kv_head;
    const int64_t block = block_tables[run.table_begin + j / block_size];
    const bool valid = block >= 0 && block < n_blocks;
    const int64_t row_head = (valid ? block * block_size + j % block_size : 0) * n_kv_head + head;
    const int64_t src = row_head * head_dim;
    const float ks = row_scale<KV>(k_scales, row_head), vs = row_scale<KV>(v_scales, row_head);
    uint32_t kp[4], vp[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const int d = piece * 8 + 2 * e;
        const bool lo = valid && d < head_dim, hi = valid && d + 1 < head_dim;
        kp[e] = pack_bf16(lo ? to_float(k_cache[src + d]) * ks : 0.0f,
                          hi ? to_float(k_cache[src + d + 1]) * ks : 0.0f);
        vp[e] = pack_bf16(lo ? to_float(v_cache[src + d]) * vs : 0.0f,
                          hi ? to_float(v_cache[src + d + 1]) * vs : 0.0f);
    }
    const int64_t dst = ((run.dst_row + j) * n_kv_head + head) * n_pieces + piece;
    k[dst] = uint4{kp[0], kp[1], kp[2], kp[3]};
    v[dst] = uint4{vp[0], vp[1], vp[2], vp[3]};
}

// The query rows and heads of a flash block: blockIdx.x is (span, part of it) and blockIdx.y a group of
// n_group query heads that share one K/V head. A block's rows are its queries' heads one after another (row
// p: query first_query + p / n_group, head first_head + p % n_group), so that with n_group > 1 the heads
// that read the same keys take one block and a short span still fills its warps; with n_group 1 (kPacked
// false) a block is a span's rows of one head.
template <bool kPacked>
struct FlashBlock {
    int n_group;
    int n_rows;  // of the block: its queries times n_group, 0 past its span's rows

    // spans [gridDim.x / n_parts()]
    __device__ FlashBlock(const AttentionSpan* spans, int n_group_) : n_group(kPacked ? n_group_ : 1) {
        const int64_t n_queries = min(static_cast<int64_t>(rows_per_part()),
                                      max(spans[span_index()].n_rows - first_query(), int64_t{0}));
        n_rows = static_cast<int>(n_queries) * n_group;
    }

    __device__ int rows_per_part() const { return static_cast<int>(kFlashTileRows) / n_group; }
    __device__ int n_parts() const {
        return (static_cast<int>(kFlashTileRows) + rows_per_part() - 1) / rows_per_part();
    }
    __device__ int64_t span_index() const { return blockIdx.x / n_parts(); }
    __device__ int first_query() const { return static_cast<int>(blockIdx.x % n_parts()) * rows_per_part(); }
    __device__ int64_t first_head() const { return static_cast<int64_t>(blockIdx.y) * n_group; }
    __device__ int64_t kv_head(int64_t n_head, int64_t n_kv_head) const {
        return first_head() / (n_head / n_kv_head);
    }

    // The query and the head of row p of the block.
    __device__ int query(int p) const { return first_query() + (kPacked ? p / n_group : p); }
    __device__ int64_t head(int p) const { return first_head() + (kPacked ? p % n_group : 0); }
};

// What a warp of a flash block holds for its kTiles * 16 rows, as kTiles tiles of 16: Q as A fragments, the
// keys each of its lane's rows sees, the running maxima and sums of the online softmax and O
// (unnormalized). In the fragments a lane holds rows g = lane / 4 and g + 8 of each tile, and columns
// 2 (lane % 4) + {0, 1} of every 8.
template <int kChunks, int kTiles, bool kPacked>
struct WarpRows {
    static constexpr int kDimTiles = kChunks * 2;  // output columns in tiles of 8

    const AttentionSpan& span;  // read where used, not held in registers
    FlashBlock<kPacked> b;
    int64_t ld_q;  // floats per query row
    int lane, g, tq;
    int warp_row;              // the first of the warp's rows in the block
    int64_t warp_visible;      // the most keys a row of the warp sees
    int64_t warp_all_visible;  // keys every row of the warp in the block sees
    uint32_t qa[kTiles][kChunks][4];
    float o[kTiles][kDimTiles][4] = {};
    float row_max[kTiles][2];  // of the scaled scores (base 2)
    float row_sum[kTiles][2];  // this lane's part of the sums of exponentials

    // q [n_q_total, n_head, kChunks * 16] bfloat16 padded with zeros, spans [gridDim.x / parts a span]
    __device__ WarpRows(const uint16_t* q, const AttentionSpan* spans, const FlashBlock<kPacked>& block,
                        int64_t n_head, int64_t head_dim)
        : span(spans[block.span_index()]),
          b(block),
          ld_q(n_head * head_dim),
          lane(static_cast<int>(threadIdx.x) % kWarpSize),
          g(lane / 4),
          tq(lane % 4),
          warp_row(static_cast<int>(threadIdx.x) / kWarpSize * kTiles * kRowsPerTile) {
        warp_visible = 0;
        warp_all_visible = INT64_MAX;
#pragma unroll
        for (int i = 0; i < kTiles; ++i) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                row_max[i][r] = -INFINITY;
                row_sum[i][r] = 0.0f;
                const bool is_valid = valid(i, r);
                const int64_t n_visible = is_valid ? visible(i, r) : 0;
                warp_visible = max(warp_visible, n_visible);
                warp_all_visible = is_valid ? min(warp_all_visible, n_visible) : warp_all_visible;
                // [kChunks * 16]
                const uint16_t* qr =
                    q + ((span.q_row + (is_valid ? query(i, r) : 0)) * n_head + head(i, r)) * kChunks * 16;
#pragma unroll
                for (int c = 0; c < kChunks; ++c) {
                    const int64_t d = c * 16 + 2 * tq;
                    qa[i][c][r] = is_valid ? load_pair(qr, d) : 0u;
                    qa[i][c][r + 2] = is_valid ? load_pair(qr, d + 8) : 0u;
                }
            }
        }
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
            warp_visible = max(warp_visible, __shfl_xor_sync(0xffffffffu, warp_visible, offset));
            warp_all_visible = min(warp_all_visible, __shfl_xor_sync(0xffffffffu, warp_all_visible, offset));
        }
    }

    // Row r (0: g, 1: g + 8) of the warp's tile i, in the block; whether it is one of the block's rows, and
    // its query and head.
    __device__ int row(int i, int r) const {
        return warp_row + i * kRowsPerTile + g + 8 * r;
    }
    __device__ bool valid(int i, int r) const {
        return row(i, r) < b.n_rows;
    }
    __device__ int query(int i, int r) const {
        return b.query(row(i, r));
    }
    __device__ int64_t head(int i, int r) const {
        return b.head(row(i, r));
    }

    // The keys row r of tile i sees, whether or not it is one of the block's rows.
    __device__ int64_t visible(int i, int r) const {
        return visible_keys(span, query(i, r));
    }

    // The online softmax over the scores s of a block of keys from j0, O rescaled to the new maxima, and the
    // block's weights as A fragments for P · V: key tiles 2 kc and 2 kc + 1 are the two column halves of
    // chunk kc. Where kMasked, keys the lane's row r of tile i does not see, by seen(i, r, key), count as
    // none; otherwise every row of the warp sees every key of the block. The maxima are taken of the raw
    // scores and scaled once (scale_log2 > 0), so that each weight is one fused multiply-add and one exp2. s
    // [kTiles][16, kKeyBlock] as kKeyTiles tiles of 8 keys each
    template <bool kMasked, typename Seen>
    __device__ void softmax(float (&s)[kTiles][kKeyTiles][4], float scale_log2, Seen seen,
                            uint32_t (&pa)[kTiles][kKeyTiles / 2][4]) {
#pragma unroll
        for (int i = 0; i < kTiles; ++i) {
            float block_max[2] = {-INFINITY, -INFINITY};  // of the raw scores
#pragma unroll
            for (int t = 0; t < kKeyTiles; ++t) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int r = e / 2;
                    if constexpr (kMasked) {
                        s[i][t][e] = seen(i, r, t * 8 + 2 * tq + e % 2) ? s[i][t][e] : -INFINITY;
                    }
                    block_max[r] = fmaxf(block_max[r], s[i][t][e]);
                }
            }
            float base[2];  // the new maximum, scaled, or zero for a row that has seen no key
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 1));
                block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 2));
                const float new_max = fmaxf(row_max[i][r], block_max[r] * scale_log2);
                const float correction = new_max == -INFINITY ? 1.0f : fast_exp2(row_max[i][r] - new_max);
                base[r] = new_max == -INFINITY ? 0.0f : new_max;
                row_max[i][r] = new_max;
                row_sum[i][r] *= correction;
#pragma unroll
                for (int n = 0; n < kDimTiles; ++n) {
                    o[i][n][2 * r] *= correction;
                    o[i][n][2 * r + 1] *= correction;
                }
            }
#pragma unroll
            for (int t = 0; t < kKeyTiles; ++t) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    s[i][t][e] = fast_exp2(fmaf(s[i][t][e], scale_log2, -base[e / 2]));
                    row_sum[i][e / 2] += s[i][t][e];
                }
            }
#pragma unroll
            for (int kc = 0; kc < kKeyTiles / 2; ++kc) {
                pa[i][kc][0] = pack_bf16(s[i][2 * kc][0], s[i][2 * kc][1]);
                pa[i][kc][1] = pack_bf16(s[i][2 * kc][2], s[i][2 * kc][3]);
                pa[i][kc][2] = pack_bf16(s[i][2 * kc + 1][0], s[i][2 * kc + 1][1]);
                pa[i][kc][3] = pack_bf16(s[i][2 * kc + 1][2], s[i][2 * kc + 1][3]);
            }
        }
    }

    // O divided by the sums, into the warp's rows of out (float32, or bfloat16 bits with an even head_dim); a
    // row that saw no key gets zeros.  out [n_q_total, n_head, head_dim]
    template <typename Out>
    __device__ void store(Out* out, int64_t head_dim) {
#pragma unroll
        for (int i = 0; i < kTiles; ++i) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                float sum = row_sum[i][r];
                sum += __shfl_xor_sync(0xffffffffu, sum, 1);
                sum += __shfl_xor_sync(0xffffffffu, sum, 2);
                if (!valid(i, r)) {
                    continue;
                }
                Out* orow = out + (span.q_row + query(i, r)) * ld_q + head(i, r) * head_dim;  // [head_dim]
                const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
                for (int n = 0; n < kDimTiles; ++n) {
                    store_pair(orow, n * 8 + 2 * tq, head_dim, o[i][n][2 * r] * inv,
                               o[i][n][2 * r + 1] * inv);
                }
            }
        }
    }
};

// One block per (part of a span of up to kFlashTileRows query rows, group of n_group query heads sharing a
// K/V head; FlashBlock), the keys of each span one contiguous run, Q, K and V bfloat16 rows of kDim values
// (zero past head_dim; round_rows_bf16, rope_split_bf16 or gather_paged_bf16_kernel makes them); each warp
// owns kTiles tiles of 16 rows. Blocks of keys come by asynchronous copy, the next one while the warps work
// on the current one, K and V both as rows, and the fragments are read with ldmatrix (V transposed as it is
// read), each serving the warp's kTiles tiles of rows. Blocks of keys that every row of a warp sees whole
// skip the mask. q [n_q_total, n_head, kDim], k, v [n_kv_total, n_kv_head, kDim] bfloat16, out float32 or
// bfloat16 bits (Out); dynamic shared memory padded_shared_bytes(kChunks)
template <int kChunks, typename Out, bool kPacked, int kTiles = padded_tiles_per_warp(kChunks),
          int kThreads = padded_threads(kChunks)>
__global__ void __launch_bounds__(kThreads, kTiles == 2 ? 2 : 1)
    flash_attention_padded_kernel(const uint16_t* __restrict__ q, const uint4* __restrict__ k,
                                  const uint4* __restrict__ v, Out* __restrict__ out,
                                  const AttentionSpan* spans, int64_t n_head, int64_t n_kv_head,
                                  int64_t head_dim, int n_group, float scale_log2) {
    constexpr int kDim = kChunks * 16;
    constexpr int kDimTiles = kDim / 8;
    constexpr int kPieces = kDim / 8;  // 16-byte pieces of a row
    // bf16 per row of a key block: rows 16 bytes apart modulo 128, so that the 8 rows of an ldmatrix
    // matrix fall on different banks.
    constexpr int kStride = kDim + 8;
    constexpr int kBlockElems = kKeyBlock * kStride;
    constexpr int kCopies = (kKeyBlock * kPieces + kThreads - 1) / kThreads;  // per thread, K and V
    extern __shared__ __align__(16) __nv_bfloat16 blocks[];  // K then V of each stage, [kKeyBlock, kStride]

    const FlashBlock<kPacked> fb(spans, n_group);
    if (fb.n_rows == 0) {
        return;
    }
    WarpRows<kChunks, kTiles, kPacked> w(q, spans, fb, n_head, head_dim);
    const AttentionSpan& span = w.span;
    const int64_t kv_head = fb.kv_head(n_head, n_kv_head);
    const int lane = w.lane;
    const int64_t span_visible =
        max(visible_keys(span, fb.first_query()), visible_keys(span, fb.query(fb.n_rows - 1)));
    const int64_t n_key_blocks = (span_visible + kKeyBlock - 1) / kKeyBlock;

    // Keys past the span's come as zeros, so that their weights of zero meet finite values.
    const auto load_block = [&](int64_t b) {
        __nv_bfloat16* kb = blocks + b % kStages * 2 * kBlockElems;
        __nv_bfloat16* vb = kb + kBlockElems;
#pragma unroll
        for (int u = 0; u < kCopies; ++u) {
            const int i = static_cast<int>(threadIdx.x) + u * kThreads;
            if (i < kKeyBlock * kPieces) {
                const int key = i / kPieces, piece = i % kPieces;
                const int64_t j = b * kKeyBlock + key;
                const bool valid = j < span_visible;
                const int64_t at =
                    ((span.kv_start + (valid ? j : 0)) * n_kv_head + kv_head) * kPieces + piece;
                copy_async_16_or_zero(kb + key * kStride + piece * 8, k + at, valid);
                copy_async_16_or_zero(vb + key * kStride + piece * 8, v + at, valid);
            }
        }
        commit_copies();
    };

    if (n_key_blocks > 0) {
        load_block(0);
    }
    for (int64_t b = 0; b < n_key_blocks; ++b) {
        if (b + 1 < n_key_blocks) {
            load_block(b + 1);
            wait_copies<1>();
        } else {
            wait_copies<0>();
        }
        __syncthreads();  // every thread's copies of block b have landed
        const int64_t j0 = b * kKeyBlock;
        if (j0 < w.warp_visible) {
            const __nv_bfloat16* kb = blocks + b % kStages * 2 * kBlockElems;
            const __nv_bfloat16* vb = kb + kBlockElems;
            // The lane's row address of each ldmatrix: for S, key tile t + lane / 16 at the lower or upper 8
            // columns of a chunk; for P V, keys of the lower or upper half of a chunk at column tile
            // n + lane / 16.
            const int half = lane / 8 % 2 * 8, pair = lane / 16, r8 = lane % 8;
            float s[kTiles][kKeyTiles][4] = {};  // S [kTiles][16, kKeyBlock]
#pragma unroll
            for (int t = 0; t < kKeyTiles; t += 2) {
#pragma unroll
                for (int c = 0; c < kChunks; ++c) {
                    uint32_t m[4];
                    load_matrices(m, kb + ((t + pair) * 8 + r8) * kStride + c * 16 + half);
#pragma unroll
                    for (int i = 0; i < kTiles; ++i) {
                        mma_bf16(s[i][t], w.qa[i][c], m[0], m[1]);
                        mma_bf16(s[i][t + 1], w.qa[i][c], m[2], m[3]);
                    }
                }
            }
            uint32_t pa[kTiles][kKeyTiles / 2][4];  // P [kTiles][16, kKeyBlock]
            if (j0 + kKeyBlock <= w.warp_all_visible) {
                w.template softmax<false>(
                    s, scale_log2, [](int, int, int) { return true; }, pa);
            } else {
                w.template softmax<true>(
                    s, scale_log2, [&](int i, int r, int key) { return j0 + key < w.visible(i, r); }, pa);
            }
#pragma unroll
            for (int n = 0; n < kDimTiles; n += 2) {
#pragma unroll
                for (int kc = 0; kc < kKeyTiles / 2; ++kc) {
                    uint32_t m[4];
                    load_matrices_transposed(m, vb + (kc * 16 + half + r8) * kStride + (n + pair) * 8);
#pragma unroll
                    for (int i = 0; i < kTiles; ++i) {
                        mma_bf16(w.o[i][n], pa[i][kc], m[0], m[1]);
                        mma_bf16(w.o[i][n + 1], pa[i][kc], m[2], m[3]);
                    }
                }
            }
        }
        __syncthreads();  // block b's stage is no longer read when block b + 2 is copied into it
    }
    w.store(out, head_dim);
}

// Dynamic shared memory of flash_attention_padded_kernel<kChunks>.
constexpr size_t padded_shared_bytes(int chunks) {
    return size_t{kStages} * 2 * kKeyBlock * (chunks * 16 + 8) * sizeof(__nv_bfloat16);
}

// head_dim rounded up to the tensor cores' pieces of 16.
int64_t padded_head_dim(int64_t head_dim) {
    return (head_dim + 15) / 16 * 16;
}

// The softmax takes each row's maximum of the raw scores, which is the maximum of the scaled ones only for a
// positive scale.
void check_flash_args(int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale) {
    if (head_dim <= 0 || head_dim > kMaxFlashHeadDim || n_kv_head <= 0 || n_head % n_kv_head != 0) {
        fail("flash attention kernel: head_dim ", head_dim, " (at most ", kMaxFlashHeadDim, "), ", n_head,
             " heads over ", n_kv_head, " K/V heads");
    }
    if (!(scale > 0.0f) || !std::isfinite(scale)) {
        fail("flash attention kernel: the scale must be positive and finite, got ", scale);
    }
}

template <typename Out>
void launch_flash_padded(const uint16_t* q, const uint16_t* k, const uint16_t* v, Out* out,
                         const AttentionSpan* spans, int64_t n_spans, int64_t n_head, int64_t n_kv_head,
                         int64_t head_dim, float scale, cudaStream_t stream) {
    const float scale_log2 = scale * static_cast<float>(M_LOG2E);
    // The query heads of a K/V head share a block where they are few enough for a part of a span to keep 8
    // query rows and a warp takes one tile of rows (with two, the packed rows' bookkeeping would not fit the
    // registers); a span is then cut into as many parts as its rows need.
    const int64_t n_shared = n_head / n_kv_head;
    const bool one_tile = padded_tiles_per_warp(static_cast<int>(padded_head_dim(head_dim) / 16)) == 1;
    const int n_group =
        one_tile && n_shared >= 2 && n_shared <= kFlashTileRows / 8 ? static_cast<int>(n_shared) : 1;
    const int64_t rows_per_part = kFlashTileRows / n_group;
    const int64_t n_parts = (kFlashTileRows + rows_per_part - 1) / rows_per_part;
    const dim3 grid(static_cast<unsigned int>(n_spans * n_parts),
                    static_cast<unsigned int>(n_head / n_group));
    const auto launch = [&](auto kernel, int threads, size_t shared) {
        if (shared > kDefaultSharedBytes) {
            CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(shared)));
        }
        kernel<<<grid, threads, shared, stream>>>(q, reinterpret_cast<const uint4*>(k),
                                                  reinterpret_cast<const uint4*>(v), out, spans, n_head,
                                                  n_kv_head, head_dim, n_group, scale_log2);
        CUDA_CHECK(cudaGetLastError());
    };
    with_1_to_8((head_dim + 15) / 16, [&](auto chunks) {
        constexpr int kChunks = decltype(chunks)::value;
        constexpr size_t kShared = padded_shared_bytes(kChunks);
        if constexpr (padded_tiles_per_warp(kChunks) == 1) {
            if (n_group > 1) {
                launch(flash_attention_padded_kernel<kChunks, Out, true>, padded_threads(kChunks), kShared);
                return;
            }
        }
        launch(flash_attention_padded_kernel<kChunks, Out, false>, padded_threads(kChunks), kShared);
    });
}

// rope_flash_attention_bf16 with qkv and out of types In and Out (float32 or bfloat16 bits).
template <typename In, typename Out>
void launch_rope_flash(const In* qkv, const float* cos, const float* sin, Out* out,
                       const AttentionSpan* spans, int64_t n_spans, int64_t n, int64_t n_head,
                       int64_t head_dim, float scale, void* scratch, cudaStream_t stream) {
    if (n_spans == 0 || n_head == 0) {
        return;
    }
    check_flash_args(n_head, n_head, head_dim, scale);
    if (head_dim % 2 != 0) {
        fail("rope_flash_attention_bf16: rotate-half needs an even head_dim, got ", head_dim);
    }
    const int64_t n_padded = padded_head_dim(head_dim);
    auto* q_bf16 = static_cast<uint16_t*>(scratch);  // then K and V, [n, n_head, n_padded] each
    constexpr int kBlock = 128;
    const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    const auto launch = [&](auto kernel) {
        kernel<<<static_cast<unsigned int>(n), kBlock, 0, stream>>>(
            qkv, cos, sin, reinterpret_cast<uint4*>(q_bf16), n, static_cast<int>(n_head),
            static_cast<int>(head_dim), static_cast<int>(n_padded));
        CUDA_CHECK(cudaGetLastError());
    };
    if constexpr (std::is_same_v<In, uint16_t>) {
        if (head_dim % 8 == 0 && head_dim / 2 % 4 == 0 && aligned(qkv) && aligned(cos) && aligned(sin)) {
            launch(rope_split_bf16_kernel<In, true>);
        } else {
            launch(rope_split_bf16_kernel<In, false>);
        }
    } else {
        launch(rope_split_bf16_kernel<In, false>);
    }
    launch_flash_padded(q_bf16, q_bf16 + n * n_head * n_padded, q_bf16 + 2 * n * n_head * n_padded, out,
                        spans, n_spans, n_head, n_head, head_dim, scale, stream);
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

int64_t flash_scratch_bytes(int64_t n_q_total, int64_t n_head, int64_t n_kv_total, int64_t n_kv_head,
                            int64_t head_dim) {
    return (n_q_total * n_head + 2 * n_kv_total * n_kv_head) * padded_head_dim(head_dim) *
           static_cast<int64_t>(sizeof(uint16_t));
}

void flash_attention_bf16(const float* q, const float* k, const float* v, float* out,
                          const AttentionSpan* spans, int64_t n_spans, int64_t n_q_total, int64_t n_kv_total,
                          int64_t n_head, int64_t n_kv_head, int64_t head_dim, float scale, void* scratch,
                          cudaStream_t stream) {
    if (n_spans == 0 || n_head == 0) {
        return;
    }
    check_flash_args(n_head, n_kv_head, head_dim, scale);
    // Q, K and V once in bfloat16, rows padded to the tensor cores' width, so that the blocks of every tile
    // of queries are read in 16-byte pieces and not rounded again.
    auto* q_bf16 = static_cast<uint16_t*>(scratch);
    uint16_t* k_bf16 = q_bf16 + n_q_total * n_head * padded_head_dim(head_dim);
    uint16_t* v_bf16 = k_bf16 + n_kv_total * n_kv_head * padded_head_dim(head_dim);
    round_rows_bf16(q, q_bf16, n_q_total * n_head, head_dim, stream);
    round_rows_bf16(k, k_bf16, n_kv_total * n_kv_head, head_dim, stream);
    round_rows_bf16(v, v_bf16, n_kv_total * n_kv_head, head_dim, stream);
    launch_flash_padded(q_bf16, k_bf16, v_bf16, out, spans, n_spans, n_head, n_kv_head, head_dim, scale,
                        stream);
}

int64_t rope_flash_scratch_bytes(int64_t n, int64_t n_head, int64_t head_dim) {
    return 3 * n * n_head * padded_head_dim(head_dim) * static_cast<int64_t>(sizeof(uint16_t));
}

void rope_flash_attention_bf16(const float* qkv, const float* cos, const float* sin, float* out,
                               const AttentionSpan* spans, int64_t n_spans, int64_t n, int64_t n_head,
                               int64_t head_dim, float scale, void* scratch, cudaStream_t stream) {
    launch_rope_flash(qkv, cos, sin, out, spans, n_spans, n, n_head, head_dim, scale, scratch, stream);
}

void rope_flash_attention_bf16(const uint16_t* qkv, const float* cos, const float* sin, uint16_t* out,
                               const AttentionSpan* spans, int64_t n_spans, int64_t n, int64_t n_head,
                               int64_t head_dim, float scale, void* scratch, cudaStream_t stream) {
    launch_rope_flash(qkv, cos, sin, out, spans, n_spans, n, n_head, head_dim, scale, scratch, stream);
}

int64_t padded_rows_bytes(int64_t n_rows, int64_t head_dim) {
    return n_rows * padded_head_dim(head_dim) * static_cast<int64_t>(sizeof(uint16_t));
}

void round_rows_bf16(const float* x, uint16_t* y, int64_t n_rows, int64_t head_dim, cudaStream_t stream) {
    const int64_t n_pieces = n_rows * padded_head_dim(head_dim) / 8;
    if (n_pieces == 0) {
        return;
    }
    constexpr int kBlock = 256;
    pad_rows_bf16_kernel<<<static_cast<unsigned int>((n_pieces + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
        x, reinterpret_cast<uint4*>(y), n_rows, head_dim, padded_head_dim(head_dim));
    CUDA_CHECK(cudaGetLastError());
}

void paged_flash_attention_bf16(const uint16_t* q, const PagedCache& cache, float* out,
                                const AttentionSpan* spans, int64_t n_spans, const PagedKeyRun* runs,
                                int64_t n_runs, int64_t max_run_kv, int64_t n_head, int64_t n_kv_head,
                                int64_t head_dim, float scale, void* scratch, int64_t n_scratch_rows,
                                cudaStream_t stream) {
    if (n_spans == 0 || n_head == 0) {
        return;
    }
    check_flash_args(n_head, n_kv_head, head_dim, scale);
    const int64_t n_padded = padded_head_dim(head_dim);
    auto* k_bf16 = static_cast<uint16_t*>(scratch);  // [n_scratch_rows, n_kv_head, n_padded]
    uint16_t* v_bf16 = k_bf16 + n_scratch_rows * n_kv_head * n_padded;
    const int64_t n_pieces = max_run_kv * n_kv_head * n_padded / 8;
    if (n_runs > 0 && n_pieces > 0) {
        constexpr int kBlock = 256;
        const dim3 grid(static_cast<unsigned int>((n_pieces + kBlock - 1) / kBlock),
                        static_cast<unsigned int>(n_runs));
        with_kv_element(cache.element, [&](auto element) {
            using KV = typename decltype(element)::type;
            gather_paged_bf16_kernel<<<grid, kBlock, 0, stream>>>(
                static_cast<const KV*>(cache.k), static_cast<const KV*>(cache.v), cache.k_scales,
                cache.v_scales, cache.block_tables, runs, cache.block_size, cache.n_blocks,
                static_cast<int>(n_kv_head), static_cast<int>(head_dim), static_cast<int>(n_padded),
                reinterpret_cast<uint4*>(k_bf16), reinterpret_cast<uint4*>(v_bf16));
            CUDA_CHECK(cudaGetLastError());
        });
    }
    launch_flash_padded(q, k_bf16, v_bf16, out, spans, n_spans, n_head, n_kv_head, head_dim, scale, stream);
}

}  // namespace folio::kernels
