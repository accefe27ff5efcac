// What every backend holds the arguments of an operation to before it runs, and the byte counter behind
// memory_stats(). The checks throw folio::Error naming the operation, the shapes and the value out of range.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend-vision-checks.h"  // the vision operations' checks
#include "engine/backend/backend.h"

namespace folio {

// n_values for every element of t.
void check_upload(const Tensor& t, int64_t n_values);
// update's float32 form: n_values for all of a float32 tensor.
void check_update_f32(const Tensor& t, int64_t n_values);
// A download into parts of n_values elements in all, of a tensor of dtype.
void check_download_parts(const Tensor& t, ScalarType dtype, int64_t n_values);
// upload_levels: n_levels for every element of t, rows of whole channels of channel_size elements each, a
// table of 256 values for each channel, and rows whose elements an int indexes.
void check_upload_levels(const Tensor& t, int64_t n_levels, int64_t n_table, int64_t channel_size);
// No negative dimension in a shape op is about to allocate.
void check_shape(const std::vector<int64_t>& shape, const char* op);
void check_same_shape(const Tensor& a, const Tensor& b, const char* op);
// A weight that holds values of its type: a float32 [n_out, n_in] tensor, or packed data.
void check_weight(const Weight& w, const char* op);
// Throws unless w is valid packed weights of dst's type and size and dst has their room.
void check_write_weight(const Weight& dst, const QuantizedWeights& w);
// x [n, w.n_in] float32 (or bfloat16 without a norm), the norm's weights [n_in], bias [w.n_out], an even
// w.n_out for SwiGLU, a RopeToCache output's arguments (check_rope_qkv_to_cache) without an activation or a
// residual, and residual [n, columns of the output] float32.
void check_linear(const Tensor& x, const Weight& w, const LinearSpec& spec);
// Weight (and bias) [d] for rows of d.
void check_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b);
void check_rms_norm(const Tensor& x, const Tensor& w);
// x [n, n_head, head_dim] with an even head_dim, cos/sin [n, head_dim].
void check_rope(const Tensor& x, const Tensor& cos, const Tensor& sin);
// At least one column.
void check_argmax_rows(const Tensor& x);
// logits [rows.size(), vocab >= 1], each row valid (validate(RowSampling)) with its history range inside
// history and its tokens inside the vocabulary.
void check_sample_rows(const Tensor& logits, std::span<const RowSampling> rows,
                       std::span<const int32_t> history);
// Every row inside src; src has a row dimension.
void check_gather_rows(const Tensor& src, std::span<const int64_t> rows);
// src [rows.size(), row of dst], every row inside dst.
void check_scatter_rows(const Tensor& dst, std::span<const int64_t> rows, const Tensor& src);
// Returns the taps per row.
// The mixture-of-experts operations' arguments; each returns the shape of its result.
void check_route_experts(const Tensor& logits, const Tensor& score_bias, int k, float norm_min);
std::vector<int64_t> check_expert_rows_linear(const Tensor& x, const Weight& w, const Tensor& experts,
                                              int64_t n_rows, int64_t x_step, Activation act);
void check_add_expert_outputs(const Tensor& x, const Tensor& src, const Tensor& weights);
// Returns the experts' d_ff.
int64_t check_routed_experts(const Tensor& x, const Tensor& input, const ExpertLayer& layer);
void check_merge_expert_routings(const ExpertRouting& a, const ExpertRouting& b, const Tensor& use_b,
                                 int b_first);
void check_order_by_expert(const Tensor& experts, int n_experts);
void check_grouped_expert_linear(const Tensor& x, const Weight& w, const Tensor& offsets, int first,
                                 int64_t n_rows, Activation act, const Tensor& y);

int64_t check_add_weighted_rows(const Tensor& x, const Tensor& src, std::span<const int64_t> rows,
                                std::span<const float> weights);

// q [n_q_total, n_head, head_dim], k/v [n_kv_total, n_kv_head, head_dim], segments inside both.
void check_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                     std::span<const AttentionSegment> segments);

// qkv [n, 3, n_head, head_dim] with an even head_dim, cos/sin [n, head_dim], segments inside qkv's rows.
void check_rope_attention(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                          std::span<const AttentionSegment> segments);

// A key/value cache's element type as a backend takes it: float32, or the one other type it reads.
void check_kv_dtype(const std::string& backend, ScalarType dtype, ScalarType other);
// k and v caches of one element type, float32 or bfloat16.
void check_kv_caches(const Tensor& k_cache, const Tensor& v_cache, const char* op);

// q [n_tokens, n_head, head_dim], caches [n_blocks * block_size, n_kv_head, head_dim], every sequence's rows
// inside q and its table entries inside block_tables, naming blocks of the cache.
void check_paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           std::span<const PagedSequence> seqs, std::span<const int32_t> block_tables,
                           int64_t block_size);

// An int32 tensor of this shape whose buffer holds it.
void check_i32(const Tensor& t, std::vector<int64_t> shape, const char* op, const char* what);
// An int32 tensor of values.size() elements.
void check_update(const Tensor& t, std::span<const int32_t> values);
// gate_up [n, 2 d].
void check_swiglu(const Tensor& gate_up);
// qkv [n, (n_head + 2 n_kv_head) * head_dim] with n_head a multiple of n_kv_head, caches [n_slots, n_kv_head,
// head_dim], positions [n, 3] and slots [n] int32, inverse frequencies [head_dim / 2] in sections summing to
// them. The values of slots are not checked here: they are on the device.
void check_rope_qkv_to_cache(const std::vector<int64_t>& qkv_shape, const Tensor& positions,
                             const Tensor& slots, const RopeParams& rope, const Tensor& k_cache,
                             const Tensor& v_cache);
// q [n, n_head, head_dim], caches [n_blocks * block_size, n_kv_head, head_dim], seq_lens [n] and
// block_tables [n, max_blocks] int32.
void check_paged_decode_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  const Tensor& seq_lens, const Tensor& block_tables, int64_t block_size);
// rows [n] int32; src has a row dimension.
void check_gather_rows(const Tensor& src, const Tensor& rows);
void check_scatter_rows(const Tensor& dst, const Tensor& rows, const Tensor& src);
// table [vocab, d]; ids [n] and pending [n_pending] int32.
void check_gather_token_rows(const Tensor& table, const Tensor& ids, const Tensor& pending);

// Bytes held by the buffers of one backend; shared with the buffers, which may outlive the backend.
struct MemoryCounter {
    std::atomic<int64_t> in_use{0};
    std::atomic<int64_t> peak{0};

    void add(int64_t n) {
        const int64_t now = in_use.fetch_add(n) + n;
        int64_t seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
    }
};

}  // namespace folio
