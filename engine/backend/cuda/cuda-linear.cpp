#include <cuda_runtime.h>

#include "engine/backend/cuda/cuda-backend.h"
#include "engine/common/error.h"
#include "kernels/elementwise.h"
#include "kernels/fp8.h"
#include "kernels/norm.h"

namespace folio::cuda {

namespace {

// The GEMV and GEMM inputs of a linear's norm.
kernels::LinearInput linear_input(LinearNorm norm) {
    return norm == LinearNorm::Rms     ? kernels::LinearInput::RmsNorm
           : norm == LinearNorm::Layer ? kernels::LinearInput::LayerNorm
                                       : kernels::LinearInput::Plain;
}

// Whether spec asks for the product alone, with at most a bias.
kernels::QuantizedFormat quantized_format(Quantization type) {
    return type == Quantization::Wint8   ? kernels::QuantizedFormat::Wint8
           : type == Quantization::Wint4 ? kernels::QuantizedFormat::Wint4
                                         : kernels::QuantizedFormat::Bf16;
}

bool plain_product(const LinearSpec& spec) {
    return spec.norm == LinearNorm::None && spec.activation == Activation::None &&
           spec.output == LinearOutputKind::Plain && spec.residual == nullptr;
}

}  // namespace

Tensor CudaBackend::linear(const Tensor& x_in, const Weight& w, const LinearSpec& spec) {
    check_linear(x_in, w, spec);
    if (w.type == Quantization::Fp8) {
        return fp8_linear(x_in, w, spec);
    }
    const char* op = "linear";
    const int64_t n = x_in.rows();
    const bool tensor_cores = !kernels::quantized_gemv_takes(n, w.n_in, w.n_out, quantized_format(w.type));
    // bfloat16 rows go to the tensor cores as they are; the GEMV and cublasSgemm read float32.
    const Tensor x = tensor_cores && w.type != Quantization::None ? x_in : widened(x_in, op);
    if (w.type == Quantization::None) {
        if (!plain_product(spec)) {
            return linear_in_parts(x, w, spec);
        }
        Tensor y = alloc_uninitialized({n, w.n_out}, op);  // [n, out]
        kernels::linear_f32(cublas_.get(), device_f32(x, op), device_f32(w.dense, op),
                            spec.bias ? device_f32(*spec.bias, op) : nullptr, y.f32(), n, w.n_in, w.n_out,
                            stream());
        return y;
    }
    // The activations and outputs the kernels fuse: GELU (tanh) or the residual add in the epilogue, SwiGLU
    // and RoPE-to-cache as paired outputs of a stored epilogue.
    const bool swiglu = spec.activation == Activation::Swiglu;
    const bool fused = spec.activation == Activation::None ||
                       (spec.residual == nullptr && (spec.activation == Activation::GeluTanh || swiglu));
    if (!fused) {
        return linear_in_parts(x, w, spec);
    }
    const kernels::LinearEpilogue epilogue = spec.residual != nullptr ? kernels::LinearEpilogue::Accumulate
                                             : spec.activation == Activation::GeluTanh
                                                 ? kernels::LinearEpilogue::GeluTanh
                                                 : kernels::LinearEpilogue::Store;
    const bool bf16_out = spec.bf16_output && tensor_cores && spec.residual == nullptr &&
                          spec.output == LinearOutputKind::Plain;
    if (bf16_out && !swiglu && w.type == Quantization::Bf16) {
        return bf16_linear(x, w, spec, epilogue);
    }
    LinearInputSpec input{linear_input(spec.norm)};
    if (spec.norm != LinearNorm::None) {
        input.norm_w = device_f32(*spec.norm_w, op);
        input.eps = spec.eps;
    }
    if (spec.norm == LinearNorm::Layer) {
        input.norm_b = device_f32(*spec.norm_b, op);
    }
    if (bf16_out && swiglu && spec.bias == nullptr) {
        // The product in bfloat16 as cuBLASLt writes it, gated into bfloat16 rows that the next product reads
        // as they are.
        activate();
        const int64_t n_y = w.n_out / 2;
        Tensor y = alloc_uninitialized({n, n_y}, op, ScalarType::BF16);  // [n, out / 2]
        kernels::QuantizedLinearArgs args =
            linear_args(w, nullptr, n, epilogue, input, {kernels::LinearOutput::Swiglu, {}});
        if (x.dtype == ScalarType::BF16) {
            args.x_bf16 = static_cast<const uint16_t*>(device_data(x, op));
        } else {
            args.x = device_f32(x, op);
        }
        args.y_bf16 = y.bf16();
        run_linear(args);
        return y;
    }
    if (spec.output == LinearOutputKind::RopeToCache && spec.rope_to_cache.k_cache != nullptr &&
        spec.rope_to_cache.k_cache->dtype == ScalarType::Q8) {
        // A head's levels need its largest value, which no product epilogue sees whole: the product, then the
        // heads to the cache.
        const RopeToCache& r = spec.rope_to_cache;
        Tensor qkv = alloc_uninitialized({n, w.n_out}, op);  // [n, (n_head + 2 n_kv_head) * head_dim]
        quantized_linear(x, w, spec.bias, qkv, epilogue, input, {kernels::LinearOutput::Plain, {}});
        return rope_qkv_to_cache(qkv, *r.positions, *r.slots, *r.rope, *r.k_cache, *r.v_cache);
    }
    if (spec.output == LinearOutputKind::RopeToCache) {
        const RopeToCache& r = spec.rope_to_cache;
        LinearOutputSpec output{
            kernels::LinearOutput::RopeToCache,
            rope_cache_args(w.n_out, *r.positions, *r.slots, *r.rope, *r.k_cache, *r.v_cache, op)};
        // [n, n_head, head_dim]
        Tensor q = alloc_uninitialized({n, output.rope.n_head, output.rope.head_dim}, op);
        output.rope.q_out = q.f32();
        quantized_linear(x, w, spec.bias, q, epilogue, input, output);
        return q;
    }
    if (spec.residual != nullptr) {
        device_f32(*spec.residual, op);
        quantized_linear(x, w, spec.bias, *spec.residual, epilogue, input);
        return *spec.residual;
    }
    // [n, out], or [n, out / 2] for SwiGLU
    Tensor y = alloc_uninitialized({n, swiglu ? w.n_out / 2 : w.n_out}, op);
    quantized_linear(x, w, spec.bias, y, epilogue, input,
                     {swiglu ? kernels::LinearOutput::Swiglu : kernels::LinearOutput::Plain, {}});
    return y;
}

Tensor CudaBackend::bf16_linear(const Tensor& x, const Weight& w, const LinearSpec& spec,
                                kernels::LinearEpilogue epilogue) {
    const char* op = "linear";
    activate();
    const int64_t n = x.rows(), n_in = w.n_in, n_out = w.n_out;
    Tensor bias;  // [n_out] bfloat16
    if (spec.bias != nullptr) {
        bias = alloc_uninitialized({n_out}, op, ScalarType::BF16);
        kernels::round_to_bf16(device_f32(*spec.bias, op), bias.bf16(), n_out, stream());
    }
    Tensor input = x;  // [n, n_in] bfloat16
    if (x.dtype != ScalarType::BF16) {
        input = alloc_uninitialized({n, n_in}, op, ScalarType::BF16);
        if (spec.norm == LinearNorm::Layer) {
            kernels::layer_norm_bf16(device_f32(x, op), device_f32(*spec.norm_w, op),
                                     device_f32(*spec.norm_b, op), input.bf16(), n, n_in, spec.eps, stream());
        } else if (spec.norm == LinearNorm::Rms) {
            kernels::rms_norm_bf16(device_f32(x, op), device_f32(*spec.norm_w, op), input.bf16(), n, n_in,
                                   spec.eps, stream());
        } else {
            kernels::round_to_bf16(device_f32(x, op), input.bf16(), n * n_in, stream());
        }
    }
    Tensor y = alloc_uninitialized({n, n_out}, op, ScalarType::BF16);  // [n, n_out]
    kernels::LtLinearArgs args = lt_linear_args(input.bf16(), w, n, epilogue, op);
    args.b_bf16 = bias.empty() ? nullptr : bias.bf16();
    args.y_bf16 = y.bf16();
    gemm_->linear_bf16(args, stream());
    return y;
}

Tensor CudaBackend::fp8_linear(const Tensor& x, const Weight& w, const LinearSpec& spec) {
    const char* op = "linear";
    const bool gelu = spec.activation == Activation::GeluTanh;
    if ((spec.activation != Activation::None && !(gelu && spec.residual == nullptr)) ||
        spec.output != LinearOutputKind::Plain) {
        return linear_in_parts(x, w, spec);
    }
    if (const std::string why = fp8_refusal(); !why.empty()) {
        fail(op, ": ", why);
    }
    activate();
    const int64_t n = x.rows(), n_in = w.n_in, n_out = w.n_out;
    const ScalarType out_type = spec.bf16_output ? ScalarType::BF16 : ScalarType::F32;
    if (n == 0) {  // no rows: nothing to round or multiply
        return spec.residual != nullptr ? *spec.residual : alloc_uninitialized({0, n_out}, op, out_type);
    }
    kernels::Fp8RowsArgs rows;
    if (x.dtype == ScalarType::BF16) {
        rows.x_bf16 = static_cast<const uint16_t*>(device_data(x, op));
    } else {
        rows.x = device_f32(x, op);
    }
    rows.norm = linear_input(spec.norm);
    if (spec.norm != LinearNorm::None) {
        rows.norm_w = device_f32(*spec.norm_w, op);
        rows.eps = spec.eps;
    }
    if (spec.norm == LinearNorm::Layer) {
        rows.norm_b = device_f32(*spec.norm_b, op);
    }
    rows.n_rows = n;
    rows.d = n_in;
    const Tensor levels = alloc_bytes(n * n_in, op);  // [n, n_in] E4M3
    Tensor scales = alloc_uninitialized({n}, op);     // [n]
    auto* q = reinterpret_cast<uint8_t*>(levels.f32());
    kernels::quantize_rows_fp8(rows, q, scales.f32(), stream());
    Tensor bias;  // [n_out] bfloat16
    if (spec.bias != nullptr) {
        bias = alloc_uninitialized({n_out}, op, ScalarType::BF16);
        kernels::round_to_bf16(device_f32(*spec.bias, op), bias.bf16(), n_out, stream());
    }
    kernels::LtLinearArgs args;
    args.x_fp8 = q;
    args.w_fp8 = static_cast<const uint8_t*>(device_weights(w, op));
    args.x_scales = scales.f32();
    args.w_scales = device_f32(w.scales, op);
    args.b_bf16 = bias.empty() ? nullptr : bias.bf16();
    args.n = n;
    args.n_in = n_in;
    args.n_out = n_out;
    args.ld_y = n_out;
    args.epilogue = spec.residual != nullptr ? kernels::LinearEpilogue::Accumulate
                    : gelu                   ? kernels::LinearEpilogue::GeluTanh
                                             : kernels::LinearEpilogue::Store;
    if (spec.residual != nullptr) {
        args.y = device_f32(*spec.residual, op);
        gemm_->linear_fp8(args, stream());
        return *spec.residual;
    }
    Tensor y = alloc_uninitialized({n, n_out}, op, out_type);  // [n, n_out]
    if (spec.bf16_output) {
        args.y_bf16 = y.bf16();
    } else {
        args.y = y.f32();
    }
    gemm_->linear_fp8(args, stream());
    return y;
}

Tensor CudaBackend::widened(const Tensor& t, const char* op) {
    if (t.dtype != ScalarType::BF16) {
        return t;
    }
    Tensor y = alloc_uninitialized(t.shape, op);
    kernels::widen_bf16(static_cast<const uint16_t*>(device_data(t, op)), y.f32(), t.n_elements(), stream());
    return y;
}

int64_t CudaBackend::scratch_piece_bytes(int64_t n_bytes) {
    constexpr int64_t kAlign = 256;
    return (n_bytes + kAlign - 1) / kAlign * kAlign;
}

kernels::LtLinearArgs CudaBackend::lt_linear_args(const uint16_t* x, const Weight& w, int64_t n,
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

kernels::RopeCacheArgs CudaBackend::rope_cache_args(int64_t n_qkv, const Tensor& positions,
                                                    const Tensor& slots, const RopeParams& rope,
                                                    Tensor& k_cache, Tensor& v_cache, const char* op) {
    kernels::RopeCacheArgs a;
    a.positions = device_i32(positions, op);
    a.slots = device_i32(slots, op);
    a.inv_freq = device_f32(rope.inv_freq, op);
    a.pair_axis = device_i32(rope.pair_axis, op);
    a.n_axes = rope.n_axes;
    a.k_cache = device_data(k_cache, op);
    a.v_cache = device_data(v_cache, op);
    a.bf16_cache = k_cache.dtype == ScalarType::BF16;
    a.q8_cache = k_cache.dtype == ScalarType::Q8;
    if (a.q8_cache) {
        a.k_scales = k_cache.q8_scales();
        a.v_scales = v_cache.q8_scales();
    }
    a.n_kv_head = k_cache.shape[1];
    a.head_dim = k_cache.shape[2];
    a.n_head = n_qkv / a.head_dim - 2 * a.n_kv_head;
    a.n_slots = k_cache.shape[0];
    return a;
}

const void* CudaBackend::device_weights(const Weight& w, const char* op) {
    if (dynamic_cast<const DeviceBuffer*>(w.data.get()) == nullptr) {
        fail(op, ": ", quantization_name(w.type), " w [", w.n_out, ", ", w.n_in,
             "] is not in this backend's device memory");
    }
    return static_cast<const std::byte*>(w.data->data()) + w.data_offset;
}

void CudaBackend::quantized_linear(const Tensor& x, const Weight& w, const Tensor* b, Tensor& y,
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

kernels::QuantizedLinearArgs CudaBackend::linear_args(const Weight& w, const Tensor* b, int64_t n,
                                                      kernels::LinearEpilogue epilogue,
                                                      const LinearInputSpec& input,
                                                      const LinearOutputSpec& output) {
    kernels::QuantizedLinearArgs args;
    args.format = quantized_format(w.type);
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
