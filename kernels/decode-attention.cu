#include "kernels/decode-attention.h"

#include <cmath>
#include <limits>

#include "engine/common/error.h"
#include "kernels/attention-keys.cuh"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/mma.cuh"
#include "kernels/output-value.cuh"
#include "kernels/reduce.cuh"
#include "kernels/split-merge.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kGroup = 8;      // query heads a K/V head serves
constexpr int kHeadDim = 128;  // dimensions of a head
constexpr int kTileKeys = 16;  // keys a warp takes at once: the rows of its score product
constexpr int kWarps = 4;      // warps of a block, each on every kWarps-th tile of the block's keys
constexpr int kBlock = kWarps * kWarpSize;
constexpr int kBlocksPerSm = 4;  // what the registers are capped for
// Keys a split of a row has at least, so that each warp of its block has a tile.
constexpr int64_t kMinSplitKeys = int64_t{kWarps} * kTileKeys;
constexpr float kLog2e = 1.4426950408889634f;
constexpr int kHeader = static_cast<int>(kAttentionPartialHeader);
constexpr int kPartialStride = kHeader + kHeadDim;
// Outputs of the group a thread merges: kGroup * kHeadDim over the block, 8 consecutive dimensions of a head.
constexpr int kMergeDims = kGroup * kHeadDim / kBlock;
static_assert(kMergeDims == 8 && kHeadDim % kMergeDims == 0);

// Rows: DecodeRows or SpanRows (attention-keys.cuh), a row's span giving its query row, its first block-table
// entry and the keys it sees. Out: float, or __nv_bfloat16 for outputs rounded as they are stored.
template <typename Rows, typename Out>
struct DecodeArgs {
    const float* q;               // [n_q_rows, n_head, kHeadDim]
    const uint16_t* k;            // [n_cache_rows, n_kv_head, kHeadDim] bfloat16 bits
    const uint16_t* v;            // as k
    Out* out;                     // [n_q_rows, n_head, kHeadDim]
    Rows rows;                    // gridDim.x of them
    const int32_t* block_tables;  // the rows' entries, from each span's kv_start
    int32_t block_size;
    int32_t n_cache_blocks;
    int64_t n_head;
    int64_t n_kv_head;
    float scale_log2;  // the softmax scale times log2(e): weights come from exp2
    AttentionSplits splits;
};

// The 8x8 matrix of bfloat16 pairs a warp holds as a fragment (lane: row lane / 4, columns 2 (lane % 4) + {0,
// 1}), transposed in the same layout.
__device__ inline uint32_t transpose_8x8(uint32_t x) {
    uint32_t y;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
    return y;
}

// Element e (0-7) of x and of y, as bfloat16 bits, paired: x's in the low half.
__device__ inline uint32_t pair_elements(const uint4& x, const uint4& y, int e) {
    const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
    return __byte_perm(xs[e / 2], ys[e / 2], e % 2 == 0 ? 0x5410 : 0x7632);
}

// 16 bytes (8 bfloat16 values) at p, or zeros where not valid.
__device__ inline uint4 load_row_chunk(const uint16_t* p, bool valid) {
    return valid ? __ldg(reinterpret_cast<const uint4*>(p)) : uint4{0, 0, 0, 0};
}

// A warp's tile of 16 keys in its registers, lane (g, tq) holding what its fragments take (load_tile_keys,
// load_tile_values).
struct KeyTile {
    int32_t key_g, key_g8;   // cache rows of keys g and g + 8, -1 for none
    uint4 k0[4], k8[4];      // dimensions 32 i + 8 tq + [0, 8) of keys g and g + 8
    uint4 v_lo[4], v_hi[4];  // dimensions 8 g + [0, 8) and 64 + 8 g + [0, 8) of keys 2 tq + {0, 1, 8, 9}
};

// Loads the keys of a KeyTile, lane l's lane_row being the cache row of key l % 16 (-1 for none): keys
// without a row come as zeros. key row r at r * row_elements of k_head
__device__ inline void load_tile_keys(KeyTile& t, int32_t lane_row, const uint16_t* k_head,
                                      int64_t row_elements) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize, g = lane / 4, tq = lane % 4;
    t.key_g = __shfl_sync(0xffffffffu, lane_row, g);
    t.key_g8 = __shfl_sync(0xffffffffu, lane_row, g + 8);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        t.k0[i] = load_row_chunk(k_head + int64_t{t.key_g} * row_elements + 32 * i + 8 * tq, t.key_g >= 0);
        t.k8[i] = load_row_chunk(k_head + int64_t{t.key_g8} * row_elements + 32 * i + 8 * tq, t.key_g8 >= 0);
    }
}

// The same for the values of a KeyTile. value row r at r * row_elements of v_head
__device__ inline void load_tile_values(KeyTile& t, int32_t lane_row, const uint16_t* v_head,
                                        int64_t row_elements) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize, g = lane / 4, tq = lane % 4;
    int32_t value_rows[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        value_rows[r] = __shfl_sync(0xffffffffu, lane_row, 2 * tq + r % 2 + 8 * (r / 2));
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const uint16_t* vr = v_head + int64_t{value_rows[r]} * row_elements + 8 * g;
        t.v_lo[r] = load_row_chunk(vr, value_rows[r] >= 0);
        t.v_hi[r] = load_row_chunk(vr + 64, value_rows[r] >= 0);
    }
}

// One block of kBlock threads per (row, K/V head, split of the row's keys). Warp w takes tiles w, w + kWarps,
// ... of 16 keys of the split, with no barrier between the warps until their merge:
// - scores, S^T [16 keys, 8 heads] = K · Q^T on the tensor cores in 8 steps of 16 dimensions. The dot product
//   does not care in which order dimensions come, so lane (g, tq) (g = lane / 4, tq = lane % 4) takes
//   dimensions 32 i + 8 tq + [0, 8) of keys g and g + 8 for i = 0..3, four 16-byte loads a key whose pairs
//   are the A fragments as they are; the queries' B fragments follow the same order;
// - the online softmax in base 2 of heads 2 tq and 2 tq + 1, whose maxima the lanes of one tq share and whose
//   sums each lane keeps for its own keys until the end;
// - the weights, C of the scores rounded to bfloat16, transposed as two 8x8 matrices into the B fragments of
//   P^T [16 keys, 8 heads];
// - values, O^T [128 dims, 8 heads] += V^T · P^T, eight products of 16 dimensions: lane (g, tq) loads
//   dimensions 8 g + [0, 8) and 64 + 8 g + [0, 8) of keys 2 tq, 2 tq + 1, 2 tq + 8 and 2 tq + 9, and product
//   i takes dimensions 8 g + i and 64 + 8 g + i as its rows g and g + 8, so that a lane pairs its own loads.
// The warps then merge through shared memory. A row of one split writes its output; otherwise the block
// writes its heads' maxima, sums and unnormalized outputs to the partials, and the last block of the (row,
// K/V head) to finish, counted in splits.counters, merges them into the output and sets the counter back to
// zero. A row uses as many of the grid's splits as give each kMinSplitKeys keys or more, in whole tiles; the
// blocks of the others only wait and leave. Chained: before the wait for the previous kernel, a warp reads
// its first tile's block-table entries, and its keys where none of them is the row's newest (which the kernel
// ahead writes); the values and queries come after the wait. Of a SpanRows call (a step that also writes
// other keys of the rows) nothing is read before the wait.
template <typename Rows, typename Out>
__global__ void __launch_bounds__(kBlock, kBlocksPerSm)
    decode_attention_bf16_kernel(const DecodeArgs<Rows, Out> a) {
    __shared__ float warps_max[kWarps][kGroup];
    __shared__ float warps_sum[kWarps][kGroup];
    __shared__ __align__(16) float warps_out[kWarps][kGroup][kHeadDim];

    const int tid = static_cast<int>(threadIdx.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
    const int g = lane / 4, tq = lane % 4;
    const auto row = static_cast<int64_t>(blockIdx.x);
    const AttentionSpan span = a.rows.span(row);
    const int64_t n_keys = visible_keys(span, 0), n_settled = Rows::settled_keys(span);
    int64_t split_keys = max((n_keys + gridDim.z - 1) / gridDim.z, kMinSplitKeys);
    split_keys = (split_keys + kTileKeys - 1) / kTileKeys * kTileKeys;
    const auto n_splits = static_cast<int>(max((n_keys + split_keys - 1) / split_keys, int64_t{1}));
    const auto z = static_cast<int>(blockIdx.z);
    if (z >= n_splits) {
        wait_for_prior_grids();
        start_dependent_grids();
        return;
    }
    const int64_t key_begin = z * split_keys, key_end = min(n_keys, key_begin + split_keys);
    const auto kv_head = static_cast<int64_t>(blockIdx.y);
    const int64_t h0 = kv_head * kGroup;
    const int32_t* table = a.block_tables + span.kv_start;  // [ceil(n_keys / block_size)]
    // The cache row of key j of the split, -1 past its end or outside the cache.
    const auto cache_row = [&](int64_t j) {
        if (j >= key_end) {
            return -1;
        }
        const auto key = static_cast<int32_t>(j);  // below n_keys, under 2^31
        const int32_t block = table[key / a.block_size];
        return block >= 0 && block < a.n_cache_blocks ? block * a.block_size + key % a.block_size : -1;
    };
    const int64_t row_elements = a.n_kv_head * kHeadDim;
    const uint16_t* k_head = a.k + kv_head * kHeadDim;  // key row r at r * row_elements
    const uint16_t* v_head = a.v + kv_head * kHeadDim;

    // Lane l holds the cache row of key l % 16 of its warp's next tile. A first tile of settled keys only
    // (which the kernel ahead does not write) is loaded before the wait.
    int64_t j0 = key_begin + int64_t{warp} * kTileKeys;
    int32_t lane_row = cache_row(j0 + lane % kTileKeys);
    KeyTile tile;
    const bool early = j0 < key_end && j0 + kTileKeys <= n_settled;
    if (early) {
        load_tile_keys(tile, lane_row, k_head, row_elements);
    }
    wait_for_prior_grids();
    start_dependent_grids();
    // The first tile's loads go out before the queries', so that the tile does not wait on their conversion.
    if (j0 < key_end) {
        if (!early) {
            load_tile_keys(tile, lane_row, k_head, row_elements);
        }
        load_tile_values(tile, lane_row, v_head, row_elements);
    }

    // The queries as B fragments of Q^T [128, 8 heads] in this lane's order of dimensions, scaled for base 2:
    // step c takes dimensions 32 (c / 2) + 8 tq + 4 (c % 2) + {0, 1} (qb[c][0]) and + {2, 3} (qb[c][1]) of
    // head g.
    uint32_t qb[kHeadDim / 16][2];
    {
        const float* qg = a.q + (span.q_row * a.n_head + h0 + g) * kHeadDim + 8 * tq;  // [4, 32] of head g
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float4 v = *reinterpret_cast<const float4*>(qg + 32 * i + 4 * h);
                qb[2 * i + h][0] = pack_bf16(v.x * a.scale_log2, v.y * a.scale_log2);
                qb[2 * i + h][1] = pack_bf16(v.z * a.scale_log2, v.w * a.scale_log2);
            }
        }
    }

    // O^T [128 dims, 8 heads] as C of 8 products: o[i] rows g and g + 8 are dimensions 8 g + i and
    // 64 + 8 g + i, columns heads 2 tq and 2 tq + 1.
    float o[8][4] = {};
    float run_max[2] = {-INFINITY, -INFINITY}, run_sum[2] = {0.0f, 0.0f};  // heads 2 tq + {0, 1}
    // Scores, softmax and values of a tile loaded as t.
    const auto add_tile = [&](const KeyTile& t) {
        float s[4] = {};  // keys g (0, 1) and g + 8 (2, 3), heads 2 tq + {0, 1}
#pragma unroll
        for (int c = 0; c < kHeadDim / 16; ++c) {
            const uint4& x0 = t.k0[c / 2];
            const uint4& x8 = t.k8[c / 2];
            const uint32_t fa[4] = {c % 2 == 0 ? x0.x : x0.z, c % 2 == 0 ? x8.x : x8.z,
                                    c % 2 == 0 ? x0.y : x0.w, c % 2 == 0 ? x8.y : x8.w};
            mma_bf16(s, fa, qb[c][0], qb[c][1]);
        }
        float p[4];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const float x0 = t.key_g >= 0 ? s[e] : -INFINITY, x8 = t.key_g8 >= 0 ? s[e + 2] : -INFINITY;
            float m = fmaxf(x0, x8);
#pragma unroll
            for (int offset = 4; offset < kWarpSize; offset *= 2) {
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
            }
            const float new_max = fmaxf(run_max[e], m);
            const float correction = new_max == -INFINITY ? 1.0f : exp2f(run_max[e] - new_max);
            p[e] = x0 == -INFINITY ? 0.0f : exp2f(x0 - new_max);
            p[e + 2] = x8 == -INFINITY ? 0.0f : exp2f(x8 - new_max);
            run_sum[e] = run_sum[e] * correction + p[e] + p[e + 2];
            run_max[e] = new_max;
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                o[i][e] *= correction;
                o[i][e + 2] *= correction;
            }
        }
        // P^T [16 keys, 8 heads] as B: keys 2 tq + {0, 1} (b0) and + 8 (b1) of head g.
        const uint32_t b0 = transpose_8x8(pack_bf16(p[0], p[1]));
        const uint32_t b1 = transpose_8x8(pack_bf16(p[2], p[3]));
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const uint32_t fa[4] = {
                pair_elements(t.v_lo[0], t.v_lo[1], i), pair_elements(t.v_hi[0], t.v_hi[1], i),
                pair_elements(t.v_lo[2], t.v_lo[3], i), pair_elements(t.v_hi[2], t.v_hi[3], i)};
            mma_bf16(o[i], fa, b0, b1);
        }
    };
    constexpr int64_t kStride = int64_t{kWarps} * kTileKeys;  // keys from one of a warp's tiles to the next
    if (j0 < key_end) {
        lane_row = cache_row(j0 + kStride + lane % kTileKeys);
        add_tile(tile);
        for (j0 += kStride; j0 < key_end; j0 += kStride) {
            const int32_t next_row = cache_row(j0 + kStride + lane % kTileKeys);
            KeyTile t;
            load_tile_keys(t, lane_row, k_head, row_elements);
            load_tile_values(t, lane_row, v_head, row_elements);
            lane_row = next_row;
            add_tile(t);
        }
    }

    // The warps' results to shared memory: each head's maximum and sum, and its outputs.
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#pragma unroll
        for (int offset = 4; offset < kWarpSize; offset *= 2) {
            run_sum[e] += __shfl_xor_sync(0xffffffffu, run_sum[e], offset);
        }
        if (g == 0) {
            warps_max[warp][2 * tq + e] = run_max[e];
            warps_sum[warp][2 * tq + e] = run_sum[e];
        }
        float* head_out = warps_out[warp][2 * tq + e];  // [kHeadDim]
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            float* d = head_out + 64 * half + 8 * g;
            *reinterpret_cast<float4*>(d) =
                float4{o[0][e + 2 * half], o[1][e + 2 * half], o[2][e + 2 * half], o[3][e + 2 * half]};
            *reinterpret_cast<float4*>(d + 4) =
                float4{o[4][e + 2 * half], o[5][e + 2 * half], o[6][e + 2 * half], o[7][e + 2 * half]};
        }
    }
    __syncthreads();

    // Thread tid merges dimensions [d0, d0 + kMergeDims) of head h over the warps.
    const int h = tid / (kHeadDim / kMergeDims), d0 = tid % (kHeadDim / kMergeDims) * kMergeDims;
    float block_max = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
        block_max = fmaxf(block_max, warps_max[w][h]);
    }
    float block_sum = 0.0f, merged[kMergeDims] = {};
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
        const float f = warps_max[w][h] == -INFINITY ? 0.0f : exp2f(warps_max[w][h] - block_max);
        block_sum += f * warps_sum[w][h];
#pragma unroll
        for (int e = 0; e < kMergeDims; ++e) {
            merged[e] += f * warps_out[w][h][d0 + e];
        }
    }
    Out* out = a.out + (span.q_row * a.n_head + h0 + h) * kHeadDim + d0;  // [kMergeDims]
    const auto store = [&](const float(&values)[kMergeDims], float sum) {
        const float inverse = sum > 0.0f ? 1.0f / sum : 0.0f;
        store_four(
            out, float4{values[0] * inverse, values[1] * inverse, values[2] * inverse, values[3] * inverse});
        store_four(out + 4, float4{values[4] * inverse, values[5] * inverse, values[6] * inverse,
                                   values[7] * inverse});
    };
    if (n_splits == 1) {
        store(merged, block_sum);
        return;
    }

    // Partials of head h of the (row, K/V head), split s: [kPartialStride] at (h * gridDim.z + s) *
    // kPartialStride, the maximum and the sum first.
    float* partials =
        a.splits.partials + (row * a.n_head + h0) * static_cast<int64_t>(gridDim.z) * kPartialStride;
    const auto partial = [&](int head, int s) {
        return partials + (head * static_cast<int>(gridDim.z) + s) * kPartialStride;
    };
    if (d0 == 0) {
        *reinterpret_cast<float2*>(partial(h, z)) = float2{block_max, block_sum};
    }
    float* mine = partial(h, z) + kHeader + d0;
    *reinterpret_cast<float4*>(mine) = float4{merged[0], merged[1], merged[2], merged[3]};
    *reinterpret_cast<float4*>(mine + 4) = float4{merged[4], merged[5], merged[6], merged[7]};
    if (!last_split_done(a.splits.counters + blockIdx.x * gridDim.y + blockIdx.y, n_splits)) {
        return;
    }

    // The last block merges every split of the (row, K/V head), reading the partials through L2, since L1 may
    // hold stale lines: warp w finds the factors of the splits of heads w, w + kWarps, ... (a lane a split)
    // and their total sum, then each thread sums its outputs over the splits, kMergeBatch splits' loads at
    // once. The first batch is loaded along with the maxima and sums, which the outputs do not wait for.
    constexpr int kMergeBatch = 8;
    float4 lo[kMergeBatch], hi[kMergeBatch];
    const float* outputs = partial(h, 0) + kHeader + d0;  // split s's at s * kPartialStride
    const auto load_batch = [&](int s0) {
#pragma unroll
        for (int k = 0; k < kMergeBatch; ++k) {
            const float* theirs = outputs + (s0 + k) * kPartialStride;
            const bool in = s0 + k < n_splits;
            lo[k] = in ? __ldcg(reinterpret_cast<const float4*>(theirs)) : float4{};
            hi[k] = in ? __ldcg(reinterpret_cast<const float4*>(theirs + 4)) : float4{};
        }
    };
    load_batch(0);
    __shared__ float split_factor[kGroup][kMaxAttentionSplits];
    __shared__ float head_sum[kGroup];
    for (int head = warp; head < kGroup; head += kWarps) {
        const float sum = split_factors<true>(partial(head, 0), kPartialStride, n_splits, split_factor[head]);
        if (lane == 0) {
            head_sum[head] = sum;
        }
    }
    __syncthreads();
    float total[kMergeDims] = {};
    for (int s0 = 0; s0 < n_splits; s0 += kMergeBatch) {
        if (s0 != 0) {
            load_batch(s0);
        }
#pragma unroll
        for (int k = 0; k < kMergeBatch; ++k) {
            const float f = s0 + k < n_splits ? split_factor[h][s0 + k] : 0.0f;
            const float values[kMergeDims] = {lo[k].x, lo[k].y, lo[k].z, lo[k].w,
                                              hi[k].x, hi[k].y, hi[k].z, hi[k].w};
#pragma unroll
            for (int e = 0; e < kMergeDims; ++e) {
                total[e] += f * values[e];
            }
        }
    }
    const float total_sum = head_sum[h];
    store(total, total_sum);
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

bool decode_attention_bf16_takes(const float* q, const void* out, const PagedCache& cache,
                                 int64_t max_row_keys, int64_t n_head, int64_t n_kv_head, int64_t head_dim) {
    const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    constexpr int64_t kMaxRows = std::numeric_limits<int32_t>::max();
    return cache.element == KvElement::Bf16 && head_dim == kHeadDim && n_kv_head > 0 &&
           n_head == kGroup * n_kv_head && aligned(q) && aligned(out) && aligned(cache.k) &&
           aligned(cache.v) && cache.block_size > 0 && cache.n_blocks >= 0 && max_row_keys >= 0 &&
           cache.n_blocks * cache.block_size <= kMaxRows && max_row_keys <= kMaxRows;
}

namespace {

template <typename Rows, typename Out>
void launch_decode_attention(const float* q, const PagedCache& cache, Out* out, const Rows& rows,
                             int64_t n_rows, int64_t max_row_keys, const AttentionSplits& splits,
                             int64_t n_head, int64_t n_kv_head, float scale, cudaStream_t stream) {
    if (n_rows == 0) {
        return;
    }
    if (!decode_attention_bf16_takes(q, out, cache, max_row_keys, n_head, n_kv_head, kHeadDim)) {
        fail("decode_attention_bf16: ", n_head, " heads over ", n_kv_head,
             " K/V heads of 128, rows of up to ", max_row_keys, " keys and a bfloat16 cache of ",
             cache.n_blocks, " blocks of ", cache.block_size,
             ", 16-byte aligned and below 2^31 rows, needed");
    }
    const dim3 grid(static_cast<unsigned int>(n_rows), static_cast<unsigned int>(n_kv_head),
                    static_cast<unsigned int>(splits.n_splits));
    if (splits.n_splits > 1 && n_rows * n_kv_head > splits.n_counters) {
        fail("decode_attention_bf16: ", n_rows, " rows of ", n_kv_head, " K/V heads split ", splits.n_splits,
             " ways need as many counters, ", splits.n_counters, " given");
    }
    const DecodeArgs<Rows, Out> args{q,
                                     static_cast<const uint16_t*>(cache.k),
                                     static_cast<const uint16_t*>(cache.v),
                                     out,
                                     rows,
                                     cache.block_tables,
                                     static_cast<int32_t>(cache.block_size),
                                     static_cast<int32_t>(cache.n_blocks),
                                     n_head,
                                     n_kv_head,
                                     scale * kLog2e,
                                     splits};
    launch_chained(decode_attention_bf16_kernel<Rows, Out>, grid, dim3(kBlock), 0, stream, args);
}

}  // namespace

void decode_attention_bf16(const float* q, const PagedCache& cache, float* out, const int32_t* seq_lens,
                           int64_t n_seqs, int64_t max_blocks, const AttentionSplits& splits, int64_t n_head,
                           int64_t n_kv_head, float scale, cudaStream_t stream) {
    const int64_t max_keys = max_blocks * cache.block_size;
    launch_decode_attention(q, cache, out, DecodeRows{seq_lens, max_blocks, max_keys}, n_seqs, max_keys,
                            splits, n_head, n_kv_head, scale, stream);
}

void decode_attention_bf16(const float* q, const PagedCache& cache, uint16_t* out_bf16,
                           const int32_t* seq_lens, int64_t n_seqs, int64_t max_blocks,
                           const AttentionSplits& splits, int64_t n_head, int64_t n_kv_head, float scale,
                           cudaStream_t stream) {
    const int64_t max_keys = max_blocks * cache.block_size;
    launch_decode_attention(q, cache, reinterpret_cast<__nv_bfloat16*>(out_bf16),
                            DecodeRows{seq_lens, max_blocks, max_keys}, n_seqs, max_keys, splits, n_head,
                            n_kv_head, scale, stream);
}

void decode_attention_bf16(const float* q, const PagedCache& cache, float* out,
                           const AttentionSpan* row_spans, int64_t n_row_spans, int64_t max_row_keys,
                           const AttentionSplits& splits, int64_t n_head, int64_t n_kv_head, float scale,
                           cudaStream_t stream) {
    launch_decode_attention(q, cache, out, SpanRows{row_spans}, n_row_spans, max_row_keys, splits, n_head,
                            n_kv_head, scale, stream);
}

}  // namespace folio::kernels
