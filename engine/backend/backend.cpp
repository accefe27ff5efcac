#include "engine/backend/backend.h"

#include <algorithm>
#include <chrono>

#include "engine/backend/backend-checks.h"
#include "engine/common/error.h"

namespace folio {

namespace {

class ReadyReadback final : public TokenReadback {
public:
    explicit ReadyReadback(std::vector<int32_t> values) : values_(std::move(values)) {}
    std::vector<int32_t> wait() override { return values_; }

private:
    std::vector<int32_t> values_;
};

// The host's clock, for backends whose work is done when its call returns.
class HostMark final : public QueueMark {
public:
    double seconds_since(const QueueMark& earlier) override {
        const auto* e = dynamic_cast<const HostMark*>(&earlier);
        if (e == nullptr) {
            fail("a queue mark compared with one of another backend");
        }
        return std::chrono::duration<double>(at_ - e->at_).count();
    }

private:
    std::chrono::steady_clock::time_point at_ = std::chrono::steady_clock::now();
};

}  // namespace

std::unique_ptr<TokenReadback> ready_readback(std::vector<int32_t> values) {
    return std::make_unique<ReadyReadback>(std::move(values));
}

std::unique_ptr<RecordedWork> record_work(Backend& backend, const std::function<void()>& queue) {
    backend.begin_recording();
    try {
        queue();
    } catch (...) {
        try {
            backend.end_recording();
        } catch (const Error&) {  // the recording failed with the first error, which is the one to report
        }
        throw;
    }
    return backend.end_recording();
}

std::unique_ptr<QueueMark> Backend::mark_queue() {
    return std::make_unique<HostMark>();
}

std::vector<int32_t> Backend::argmax_rows(const Tensor& x) {
    check_argmax_rows(x);
    if (x.rows() == 0) {
        return {};
    }
    Tensor out = upload_i32(std::vector<int32_t>(static_cast<size_t>(x.rows()), 0), {x.rows()});
    argmax_rows_to(x, out);
    return read_back(out)->wait();
}

std::vector<int32_t> Backend::sample_rows(const Tensor& logits, std::span<const RowSampling> rows,
                                          std::span<const int32_t> history) {
    check_sample_rows(logits, rows, history);
    const auto n = static_cast<int64_t>(rows.size());
    if (n == 0) {
        return {};
    }
    Tensor out = upload_i32(std::vector<int32_t>(rows.size(), 0), {n});
    sample_rows_to(logits, rows, history, out);
    return read_back(out)->wait();
}

Weight weight_rows(const Weight& w, int64_t first, int64_t n) {
    if (first < 0 || n < 0 || first + n > w.n_out) {
        fail("weight_rows: rows [", first, ", ", first + n, ") of a weight of ", w.n_out, " rows");
    }
    Weight out = w;
    out.n_out = n;
    if (w.type == Quantization::None) {
        out.dense = w.dense.view(first * w.n_in, {n, w.n_in});
        return out;
    }
    const QuantizedLayout layout = quantized_layout(w.type, w.n_out, w.n_in, w.group_size);
    out.data_offset = w.data_offset + first * (layout.n_packed_bytes / std::max<int64_t>(w.n_out, 1));
    if (!w.scales.empty()) {
        const int64_t per_row = layout.n_scales / std::max<int64_t>(w.n_out, 1);
        out.scales = w.scales.view(first * per_row, {n * per_row});
    }
    return out;
}

Weight dense_weight(const Tensor& w) {
    if (w.shape.size() != 2 || w.dtype != ScalarType::F32) {
        fail("dense_weight: w ", shape_string(w.shape), " ", dtype_name(w.dtype),
             " is not float32 [n_out, n_in]");
    }
    Weight weight;
    weight.n_out = w.shape[0];
    weight.n_in = w.shape[1];
    weight.group_size = weight.n_in;
    weight.dense = w;
    return weight;
}

Weight Backend::upload(const QuantizedWeights& w) {
    validate(w);
    const Weight weight = alloc_weight(w.type, w.n_out, w.n_in, w.group_size);
    write_weight(weight, w);
    return weight;
}

Tensor Backend::linear(const Tensor& x, const Weight& w, const Tensor* b) {
    return linear(x, w, LinearSpec{.bias = b});
}

Tensor Backend::linear(const Tensor& x, const Tensor& w, const Tensor* b) {
    return linear(x, dense_weight(w), LinearSpec{.bias = b});
}

void Backend::add_routed_experts(Tensor& x, const Tensor& input, const ExpertLayer& layer) {
    const int64_t d_ff = check_routed_experts(x, input, layer);
    const Tensor xn = layer.norm_w.empty() ? input : rms_norm(input, layer.norm_w, layer.norm_eps);  // [n, d]
    const Tensor logits = linear(xn, layer.router, nullptr);  // [n, n_experts]
    const ExpertRouting routing = route_experts(logits, layer.score_bias, layer.k, layer.norm_min);  // [n, k]
    if (!layer.shared_gate_up.empty()) {
        const Tensor h = linear(xn, layer.shared_gate_up, LinearSpec{.activation = Activation::Swiglu});
        linear(h, layer.shared_down, LinearSpec{.residual = &x});  // [n, d_shared] to x
    }
    const Tensor h = expert_rows_linear(xn, layer.gate_up, routing.experts, 2 * d_ff, layer.k,
                                        Activation::Swiglu);  // [n k, d_ff]
    const Tensor y = expert_rows_linear(h, layer.down, routing.experts, x.row_size(), 1, Activation::None);
    add_expert_outputs(x, y, routing.weights);  // [n k, d]
}

Tensor Backend::linear_in_parts(const Tensor& x, const Weight& w, const LinearSpec& spec) {
    check_linear(x, w, spec);
    Tensor normed;  // [n, n_in] where there is a norm
    if (spec.norm == LinearNorm::Rms) {
        normed = rms_norm(x, *spec.norm_w, spec.eps);
    } else if (spec.norm == LinearNorm::Layer) {
        normed = layer_norm(x, *spec.norm_w, *spec.norm_b, spec.eps);
    }
    Tensor y = linear(normed.empty() ? x : normed, w, spec.bias);  // [n, n_out]
    if (spec.activation == Activation::Swiglu) {
        y = swiglu(y);  // [n, n_out / 2]
    } else {
        apply_activation(y, spec.activation);
    }
    if (spec.output == LinearOutputKind::RopeToCache) {
        const RopeToCache& r = spec.rope_to_cache;
        return rope_qkv_to_cache(y, *r.positions, *r.slots, *r.rope, *r.k_cache, *r.v_cache);
    }
    if (spec.residual != nullptr) {
        add(*spec.residual, y);
        return *spec.residual;
    }
    return y;
}

Tensor Backend::rope_attention(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                               std::span<const AttentionSegment> segments, float scale,
                               AttentionPrecision precision) {
    check_rope_attention(qkv, cos, sin, segments);
    const int64_t n = qkv.shape[0], n_head = qkv.shape[2], head_dim = qkv.shape[3];
    const Tensor parts =
        qkv.view(0, {3 * n, n_head * head_dim});  // q, k and v of row i at 3i, 3i + 1, 3i + 2
    std::vector<int64_t> rows(static_cast<size_t>(n));
    const auto part = [&](int64_t which) {
        for (int64_t i = 0; i < n; ++i) {
            rows[static_cast<size_t>(i)] = 3 * i + which;
        }
        return gather_rows(parts, rows).view(0, {n, n_head, head_dim});
    };
    Tensor q = part(0), k = part(1);
    const Tensor v = part(2);
    rope(q, cos, sin);
    rope(k, cos, sin);
    return attention(q, k, v, segments, scale, precision);
}

ScalarType Backend::kv_dtype(AttentionPrecision) const {
    return ScalarType::F32;
}

Tensor Backend::alloc_kv(std::vector<int64_t> shape, ScalarType dtype) {
    check_kv_dtype(name(), dtype, kv_dtype(AttentionPrecision::Bf16));
    if (dtype != ScalarType::Q8) {
        return alloc(std::move(shape));
    }
    // The levels and scales in a zero-filled float32 buffer of at least their bytes.
    Tensor q8;
    q8.shape = std::move(shape);
    q8.dtype = ScalarType::Q8;
    Tensor t = alloc({(q8.n_bytes() + 3) / 4});
    q8.buffer = t.buffer;
    return q8;
}

Tensor Backend::upload_table(std::span<const float> values, std::vector<int64_t> shape, ScalarType dtype) {
    if (dtype == ScalarType::F32) {
        return upload(values, std::move(shape));
    }
    if (dtype != ScalarType::BF16) {
        fail("upload_table: a table of ", dtype_name(dtype), " elements (float32 or bfloat16)");
    }
    return upload_kv(values, std::move(shape), dtype);
}

Tensor Backend::upload_kv(std::span<const float> values, std::vector<int64_t> shape, ScalarType dtype) {
    check_kv_dtype(name(), dtype, kv_dtype(AttentionPrecision::Bf16));
    if (dtype != ScalarType::Q8) {
        return upload(values, std::move(shape));
    }
    Tensor q8;
    q8.shape = std::move(shape);
    q8.dtype = ScalarType::Q8;
    if (static_cast<int64_t>(values.size()) != q8.n_elements() || q8.shape.empty() || q8.shape.back() <= 0) {
        fail("upload_kv: ", values.size(), " values for a cache of ", shape_string(q8.shape));
    }
    // The levels and scales, packed as they lie in the tensor, uploaded as float32 bits.
    std::vector<float> packed(static_cast<size_t>((q8.n_bytes() + 3) / 4));
    auto* bytes = reinterpret_cast<char*>(packed.data());
    const int64_t row = q8.shape.back();
    quantize_q8_rows(values.data(), q8.n_elements() / row, row, reinterpret_cast<int8_t*>(bytes),
                     reinterpret_cast<float*>(bytes + q8_scales_offset(q8.n_elements())));
    q8.buffer = upload(packed, {static_cast<int64_t>(packed.size())}).buffer;
    return q8;
}

void Backend::begin_recording() {
    fail(name(), ": this backend cannot record work");
}

std::unique_ptr<RecordedWork> Backend::end_recording() {
    fail(name(), ": this backend cannot record work");
}

}  // namespace folio
