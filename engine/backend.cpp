#include "backend.h"

#include "backend-checks.h"
#include "error.h"

namespace folio {

int64_t total_size(std::span<const std::span<const float>> parts) {
    int64_t n = 0;
    for (const std::span<const float> part : parts) {
        n += static_cast<int64_t>(part.size());
    }
    return n;
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

Tensor Backend::linear_rms_norm(const Tensor& x, const Tensor& norm_w, float eps, const QuantizedTensor& w,
                                const Tensor* b) {
    return linear(rms_norm(x, norm_w, eps), w, b);
}

Tensor Backend::linear_rms_norm_swiglu(const Tensor& x, const Tensor& norm_w, float eps,
                                       const QuantizedTensor& w, const Tensor* b) {
    check_linear_swiglu(x, w, b);
    return swiglu(linear_rms_norm(x, norm_w, eps, w, b));
}

Tensor Backend::linear_rms_norm_rope_qkv_to_cache(const Tensor& x, const Tensor& norm_w, float eps,
                                                  const QuantizedTensor& w, const Tensor* b,
                                                  const Tensor& positions, const Tensor& slots,
                                                  const MropeParams& rope, Tensor& k_cache, Tensor& v_cache) {
    return rope_qkv_to_cache(linear_rms_norm(x, norm_w, eps, w, b), positions, slots, rope, k_cache, v_cache);
}

void Backend::begin_recording() {
    fail(name(), ": this backend cannot record work");
}

std::unique_ptr<RecordedWork> Backend::end_recording() {
    fail(name(), ": this backend cannot record work");
}

}  // namespace folio
