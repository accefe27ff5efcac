#include "backend.h"

#include "backend-checks.h"
#include "error.h"

namespace folio {

namespace {

class ReadyReadback final : public TokenReadback {
public:
    explicit ReadyReadback(std::vector<int32_t> values) : values_(std::move(values)) {}
    std::vector<int32_t> wait() override { return values_; }

private:
    std::vector<int32_t> values_;
};

}  // namespace

std::unique_ptr<TokenReadback> ready_readback(std::vector<int32_t> values) {
    return std::make_unique<ReadyReadback>(std::move(values));
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

Tensor Backend::linear_gelu_tanh(const Tensor& x, const QuantizedTensor& w, const Tensor* b) {
    Tensor y = linear(x, w, b);
    gelu_tanh(y);
    return y;
}

void Backend::linear_add(Tensor& y, const Tensor& x, const QuantizedTensor& w, const Tensor* b) {
    check_linear_add(y, x, w, b);
    add(y, linear(x, w, b));
}

Tensor Backend::linear_layer_norm(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b, float eps,
                                  const QuantizedTensor& w, const Tensor* b) {
    return linear(layer_norm(x, norm_w, norm_b, eps), w, b);
}

Tensor Backend::linear_layer_norm_gelu_tanh(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b,
                                            float eps, const QuantizedTensor& w, const Tensor* b) {
    return linear_gelu_tanh(layer_norm(x, norm_w, norm_b, eps), w, b);
}

void Backend::layer_norm_mlp_add(Tensor& x, const Tensor& norm_w, const Tensor& norm_b, float eps,
                                 const QuantizedTensor& w1, const Tensor* b1, const QuantizedTensor& w2,
                                 const Tensor* b2) {
    check_layer_norm_mlp(x, norm_w, norm_b, w1, b1, w2, b2);
    linear_add(x, linear_layer_norm_gelu_tanh(x, norm_w, norm_b, eps, w1, b1), w2, b2);
}

Tensor Backend::linear_rms_norm(const Tensor& x, const Tensor& norm_w, float eps, const QuantizedTensor& w,
                                const Tensor* b) {
    return linear(rms_norm(x, norm_w, eps), w, b);
}

Tensor Backend::linear_rms_norm_swiglu(const Tensor& x, const Tensor& norm_w, float eps,
                                       const QuantizedTensor& w, const Tensor* b) {
    check_linear_swiglu(x, w, b);
    return swiglu(linear_rms_norm(x, norm_w, eps, w, b));
}

void Backend::rms_norm_mlp_add(Tensor& x, const Tensor& norm_w, float eps, const QuantizedTensor& w1,
                               const Tensor* b1, const QuantizedTensor& w2, const Tensor* b2) {
    check_rms_norm_mlp(x, norm_w, w1, b1, w2, b2);
    linear_add(x, linear_rms_norm_swiglu(x, norm_w, eps, w1, b1), w2, b2);
}

Tensor Backend::linear_rms_norm_rope_qkv_to_cache(const Tensor& x, const Tensor& norm_w, float eps,
                                                  const QuantizedTensor& w, const Tensor* b,
                                                  const Tensor& positions, const Tensor& slots,
                                                  const MropeParams& rope, Tensor& k_cache, Tensor& v_cache) {
    return rope_qkv_to_cache(linear_rms_norm(x, norm_w, eps, w, b), positions, slots, rope, k_cache, v_cache);
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

void Backend::layer_norm_attention_add(Tensor& x, const NormAttentionWeights& w, const Tensor& cos,
                                       const Tensor& sin, std::span<const AttentionSegment> segments,
                                       float scale, AttentionPrecision precision) {
    check_layer_norm_attention(x, w, cos, sin, segments);
    const int64_t n = x.rows(), d = x.row_size();
    const Tensor qkv = linear_layer_norm(x, w.norm_w, w.norm_b, w.eps, w.qkv, w.qkv_b);  // [n, 3 d]
    const Tensor a = rope_attention(qkv.view(0, {n, 3, w.n_head, d / w.n_head}), cos, sin, segments, scale,
                                    precision);  // [n, n_head, d / n_head]
    linear_add(x, a.view(0, {n, d}), w.out, w.out_b);
}

ScalarType Backend::kv_dtype(AttentionPrecision) const {
    return ScalarType::F32;
}

Tensor Backend::alloc_kv(std::vector<int64_t> shape, ScalarType dtype) {
    check_kv_dtype(name(), dtype, kv_dtype(AttentionPrecision::Bf16));
    return alloc(std::move(shape));
}

Tensor Backend::upload_kv(std::span<const float> values, std::vector<int64_t> shape, ScalarType dtype) {
    check_kv_dtype(name(), dtype, kv_dtype(AttentionPrecision::Bf16));
    return upload(values, std::move(shape));
}

void Backend::begin_recording() {
    fail(name(), ": this backend cannot record work");
}

std::unique_ptr<RecordedWork> Backend::end_recording() {
    fail(name(), ": this backend cannot record work");
}

}  // namespace folio
