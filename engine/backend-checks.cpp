#include "backend-checks.h"

#include <cstdint>

#include "error.h"

namespace folio {

void check_upload(const Tensor& t, int64_t n_values) {
    if (n_values != t.n_elements()) {
        fail("upload: ", n_values, " values for shape ", shape_string(t.shape));
    }
}

void check_upload_levels(const Tensor& t, int64_t n_levels, int64_t n_table, int64_t channel_size) {
    if (n_levels != t.n_elements()) {
        fail("upload_levels: ", n_levels, " levels for shape ", shape_string(t.shape));
    }
    const int64_t row = t.row_size();
    if (channel_size < 1 || row % channel_size != 0 || row > INT32_MAX) {
        fail("upload_levels: rows of ", row, " elements for shape ", shape_string(t.shape),
             " are not whole channels of ", channel_size, " (or pass the int range)");
    }
    if (n_table != row / channel_size * 256) {
        fail("upload_levels: a table of ", n_table, " values for ", row / channel_size,
             " channels of 256 levels");
    }
}

void check_shape(const std::vector<int64_t>& shape, const char* op) {
    for (const int64_t d : shape) {
        if (d < 0) {
            fail(op, ": negative dimension in ", shape_string(shape));
        }
    }
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* op) {
    if (a.shape != b.shape) {
        fail(op, ": shapes differ, ", shape_string(a.shape), " vs ", shape_string(b.shape));
    }
}

void check_linear(const Tensor& x, const Tensor& w, const Tensor* b) {
    if (w.row_size() != x.row_size() || (b && b->n_elements() != w.rows())) {
        fail("linear: x ", shape_string(x.shape), " does not fit w ", shape_string(w.shape),
             b ? " and b " + shape_string(b->shape) : std::string());
    }
}

void check_linear(const Tensor& x, const QuantizedTensor& w, const Tensor* b) {
    if (w.n_in != x.row_size() || !w.data || (b && b->n_elements() != w.n_out)) {
        fail("linear: x ", shape_string(x.shape), " does not fit ", quantization_name(w.type), " w [",
             w.n_out, ", ", w.n_in, "]", b ? " and b " + shape_string(b->shape) : std::string());
    }
    if (w.type == Quantization::None) {
        fail("linear: quantized w [", w.n_out, ", ", w.n_in, "] without a quantization type");
    }
}

namespace {

// That w2 with b2 takes an MLP's n_hidden values back to the columns of x.
void check_mlp_output(const Tensor& x, int64_t n_hidden, const QuantizedTensor& w2, const Tensor* b2,
                      const char* op) {
    if (w2.n_in != n_hidden || w2.n_out != x.row_size() || !w2.data || (b2 && b2->n_elements() != w2.n_out) ||
        w2.type == Quantization::None) {
        fail(op, ": w2 ", quantization_name(w2.type), " [", w2.n_out, ", ", w2.n_in, "]",
             b2 ? " with b2 " + shape_string(b2->shape) : std::string(), " does not take w1's ", n_hidden,
             " hidden values back to x ", shape_string(x.shape));
    }
}

}  // namespace

void check_layer_norm_mlp(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b,
                          const QuantizedTensor& w1, const Tensor* b1, const QuantizedTensor& w2,
                          const Tensor* b2) {
    check_layer_norm(x, norm_w, norm_b);
    check_linear(x, w1, b1);
    check_mlp_output(x, w1.n_out, w2, b2, "layer_norm_mlp_add");
}

void check_rms_norm_mlp(const Tensor& x, const Tensor& norm_w, const QuantizedTensor& w1, const Tensor* b1,
                        const QuantizedTensor& w2, const Tensor* b2) {
    check_rms_norm(x, norm_w);
    check_linear_swiglu(x, w1, b1);
    check_mlp_output(x, w1.n_out / 2, w2, b2, "rms_norm_mlp_add");
}

void check_linear_add(const Tensor& y, const Tensor& x, const QuantizedTensor& w, const Tensor* b) {
    check_linear(x, w, b);
    if (y.shape != std::vector<int64_t>{x.rows(), w.n_out}) {
        fail("linear_add: y ", shape_string(y.shape), " is not the [", x.rows(), ", ", w.n_out, "] that x ",
             shape_string(x.shape), " times w makes");
    }
}

void check_linear_swiglu(const Tensor& x, const QuantizedTensor& w, const Tensor* b) {
    check_linear(x, w, b);
    if (w.n_out % 2 != 0) {
        fail("linear_rms_norm_swiglu: w [", w.n_out, ", ", w.n_in,
             "] has an odd number of rows, not stacked gate and up halves");
    }
}

void check_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
    if (w.n_elements() != x.row_size() || b.n_elements() != x.row_size()) {
        fail("layer_norm: x ", shape_string(x.shape), " with weight ", shape_string(w.shape));
    }
}

void check_rms_norm(const Tensor& x, const Tensor& w) {
    if (w.n_elements() != x.row_size()) {
        fail("rms_norm: x ", shape_string(x.shape), " with weight ", shape_string(w.shape));
    }
}

void check_rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    if (x.shape.size() != 3 || cos.shape != std::vector<int64_t>{x.shape[0], x.shape[2]} ||
        sin.shape != cos.shape || x.shape[2] % 2 != 0) {
        fail("rope: x ", shape_string(x.shape), " with cos ", shape_string(cos.shape), " and sin ",
             shape_string(sin.shape));
    }
}

void check_argmax_rows(const Tensor& x) {
    if (x.shape.empty() || x.row_size() == 0) {
        fail("argmax_rows: x ", shape_string(x.shape), " has no columns");
    }
}

void check_sample_rows(const Tensor& logits, std::span<const RowSampling> rows,
                       std::span<const int32_t> history) {
    if (logits.shape.size() != 2 || logits.row_size() == 0 || logits.row_size() > INT32_MAX ||
        logits.rows() != static_cast<int64_t>(rows.size())) {
        fail("sample_rows: logits ", shape_string(logits.shape), " for ", rows.size(), " rows");
    }
    const int64_t vocab = logits.row_size();
    for (size_t r = 0; r < rows.size(); ++r) {
        const RowSampling& row = rows[r];
        try {
            validate(row);
        } catch (const Error& e) {
            fail("sample_rows: row ", r, " of logits ", shape_string(logits.shape), ": ", e.what());
        }
        if (row.history_begin < 0 || row.history_count < 0 ||
            row.history_begin + row.history_count > static_cast<int64_t>(history.size())) {
            fail("sample_rows: row ", r, " history [", row.history_begin, ", +", row.history_count,
                 ") outside ", history.size(), " tokens");
        }
        for (int64_t i = row.history_begin; i < row.history_begin + row.history_count; ++i) {
            if (history[i] < 0 || history[i] >= vocab) {
                fail("sample_rows: row ", r, " history token ", history[i], " outside logits ",
                     shape_string(logits.shape));
            }
        }
    }
}

void check_gather_rows(const Tensor& src, std::span<const int64_t> rows) {
    if (src.shape.empty()) {
        fail("gather_rows: source has no rows");
    }
    for (const int64_t r : rows) {
        if (r < 0 || r >= src.rows()) {
            fail("gather_rows: row ", r, " outside ", shape_string(src.shape));
        }
    }
}

void check_scatter_rows(const Tensor& dst, std::span<const int64_t> rows, const Tensor& src) {
    if (src.row_size() != dst.row_size() || src.rows() != static_cast<int64_t>(rows.size())) {
        fail("scatter_rows: src ", shape_string(src.shape), " into dst ", shape_string(dst.shape), " at ",
             rows.size(), " rows");
    }
    for (const int64_t r : rows) {
        if (r < 0 || r >= dst.rows()) {
            fail("scatter_rows: row ", r, " outside ", shape_string(dst.shape));
        }
    }
}

int64_t check_add_weighted_rows(const Tensor& x, const Tensor& src, std::span<const int64_t> rows,
                                std::span<const float> weights) {
    const auto n_taps = static_cast<int64_t>(rows.size());
    if (x.shape.size() != 2 || src.shape.size() != 2 || src.shape[1] != x.shape[1] ||
        weights.size() != rows.size() || (x.shape[0] == 0 ? n_taps != 0 : n_taps % x.shape[0] != 0)) {
        fail("add_weighted_rows: x ", shape_string(x.shape), ", src ", shape_string(src.shape), ", ",
             rows.size(), " rows and ", weights.size(), " weights");
    }
    for (const int64_t r : rows) {
        if (r < 0 || r >= src.shape[0]) {
            fail("add_weighted_rows: row ", r, " outside src ", shape_string(src.shape));
        }
    }
    return x.shape[0] == 0 ? 0 : n_taps / x.shape[0];
}

namespace {

// Every segment's query rows inside the first dimension of q_shape, its keys inside that of kv_shape.
void check_segments(std::span<const AttentionSegment> segments, const std::vector<int64_t>& q_shape,
                    const std::vector<int64_t>& kv_shape, const char* op) {
    for (const auto& seg : segments) {
        if (seg.q_begin < 0 || seg.n_q < 0 || seg.q_begin + seg.n_q > q_shape[0] || seg.kv_begin < 0 ||
            seg.n_kv < 0 || seg.kv_begin + seg.n_kv > kv_shape[0]) {
            fail(op, ": segment q [", seg.q_begin, ", +", seg.n_q, ") kv [", seg.kv_begin, ", +", seg.n_kv,
                 ") outside q ", shape_string(q_shape), " / kv ", shape_string(kv_shape));
        }
    }
}

}  // namespace

void check_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                     std::span<const AttentionSegment> segments) {
    if (q.shape.size() != 3 || k.shape.size() != 3 || k.shape != v.shape || q.shape[2] != k.shape[2] ||
        k.shape[1] == 0 || q.shape[1] % k.shape[1] != 0) {
        fail("attention: q ", shape_string(q.shape), ", k ", shape_string(k.shape), ", v ",
             shape_string(v.shape));
    }
    check_segments(segments, q.shape, k.shape, "attention");
}

void check_rope_attention(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                          std::span<const AttentionSegment> segments) {
    if (qkv.shape.size() != 4 || qkv.shape[1] != 3 || qkv.shape[3] % 2 != 0 ||
        cos.shape != std::vector<int64_t>{qkv.shape[0], qkv.shape[3]} || sin.shape != cos.shape) {
        fail("rope_attention: qkv ", shape_string(qkv.shape), " with cos ", shape_string(cos.shape),
             " and sin ", shape_string(sin.shape));
    }
    check_segments(segments, qkv.shape, qkv.shape, "rope_attention");
}

void check_layer_norm_attention(const Tensor& x, const NormAttentionWeights& w, const Tensor& cos,
                                const Tensor& sin, std::span<const AttentionSegment> segments) {
    check_layer_norm(x, w.norm_w, w.norm_b);
    const int64_t d = x.row_size();
    if (x.shape.size() != 2 || w.n_head <= 0 || d % w.n_head != 0 || d / w.n_head % 2 != 0) {
        fail("layer_norm_attention_add: x ", shape_string(x.shape), " is not rows of ", w.n_head,
             " heads of an even size");
    }
    if (w.qkv.n_out != 3 * d || w.qkv.n_in != d || !w.qkv.data ||
        (w.qkv_b && w.qkv_b->n_elements() != 3 * d) || w.out.n_out != d || w.out.n_in != d || !w.out.data ||
        (w.out_b && w.out_b->n_elements() != d) || w.qkv.type == Quantization::None ||
        w.out.type == Quantization::None) {
        fail("layer_norm_attention_add: qkv ", quantization_name(w.qkv.type), " [", w.qkv.n_out, ", ",
             w.qkv.n_in, "] and out ", quantization_name(w.out.type), " [", w.out.n_out, ", ", w.out.n_in,
             "] (with their biases) are not [", 3 * d, ", ", d, "] and [", d, ", ", d, "] for x ",
             shape_string(x.shape));
    }
    const int64_t n = x.rows(), head_dim = d / w.n_head;
    if (cos.shape != std::vector<int64_t>{n, head_dim} || sin.shape != cos.shape) {
        fail("layer_norm_attention_add: x ", shape_string(x.shape), " of ", w.n_head, " heads with cos ",
             shape_string(cos.shape), " and sin ", shape_string(sin.shape));
    }
    check_segments(segments, x.shape, x.shape, "layer_norm_attention_add");
}

void check_kv_dtype(const std::string& backend, ScalarType dtype, ScalarType other) {
    if (dtype != ScalarType::F32 && dtype != other) {
        const std::string takes =
            other == ScalarType::F32 ? "float32 only" : "float32 or " + std::string(dtype_name(other));
        fail(backend, ": no key/value cache of ", dtype_name(dtype), " elements (", takes, ")");
    }
}

void check_kv_caches(const Tensor& k_cache, const Tensor& v_cache, const char* op) {
    const auto cache_type = [](ScalarType t) { return t == ScalarType::F32 || t == ScalarType::BF16; };
    if (k_cache.dtype != v_cache.dtype || !cache_type(k_cache.dtype)) {
        fail(op, ": k cache of ", dtype_name(k_cache.dtype), " and v cache of ", dtype_name(v_cache.dtype),
             " elements; both float32 or both bfloat16");
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
    check_kv_caches(k_cache, v_cache, "paged_attention");
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

void check_i32(const Tensor& t, std::vector<int64_t> shape, const char* op, const char* what) {
    if (t.dtype != ScalarType::I32 || t.shape != shape || !t.fits_buffer()) {
        fail(op, ": ", what, " ", shape_string(t.shape), " ", dtype_name(t.dtype), " is not int32 ",
             shape_string(shape));
    }
}

void check_update(const Tensor& t, std::span<const int32_t> values) {
    if (t.dtype != ScalarType::I32 || static_cast<int64_t>(values.size()) != t.n_elements() ||
        !t.fits_buffer()) {
        fail("update: ", values.size(), " int32 values for ", dtype_name(t.dtype), " ",
             shape_string(t.shape));
    }
}

void check_swiglu(const Tensor& gate_up) {
    if (gate_up.shape.size() != 2 || gate_up.shape[1] % 2 != 0) {
        fail("swiglu: gate_up ", shape_string(gate_up.shape), " is not [n, 2 d]");
    }
}

void check_rope_qkv_to_cache(const std::vector<int64_t>& qkv_shape, const Tensor& positions,
                             const Tensor& slots, const MropeParams& rope, const Tensor& k_cache,
                             const Tensor& v_cache) {
    if (k_cache.shape.size() != 3 || k_cache.shape != v_cache.shape || k_cache.shape[1] <= 0 ||
        k_cache.shape[2] <= 0 || k_cache.shape[2] % 2 != 0) {
        fail("rope_qkv_to_cache: k cache ", shape_string(k_cache.shape), ", v cache ",
             shape_string(v_cache.shape));
    }
    check_kv_caches(k_cache, v_cache, "rope_qkv_to_cache");
    const int64_t n_kv_head = k_cache.shape[1], head_dim = k_cache.shape[2];
    const int64_t n_heads = qkv_shape.size() == 2 ? qkv_shape[1] / head_dim : 0;
    if (qkv_shape.size() != 2 || qkv_shape[1] % head_dim != 0 || n_heads <= 2 * n_kv_head ||
        (n_heads - 2 * n_kv_head) % n_kv_head != 0) {
        fail("rope_qkv_to_cache: qkv ", shape_string(qkv_shape),
             " does not hold q, k and v heads for a cache of ", shape_string(k_cache.shape));
    }
    const int64_t n = qkv_shape[0];
    check_i32(positions, {n, 3}, "rope_qkv_to_cache", "positions");
    check_i32(slots, {n}, "rope_qkv_to_cache", "slots");
    const int half = static_cast<int>(head_dim / 2);
    const auto& sec = rope.section;
    if (rope.inv_freq.shape != std::vector<int64_t>{half} || rope.inv_freq.dtype != ScalarType::F32 ||
        sec[0] < 0 || sec[1] < 0 || sec[2] < 0 || sec[0] + sec[1] + sec[2] != half) {
        fail("rope_qkv_to_cache: inverse frequencies ", shape_string(rope.inv_freq.shape), " and sections [",
             sec[0], ", ", sec[1], ", ", sec[2], "] for head_dim ", head_dim);
    }
}

void check_paged_decode_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  const Tensor& seq_lens, const Tensor& block_tables, int64_t block_size) {
    if (q.shape.size() != 3 || k_cache.shape.size() != 3 || k_cache.shape != v_cache.shape ||
        q.shape[2] != k_cache.shape[2] || k_cache.shape[1] == 0 || q.shape[1] % k_cache.shape[1] != 0 ||
        block_size <= 0 || k_cache.shape[0] % block_size != 0 || block_tables.shape.size() != 2) {
        fail("paged_decode_attention: q ", shape_string(q.shape), ", k cache ", shape_string(k_cache.shape),
             ", v cache ", shape_string(v_cache.shape), ", block tables ", shape_string(block_tables.shape),
             ", block size ", block_size);
    }
    check_kv_caches(k_cache, v_cache, "paged_decode_attention");
    check_i32(seq_lens, {q.shape[0]}, "paged_decode_attention", "seq_lens");
    check_i32(block_tables, {q.shape[0], block_tables.shape[1]}, "paged_decode_attention", "block_tables");
}

void check_gather_rows(const Tensor& src, const Tensor& rows) {
    if (src.shape.empty()) {
        fail("gather_rows: source has no rows");
    }
    check_i32(rows, {rows.n_elements()}, "gather_rows", "rows");
}

void check_gather_token_rows(const Tensor& table, const Tensor& ids, const Tensor& pending) {
    if (table.shape.size() != 2) {
        fail("gather_token_rows: table ", shape_string(table.shape), " is not [vocab, d]");
    }
    check_i32(ids, {ids.n_elements()}, "gather_token_rows", "ids");
    check_i32(pending, {pending.n_elements()}, "gather_token_rows", "pending");
}

}  // namespace folio
