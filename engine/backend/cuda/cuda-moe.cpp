// The CUDA backend's mixture-of-experts operations: routing, products with each row's expert, and the
// weighted sum of the experts' outputs, all on the stream so that decode steps record.
#include "engine/backend/cuda/cuda-backend.h"
#include "kernels/moe.h"

namespace folio::cuda {

ExpertRouting CudaBackend::route_experts(const Tensor& logits, const Tensor& score_bias, int k,
                                         float norm_min) {
    const char* op = "route_experts";
    check_route_experts(logits, score_bias, k, norm_min);
    const int64_t n = logits.rows();
    ExpertRouting out{alloc_uninitialized({n, k}, op, ScalarType::I32), alloc_uninitialized({n, k}, op)};
    kernels::route_experts_f32(device_f32(logits, op), device_f32(score_bias, op), out.experts.i32(),
                               out.weights.f32(), n, static_cast<int>(logits.shape[1]), k, norm_min,
                               stream());
    return out;
}

Tensor CudaBackend::expert_rows_linear(const Tensor& x, const Weight& w, const Tensor& experts,
                                       int64_t n_rows, int64_t x_step, Activation act) {
    const char* op = "expert_rows_linear";
    const std::vector<int64_t> shape = check_expert_rows_linear(x, w, experts, n_rows, x_step, act);
    Tensor y = alloc_uninitialized(shape, op);  // [m, n_rows or n_rows / 2]
    kernels::ExpertWeights ew;
    ew.n_in = w.n_in;
    ew.group_size = w.group_size;
    ew.n_rows = n_rows;
    ew.n_experts = w.n_out / n_rows;
    if (w.type == Quantization::None) {
        ew.dense = device_f32(w.dense, op);
    } else {
        ew.format = w.type == Quantization::Bf16    ? kernels::QuantizedFormat::Bf16
                    : w.type == Quantization::Wint8 ? kernels::QuantizedFormat::Wint8
                                                    : kernels::QuantizedFormat::Wint4;
        ew.q = static_cast<const int8_t*>(device_weights(w, op));
        ew.scales = w.scales.n_elements() > 0 ? device_f32(w.scales, op) : nullptr;
    }
    kernels::expert_rows_linear_f32(device_f32(x, op), ew, device_i32(experts, op), y.f32(), shape[0], x_step,
                                    act == Activation::Swiglu, stream());
    return y;
}

void CudaBackend::add_expert_outputs(Tensor& x, const Tensor& src, const Tensor& weights) {
    const char* op = "add_expert_outputs";
    check_add_expert_outputs(x, src, weights);
    kernels::add_expert_outputs_f32(device_f32(x, op), device_f32(src, op), device_f32(weights, op), x.rows(),
                                    weights.shape[1], x.row_size(), stream());
}

}  // namespace folio::cuda
