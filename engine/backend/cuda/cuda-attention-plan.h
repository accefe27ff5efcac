// How the CUDA backend lays an attention call out for the kernels: its query rows as single rows or tiles,
// the tensor cores' tiles of bidirectional segments and of paged prefill, and a layer's paged caches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "kernels/attention.h"
#include "kernels/flash-attention.h"

namespace folio::cuda {

// The query rows of an attention call, as the kernels take them: the rows of short runs (decoding) one by
// one, longer runs (prefill) in tiles of up to tile_rows rows.
struct AttentionSpans {
    // Runs of fewer rows than this go row by row.
    static constexpr int64_t kMinTiledRows = 8;

    explicit AttentionSpans(int64_t rows_per_tile) : tile_rows(rows_per_tile) {}

    int64_t tile_rows;
    std::vector<kernels::AttentionSpan> rows;
    std::vector<kernels::AttentionSpan> tiles;
    int64_t max_row_visible = 0;  // the most keys a row of `rows` sees

    // Rows [q_begin, q_begin + n_q); row i sees clamp(first_visible + step * i, 0, max_visible) keys.
    void add(int64_t q_begin, int64_t n_q, int64_t kv_start, int64_t first_visible, int64_t step,
             int64_t max_visible);
};

// The flash kernel's tiles where every segment is bidirectional and long enough to go in tiles (each row
// sees its whole segment); nothing otherwise.
std::optional<std::vector<kernels::AttentionSpan>> bidirectional_tiles(
    std::span<const AttentionSegment> segments);

// The tiled sequences of a paged call on the tensor cores, whose keys are gathered into bfloat16 rows first:
// in groups whose keys together fit max_rows rows (a sequence with more goes alone), every group's runs of
// keys and tiles of query rows one after another, a tile's kv_start being its run's first row in the group.
struct PagedFlashGroups {
    struct Group {
        size_t first_run = 0, n_runs = 0, first_tile = 0, n_tiles = 0;
        int64_t n_rows = 0;   // keys gathered
        int64_t max_run = 0;  // keys of the longest run
    };
    std::vector<kernels::PagedKeyRun> runs;
    std::vector<kernels::AttentionSpan> tiles;
    std::vector<Group> groups;

    PagedFlashGroups(std::span<const PagedSequence> seqs, int64_t max_rows);
};

// A layer's caches of this backend (as check_kv_caches holds them) and their block tables.
kernels::PagedCache paged_cache(const Tensor& k_cache, const Tensor& v_cache, const int32_t* block_tables,
                                int64_t block_size, const char* op);

}  // namespace folio::cuda
