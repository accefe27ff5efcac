// The CUDA backend's mixture-of-experts operations: routing, products with each row's expert, and the
// weighted sum of the experts' outputs, all on the stream so that decode steps record.
#include "engine/backend/cuda/cuda-backend.h"
#include "kernels/moe.h"

namespace folio::cuda {

namespace {

kernels::QuantizedFormat packed_format(Quantization type) {
    return type == Quantization::Bf16    ? kernels::QuantizedFormat::Bf16
           : type == Quantization::Wint8 ? kernels::QuantizedFormat::Wint8
                                         : kernels::QuantizedFormat::Wint4;
}

}  // namespace

kernels::ExpertWeights CudaBackend::expert_weights(const Weight& w, int64_t n_rows, const char* op) {
    kernels::ExpertWeights ew;
    ew.n_in = w.n_in;
    ew.group_size = w.group_size;
    ew.n_rows = n_rows;
    ew.n_experts = w.n_out / n_rows;
    if (w.type == Quantization::Fp8) {
        fail(op, ": FP8 experts are not supported");
    }
    if (w.type == Quantization::None) {
        ew.dense = device_f32(w.dense, op);
    } else {
        ew.format = packed_format(w.type);
        ew.q = static_cast<const int8_t*>(device_weights(w, op));
        ew.scales = w.scales.n_elements() > 0 ? device_f32(w.scales, op) : nullptr;
    }
    return ew;
}

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
    kernels::expert_rows_linear_f32(device_f32(x, op), expert_weights(w, n_rows, op), device_i32(experts, op),
                                    y.f32(), shape[0], x_step, act == Activation::Swiglu, stream());
    return y;
}

void CudaBackend::add_expert_outputs(Tensor& x, const Tensor& src, const Tensor& weights) {
    const char* op = "add_expert_outputs";
    check_add_expert_outputs(x, src, weights);
    kernels::add_expert_outputs_f32(device_f32(x, op), device_f32(src, op), device_f32(weights, op), x.rows(),
                                    weights.shape[1], x.row_size(), stream());
}

void CudaBackend::add_routed_experts(Tensor& x, const Tensor& input, const ExpertLayer& layer) {
    const char* op = "add_routed_experts";
    const int64_t d_ff = check_routed_experts(x, input, layer);
    const int64_t n = x.rows(), d = x.row_size(), n_experts = layer.router.shape[0];
    const bool has_shared = !layer.shared_gate_up.empty();
    const auto same = [](const Weight& a, const Weight& b) {
        return a.type == b.type && (a.type != Quantization::Wint4 || a.group_size == b.group_size);
    };
    const bool same_format =
        !has_shared || (same(layer.shared_gate_up, layer.gate_up) && same(layer.shared_down, layer.down));
    if (!same_format || n > kernels::kRoutedExpertsMaxRows || n == 0) {
        Backend::add_routed_experts(x, input, layer);
        return;
    }
    // With a norm, the routing launch normalizes the rows (folded into it where it can) into xn, which the
    // expert launches read.
    const bool normed = !layer.norm_w.empty();
    const Tensor xn = normed ? alloc_uninitialized({n, d}, op) : input;  // [n, d]
    kernels::RoutingNorm norm;
    if (normed) {
        norm = {device_f32(layer.norm_w, op), layer.norm_eps, xn.f32()};
    }
    ExpertRouting routing{alloc_uninitialized({n, layer.k}, op, ScalarType::I32),
                          alloc_uninitialized({n, layer.k}, op)};   // [n, k]
    const Tensor logits = alloc_uninitialized({n, n_experts}, op);  // [n, n_experts]
    kernels::route_experts_linear_f32(
        device_f32(input, op), device_f32(layer.router, op), device_f32(layer.score_bias, op), logits.f32(),
        static_cast<int32_t*>(routing_counters_.get()), routing.experts.i32(), routing.weights.f32(), n, d,
        static_cast<int>(n_experts), layer.k, layer.norm_min, norm, stream());
    const kernels::ExpertWeights gate_up = expert_weights(layer.gate_up, 2 * d_ff, op);
    const kernels::ExpertWeights down = expert_weights(layer.down, d, op);
    kernels::ExpertWeights shared_gate_up, shared_down;
    if (has_shared) {
        shared_gate_up = expert_weights(layer.shared_gate_up, layer.shared_gate_up.n_out, op);
        shared_down = expert_weights(layer.shared_down, d, op);
    }
    const int64_t d_shared = layer.shared_gate_up.n_out / 2;
    // [n, k d_ff + d_shared]: each row's experts' SwiGLU outputs, then the shared experts'
    const Tensor h = alloc_uninitialized({n, layer.k * d_ff + d_shared}, op);
    // Without a norm the shared columns read xn before the routing launch ends (the routing does not write
    // it); with one, the routing writes xn.
    kernels::expert_swiglu_rows_f32(device_f32(xn, op), gate_up, shared_gate_up, routing.experts.i32(),
                                    h.f32(), n, layer.k, normed, stream());
    kernels::add_expert_down_f32(device_f32(x, op), h.f32(), down, shared_down, routing.experts.i32(),
                                 routing.weights.f32(), n, layer.k, stream());
}

ExpertRouting CudaBackend::merge_expert_routings(const ExpertRouting& a, const ExpertRouting& b,
                                                 const Tensor& use_b, int b_first) {
    const char* op = "merge_expert_routings";
    check_merge_expert_routings(a, b, use_b, b_first);
    const int64_t n = a.experts.shape[0], k = a.experts.shape[1];
    ExpertRouting out{alloc_uninitialized({n, k}, op, ScalarType::I32), alloc_uninitialized({n, k}, op)};
    kernels::merge_expert_routings_f32(device_i32(a.experts, op), device_f32(a.weights, op),
                                       device_i32(b.experts, op), device_f32(b.weights, op),
                                       device_i32(use_b, op), b_first, out.experts.i32(), out.weights.f32(),
                                       n, k, stream());
    return out;
}

ExpertOrder CudaBackend::order_by_expert(const Tensor& experts, int n_experts) {
    const char* op = "order_by_expert";
    check_order_by_expert(experts, n_experts);
    const int64_t n_pairs = experts.n_elements();
    ExpertOrder out{alloc_uninitialized({n_experts + 1}, op, ScalarType::I32),
                    alloc_uninitialized({n_pairs}, op, ScalarType::I32),
                    alloc_uninitialized({n_pairs}, op, ScalarType::I32)};
    Tensor cursor = alloc_uninitialized({n_experts}, op, ScalarType::I32);
    kernels::order_by_expert_i32(device_i32(experts, op), n_pairs, experts.shape[1], n_experts,
                                 out.offsets.i32(), out.rows.i32(), out.slots.i32(), cursor.i32(), stream());
    return out;
}

void CudaBackend::grouped_expert_linear(const Tensor& x, const Weight& w, const Tensor& offsets, int first,
                                        int64_t n_rows, Activation act, Tensor& y) {
    const char* op = "grouped_expert_linear";
    check_grouped_expert_linear(x, w, offsets, first, n_rows, act, y);
    if (w.type == Quantization::None) {
        // Float32 weights stay float32, as every product with them does: each expert's rows through the
        // linear layer, at the cost of reading the offsets back.
        const std::vector<int32_t> at = download_i32(offsets);
        const int64_t n_w = w.n_out / n_rows, d = x.row_size(), n_y = y.row_size();
        LinearSpec spec;
        spec.activation = act;
        for (int64_t j = 0; j < n_w; ++j) {
            const int64_t begin = at[static_cast<size_t>(first + j)],
                          end = at[static_cast<size_t>(first + j + 1)];
            if (begin < 0 || end < begin || end > x.rows()) {
                fail(op, ": expert ", first + j, "'s rows [", begin, ", ", end, ") outside ", x.rows(),
                     " rows");
            }
            if (begin < end) {
                const Tensor out =
                    linear(x.view(begin * d, {end - begin, d}), weight_rows(w, j * n_rows, n_rows),
                           spec);  // [end - begin, n_y]
                CUDA_CHECK(cudaMemcpyAsync(device_f32(y, op) + begin * n_y, device_f32(out, op),
                                           static_cast<size_t>((end - begin) * n_y) * sizeof(float),
                                           cudaMemcpyDeviceToDevice, stream()));
            }
        }
        return;
    }
    kernels::grouped_expert_linear_f32(device_f32(x, op), expert_weights(w, n_rows, op),
                                       device_i32(offsets, op), first, device_f32(y, op), x.rows(),
                                       act == Activation::Swiglu, stream());
}

}  // namespace folio::cuda
