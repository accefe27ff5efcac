#include "engine/backend/backend-checks.h"

#include <cstdint>

#include "engine/common/error.h"

namespace folio {

void check_upload(const Tensor& t, int64_t n_values) {
    if (n_values != t.n_elements()) {
        fail("upload: ", n_values, " values for shape ", shape_string(t.shape));
    }
}

void check_update_f32(const Tensor& t, int64_t n_values) {
    if (t.dtype != ScalarType::F32 || n_values != t.n_elements() || !t.fits_buffer()) {
        fail("update: ", n_values, " float32 values for ", dtype_name(t.dtype), " ", shape_string(t.shape));
    }
}

void check_download_parts(const Tensor& t, ScalarType dtype, int64_t n_values) {
    if (t.dtype != dtype || n_values != t.n_elements() || !t.fits_buffer()) {
        fail("download: ", n_values, " ", dtype_name(dtype), " values into parts for ", dtype_name(t.dtype),
             " ", shape_string(t.shape));
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

namespace {

std::string weight_string(const Weight& w) {
    return std::string(w.type == Quantization::None ? "float32" : quantization_name(w.type)) + " w [" +
           std::to_string(w.n_out) + ", " + std::to_string(w.n_in) + "]";
}

}  // namespace

void check_weight(const Weight& w, const char* op) {
    const bool dense = w.type == Quantization::None;
    if (w.n_out < 0 || w.n_in < 0 || (dense && w.data != nullptr) || (!dense && w.data == nullptr) ||
        (dense && (w.dense.dtype != ScalarType::F32 ||
                   w.dense.shape != std::vector<int64_t>{w.n_out, w.n_in} || !w.dense.fits_buffer()))) {
        fail(op, ": ", weight_string(w), " holds no values of its type");
    }
    if (!dense) {
        const QuantizedLayout layout = quantized_layout(w.type, w.n_out, w.n_in, w.group_size);
        if (w.data_offset < 0 ||
            w.data_offset + layout.n_packed_bytes > static_cast<int64_t>(w.data->n_bytes()) ||
            w.scales.n_elements() != layout.n_scales) {
            fail(op, ": ", weight_string(w), " at byte ", w.data_offset, " does not fit its ",
                 w.data->n_bytes(), "-byte buffer and ", w.scales.n_elements(), " scales");
        }
    }
}

void check_write_weight(const Weight& dst, const QuantizedWeights& w) {
    validate(w);
    if (dst.data_offset != 0) {
        fail("write_weight: into a view of some rows of a weight");
    }
    if (dst.type != w.type || dst.n_out != w.n_out || dst.n_in != w.n_in || dst.group_size != w.group_size) {
        fail("write_weight: ", quantization_name(w.type), " [", w.n_out, ", ", w.n_in, "] in groups of ",
             w.group_size, " into ", weight_string(dst), " in groups of ", dst.group_size);
    }
    if (dst.data == nullptr || dst.data->n_bytes() < w.q.size() ||
        dst.scales.n_elements() != static_cast<int64_t>(w.scales.size()) ||
        (!w.scales.empty() && !dst.scales.fits_buffer())) {
        fail("write_weight: ", weight_string(dst), " has no room of its size");
    }
}

void check_linear(const Tensor& x, const Weight& w, const LinearSpec& spec) {
    check_weight(w, "linear");
    const Tensor* b = spec.bias;
    if (w.n_in != x.row_size() || (b && b->n_elements() != w.n_out)) {
        fail("linear: x ", shape_string(x.shape), " does not fit ", weight_string(w),
             b ? " and b " + shape_string(b->shape) : std::string());
    }
    if (x.dtype != ScalarType::F32 && (x.dtype != ScalarType::BF16 || spec.norm != LinearNorm::None)) {
        fail("linear: x of ", dtype_name(x.dtype), " elements",
             spec.norm != LinearNorm::None ? " with a norm" : "", "; float32, or bfloat16 without a norm");
    }
    if (spec.norm == LinearNorm::Rms) {
        if (spec.norm_w == nullptr) {
            fail("linear: an RMSNorm input without its weight");
        }
        check_rms_norm(x, *spec.norm_w);
    } else if (spec.norm == LinearNorm::Layer) {
        if (spec.norm_w == nullptr || spec.norm_b == nullptr) {
            fail("linear: a LayerNorm input without its weight and bias");
        }
        check_layer_norm(x, *spec.norm_w, *spec.norm_b);
    }
    if (spec.activation == Activation::Swiglu && w.n_out % 2 != 0) {
        fail("linear: ", weight_string(w), " has an odd number of rows, not stacked gate and up halves");
    }
    const int64_t n_y = spec.activation == Activation::Swiglu ? w.n_out / 2 : w.n_out;
    if (spec.output == LinearOutputKind::RopeToCache) {
        const RopeToCache& r = spec.rope_to_cache;
        if (spec.activation != Activation::None || spec.residual != nullptr || r.positions == nullptr ||
            r.slots == nullptr || r.rope == nullptr || r.k_cache == nullptr || r.v_cache == nullptr) {
            fail(
                "linear: a RopeToCache output takes no activation and no residual, and needs its positions, "
                "slots, rope and caches");
        }
        check_rope_qkv_to_cache({x.rows(), w.n_out}, *r.positions, *r.slots, *r.rope, *r.k_cache, *r.v_cache);
    }
    if (spec.residual != nullptr && (spec.residual->shape != std::vector<int64_t>{x.rows(), n_y} ||
                                     spec.residual->dtype != ScalarType::F32)) {
        fail("linear: residual ", shape_string(spec.residual->shape), " ", dtype_name(spec.residual->dtype),
             " is not the float32 [", x.rows(), ", ", n_y, "] that x ", shape_string(x.shape),
             " times w makes");
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

void check_route_experts(const Tensor& logits, const Tensor& score_bias, int k, float norm_min) {
    const int64_t n_experts = logits.shape.size() == 2 ? logits.shape[1] : -1;
    if (logits.dtype != ScalarType::F32 || score_bias.dtype != ScalarType::F32 || n_experts <= 0 ||
        score_bias.n_elements() != n_experts || k <= 0 || k > n_experts || !(norm_min >= 0.0f)) {
        fail("route_experts: logits ", shape_string(logits.shape), ", score_bias ",
             shape_string(score_bias.shape), ", top ", k, ", norm_min ", norm_min);
    }
}

std::vector<int64_t> check_expert_rows_linear(const Tensor& x, const Weight& w, const Tensor& experts,
                                              int64_t n_rows, int64_t x_step, Activation act) {
    check_weight(w, "expert_rows_linear");
    const int64_t m = experts.n_elements();
    if (x.dtype != ScalarType::F32 || x.shape.size() != 2 || experts.dtype != ScalarType::I32 ||
        n_rows <= 0 || x_step <= 0 || w.n_out % n_rows != 0 || x.row_size() != w.n_in ||
        x.rows() * x_step != m || (act != Activation::None && act != Activation::Swiglu) ||
        (act == Activation::Swiglu && n_rows % 2)) {
        fail("expert_rows_linear: x ", shape_string(x.shape), ", ", weight_string(w), " in blocks of ",
             n_rows, " rows, experts ", shape_string(experts.shape), ", x_step ", x_step, ", ",
             activation_name(act));
    }
    return {m, act == Activation::Swiglu ? n_rows / 2 : n_rows};
}

void check_add_expert_outputs(const Tensor& x, const Tensor& src, const Tensor& weights) {
    if (x.dtype != ScalarType::F32 || src.dtype != ScalarType::F32 || weights.dtype != ScalarType::F32 ||
        x.shape.size() != 2 || src.shape.size() != 2 || weights.shape.size() != 2 ||
        weights.shape[0] != x.shape[0] || src.shape[1] != x.shape[1] ||
        src.shape[0] != x.shape[0] * weights.shape[1]) {
        fail("add_expert_outputs: x ", shape_string(x.shape), ", src ", shape_string(src.shape), ", weights ",
             shape_string(weights.shape));
    }
}

int64_t check_routed_experts(const Tensor& x, const Tensor& input, const ExpertLayer& layer) {
    const char* op = "add_routed_experts";
    if (x.dtype != ScalarType::F32 || input.dtype != ScalarType::F32 || x.shape.size() != 2 ||
        x.shape != input.shape) {
        fail(op, ": x ", shape_string(x.shape), ", input ", shape_string(input.shape));
    }
    const int64_t d = x.shape[1];
    if (!layer.norm_w.empty() && (layer.norm_w.dtype != ScalarType::F32 || layer.norm_w.n_elements() != d ||
                                  !(layer.norm_eps >= 0.0f))) {
        fail(op, ": norm weights ", shape_string(layer.norm_w.shape), " and eps ", layer.norm_eps,
             " for rows of ", d);
    }
    const int64_t n_experts = layer.router.shape.size() == 2 ? layer.router.shape[0] : 0;
    if (layer.router.dtype != ScalarType::F32 || n_experts <= 0 || layer.router.shape[1] != d) {
        fail(op, ": router ", shape_string(layer.router.shape), " for rows of ", d);
    }
    if (layer.score_bias.dtype != ScalarType::F32 || layer.score_bias.n_elements() != n_experts ||
        layer.k <= 0 || layer.k > n_experts || !(layer.norm_min >= 0.0f)) {
        fail(op, ": score_bias ", shape_string(layer.score_bias.shape), ", top ", layer.k, " of ", n_experts,
             " experts, norm_min ", layer.norm_min);
    }
    check_weight(layer.gate_up, op);
    check_weight(layer.down, op);
    const int64_t d_ff = layer.gate_up.n_out / (2 * n_experts);
    if (layer.gate_up.n_in != d || d_ff <= 0 || layer.gate_up.n_out != 2 * n_experts * d_ff ||
        layer.down.n_in != d_ff || layer.down.n_out != n_experts * d) {
        fail(op, ": gate_up ", weight_string(layer.gate_up), " and down ", weight_string(layer.down), " for ",
             n_experts, " experts over rows of ", d);
    }
    if (layer.shared_gate_up.empty() != layer.shared_down.empty()) {
        fail(op, ": shared experts with ", layer.shared_gate_up.empty() ? "no gate_up" : "no down");
    }
    if (!layer.shared_gate_up.empty()) {
        check_weight(layer.shared_gate_up, op);
        check_weight(layer.shared_down, op);
        const int64_t shared = layer.shared_gate_up.n_out / 2;
        if (layer.shared_gate_up.n_in != d || shared <= 0 || layer.shared_gate_up.n_out != 2 * shared ||
            layer.shared_down.n_in != shared || layer.shared_down.n_out != d) {
            fail(op, ": shared gate_up ", weight_string(layer.shared_gate_up), " and down ",
                 weight_string(layer.shared_down), " over rows of ", d);
        }
    }
    return d_ff;
}

void check_merge_expert_routings(const ExpertRouting& a, const ExpertRouting& b, const Tensor& use_b,
                                 int b_first) {
    const bool routing_ok = a.experts.dtype == ScalarType::I32 && b.experts.dtype == ScalarType::I32 &&
                            a.weights.dtype == ScalarType::F32 && b.weights.dtype == ScalarType::F32 &&
                            a.experts.shape.size() == 2 && a.experts.shape == a.weights.shape &&
                            b.experts.shape == a.experts.shape && b.weights.shape == a.experts.shape;
    if (!routing_ok || use_b.dtype != ScalarType::I32 || use_b.n_elements() != a.experts.shape[0] ||
        b_first < 0) {
        fail("merge_expert_routings: experts ", shape_string(a.experts.shape), " and ",
             shape_string(b.experts.shape), ", weights ", shape_string(a.weights.shape), " and ",
             shape_string(b.weights.shape), ", use_b ", shape_string(use_b.shape), ", b_first ", b_first);
    }
}

void check_order_by_expert(const Tensor& experts, int n_experts) {
    if (experts.dtype != ScalarType::I32 || experts.shape.size() != 2 || experts.shape[1] <= 0 ||
        n_experts <= 0 || experts.n_elements() > INT32_MAX) {
        fail("order_by_expert: experts ", shape_string(experts.shape), " over ", n_experts, " experts");
    }
}

void check_grouped_expert_linear(const Tensor& x, const Weight& w, const Tensor& offsets, int first,
                                 int64_t n_rows, Activation act, const Tensor& y) {
    check_weight(w, "grouped_expert_linear");
    const int64_t n_w = n_rows > 0 ? w.n_out / n_rows : 0;
    const int64_t n_y = act == Activation::Swiglu ? n_rows / 2 : n_rows;
    if (x.dtype != ScalarType::F32 || x.shape.size() != 2 || x.row_size() != w.n_in || n_rows <= 0 ||
        w.n_out % n_rows != 0 || (act != Activation::None && act != Activation::Swiglu) ||
        (act == Activation::Swiglu && n_rows % 2) || offsets.dtype != ScalarType::I32 ||
        offsets.shape.size() != 1 || first < 0 || first + n_w + 1 > offsets.n_elements() ||
        y.dtype != ScalarType::F32 || y.shape.size() != 2 || y.shape[0] != x.shape[0] || y.shape[1] != n_y) {
        fail("grouped_expert_linear: x ", shape_string(x.shape), ", ", weight_string(w), " in blocks of ",
             n_rows, " rows from expert ", first, ", offsets ", shape_string(offsets.shape), ", y ",
             shape_string(y.shape), ", ", activation_name(act));
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

void check_kv_dtype(const std::string& backend, ScalarType dtype, ScalarType other) {
    if (dtype != ScalarType::F32 && dtype != ScalarType::Q8 && dtype != other) {
        const std::string takes = other == ScalarType::F32 ? "float32 or 8-bit levels with scales"
                                                           : "float32, 8-bit levels with scales or " +
                                                                 std::string(dtype_name(other));
        fail(backend, ": no key/value cache of ", dtype_name(dtype), " elements (", takes, ")");
    }
}

void check_kv_caches(const Tensor& k_cache, const Tensor& v_cache, const char* op) {
    const auto cache_type = [](ScalarType t) {
        return t == ScalarType::F32 || t == ScalarType::BF16 || t == ScalarType::Q8;
    };
    if (k_cache.dtype != v_cache.dtype || !cache_type(k_cache.dtype)) {
        fail(op, ": k cache of ", dtype_name(k_cache.dtype), " and v cache of ", dtype_name(v_cache.dtype),
             " elements; both of one cache type (float32, bfloat16, 8-bit levels with scales)");
    }
    if (k_cache.dtype == ScalarType::Q8 && (!k_cache.fits_buffer() || !v_cache.fits_buffer())) {
        fail(op, ": a cache of 8-bit levels with scales ", shape_string(k_cache.shape),
             " larger than its buffer");
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
                             const Tensor& slots, const RopeParams& rope, const Tensor& k_cache,
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
    if (rope.n_axes < 1) {
        fail("rope_qkv_to_cache: ", rope.n_axes, " position axes");
    }
    check_i32(positions, {n, rope.n_axes}, "rope_qkv_to_cache", "positions");
    check_i32(slots, {n}, "rope_qkv_to_cache", "slots");
    const int64_t half = head_dim / 2;
    if (rope.inv_freq.shape != std::vector<int64_t>{half} || rope.inv_freq.dtype != ScalarType::F32) {
        fail("rope_qkv_to_cache: inverse frequencies ", shape_string(rope.inv_freq.shape), " ",
             dtype_name(rope.inv_freq.dtype), " for head_dim ", head_dim);
    }
    check_i32(rope.pair_axis, {half}, "rope_qkv_to_cache", "pair axes");
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

void check_scatter_rows(const Tensor& dst, const Tensor& rows, const Tensor& src) {
    check_i32(rows, {rows.n_elements()}, "scatter_rows", "rows");
    if (dst.shape.empty() || src.row_size() != dst.row_size() || src.rows() != rows.n_elements()) {
        fail("scatter_rows: src ", shape_string(src.shape), " into dst ", shape_string(dst.shape), " at ",
             rows.n_elements(), " rows");
    }
}

void check_gather_token_rows(const Tensor& table, const Tensor& ids, const Tensor& pending) {
    if (table.shape.size() != 2) {
        fail("gather_token_rows: table ", shape_string(table.shape), " is not [vocab, d]");
    }
    check_i32(ids, {ids.n_elements()}, "gather_token_rows", "ids");
    check_i32(pending, {pending.n_elements()}, "gather_token_rows", "pending");
}

}  // namespace folio
