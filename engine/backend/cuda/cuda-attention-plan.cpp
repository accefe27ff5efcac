#include "engine/backend/cuda/cuda-attention-plan.h"

#include <algorithm>

#include "engine/backend/cuda/cuda-memory-pool.h"

namespace folio::cuda {

void AttentionSpans::add(int64_t q_begin, int64_t n_q, int64_t kv_start, int64_t first_visible, int64_t step,
                         int64_t max_visible) {
    const int64_t tile = n_q >= kMinTiledRows ? tile_rows : 1;
    for (int64_t i = 0; i < n_q; i += tile) {
        (tile == 1 ? rows : tiles)
            .push_back({q_begin + i, std::min(tile, n_q - i), kv_start, first_visible + step * i, step,
                        max_visible});
        if (tile == 1) {
            max_row_visible = std::max(max_row_visible, std::min(max_visible, first_visible + step * i));
        }
    }
}

std::optional<std::vector<kernels::AttentionSpan>> bidirectional_tiles(
    std::span<const AttentionSegment> segments) {
    const bool tiled = std::all_of(segments.begin(), segments.end(), [](const AttentionSegment& s) {
        return !s.causal && s.n_q >= AttentionSpans::kMinTiledRows;
    });
    if (!tiled) {
        return std::nullopt;
    }
    AttentionSpans spans(kernels::kFlashTileRows);
    for (const AttentionSegment& seg : segments) {
        spans.add(seg.q_begin, seg.n_q, seg.kv_begin, seg.n_kv, 0, seg.n_kv);
    }
    return std::move(spans.tiles);
}

PagedFlashGroups::PagedFlashGroups(std::span<const PagedSequence> seqs, int64_t max_rows) {
    AttentionSpans spans(kernels::kFlashTileRows);
    for (const PagedSequence& s : seqs) {
        if (s.n_q < AttentionSpans::kMinTiledRows) {
            continue;  // row by row in paged_attention_f32
        }
        if (groups.empty() || groups.back().n_rows + s.n_kv > max_rows) {
            groups.push_back({runs.size(), 0, spans.tiles.size(), 0, 0, 0});
        }
        Group& g = groups.back();
        runs.push_back({s.table_begin, s.n_kv, g.n_rows});
        spans.add(s.q_begin, s.n_q, g.n_rows, s.n_kv - s.n_q + 1, 1, s.n_kv);
        g.n_runs += 1;
        g.n_tiles = spans.tiles.size() - g.first_tile;
        g.n_rows += s.n_kv;
        g.max_run = std::max(g.max_run, s.n_kv);
    }
    tiles = std::move(spans.tiles);
}

kernels::PagedCache paged_cache(const Tensor& k_cache, const Tensor& v_cache, const int32_t* block_tables,
                                int64_t block_size, const char* op) {
    kernels::PagedCache c;
    c.k = device_data(k_cache, op);
    c.v = device_data(v_cache, op);
    c.element = k_cache.dtype == ScalarType::BF16 ? kernels::KvElement::Bf16
                : k_cache.dtype == ScalarType::Q8 ? kernels::KvElement::Q8
                                                  : kernels::KvElement::F32;
    if (k_cache.dtype == ScalarType::Q8) {
        c.k_scales = k_cache.q8_scales();
        c.v_scales = v_cache.q8_scales();
    }
    c.block_tables = block_tables;
    c.block_size = block_size;
    c.n_blocks = k_cache.shape[0] / block_size;
    return c;
}

}  // namespace folio::cuda
