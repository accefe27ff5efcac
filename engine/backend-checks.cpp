#include "backend-checks.h"

#include "error.h"

namespace folio {

void check_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                     std::span<const AttentionSegment> segments) {
    if (q.shape.size() != 3 || k.shape.size() != 3 || k.shape != v.shape || q.shape[2] != k.shape[2] ||
        k.shape[1] == 0 || q.shape[1] % k.shape[1] != 0) {
        fail("attention: q ", shape_string(q.shape), ", k ", shape_string(k.shape), ", v ",
             shape_string(v.shape));
    }
    for (const auto& seg : segments) {
        if (seg.q_begin < 0 || seg.n_q < 0 || seg.q_begin + seg.n_q > q.shape[0] || seg.kv_begin < 0 ||
            seg.n_kv < 0 || seg.kv_begin + seg.n_kv > k.shape[0]) {
            fail("attention: segment q [", seg.q_begin, ", +", seg.n_q, ") kv [", seg.kv_begin, ", +",
                 seg.n_kv, ") outside q ", shape_string(q.shape), " / kv ", shape_string(k.shape));
        }
    }
}

void check_paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           std::span<const PagedSequence> seqs, std::span<const int32_t> block_tables,
                           int64_t block_size) {
    if (q.shape.size() != 3 || k_cache.shape.size() != 3 || k_cache.shape != v_cache.shape ||
        q.shape[2] != k_cache.shape[2] || k_cache.shape[1] == 0 || q.shape[1] % k_cache.shape[1] != 0 ||
        block_size <= 0 || k_cache.shape[0] % block_size != 0) {
        fail("paged_attention: q ", shape_string(q.shape), ", k cache ", shape_string(k_cache.shape),
             ", v cache ", shape_string(v_cache.shape), ", block size ", block_size);
    }
    const int64_t n_blocks = k_cache.shape[0] / block_size;
    const auto n_tables = static_cast<int64_t>(block_tables.size());
    for (const PagedSequence& s : seqs) {
        const int64_t n_table = s.n_kv == 0 ? 0 : (s.n_kv - 1) / block_size + 1;
        if (s.q_begin < 0 || s.n_q < 0 || s.q_begin + s.n_q > q.shape[0] || s.n_q > s.n_kv ||
            s.table_begin < 0 || s.table_begin + n_table > n_tables) {
            fail("paged_attention: sequence q [", s.q_begin, ", +", s.n_q, ") with ", s.n_kv,
                 " cached tokens and table at ", s.table_begin, " outside q ", shape_string(q.shape), " / ",
                 n_tables, " table entries");
        }
        for (int64_t i = 0; i < n_table; ++i) {
            if (block_tables[s.table_begin + i] < 0 || block_tables[s.table_begin + i] >= n_blocks) {
                fail("paged_attention: block ", block_tables[s.table_begin + i], " outside the cache of ",
                     n_blocks, " blocks");
            }
        }
    }
}

}  // namespace folio
