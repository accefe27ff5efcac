#include <cuda_runtime.h>

#include "cuda-backend.h"
#include "elementwise.h"
#include "error.h"
#include "norm.h"

namespace folio::cuda {

Tensor CudaBackend::linear(const Tensor& x, const Tensor& w, const Tensor* b) {
    check_linear(x, w, b);
    const int64_t n = x.rows(), in = x.row_size(), out = w.rows();
    Tensor y = alloc_uninitialized({n, out}, "linear");  // [n, out]
    kernels::linear_f32(cublas_.get(), device_f32(x, "linear"), device_f32(w, "linear"),
                        b ? device_f32(*b, "linear") : nullptr, y.f32(), n, in, out, stream());
    return y;
}

Tensor CudaBackend::linear(const Tensor& x, const QuantizedTensor& w, const Tensor* b) {
    check_linear(x, w, b);
    Tensor y = alloc_uninitialized({x.rows(), w.n_out}, "linear");  // [n, out]
    quantized_linear(x, w, b, y, kernels::LinearEpilogue::Store);
    return y;
}

Tensor CudaBackend::linear_gelu_tanh(const Tensor& x, const QuantizedTensor& w, const Tensor* b) {
    check_linear(x, w, b);
    Tensor y = alloc_uninitialized({x.rows(), w.n_out}, "linear_gelu_tanh");  // [n, out]
    quantized_linear(x, w, b, y, kernels::LinearEpilogue::GeluTanh);
    return y;
}

void CudaBackend::linear_add(Tensor& y, const Tensor& x, const QuantizedTensor& w, const Tensor* b) {
    check_linear_add(y, x, w, b);
    device_f32(y, "linear_add");
    quantized_linear(x, w, b, y, kernels::LinearEpilogue::Accumulate);
}

Tensor CudaBackend::linear_layer_norm(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b, float eps,
                                      const QuantizedTensor& w, const Tensor* b) {
    return layer_normed_linear(x, norm_w, norm_b, eps, w, b, kernels::LinearEpilogue::Store,
                               "linear_layer_norm");
}

Tensor CudaBackend::linear_layer_norm_gelu_tanh(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b,
                                                float eps, const QuantizedTensor& w, const Tensor* b) {
    return layer_normed_linear(x, norm_w, norm_b, eps, w, b, kernels::LinearEpilogue::GeluTanh,
                               "linear_layer_norm_gelu_tanh");
}

void CudaBackend::layer_norm_mlp_add(Tensor& x, const Tensor& norm_w, const Tensor& norm_b, float eps,
                                     const QuantizedTensor& w1, const Tensor* b1, const QuantizedTensor& w2,
                                     const Tensor* b2) {
    check_layer_norm_mlp(x, norm_w, norm_b, w1, b1, w2, b2);
    const int64_t n = x.rows(), d = x.row_size(), d_ff = w1.n_out;
    if (n <= kernels::kQuantizedGemvMaxRows || w1.type != Quantization::Bf16 ||
        w2.type != Quantization::Bf16) {
        Backend::layer_norm_mlp_add(x, norm_w, norm_b, eps, w1, b1, w2, b2);
        return;
    }
    const char* op = "layer_norm_mlp_add";
    activate();
    // bfloat16 pieces of scratch: the hidden values [n, d_ff], the normed input [n, d] and the first bias
    // [d_ff]
    const auto aligned = scratch_piece_bytes;
    const Tensor scratch = alloc_bytes(aligned(2 * n * d_ff) + aligned(2 * n * d) + aligned(2 * d_ff), op);
    auto* hidden = reinterpret_cast<uint16_t*>(scratch.f32());
    uint16_t* normed = hidden + aligned(2 * n * d_ff) / 2;
    uint16_t* bias = normed + aligned(2 * n * d) / 2;
    if (b1) {
        kernels::round_to_bf16(device_f32(*b1, op), bias, d_ff, stream());
    }
    kernels::layer_norm_bf16(device_f32(x, op), device_f32(norm_w, op), device_f32(norm_b, op), normed, n, d,
                             eps, stream());
    kernels::LtLinearArgs up = lt_linear_args(normed, w1, n, kernels::LinearEpilogue::GeluTanh, op);
    up.b_bf16 = b1 ? bias : nullptr;
    up.y_bf16 = hidden;
    gemm_->linear_bf16(up, stream());
    kernels::LtLinearArgs down = lt_linear_args(hidden, w2, n, kernels::LinearEpilogue::Accumulate, op);
    down.b = b2 ? device_f32(*b2, op) : nullptr;
    down.y = x.f32();
    gemm_->linear_bf16(down, stream());
}

int64_t CudaBackend::scratch_piece_bytes(int64_t n_bytes) {
    constexpr int64_t kAlign = 256;
    return (n_bytes + kAlign - 1) / kAlign * kAlign;
}

kernels::LtLinearArgs CudaBackend::lt_linear_args(const uint16_t* x, const QuantizedTensor& w, int64_t n,
                                                  kernels::LinearEpilogue epilogue, const char* op) {
    kernels::LtLinearArgs a;
    a.x = x;
    a.w = static_cast<const uint16_t*>(device_weights(w, op));
    a.n = n;
    a.n_in = w.n_in;
    a.n_out = w.n_out;
    a.ld_y = w.n_out;
    a.epilogue = epilogue;
    return a;
}

Tensor CudaBackend::linear_rms_norm(const Tensor& x, const Tensor& norm_w, float eps,
                                    const QuantizedTensor& w, const Tensor* b) {
    check_rms_norm(x, norm_w);
    check_linear(x, w, b);
    Tensor y = alloc_uninitialized({x.rows(), w.n_out}, "linear_rms_norm");  // [n, out]
    quantized_linear(x, w, b, y, kernels::LinearEpilogue::Store,
                     {kernels::LinearInput::RmsNorm, device_f32(norm_w, "linear_rms_norm"), eps});
    return y;
}

Tensor CudaBackend::linear_rms_norm_swiglu(const Tensor& x, const Tensor& norm_w, float eps,
                                           const QuantizedTensor& w, const Tensor* b) {
    check_rms_norm(x, norm_w);
    check_linear_swiglu(x, w, b);
    Tensor y = alloc_uninitialized({x.rows(), w.n_out / 2}, "linear_rms_norm_swiglu");  // [n, out / 2]
    quantized_linear(x, w, b, y, kernels::LinearEpilogue::Store,
                     {kernels::LinearInput::RmsNorm, device_f32(norm_w, "linear_rms_norm_swiglu"), eps},
                     {kernels::LinearOutput::Swiglu, {}});
    return y;
}

void CudaBackend::rms_norm_mlp_add(Tensor& x, const Tensor& norm_w, float eps, const QuantizedTensor& w1,
                                   const Tensor* b1, const QuantizedTensor& w2, const Tensor* b2) {
    check_rms_norm_mlp(x, norm_w, w1, b1, w2, b2);
    const int64_t n = x.rows();
    if (n <= kernels::kQuantizedGemvMaxRows || b1 != nullptr) {
        Backend::rms_norm_mlp_add(x, norm_w, eps, w1, b1, w2, b2);
        return;
    }
    const char* op = "rms_norm_mlp_add";
    activate();
    const Tensor hidden = alloc_bytes(2 * n * (w1.n_out / 2), op);  // [n, d_ff] bfloat16
    auto* hidden_bf16 = reinterpret_cast<uint16_t*>(hidden.f32());
    kernels::QuantizedLinearArgs up = linear_args(
        w1, nullptr, n, kernels::LinearEpilogue::Store,
        {kernels::LinearInput::RmsNorm, device_f32(norm_w, op), eps}, {kernels::LinearOutput::Swiglu, {}});
    up.x = device_f32(x, op);
    up.y_bf16 = hidden_bf16;
    run_linear(up);
    kernels::QuantizedLinearArgs down = linear_args(w2, b2, n, kernels::LinearEpilogue::Accumulate);
    down.x_bf16 = hidden_bf16;
    down.y = x.f32();
    run_linear(down);
}

Tensor CudaBackend::linear_rms_norm_rope_qkv_to_cache(const Tensor& x, const Tensor& norm_w, float eps,
                                                      const QuantizedTensor& w, const Tensor* b,
                                                      const Tensor& positions, const Tensor& slots,
                                                      const MropeParams& rope, Tensor& k_cache,
                                                      Tensor& v_cache) {
    check_rms_norm(x, norm_w);
    check_linear(x, w, b);
    check_rope_qkv_to_cache({x.rows(), w.n_out}, positions, slots, rope, k_cache, v_cache);
    const char* op = "linear_rms_norm_rope_qkv_to_cache";
    LinearOutputSpec output{kernels::LinearOutput::RopeToCache,
                            rope_cache_args(w.n_out, positions, slots, rope, k_cache, v_cache, op)};
    // [n, n_head, head_dim]
    Tensor q = alloc_uninitialized({x.rows(), output.rope.n_head, output.rope.head_dim}, op);
    output.rope.q_out = q.f32();
    quantized_linear(x, w, b, q, kernels::LinearEpilogue::Store,
                     {kernels::LinearInput::RmsNorm, device_f32(norm_w, op), eps}, output);
    return q;
}

kernels::RopeCacheArgs CudaBackend::rope_cache_args(int64_t n_qkv, const Tensor& positions,
                                                    const Tensor& slots, const MropeParams& rope,
                                                    Tensor& k_cache, Tensor& v_cache, const char* op) {
    kernels::RopeCacheArgs a;
    a.positions = device_i32(positions, op);
    a.slots = device_i32(slots, op);
    a.inv_freq = device_f32(rope.inv_freq, op);
    a.section0 = rope.section[0];
    a.section01 = rope.section[0] + rope.section[1];
    a.k_cache = device_data(k_cache, op);
    a.v_cache = device_data(v_cache, op);
    a.bf16_cache = k_cache.dtype == ScalarType::BF16;
    a.n_kv_head = k_cache.shape[1];
    a.head_dim = k_cache.shape[2];
    a.n_head = n_qkv / a.head_dim - 2 * a.n_kv_head;
    a.n_slots = k_cache.shape[0];
    return a;
}

Tensor CudaBackend::layer_normed_linear(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b,
                                        float eps, const QuantizedTensor& w, const Tensor* b,
                                        kernels::LinearEpilogue epilogue, const char* op) {
    check_layer_norm(x, norm_w, norm_b);
    check_linear(x, w, b);
    Tensor y = alloc_uninitialized({x.rows(), w.n_out}, op);  // [n, out]
    quantized_linear(x, w, b, y, epilogue,
                     {kernels::LinearInput::LayerNorm, device_f32(norm_w, op), eps, device_f32(norm_b, op)});
    return y;
}

const void* CudaBackend::device_weights(const QuantizedTensor& w, const char* op) {
    if (dynamic_cast<const DeviceBuffer*>(w.data.get()) == nullptr) {
        fail(op, ": ", quantization_name(w.type), " w [", w.n_out, ", ", w.n_in,
             "] is not in this backend's device memory");
    }
    return w.data->data();
}

void CudaBackend::quantized_linear(const Tensor& x, const QuantizedTensor& w, const Tensor* b, Tensor& y,
                                   kernels::LinearEpilogue epilogue, const LinearInputSpec& input,
                                   const LinearOutputSpec& output) {
    kernels::QuantizedLinearArgs args = linear_args(w, b, x.rows(), epilogue, input, output);
    if (x.dtype == ScalarType::BF16) {
        args.x_bf16 = static_cast<const uint16_t*>(device_data(x, "linear"));
    } else {
        args.x = device_f32(x, "linear");
    }
    args.y = y.f32();
    run_linear(args);
}

kernels::QuantizedLinearArgs CudaBackend::linear_args(const QuantizedTensor& w, const Tensor* b, int64_t n,
                                                      kernels::LinearEpilogue epilogue,
                                                      const LinearInputSpec& input,
                                                      const LinearOutputSpec& output) {
    kernels::QuantizedLinearArgs args;
    args.format = w.type == Quantization::Bf16    ? kernels::QuantizedFormat::Bf16
                  : w.type == Quantization::Wint8 ? kernels::QuantizedFormat::Wint8
                                                  : kernels::QuantizedFormat::Wint4;
    args.q = static_cast<const int8_t*>(device_weights(w, "linear"));
    args.scales = device_f32(w.scales, "linear");
    args.b = b ? device_f32(*b, "linear") : nullptr;
    args.n = n;
    args.n_in = w.n_in;
    args.n_out = w.n_out;
    args.group_size = w.group_size;
    args.epilogue = epilogue;
    args.input = input.input;
    args.output = output.output;
    args.rope = output.rope;
    args.norm_w = input.norm_w;
    args.eps = input.eps;
    args.norm_b = input.norm_b;
    return args;
}

void CudaBackend::run_linear(kernels::QuantizedLinearArgs& args) {
    // [n_scratch]: the input transformed or in bfloat16, and dequantized weight rows
    const int64_t n_scratch = kernels::quantized_linear_scratch_floats(args);
    Tensor scratch;
    if (n_scratch > 0) {
        scratch = alloc_uninitialized({n_scratch}, "linear");
    }
    kernels::quantized_linear_f32(*gemm_, args, scratch.empty() ? nullptr : scratch.f32(), n_scratch,
                                  stream());
}

}  // namespace folio::cuda
