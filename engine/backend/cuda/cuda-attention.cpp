#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "engine/backend/cuda/cuda-attention-plan.h"
#include "engine/backend/cuda/cuda-backend.h"
#include "engine/common/error.h"
#include "kernels/batched-attention.h"
#include "kernels/decode-attention.h"
#include "kernels/elementwise.h"
#include "kernels/flash-attention.h"
#include "kernels/norm.h"

namespace folio::cuda {

bool CudaBackend::covers_rows(std::span<const AttentionSegment> segments, int64_t n_rows) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const AttentionSegment& s : segments) {
        ranges.emplace_back(s.q_begin, s.q_begin + s.n_q);
    }
    std::sort(ranges.begin(), ranges.end());
    int64_t covered = 0;
    for (const auto& [begin, end] : ranges) {
        if (begin > covered) {
            return false;
        }
        covered = std::max(covered, end);
    }
    return covered >= n_rows;
}

Tensor CudaBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v,
                              std::span<const AttentionSegment> segments, float scale,
                              AttentionPrecision precision) {
    check_attention(q, k, v, segments);
    check_head_dim(q, "attention");
    const bool flash = use_flash(q.shape[2], scale, precision);
    const bool bidirectional =
        std::none_of(segments.begin(), segments.end(), [](const AttentionSegment& s) { return s.causal; });
    if (!flash && bidirectional && k.shape[1] == q.shape[1]) {
        return segment_attention(q, k, v, segments, scale);
    }
    AttentionSpans spans(flash ? kernels::kFlashTileRows : kernels::kAttentionTileRows);
    for (const auto& seg : segments) {
        spans.add(seg.q_begin, seg.n_q, seg.kv_begin, seg.causal ? seg.q_pos_offset + 1 : seg.n_kv,
                  seg.causal ? 1 : 0, seg.n_kv);
    }
    const char* op = "attention";
    // [n_q_total, n_head, head_dim]; rows outside every segment stay zero
    Tensor out = alloc_zeroed(q.shape, op);
    const Splits splits = attention_splits(static_cast<int64_t>(spans.rows.size()), q.shape[1], k.shape[1],
                                           q.shape[2], spans.max_row_visible, op, false);
    const auto staged = stage({std::as_bytes(std::span(spans.rows)), std::as_bytes(std::span(spans.tiles))});
    const auto* row_spans = static_cast<const kernels::AttentionSpan*>(staged[0]);
    const auto* tile_spans = static_cast<const kernels::AttentionSpan*>(staged[1]);
    const auto n_rows = static_cast<int64_t>(spans.rows.size());
    const auto n_tiles = static_cast<int64_t>(spans.tiles.size());
    kernels::attention_f32(device_f32(q, op), device_f32(k, op), device_f32(v, op), out.f32(), row_spans,
                           n_rows, splits.kernel_splits, tile_spans, flash ? 0 : n_tiles, q.shape[1],
                           k.shape[1], q.shape[2], scale, stream());
    if (flash && n_tiles > 0) {
        const Tensor scratch = alloc_bytes(
            kernels::flash_scratch_bytes(q.shape[0], q.shape[1], k.shape[0], k.shape[1], k.shape[2]),
            op);  // Q, K and V in bfloat16
        kernels::flash_attention_bf16(device_f32(q, op), device_f32(k, op), device_f32(v, op), out.f32(),
                                      tile_spans, n_tiles, q.shape[0], k.shape[0], q.shape[1], k.shape[1],
                                      q.shape[2], scale, scratch.empty() ? nullptr : scratch.f32(), stream());
    }
    return out;
}

Tensor CudaBackend::rope_attention(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                                   std::span<const AttentionSegment> segments, float scale,
                                   AttentionPrecision precision) {
    check_rope_attention(qkv, cos, sin, segments);
    const int64_t n = qkv.shape[0], n_head = qkv.shape[2], head_dim = qkv.shape[3];
    const auto tiles = bidirectional_tiles(segments);
    const char* op = "rope_attention";
    if (!tiles || !use_flash(head_dim, scale, precision)) {
        return Backend::rope_attention(widened(qkv, op), cos, sin, segments, scale, precision);
    }
    if (qkv.dtype == ScalarType::BF16) {
        // bfloat16 in and out, for the output projection to read as it is.
        Tensor out = alloc_uninitialized({n, n_head, head_dim}, op, ScalarType::BF16);
        if (!covers_rows(segments, n)) {  // rows outside every segment attend to nothing
            CUDA_CHECK(cudaMemsetAsync(out.bf16(), 0, static_cast<size_t>(out.n_bytes()), stream()));
        }
        if (!tiles->empty()) {
            const auto staged = stage({std::as_bytes(std::span(*tiles))});
            const Tensor scratch = alloc_bytes(kernels::rope_flash_scratch_bytes(n, n_head, head_dim), op);
            kernels::rope_flash_attention_bf16(
                static_cast<const uint16_t*>(device_data(qkv, op)), device_f32(cos, op), device_f32(sin, op),
                out.bf16(), static_cast<const kernels::AttentionSpan*>(staged[0]),
                static_cast<int64_t>(tiles->size()), n, n_head, head_dim, scale, scratch.f32(), stream());
        }
        return out;
    }
    Tensor out = alloc_zeroed({n, n_head, head_dim}, op);  // rows outside every segment stay zero
    if (tiles->empty()) {
        return out;
    }
    const auto staged = stage({std::as_bytes(std::span(*tiles))});
    const Tensor scratch = alloc_bytes(kernels::rope_flash_scratch_bytes(n, n_head, head_dim), op);
    kernels::rope_flash_attention_bf16(device_f32(qkv, op), device_f32(cos, op), device_f32(sin, op),
                                       out.f32(), static_cast<const kernels::AttentionSpan*>(staged[0]),
                                       static_cast<int64_t>(tiles->size()), n, n_head, head_dim, scale,
                                       scratch.f32(), stream());
    return out;
}

Tensor CudaBackend::segment_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      std::span<const AttentionSegment> segments, float scale) {
    const char* op = "attention";
    const int64_t n_head = q.shape[1], head_dim = q.shape[2], ld = n_head * head_dim;
    Tensor out = alloc_zeroed(q.shape, op);  // [n_q_total, n_head, head_dim]; rows outside stay zero
    std::map<std::pair<int64_t, int64_t>, std::vector<const AttentionSegment*>> by_shape;
    for (const AttentionSegment& s : segments) {
        if (s.n_q > 0 && s.n_kv > 0) {
            by_shape[{s.n_q, s.n_kv}].push_back(&s);
        }
    }
    const float* qd = device_f32(q, op);
    const float* kd = device_f32(k, op);
    const float* vd = device_f32(v, op);
    for (const auto& [shape, group] : by_shape) {
        const auto [n_q, n_kv] = shape;
        // Entries (segment, head) per call, so that their scores fit kMaxBatchedScoreFloats.
        const int64_t per_call = std::max<int64_t>(kernels::kMaxBatchedScoreFloats / (n_q * n_kv), 1);
        const int64_t n_entries = static_cast<int64_t>(group.size()) * n_head;
        const Tensor scores = alloc_uninitialized({std::min(per_call, n_entries) * n_q * n_kv},
                                                  op);  // [entries, n_q, n_kv]
        for (int64_t first = 0; first < n_entries; first += per_call) {
            const int64_t n_batch = std::min(per_call, n_entries - first);
            std::vector<const float*> qp, kp, vp;
            std::vector<float*> sp, op_out;
            for (int64_t e = first; e < first + n_batch; ++e) {
                const AttentionSegment& s = *group[static_cast<size_t>(e / n_head)];
                const int64_t h = e % n_head;
                qp.push_back(qd + s.q_begin * ld + h * head_dim);
                kp.push_back(kd + s.kv_begin * ld + h * head_dim);
                vp.push_back(vd + s.kv_begin * ld + h * head_dim);
                sp.push_back(scores.f32() + (e - first) * n_q * n_kv);
                op_out.push_back(out.f32() + s.q_begin * ld + h * head_dim);
            }
            const auto staged = stage({std::as_bytes(std::span(qp)), std::as_bytes(std::span(kp)),
                                       std::as_bytes(std::span(vp)), std::as_bytes(std::span(sp)),
                                       std::as_bytes(std::span(op_out))});
            kernels::batched_attention_f32(
                cublas_.get(), static_cast<const float* const*>(staged[0]),
                static_cast<const float* const*>(staged[1]), static_cast<const float* const*>(staged[2]),
                static_cast<float* const*>(staged[3]), static_cast<float* const*>(staged[4]), scores.f32(),
                n_batch, n_q, n_kv, head_dim, ld, scale, stream());
        }
    }
    return out;
}

Tensor CudaBackend::paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                    std::span<const PagedSequence> seqs,
                                    std::span<const int32_t> block_tables, int64_t block_size, float scale,
                                    AttentionPrecision precision) {
    check_paged_attention(q, k_cache, v_cache, seqs, block_tables, block_size);
    const char* op = "paged_attention";
    check_head_dim(q, op);
    const bool flash = use_flash(q.shape[2], scale, precision);
    AttentionSpans spans(kernels::kAttentionTileRows);
    for (const PagedSequence& s : seqs) {
        spans.add(s.q_begin, s.n_q, s.table_begin, s.n_kv - s.n_q + 1, 1, s.n_kv);
    }
    // The scratch of the gathered keys stays within what a prefill of the call's rows takes.
    constexpr int64_t kMinGatherRows = 8192;
    const PagedFlashGroups groups(flash ? seqs : std::span<const PagedSequence>{},
                                  std::max(q.shape[0], kMinGatherRows));
    // [n_tokens, n_head, head_dim]; rows outside every sequence stay zero
    Tensor out = alloc_zeroed(q.shape, op);
    const Splits splits = attention_splits(static_cast<int64_t>(spans.rows.size()), q.shape[1],
                                           k_cache.shape[1], q.shape[2], spans.max_row_visible, op, false);
    const auto staged = stage({std::as_bytes(std::span(spans.rows)), std::as_bytes(std::span(spans.tiles)),
                               std::as_bytes(block_tables), std::as_bytes(std::span(groups.runs)),
                               std::as_bytes(std::span(groups.tiles))});
    const auto* row_spans = static_cast<const kernels::AttentionSpan*>(staged[0]);
    const auto* tile_spans = static_cast<const kernels::AttentionSpan*>(staged[1]);
    const auto* tables = static_cast<const int32_t*>(staged[2]);
    const auto n_rows = static_cast<int64_t>(spans.rows.size());
    const auto n_tiles = static_cast<int64_t>(spans.tiles.size());
    const kernels::PagedCache cache = paged_cache(k_cache, v_cache, tables, block_size, op);
    kernels::paged_attention_f32(device_f32(q, op), cache, out.f32(), row_spans, n_rows,
                                 spans.max_row_visible, splits.kernel_splits, tile_spans, flash ? 0 : n_tiles,
                                 q.shape[1], k_cache.shape[1], q.shape[2], scale, stream(),
                                 precision == AttentionPrecision::Bf16);
    if (groups.groups.empty()) {
        return out;
    }
    const int64_t n_head = q.shape[1], n_kv_head = k_cache.shape[1], head_dim = q.shape[2];
    const Tensor q_bf16 = alloc_bytes(kernels::padded_rows_bytes(q.shape[0] * n_head, head_dim), op);
    kernels::round_rows_bf16(device_f32(q, op), reinterpret_cast<uint16_t*>(q_bf16.f32()),
                             q.shape[0] * n_head, head_dim, stream());
    const auto* runs = static_cast<const kernels::PagedKeyRun*>(staged[3]);
    const auto* flash_tiles = static_cast<const kernels::AttentionSpan*>(staged[4]);
    for (const PagedFlashGroups::Group& g : groups.groups) {
        const Tensor scratch =
            alloc_bytes(2 * kernels::padded_rows_bytes(g.n_rows * n_kv_head, head_dim), op);
        kernels::paged_flash_attention_bf16(
            reinterpret_cast<const uint16_t*>(q_bf16.f32()), cache, out.f32(), flash_tiles + g.first_tile,
            static_cast<int64_t>(g.n_tiles), runs + g.first_run, static_cast<int64_t>(g.n_runs), g.max_run,
            n_head, n_kv_head, head_dim, scale, scratch.f32(), g.n_rows, stream());
    }
    return out;
}

Tensor CudaBackend::paged_decode_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                           const Tensor& seq_lens, const Tensor& block_tables,
                                           int64_t block_size, float scale, AttentionPrecision precision) {
    check_paged_decode_attention(q, k_cache, v_cache, seq_lens, block_tables, block_size);
    const char* op = "paged_decode_attention";
    check_head_dim(q, op);
    const int64_t n = q.shape[0], n_head = q.shape[1], max_blocks = block_tables.shape[1];
    const kernels::PagedCache cache =
        paged_cache(k_cache, v_cache, device_i32(block_tables, op), block_size, op);
    const float* q_data = device_f32(q, op);
    // Where the output projection's bfloat16 weights take the tensor cores it reads bfloat16 rows, so
    // decode_attention_bf16 rounds them as it stores them, and no pass rounds them after it.
    if (precision == AttentionPrecision::Bf16 &&
        !kernels::quantized_gemv_takes(n, q.shape[1] * q.shape[2], 0, kernels::QuantizedFormat::Bf16)) {
        Tensor out = alloc_uninitialized(q.shape, op, ScalarType::BF16);  // [n, n_head, head_dim]
        auto* out_bf16 = static_cast<uint16_t*>(device_data(out, op));
        if (kernels::decode_attention_bf16_takes(q_data, out_bf16, cache, max_blocks * block_size, n_head,
                                                 k_cache.shape[1], q.shape[2])) {
            const Splits splits =
                attention_splits(n, n_head, k_cache.shape[1], q.shape[2], max_blocks * block_size, op, false);
            kernels::decode_attention_bf16(q_data, cache, out_bf16, device_i32(seq_lens, op), n, max_blocks,
                                           splits.kernel_splits, n_head, k_cache.shape[1], scale, stream());
            return out;
        }
    }
    Tensor out = alloc_uninitialized(q.shape, op);  // [n, n_head, head_dim]
    // The split of the keys is fixed by the most keys a row can see, so that recorded work fits any
    // sequence lengths; splits past a row's keys end at once. At bfloat16 precision the calls that
    // decode_attention_bf16 does not take go to the split-row kernel's tensor cores.
    const bool bf16_products = precision == AttentionPrecision::Bf16;
    const bool split_row_tensor_cores =
        bf16_products &&
        !kernels::decode_attention_bf16_takes(q_data, out.f32(), cache, max_blocks * block_size, n_head,
                                              k_cache.shape[1], q.shape[2]);
    const Splits splits = attention_splits(n, n_head, k_cache.shape[1], q.shape[2], max_blocks * block_size,
                                           op, split_row_tensor_cores);
    kernels::paged_decode_attention_f32(q_data, cache, out.f32(), device_i32(seq_lens, op), n, max_blocks,
                                        splits.kernel_splits, n_head, k_cache.shape[1], q.shape[2], scale,
                                        stream(), bf16_products);
    return out;
}

CudaBackend::Splits CudaBackend::attention_splits(int64_t n_rows, int64_t n_head, int64_t n_kv_head,
                                                  int64_t head_dim, int64_t max_visible, const char* op,
                                                  bool split_row_tensor_cores) {
    Splits splits;
    kernels::AttentionSplits& s = splits.kernel_splits;
    s.n_splits = kernels::attention_splits(n_rows, n_head, n_kv_head, head_dim, max_visible,
                                           n_multiprocessors_, split_row_tensor_cores);
    if (s.n_splits > 1) {
        splits.partials = alloc_uninitialized(
            {kernels::attention_partials_floats(n_rows, n_head, s.n_splits, head_dim)}, op);
        s.partials = splits.partials.f32();
        s.counters = static_cast<int32_t*>(split_counters_.get());
        s.n_counters = kernels::kAttentionSplitCounters;
    }
    return splits;
}

bool CudaBackend::use_flash(int64_t head_dim, float scale, AttentionPrecision precision) const {
    return precision == AttentionPrecision::Bf16 && head_dim <= kernels::kMaxFlashHeadDim &&
           compute_capability_major_ >= 8 && scale > 0.0f && std::isfinite(scale);
}

void CudaBackend::check_head_dim(const Tensor& q, const char* op) const {
    if (q.shape[2] > kernels::kMaxAttentionHeadDim) {
        fail(op, ": head_dim ", q.shape[2], " of q ", shape_string(q.shape), " is over the CUDA kernels' ",
             kernels::kMaxAttentionHeadDim);
    }
}

}  // namespace folio::cuda
