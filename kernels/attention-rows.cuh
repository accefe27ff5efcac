// The row kernels' shared pieces (attention-rows.cu, attention-split-rows.cu, attention.cu): their arguments,
// the split-row kernel's shape that the dispatch reads, and the launch of a call's row spans.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/attention.h"
#include "kernels/reduce.cuh"

namespace folio::kernels {

// Keys of a split-row tile: one per lane when scoring.
constexpr int kSplitTileKeys = kWarpSize;
// Keys a split of a row should have at least, so that splitting pays for the merge: one tile. A row that
// sees fewer keys than its splits would give so uses fewer of them.
constexpr int kMinKeysPerSplit = kSplitTileKeys;
constexpr int kPartialHeader = static_cast<int>(kAttentionPartialHeader);

// The group of query heads a split-row block takes on the tensor cores, and their head_dim.
constexpr int kSplitTensorGroup = 8;
constexpr int kSplitTensorHeadDim = 128;

// Arguments of the row kernels. q, out [n_q_total, n_head, head_dim], k, v [n_kv_total, n_kv_head, head_dim]
// of KV (float, Bf16, or int8_t levels with k_scales, v_scales [n_kv_total, n_kv_head]); vec4: head_dim is a
// multiple of 4 and k, v are aligned to 4 elements.
template <typename Rows, typename Keys, typename KV>
struct RowArgs {
    const float* q;
    const KV* k;
    const KV* v;
    float* out;
    Rows rows;
    Keys keys;
    int64_t n_head;
    int64_t n_kv_head;
    int64_t head_dim;
    float scale;
    bool vec4;
    AttentionSplits splits;
    const float* k_scales = nullptr;
    const float* v_scales = nullptr;
};

// Checks what the row and tile kernels take.
void check_attention_args(int64_t n_head, int64_t n_kv_head, int64_t head_dim, const AttentionSplits& splits);

// Whether rows of head_dim elements of k and v can be read four elements at a time.
template <typename KV>
bool vec4_rows(const KV* k, const KV* v, int64_t head_dim) {
    constexpr size_t kAlign = 4 * sizeof(KV);
    return head_dim % 4 == 0 && reinterpret_cast<uintptr_t>(k) % kAlign == 0 &&
           reinterpret_cast<uintptr_t>(v) % kAlign == 0;
}

// With tensor_cores, the split-row kernel's products on the tensor cores where it has them (groups of 8 heads
// of 128, rows of 16-byte aligned keys), for one split of the keys as well; else the whole-row kernel for one
// split and the split-row kernel for several.
template <typename Rows, typename Keys, typename KV>
void launch_rows(const RowArgs<Rows, Keys, KV>& args, int64_t n_rows, cudaStream_t stream, bool tensor_cores);

// The split-row kernel for launch_rows: one block per (row, group of `group` query heads, split of the keys),
// its products on the tensor cores with on_tensor_cores.
template <typename Rows, typename Keys, typename KV>
void launch_split_rows(const RowArgs<Rows, Keys, KV>& args, int64_t n_rows, int group, bool on_tensor_cores,
                       cudaStream_t stream);

}  // namespace folio::kernels
