// The split-row kernel: few query rows, each row's keys split between blocks that copy tiles of keys and
// values to shared memory, its products on the tensor cores for groups of 8 heads of 128.
#include <type_traits>

#include "engine/common/error.h"
#include "kernels/async-copy.cuh"
#include "kernels/attention-keys.cuh"
#include "kernels/attention-rows.cuh"
#include "kernels/attention.h"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/dispatch.cuh"
#include "kernels/kv-element.cuh"
#include "kernels/mma.cuh"
#include "kernels/reduce.cuh"
#include "kernels/split-merge.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

// The split-row kernel (few rows, their keys split between blocks).
constexpr int kSplitWarps = 8;
constexpr int kSplitBlock = kSplitWarps * kWarpSize;
static_assert(kMaxAttentionHeadDim <= kSplitBlock);
static_assert(kMaxAttentionSplits % kWarpSize == 0);
// Dynamic shared memory a block may take without opting in.
constexpr size_t kDefaultSharedBytes = 48 * 1024;

// One value of type T at p: a plain load, or with kThroughL2 one through L2 (__ldcg), for values other blocks
// wrote during the kernel.
template <bool kThroughL2, typename T>
__device__ inline T load_value(const T* p) {
    if constexpr (kThroughL2) {
        return __ldcg(p);
    } else {
        return *p;
    }
}

// kVec consecutive floats from p, aligned to kVec floats: from shared memory, or from global memory through
// L2 with kThroughL2.
template <int kVec, bool kThroughL2 = false>
__device__ inline void load_run(const float* p, float v[kVec]) {
    if constexpr (kVec == 4) {
        const float4 x = load_value<kThroughL2>(reinterpret_cast<const float4*>(p));
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else if constexpr (kVec == 2) {
        const float2 x = load_value<kThroughL2>(reinterpret_cast<const float2*>(p));
        v[0] = x.x, v[1] = x.y;
    } else {
        v[0] = load_value<kThroughL2>(p);
    }
}

// kVec consecutive bfloat16 values from shared memory as floats, aligned to kVec values.
template <int kVec>
__device__ inline void load_run(const Bf16* p, float v[kVec]) {
    if constexpr (kVec == 4) {
        const float4 x = load_four(p);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else if constexpr (kVec == 2) {
        const float2 x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
        v[0] = x.x, v[1] = x.y;
    } else {
        v[0] = to_float(*p);
    }
}

// kVec consecutive 8-bit levels from shared memory as floats, aligned to kVec levels.
template <int kVec>
__device__ inline void load_run(const int8_t* p, float v[kVec]) {
    if constexpr (kVec == 4) {
        const float4 x = load_four(p);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else if constexpr (kVec == 2) {
        const char2 x = *reinterpret_cast<const char2*>(p);
        v[0] = static_cast<float>(x.x), v[1] = static_cast<float>(x.y);
    } else {
        v[0] = to_float(*p);
    }
}

// kVec consecutive floats to global memory, aligned to kVec floats.
template <int kVec>
__device__ inline void store_run(float* p, const float v[kVec]) {
    if constexpr (kVec == 4) {
        *reinterpret_cast<float4*>(p) = float4{v[0], v[1], v[2], v[3]};
    } else if constexpr (kVec == 2) {
        *reinterpret_cast<float2*>(p) = float2{v[0], v[1]};
    } else {
        *p = v[0];
    }
}

// Calls f(r, c) for the elements (r, c) of rows [first_row, n_rows) of a grid n_cols wide that fall to this
// thread of a split-row block: the thread's index, then every kSplitBlock-th element after it, stepped to
// without a division per element.
template <typename F>
__device__ inline void for_block_elements(int first_row, int n_rows, int n_cols, F&& f) {
    const int tid = static_cast<int>(threadIdx.x);
    const int step_rows = kSplitBlock / n_cols, step_cols = kSplitBlock % n_cols;
    int r = first_row + tid / n_cols, c = tid % n_cols;
    while (r < n_rows) {
        f(r, c);
        r += step_rows;
        c += step_cols;
        if (c >= n_cols) {
            c -= n_cols;
            ++r;
        }
    }
}

// Starts copying the K and V rows of a tile's keys [first_key, n_keys) to k_dst (row j at j * k_stride) and
// v_dst (at j * v_stride) as one group of copies, four elements at a time with vec4; a key without a row (-1)
// gets zeros. Single bfloat16 values and levels, below the smallest asynchronous copy, are copied at once.
// k, v [n_kv_total, n_kv_head, head_dim], rows [kSplitTileKeys]
template <typename KV>
__device__ inline void start_tile_copy(KV* k_dst, int k_stride, KV* v_dst, int v_stride, const KV* k,
                                       const KV* v, const int64_t* rows, int first_key, int n_keys,
                                       int64_t n_kv_head, int64_t kv_head, int head_dim, bool vec4) {
    const int width = vec4 ? 4 : 1;
    for_block_elements(first_key, n_keys, head_dim / width, [&](int j, int chunk) {
        const int d = chunk * width;
        KV* k_to = k_dst + j * k_stride + d;
        KV* v_to = v_dst + j * v_stride + d;
        const int64_t row = rows[j];
        const int64_t at = (row * n_kv_head + kv_head) * head_dim + d;
        if (row < 0) {
            for (int e = 0; e < width; ++e) {
                k_to[e] = static_cast<KV>(0.0f);
                v_to[e] = static_cast<KV>(0.0f);
            }
        } else if constexpr (std::is_same_v<KV, float>) {
            if (vec4) {
                copy_async_16(k_to, k + at);
                copy_async_16(v_to, v + at);
            } else {
                copy_async_4(k_to, k + at);
                copy_async_4(v_to, v + at);
            }
        } else if constexpr (std::is_same_v<KV, int8_t>) {
            if (vec4) {
                copy_async_4(k_to, k + at);
                copy_async_4(v_to, v + at);
            } else {
                *k_to = k[at];
                *v_to = v[at];
            }
        } else if (vec4) {
            copy_async_8(k_to, k + at);
            copy_async_8(v_to, v + at);
        } else {
            *k_to = k[at];
            *v_to = v[at];
        }
    });
    commit_copies();
}

// Warps taking a split-row tile's scores on the tensor cores: one for each 16 keys.
constexpr int kSplitScoreWarps = kSplitTileKeys / 16;

// The group's queries as B fragments of Q^T [128, 8 heads] for the tensor cores, rounded to bfloat16: a lane
// holds dimensions 16 c + 2 tq + {0, 1} (b[c][0]) and + 8 (b[c][1]) of head g.  queries [8, dims4]
__device__ inline void load_query_fragments(const float* queries, int dims4,
                                            uint32_t (&b)[kSplitTensorHeadDim / 16][2]) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize, g = lane / 4, tq = lane % 4;
#pragma unroll
    for (int c = 0; c < kSplitTensorHeadDim / 16; ++c) {
        const float* qg = queries + g * dims4 + c * 16 + 2 * tq;
        const auto q0 = *reinterpret_cast<const float2*>(qg);
        const auto q1 = *reinterpret_cast<const float2*>(qg + 8);
        b[c][0] = pack_bf16(q0.x, q0.y);
        b[c][1] = pack_bf16(q1.x, q1.y);
    }
}

// Elements a split-row tile's rows are padded by: 16 bytes, so that rows stay aligned for the copies and
// lanes reading different keys of one dimension, or of one fragment column, hit different banks.
template <typename KV>
constexpr int kTilePad = static_cast<int>(16 / sizeof(KV));

// Warp w < kSplitScoreWarps of a split-row block on the tensor cores: the scores of a tile's keys 16 w to
// 16 w + 15 (rows of k_tile, k_stride apart) against the group's queries, S^T [16 keys, 8 heads] = K · Q^T,
// and each head's online softmax over the tile, the warps' maxima met through tile_max [kSplitScoreWarps,
// 8] at a barrier of their own: a lane keeps heads 2 tq and 2 tq + 1 (replicated over the lanes of one tq),
// writes the weights of its keys g and g + 8 of its heads, and adds their sum to run_sum (each warp's sums
// of its own keys, at a maximum they share); warp 0's lanes 0-3 write the corrections. Keys past n_tile or
// without a cache row (-1) weigh nothing. For 8-bit levels a key's score is times its key_scales entry and
// the weight written times its value_scales entry (the sums not).  k_tile [32, k_stride], weights [8, 32],
// key_scales, value_scales [32]
template <typename KV>
__device__ inline void tile_scores_on_tensor_cores(const KV* k_tile, int k_stride,
                                                   const uint32_t (&qb)[kSplitTensorHeadDim / 16][2],
                                                   const int64_t* rows, int n_tile, float scale,
                                                   float (&run_max)[2], float (&run_sum)[2], float* weights,
                                                   float* correction, float* tile_max,
                                                   const float* key_scales, const float* value_scales) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize, g = lane / 4, tq = lane % 4;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize, first = 16 * warp;
    float sc[4] = {};  // keys first + g (0, 1) and first + g + 8 (2, 3), heads 2 tq + {0, 1}
#pragma unroll
    for (int c = 0; c < kSplitTensorHeadDim / 16; ++c) {
        const KV* k0 = k_tile + (first + g) * k_stride + c * 16 + 2 * tq;  // key first + g
        const KV* k8 = k0 + 8 * k_stride;                                  // key first + g + 8
        const uint32_t fa[4] = {load_pair_bf16(k0), load_pair_bf16(k8), load_pair_bf16(k0 + 8),
                                load_pair_bf16(k8 + 8)};
        mma_bf16(sc, fa, qb[c][0], qb[c][1]);
    }
    float x[2][2];  // [head 2 tq + e][key first + g + 8 i]
    float m[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        m[e] = -INFINITY;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int key = first + g + 8 * i;
            const bool valid = key < n_tile && rows[key] >= 0;
            float key_scale = 1.0f;
            if constexpr (std::is_same_v<KV, int8_t>) {
                key_scale = valid ? key_scales[key] : 0.0f;
            }
            x[e][i] = valid ? sc[e + 2 * i] * scale * key_scale : -INFINITY;
            m[e] = fmaxf(m[e], x[e][i]);
        }
#pragma unroll
        for (int offset = 4; offset < kWarpSize; offset *= 2) {
            m[e] = fmaxf(m[e], __shfl_xor_sync(0xffffffffu, m[e], offset));
        }
        if (g == 0) {
            tile_max[warp * kSplitTensorGroup + 2 * tq + e] = m[e];
        }
    }
    asm volatile("bar.sync 1, %0;" ::"n"(kSplitScoreWarps * kWarpSize) : "memory");
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        const int h = 2 * tq + e;
        float tile = -INFINITY;
#pragma unroll
        for (int w = 0; w < kSplitScoreWarps; ++w) {
            tile = fmaxf(tile, tile_max[w * kSplitTensorGroup + h]);
        }
        const float new_max = fmaxf(run_max[e], tile);
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const float w = x[e][i] == -INFINITY ? 0.0f : expf(x[e][i] - new_max);
            float value_scale = 1.0f;
            if constexpr (std::is_same_v<KV, int8_t>) {
                value_scale = value_scales[first + g + 8 * i];
            }
            weights[h * kSplitTileKeys + first + g + 8 * i] = w * value_scale;
            sum += w;
        }
#pragma unroll
        for (int offset = 4; offset < kWarpSize; offset *= 2) {
            sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        }
        const float c = new_max == -INFINITY ? 1.0f : expf(run_max[e] - new_max);
        run_sum[e] = run_sum[e] * c + sum;
        run_max[e] = new_max;
        if (warp == 0 && g == 0) {
            correction[h] = c;
        }
    }
}

// Warp w of a split-row block on the tensor cores: outputs of dimensions [16 w, 16 w + 16) for the group's 8
// heads (o as C of [16, 8]) rescaled by the heads' corrections, plus V^T [16, 32 keys] · P^T [32 keys, 8],
// the values a tile's rows (v_stride apart) and the weights as tile_scores_on_tensor_cores wrote them.
// v_tile [32, v_stride], weights [8, 32], correction [8]
template <typename KV>
__device__ inline void tile_values_on_tensor_cores(const KV* v_tile, int v_stride, const float* weights,
                                                   const float* correction, int warp, float (&o)[4]) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize, g = lane / 4, tq = lane % 4;
    const float c0 = correction[2 * tq], c1 = correction[2 * tq + 1];
    o[0] *= c0;
    o[1] *= c1;
    o[2] *= c0;
    o[3] *= c1;
    const int dim = 16 * warp + g;
#pragma unroll
    for (int kc = 0; kc < kSplitTileKeys / 16; ++kc) {
        const KV* v0 = v_tile + (16 * kc + 2 * tq) * v_stride + dim;  // keys 16 kc + 2 tq, + 1
        const KV* v8 = v0 + 8 * v_stride;                             // keys + 8, + 9
        const uint32_t fa[4] = {pair_bf16(v0[0], v0[v_stride]), pair_bf16(v0[8], v0[v_stride + 8]),
                                pair_bf16(v8[0], v8[v_stride]), pair_bf16(v8[8], v8[v_stride + 8])};
        const float* w = weights + g * kSplitTileKeys + 16 * kc + 2 * tq;  // head g
        const auto w0 = *reinterpret_cast<const float2*>(w);
        const auto w1 = *reinterpret_cast<const float2*>(w + 8);
        mma_bf16(o, fa, pack_bf16(w0.x, w0.y), pack_bf16(w1.x, w1.y));
    }
}

// One block per (row, group of kGroup query heads sharing one K/V head, split of the row's keys) for calls
// with few rows, so that each key and value is read once for the group and the keys of a row are worked on
// by many blocks at once. The block walks its keys in tiles of kSplitTileKeys, two in shared memory: all
// threads start copying the next tile's K and V rows before working on the current one, and the block table
// entries of the tile after that are read meanwhile. Warp w scores heads w, w + kSplitWarps, ... with a key
// per lane and keeps their online softmax; thread t then accumulates kPairs of the group's [kGroup, dims4]
// outputs, in runs of kVec consecutive dimensions of one head (the runs t + i * kSplitBlock), each key's
// values of a run read at once. A row uses as many of the grid's splits as give each kMinKeysPerSplit keys or
// more; the blocks of the others only wait and leave. A row of one split has its block write the output at
// once. Otherwise each block writes its heads' maximum, sum of exponentials and unnormalized output to the
// partials, and the last block of the (row, group) to finish, counted in splits.counters, combines them into
// the output and sets its counter back to zero: a warp a head finds the splits' factors, and each thread sums
// its runs over the splits. Chained: the first tile's keys that Rows says are settled are copied before the
// wait for the previous kernel, the queries with the rest.
// With kTensorCores (kGroup 8, head_dim 128), a tile's two products run on the tensor cores with their
// operands rounded to bfloat16: warps 0 and 1 take the scores of 16 keys each as [16 keys, 128] · [128, 8
// heads] and the softmax of each head (tile_scores_on_tensor_cores), and warp w adds dimensions [16 w,
// 16 w + 16) of the values times the weights, [16, 32 keys] · [32 keys, 8 heads], to its outputs.
// The tiles hold keys and values as KV, so that a bfloat16 cache is copied as it is.
// dynamic shared memory: split_shared_bytes(kGroup, head_dim, sizeof(KV)); kGroup * dims4 <= kPairs *
// kSplitBlock
template <int kGroup, int kPairs, bool kTensorCores, typename Rows, typename Keys, typename KV>
__global__ void __launch_bounds__(kSplitBlock)
    attention_split_row_f32_kernel(const RowArgs<Rows, Keys, KV> a) {
    static_assert(!kTensorCores || kGroup == kSplitTensorGroup);
    // Heads whose online softmax a lane keeps.
    constexpr int kHeadsPerWarp = kTensorCores ? 2 : (kGroup + kSplitWarps - 1) / kSplitWarps;
    constexpr int kVec = kPairs < 4 ? kPairs : 4;  // divides dims4, so a run stays within one head
    constexpr int kRuns = kPairs / kVec;
    extern __shared__ __align__(16) float split_shared[];
    __shared__ int64_t tile_rows[2][kSplitTileKeys];  // kv rows of the keys of the two tiles in shared memory
    __shared__ float correction[kGroup];  // factor of each head's accumulated output for this tile
    // For 8-bit levels, the scales of the keys and values of the two tiles (read once the previous kernel,
    // which may write a tile's newest key, has finished).
    [[maybe_unused]] __shared__ float tile_key_scales[std::is_same_v<KV, int8_t> ? 2 : 1][kSplitTileKeys];
    [[maybe_unused]] __shared__ float tile_value_scales[std::is_same_v<KV, int8_t> ? 2 : 1][kSplitTileKeys];

    const auto head_dim = static_cast<int>(a.head_dim);
    const int dims4 = (head_dim + 3) / 4 * 4, k_stride = dims4 + kTilePad<KV>,
              tile_elements = kSplitTileKeys * 2 * k_stride;
    float* queries = split_shared;              // [kGroup, dims4]
    float* weights = queries + kGroup * dims4;  // [kGroup, kSplitTileKeys]
    // [2, tile_elements], 16-byte aligned: kGroup * (dims4 + kSplitTileKeys) floats come before
    KV* tiles = reinterpret_cast<KV*>(weights + kGroup * kSplitTileKeys);
    const auto k_tile = [&](int b) { return tiles + b * tile_elements; };  // [kSplitTileKeys, k_stride]
    // [kSplitTileKeys, k_stride] too: lanes reading one dimension of different keys hit different banks
    const auto v_tile = [&](int b) { return tiles + b * tile_elements + kSplitTileKeys * k_stride; };

    const int tid = static_cast<int>(threadIdx.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
    const AttentionSpan span = a.rows.span(blockIdx.x);
    const int64_t n_visible = visible_keys(span, 0);
    const int64_t split_keys = max((n_visible + gridDim.z - 1) / gridDim.z, int64_t{kMinKeysPerSplit});
    const auto n_splits = static_cast<int>(max((n_visible + split_keys - 1) / split_keys, int64_t{1}));
    if (static_cast<int>(blockIdx.z) >= n_splits) {
        wait_for_prior_grids();
        start_dependent_grids();
        return;
    }
    const int64_t key_begin = min(n_visible, blockIdx.z * split_keys);
    const int64_t key_end = min(n_visible, key_begin + split_keys);
    const int64_t h0 = static_cast<int64_t>(blockIdx.y) * kGroup;
    const int64_t kv_head = h0 / (a.n_head / a.n_kv_head);
    const auto tile_keys = [&](int64_t j0) {
        return static_cast<int>(max(int64_t{0}, min(static_cast<int64_t>(kSplitTileKeys), key_end - j0)));
    };
    // Keys a tile copies: with kTensorCores all of its rows, those past the split's end as zeros, since the
    // products read every key of the tile.
    const auto tile_copies = [&](int64_t j0) {
        return kTensorCores && j0 < key_end ? static_cast<int>(kSplitTileKeys) : tile_keys(j0);
    };
    const auto start_tile = [&](int b, int first_key, int n_keys) {
        start_tile_copy(k_tile(b), k_stride, v_tile(b), k_stride, a.k, a.v, tile_rows[b], first_key, n_keys,
                        a.n_kv_head, kv_head, head_dim, a.vec4);
    };
    // The scales of tile b's keys, by thread tid < kSplitTileKeys, from its row.
    [[maybe_unused]] const auto load_tile_scales = [&](int b, int64_t row) {
        if constexpr (std::is_same_v<KV, int8_t>) {
            tile_key_scales[b][tid] = row >= 0 ? a.k_scales[row * a.n_kv_head + kv_head] : 0.0f;
            tile_value_scales[b][tid] = row >= 0 ? a.v_scales[row * a.n_kv_head + kv_head] : 0.0f;
        }
    };
    if (tid < kSplitTileKeys) {
        tile_rows[0][tid] = key_begin + tid < key_end ? a.keys.row(span.kv_start, key_begin + tid) : -1;
    }
    // Key columns past head_dim, up to dims4, stay zero: the scores read them.
    for (int i = tid; i < 2 * kSplitTileKeys * (dims4 - head_dim); i += kSplitBlock) {
        const int key = i / (dims4 - head_dim);
        k_tile(key / kSplitTileKeys)[key % kSplitTileKeys * k_stride + head_dim + i % (dims4 - head_dim)] =
            static_cast<KV>(0.0f);
    }
    // This thread's runs of outputs, each kVec dimensions [run_dim, run_dim + kVec) of head run_head; a head
    // of kGroup or more marks a run past the outputs, a dimension of head_dim or more an output never
    // written.
    int run_head[kRuns], run_dim[kRuns];
#pragma unroll
    for (int r = 0; r < kRuns; ++r) {
        run_head[r] = (tid + r * kSplitBlock) * kVec / dims4;
        run_dim[r] = (tid + r * kSplitBlock) * kVec % dims4;
    }
    float run_max[kHeadsPerWarp], run_sum[kHeadsPerWarp], acc[kRuns][kVec] = {};
    // With kTensorCores: the warp's outputs as C of [16 dims, 8 heads], dims 16 warp + g (+ 8), heads
    // 2 tq + {0, 1}.
    float o_tc[4] = {};
    // With kTensorCores: the queries as B fragments for the scoring warps, and the maxima and sums those
    // warps share.
    [[maybe_unused]] uint32_t query_fragments[kSplitTensorHeadDim / 16][2];
    [[maybe_unused]] __shared__ float score_max[kSplitScoreWarps * kSplitTensorGroup];
    [[maybe_unused]] __shared__ float score_sum[kSplitScoreWarps * kSplitTensorGroup];
#pragma unroll
    for (int i = 0; i < kHeadsPerWarp; ++i) {
        run_max[i] = -INFINITY;
        run_sum[i] = 0.0f;
    }
    // The first tile's keys before the settled end are copied while the previous kernel runs, the rest once
    // it has finished.
    const int n_first = tile_copies(key_begin);
    const auto n_settled = static_cast<int>(
        min(static_cast<int64_t>(n_first), max(Rows::settled_keys(span) - key_begin, int64_t{0})));
    __syncthreads();
    start_tile(0, 0, n_settled);
    wait_for_prior_grids();
    start_dependent_grids();
    const float* q_rows = a.q + (span.q_row * a.n_head + h0) * head_dim;  // [kGroup, head_dim]
    if (a.vec4 && reinterpret_cast<uintptr_t>(a.q) % 16 == 0) {
        for_block_elements(0, kGroup, dims4 / 4, [&](int g, int chunk) {
            copy_async_16(queries + g * dims4 + chunk * 4, q_rows + g * head_dim + chunk * 4);
        });
    } else {
        for_block_elements(0, kGroup, dims4, [&](int g, int d) {
            if (d < head_dim) {
                copy_async_4(queries + g * dims4 + d, q_rows + g * head_dim + d);
            } else {
                queries[g * dims4 + d] = 0.0f;
            }
        });
    }
    start_tile(0, n_settled, n_first);  // commits the queries' copies with the tile's
    if (tid < kSplitTileKeys) {
        load_tile_scales(0, tile_rows[0][tid]);
    }

    int b = 0;
    for (int64_t j0 = key_begin; j0 < key_end; j0 += kSplitTileKeys, b ^= 1) {
        const int n_tile = tile_keys(j0);
        if (tid < kSplitTileKeys) {
            const int64_t j = j0 + kSplitTileKeys + tid;
            const int64_t row = j < key_end ? a.keys.row(span.kv_start, j) : -1;
            tile_rows[b ^ 1][tid] = row;
            load_tile_scales(b ^ 1, row);
        }
        __syncthreads();  // the next tile's rows are in, and its buffer is no longer read
        start_tile(b ^ 1, 0, tile_copies(j0 + kSplitTileKeys));
        wait_copies<1>();  // this thread's copies of the current tile (and of the queries)
        __syncthreads();

        if constexpr (kTensorCores) {
            if (warp < kSplitScoreWarps) {
                if (j0 == key_begin) {
                    load_query_fragments(queries, dims4, query_fragments);
                }
                tile_scores_on_tensor_cores(k_tile(b), k_stride, query_fragments, tile_rows[b], n_tile,
                                            a.scale, run_max, run_sum, weights, correction, score_max,
                                            tile_key_scales[std::is_same_v<KV, int8_t> ? b : 0],
                                            tile_value_scales[std::is_same_v<KV, int8_t> ? b : 0]);
            }
        } else {
            const bool valid = lane < n_tile && tile_rows[b][lane] >= 0;
            const KV* key = k_tile(b) + lane * k_stride;  // [dims4]; key j0 + lane
#pragma unroll
            for (int i = 0; i < kHeadsPerWarp; ++i) {
                const int g = warp + i * kSplitWarps;
                if (g >= kGroup) {
                    break;
                }
                const float* qg = queries + g * dims4;  // [dims4]
                float dot = 0.0f;
#pragma unroll 8
                for (int d = 0; d < dims4; d += 4) {
                    const float4 kd = load_four(key + d);
                    const float4 qd = *reinterpret_cast<const float4*>(qg + d);
                    dot += qd.x * kd.x + qd.y * kd.y + qd.z * kd.z + qd.w * kd.w;
                }
                float key_scale = 1.0f, value_scale = 1.0f;
                if constexpr (std::is_same_v<KV, int8_t>) {
                    key_scale = tile_key_scales[b][lane];
                    value_scale = tile_value_scales[b][lane];
                }
                const float score = dot * a.scale * key_scale;
                const float new_max = fmaxf(run_max[i], warp_max(valid ? score : -INFINITY));
                const float w = valid ? expf(score - new_max) : 0.0f;
                weights[g * kSplitTileKeys + lane] = w * value_scale;
                const float c = new_max == -INFINITY ? 1.0f : expf(run_max[i] - new_max);
                run_sum[i] = run_sum[i] * c + warp_sum(w);
                run_max[i] = new_max;
                if (lane == 0) {
                    correction[g] = c;
                }
            }
        }
        __syncthreads();  // weights and corrections are in

        const KV* values = v_tile(b);  // [kSplitTileKeys, k_stride]
        if constexpr (kTensorCores) {
            tile_values_on_tensor_cores(values, k_stride, weights, correction, warp, o_tc);
        } else {
#pragma unroll
            for (int r = 0; r < kRuns; ++r) {
                const int g = run_head[r];
                if (g < kGroup) {
                    const float c = correction[g];
                    const float* w = weights + g * kSplitTileKeys;  // [kSplitTileKeys]
                    const KV* column = values + run_dim[r];         // key j's run at j * k_stride
#pragma unroll
                    for (int e = 0; e < kVec; ++e) {
                        acc[r][e] *= c;
                    }
#pragma unroll 4
                    for (int j = 0; j < n_tile; ++j) {
                        float vj[kVec];
                        load_run<kVec>(column + j * k_stride, vj);
#pragma unroll
                        for (int e = 0; e < kVec; ++e) {
                            acc[r][e] += w[j] * vj[e];
                        }
                    }
                }
            }
        }
    }

    wait_copies<0>();  // a split without keys leaves no copy of the queries in flight

    __shared__ float total_sum[kGroup];
    float* out_rows = a.out + (span.q_row * a.n_head + h0) * head_dim;  // [kGroup, head_dim]
    // Dimensions d, d + 1, ... of head g of the output from o, unnormalized, over the head's total sum.
    const auto store_output = [&](int g, int d, const auto& o) {
        constexpr int kN = std::extent_v<std::remove_reference_t<decltype(o)>>;
        const float inverse = total_sum[g] > 0.0f ? 1.0f / total_sum[g] : 0.0f;
#pragma unroll
        for (int e = 0; e < kN; ++e) {
            if (d + e < head_dim) {
                out_rows[g * head_dim + d + e] = o[e] * inverse;
            }
        }
    };
    // A row of one split has its outputs here, without partials.
    const bool alone = n_splits == 1;

    // Partials of head g of the (row, group), split z: [kPartialHeader + dims4] at (g * gridDim.z + z) *
    // stride, the maximum and sum of exponentials first.
    const int stride = kPartialHeader + dims4;
    const int64_t partials_at = (int64_t{blockIdx.x} * a.n_head + h0) * int64_t{gridDim.z} * stride;
    const auto partial = [&](int g, int z) {
        return a.splits.partials + partials_at + (g * static_cast<int>(gridDim.z) + z) * stride;
    };
    const auto z_self = static_cast<int>(blockIdx.z);
    if constexpr (kTensorCores) {
        const int g = lane / 4, tq = lane % 4;
        if (warp < kSplitScoreWarps && g == 0) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                score_sum[warp * kSplitTensorGroup + 2 * tq + e] = run_sum[e];
            }
        }
        __syncthreads();
        if (warp == 0 && g == 0) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                float sum = 0.0f;
#pragma unroll
                for (int w = 0; w < kSplitScoreWarps; ++w) {
                    sum += score_sum[w * kSplitTensorGroup + 2 * tq + e];
                }
                total_sum[2 * tq + e] = sum;
                if (!alone) {
                    *reinterpret_cast<float2*>(partial(2 * tq + e, z_self)) = float2{run_max[e], sum};
                }
            }
        }
        if (alone) {
            __syncthreads();
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float o[1] = {o_tc[e]};
                store_output(2 * tq + e % 2, 16 * warp + g + 8 * (e / 2), o);
            }
            return;
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            partial(2 * tq + e % 2, z_self)[kPartialHeader + 16 * warp + g + 8 * (e / 2)] = o_tc[e];
        }
    } else {
        if (lane == 0) {
#pragma unroll
            for (int i = 0; i < kHeadsPerWarp; ++i) {
                const int g = warp + i * kSplitWarps;
                if (g < kGroup) {
                    total_sum[g] = run_sum[i];
                    if (!alone) {
                        *reinterpret_cast<float2*>(partial(g, z_self)) = float2{run_max[i], run_sum[i]};
                    }
                }
            }
        }
        if (alone) {
            __syncthreads();
#pragma unroll
            for (int r = 0; r < kRuns; ++r) {
                if (run_head[r] < kGroup) {
                    store_output(run_head[r], run_dim[r], acc[r]);
                }
            }
            return;
        }
#pragma unroll
        for (int r = 0; r < kRuns; ++r) {
            if (run_head[r] < kGroup) {
                store_run<kVec>(partial(run_head[r], z_self) + kPartialHeader + run_dim[r], acc[r]);
            }
        }
    }
    if (!last_split_done(a.splits.counters + blockIdx.x * gridDim.y + blockIdx.y, n_splits)) {
        return;
    }

    // The last block, reading every split's partials through L2, since L1 may hold stale lines: warp w finds
    // the factor of each split of heads w, w + kSplitWarps, ... (a lane a split) and their total sum.
    __shared__ float split_factor[kGroup][kMaxAttentionSplits];
#pragma unroll
    for (int i = 0; i < kHeadsPerWarp; ++i) {
        const int g = warp + i * kSplitWarps;
        if (g >= kGroup) {
            break;
        }
        const float sum = split_factors<false>(partial(g, 0), stride, n_splits, split_factor[g]);
        if (lane == 0) {
            total_sum[g] = sum;
        }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRuns; ++r) {
        const int g = run_head[r], d = run_dim[r];
        if (g >= kGroup || d >= head_dim) {
            continue;
        }
        const float* column = partial(g, 0) + kPartialHeader + d;  // split z's run at z * stride
        float o[kVec] = {};
#pragma unroll 8
        for (int z = 0; z < n_splits; ++z) {
            float v[kVec];
            load_run<kVec, true>(column + z * stride, v);
#pragma unroll
            for (int e = 0; e < kVec; ++e) {
                o[e] += split_factor[g][z] * v[e];
            }
        }
        store_output(g, d, o);
    }
}

// Dynamic shared memory of the split-row kernel: the group's queries and the weights of a tile in floats, and
// two tiles of keys and values of kv_bytes each, their rows padded by kTilePad.
size_t split_shared_bytes(int group, int64_t head_dim, size_t kv_bytes) {
    const int64_t dims4 = (head_dim + 3) / 4 * 4;
    const auto tile_row = static_cast<size_t>(dims4) * kv_bytes + 16;
    return sizeof(float) * static_cast<size_t>(group * dims4 + group * kSplitTileKeys) +
           2 * kSplitTileKeys * 2 * tile_row;
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

template <typename Rows, typename Keys, typename KV>
void launch_split_rows(const RowArgs<Rows, Keys, KV>& args, int64_t n_rows, int group, bool on_tensor_cores,
                       cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned int>(n_rows), static_cast<unsigned int>(args.n_head / group),
                    static_cast<unsigned int>(args.splits.n_splits));
    if (args.splits.n_splits > 1 && n_rows * grid.y > args.splits.n_counters) {
        fail("attention kernel: ", n_rows, " rows of ", grid.y, " head groups split ", args.splits.n_splits,
             " ways need as many counters, ", args.splits.n_counters, " given");
    }
    const auto launch = [&](auto group_c, auto pairs_c) {
        constexpr int kGroup = decltype(group_c)::value;
        constexpr int kPairs = decltype(pairs_c)::value;
        // A group's outputs never need more than kGroup a thread: head_dim rounded up to 4 <= kSplitBlock.
        if constexpr (kPairs <= kGroup) {
            auto kernel = attention_split_row_f32_kernel<kGroup, kPairs, false, Rows, Keys, KV>;
            if constexpr (kGroup == kSplitTensorGroup) {
                if (on_tensor_cores) {
                    kernel = attention_split_row_f32_kernel<kGroup, kPairs, true, Rows, Keys, KV>;
                }
            }
            const size_t shared_bytes = split_shared_bytes(kGroup, args.head_dim, sizeof(KV));
            if (shared_bytes > kDefaultSharedBytes) {
                CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                static_cast<int>(shared_bytes)));
            }
            launch_chained(kernel, grid, dim3(kSplitBlock), shared_bytes, stream, args);
        }
    };
    with_1_2_4_8(group, [&](auto group_c) {
        // Outputs of a thread: the least power of 2 that covers the group's, head_dim rounded up to 4 each.
        const int64_t outputs = decltype(group_c)::value * ((args.head_dim + 3) / 4 * 4);
        int pairs = 1;
        while (pairs * static_cast<int64_t>(kSplitBlock) < outputs) {
            pairs *= 2;
        }
        with_1_2_4_8(pairs, [&](auto pairs_c) { launch(group_c, pairs_c); });
    });
}

// The row sources and key layouts that launch_rows takes.
template void launch_split_rows(const RowArgs<SpanRows, ContiguousKeys, float>&, int64_t, int, bool,
                                cudaStream_t);
template void launch_split_rows(const RowArgs<SpanRows, PagedKeys, float>&, int64_t, int, bool, cudaStream_t);
template void launch_split_rows(const RowArgs<SpanRows, PagedKeys, Bf16>&, int64_t, int, bool, cudaStream_t);
template void launch_split_rows(const RowArgs<DecodeRows, PagedKeys, float>&, int64_t, int, bool,
                                cudaStream_t);
template void launch_split_rows(const RowArgs<DecodeRows, PagedKeys, Bf16>&, int64_t, int, bool,
                                cudaStream_t);
template void launch_split_rows(const RowArgs<SpanRows, PagedKeys, int8_t>&, int64_t, int, bool,
                                cudaStream_t);
template void launch_split_rows(const RowArgs<DecodeRows, PagedKeys, int8_t>&, int64_t, int, bool,
                                cudaStream_t);

}  // namespace folio::kernels
