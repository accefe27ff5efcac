// The quantized linear layer's entry points: the GEMV for the few rows quantized_gemv_takes gives it
// (quantized-gemv.cu), otherwise the tensor cores: up to 64 rows with WINT8/WINT4 weights dequantized in
// registers (quantized-mma.cu), more rows with them dequantized to bfloat16 in blocks of rows for cuBLAS.
#include <algorithm>

#include <cuda_bf16.h>

#include "engine/common/error.h"
#include "kernels/cuda-check.h"
#include "kernels/elementwise.h"
#include "kernels/mma.cuh"
#include "kernels/norm.h"
#include "kernels/quantized-gemv.h"
#include "kernels/quantized-linear.h"
#include "kernels/quantized-mma.h"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kBlock = 256;

// One thread per weight, rounded to bfloat16.  w [n_rows, n_in] <- rows [row_begin, row_begin + n_rows) of
// the packed matrix
template <QuantizedFormat kType>
__global__ void dequantize_rows_bf16_kernel(const int8_t* q, const float* scales, __nv_bfloat16* w,
                                            int64_t row_begin, int64_t n_rows, int64_t n_in,
                                            int64_t group_size) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n_rows * n_in) {
        w[i] = __float2bfloat16_rn(
            weight_at<kType>(q, scales, row_begin + i / n_in, i % n_in, n_in, group_size));
    }
}

// The same, one thread per eight consecutive weights, loaded packed and stored as one 16-byte word: n_in a
// multiple of 8 and n_rows * n_in below 2^31.  w [n_rows, n_in] as 16-byte words
template <QuantizedFormat kType>
__global__ void dequantize_rows8_bf16_kernel(const int8_t* q, const float* scales, uint4* w,
                                             int64_t row_begin, int n_rows, int n_in, int64_t group_size) {
    const int per_row = n_in / 8;
    const int i = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
    if (i >= n_rows * per_row) {
        return;
    }
    const int r = i / per_row, c = (i - r * per_row) * 8;
    float v[8];
    unpack8<kType>(
        load_packed8<kType>(q, scales, row_begin + r, c, n_in, group_shift(group_size), evict_first_policy()),
        v);
    w[i] = uint4{pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]), pack_bf16(v[6], v[7])};
}

// One thread per value.  x [n] float32  ->  y [n] bfloat16, rounded to nearest even
__global__ void round_to_bf16_kernel(const float* x, __nv_bfloat16* y, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = __float2bfloat16_rn(x[i]);
    }
}

// The same, one thread per four values read and written together; x 16-byte and y 8-byte aligned.
__global__ void round_to_bf16_x4_kernel(const float4* __restrict__ x, uint2* __restrict__ y,
                                        int64_t n_quads) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n_quads) {
        const float4 v = x[i];
        const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
        y[i] = uint2{*reinterpret_cast<const uint32_t*>(&lo), *reinterpret_cast<const uint32_t*>(&hi)};
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

namespace {

// The input of a transformed as a.input says (RmsNorm or LayerNorm), as the GEMV reads it.  ->  y [a.n,
// a.n_in]
void transform_input(const QuantizedLinearArgs& a, float* y, cudaStream_t stream) {
    if (a.input == LinearInput::LayerNorm) {
        layer_norm_f32(a.x, a.norm_w, a.norm_b, y, a.n, a.n_in, a.eps, stream);
    } else {
        rms_norm_f32(a.x, a.norm_w, y, a.n, a.n_in, a.eps, stream);
    }
}

// The same rounded to bfloat16, as the tensor cores read it.  ->  y [a.n, a.n_in]
void transform_input(const QuantizedLinearArgs& a, __nv_bfloat16* y, cudaStream_t stream) {
    auto* bits = reinterpret_cast<uint16_t*>(y);
    if (a.input == LinearInput::LayerNorm) {
        layer_norm_bf16(a.x, a.norm_w, a.norm_b, bits, a.n, a.n_in, a.eps, stream);
    } else {
        rms_norm_bf16(a.x, a.norm_w, bits, a.n, a.n_in, a.eps, stream);
    }
}

// WINT4's columns per scale: a power of two of at least 8, so that each eight-column chunk of the GEMV and
// of the dequantization shares one scale and finds it by a shift (group_shift).
void check_group_size(const char* what, QuantizedFormat format, int64_t group_size) {
    if (format == QuantizedFormat::Wint4 && (group_size < 8 || (group_size & (group_size - 1)) != 0)) {
        fail(what, ": WINT4 groups of ", group_size, " columns, not a power of two of at least 8");
    }
}

// Floats of scratch that hold x in bfloat16, rounded up so that what follows starts 256-byte aligned.
int64_t bf16_activation_floats(int64_t n, int64_t n_in) {
    constexpr int64_t kAlignFloats = 64;
    return ((n * n_in + 1) / 2 + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

// Weight rows dequantized at once: all of them, or as many as fit 16 Mi bfloat16 values (at least one).
int64_t dequantize_block_rows(int64_t n_in, int64_t n_out) {
    constexpr int64_t kDequantizeValues = int64_t{16} << 20;
    return std::min(n_out, std::max<int64_t>(kDequantizeValues / std::max<int64_t>(n_in, 1), 1));
}

// Floats of scratch at its start that hold the input rounded to bfloat16: none where x_bf16 holds it.
int64_t input_scratch_floats(const QuantizedLinearArgs& a) {
    return a.x_bf16 != nullptr ? 0 : bf16_activation_floats(a.n, a.n_in);
}

// Floats of scratch before the product of a paired output on the tensor cores: the bfloat16 input, and the
// dequantized weight rows of WINT8/WINT4.
int64_t gemm_operand_floats(const QuantizedLinearArgs& a) {
    const int64_t activations = input_scratch_floats(a);
    if (a.format == QuantizedFormat::Bf16) {
        return activations;
    }
    return activations + bf16_activation_floats(dequantize_block_rows(a.n_in, a.n_out), a.n_in);
}

}  // namespace

bool quantized_gemv_takes(int64_t n, int64_t n_in, int64_t n_out, QuantizedFormat format) {
    if (n > kQuantizedGemvMaxRows) {
        return false;
    }
    if (format != QuantizedFormat::Bf16 && n >= 2 && n * n_in > 4096 && n_out >= 2048 &&
        quantized_mma_takes(n, n_in, n_out, format)) {
        return false;
    }
    return format == QuantizedFormat::Bf16 ? n == 1 || (n <= 4 && n_in <= 3072) : n <= 4 || n * n_in <= 8192;
}

int64_t quantized_linear_scratch_floats(const QuantizedLinearArgs& a) {
    if (quantized_gemv_takes(a.n, a.n_in, a.n_out, a.format)) {
        return a.input == LinearInput::Plain || gemv_takes_norm(a) ? 0 : a.n * a.n_in;
    }
    const int64_t product = a.output == LinearOutput::Plain ? 0
                            : a.y_bf16 != nullptr           ? bf16_activation_floats(a.n, a.n_out)
                                                            : a.n * a.n_out;
    return gemm_operand_floats(a) + product;
}

void round_to_bf16(const float* x, uint16_t* y_bits, int64_t n, cudaStream_t stream) {
    auto* y = reinterpret_cast<__nv_bfloat16*>(y_bits);
    const bool quads =
        n % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0;
    const int64_t n_threads = quads ? n / 4 : n;
    const auto n_blocks = static_cast<unsigned int>((n_threads + kBlock - 1) / kBlock);
    if (quads) {
        round_to_bf16_x4_kernel<<<n_blocks, kBlock, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                                 reinterpret_cast<uint2*>(y), n_threads);
    } else {
        round_to_bf16_kernel<<<n_blocks, kBlock, 0, stream>>>(x, y, n);
    }
    CUDA_CHECK(cudaGetLastError());
}

void dequantize_rows_bf16(QuantizedFormat format, const int8_t* q, const float* scales, uint16_t* w,
                          int64_t row_begin, int64_t n_rows, int64_t n_in, int64_t group_size,
                          cudaStream_t stream) {
    const int64_t n = n_rows * n_in;
    if (n == 0) {
        return;
    }
    check_group_size("dequantize_rows_bf16", format, group_size);
    auto* out = reinterpret_cast<__nv_bfloat16*>(w);
    const bool packed8 = format != QuantizedFormat::Bf16 && n_in % 8 == 0 && n < (int64_t{1} << 31) &&
                         reinterpret_cast<uintptr_t>(q) % 8 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    if (packed8) {
        const auto n_pieces = static_cast<unsigned int>(n / 8);
        const auto launch = [&](auto kernel) {
            kernel<<<(n_pieces + kBlock - 1) / kBlock, kBlock, 0, stream>>>(
                q, scales, reinterpret_cast<uint4*>(w), row_begin, static_cast<int>(n_rows),
                static_cast<int>(n_in), group_size);
        };
        if (format == QuantizedFormat::Wint8) {
            launch(dequantize_rows8_bf16_kernel<QuantizedFormat::Wint8>);
        } else {
            launch(dequantize_rows8_bf16_kernel<QuantizedFormat::Wint4>);
        }
        CUDA_CHECK(cudaGetLastError());
        return;
    }
    const auto n_blocks = static_cast<unsigned int>((n + kBlock - 1) / kBlock);
    if (format == QuantizedFormat::Bf16) {
        dequantize_rows_bf16_kernel<QuantizedFormat::Bf16>
            <<<n_blocks, kBlock, 0, stream>>>(q, scales, out, row_begin, n_rows, n_in, group_size);
    } else if (format == QuantizedFormat::Wint8) {
        dequantize_rows_bf16_kernel<QuantizedFormat::Wint8>
            <<<n_blocks, kBlock, 0, stream>>>(q, scales, out, row_begin, n_rows, n_in, group_size);
    } else {
        dequantize_rows_bf16_kernel<QuantizedFormat::Wint4>
            <<<n_blocks, kBlock, 0, stream>>>(q, scales, out, row_begin, n_rows, n_in, group_size);
    }
    CUDA_CHECK(cudaGetLastError());
}

namespace {

// The product of x_bf16 [a.n, a.n_in] and a's weights through cuBLAS, WINT8/WINT4 rows dequantized to
// bfloat16 into w_bf16 a block at a time, each block's output columns written by a GEMM with the epilogue
// fused.  ->  product [a.n, a.n_out] float32, or product_bf16 in bfloat16
void product_in_blocks(LtGemm& gemm, const QuantizedLinearArgs& a, const uint16_t* x_bf16, uint16_t* w_bf16,
                       float* product, uint16_t* product_bf16, cudaStream_t stream) {
    const int64_t block_rows =
        a.format == QuantizedFormat::Bf16 ? a.n_out : dequantize_block_rows(a.n_in, a.n_out);
    for (int64_t o = 0; o < a.n_out; o += block_rows) {
        LtLinearArgs block;
        block.x = x_bf16;
        block.w = w_bf16;  // rows [o, o + block.n_out) in bfloat16
        if (a.format == QuantizedFormat::Bf16) {
            block.w = reinterpret_cast<const uint16_t*>(a.q) + o * a.n_in;
        }
        block.b = a.b != nullptr ? a.b + o : nullptr;
        if (product_bf16 != nullptr) {
            block.y_bf16 = product_bf16 + o;
        } else {
            block.y = product + o;
        }
        block.n = a.n;
        block.n_in = a.n_in;
        block.n_out = std::min(block_rows, a.n_out - o);
        block.ld_y = a.n_out;
        block.epilogue = a.epilogue;
        if (a.format != QuantizedFormat::Bf16) {
            dequantize_rows_bf16(a.format, a.q, a.scales, w_bf16, o, block.n_out, a.n_in, a.group_size,
                                 stream);
        }
        gemm.linear_bf16(block, stream);
    }
}

}  // namespace

void quantized_linear_f32(LtGemm& gemm, const QuantizedLinearArgs& a, float* scratch, int64_t n_scratch,
                          cudaStream_t stream) {
    if (a.n == 0 || a.n_out == 0) {
        return;
    }
    check_group_size("quantized_linear_f32", a.format, a.group_size);
    if (a.output != LinearOutput::Plain && (a.n_out % 2 != 0 || a.epilogue != LinearEpilogue::Store)) {
        fail("quantized_linear_f32: a paired output needs an even n_out and a stored epilogue, got n_out ",
             a.n_out, " and epilogue ", static_cast<int>(a.epilogue));
    }
    if (a.output == LinearOutput::RopeToCache &&
        a.n_out != (a.rope.n_head + 2 * a.rope.n_kv_head) * a.rope.head_dim) {
        fail("quantized_linear_f32: ", a.n_out, " output rows for ", a.rope.n_head, " q and ",
             a.rope.n_kv_head, " k/v heads of ", a.rope.head_dim);
    }
    const bool tensor_cores = !quantized_gemv_takes(a.n, a.n_in, a.n_out, a.format);
    if (a.x_bf16 != nullptr && (!tensor_cores || a.input != LinearInput::Plain)) {
        fail("quantized_linear_f32: a bfloat16 input takes a plain input on the tensor cores, got ", a.n,
             " rows of ", a.n_in, " and input ", static_cast<int>(a.input));
    }
    if (a.y_bf16 != nullptr && (!tensor_cores || a.output != LinearOutput::Swiglu || a.b != nullptr)) {
        fail(
            "quantized_linear_f32: a bfloat16 output takes a SwiGLU output without a bias on the tensor "
            "cores, got ",
            a.n, " rows of ", a.n_in, ", output ", static_cast<int>(a.output),
            a.b != nullptr ? " and a bias" : "");
    }
    const int64_t needed = quantized_linear_scratch_floats(a);
    if (n_scratch < needed) {
        fail("quantized_linear_f32: scratch of ", n_scratch, " floats for ", a.n, " x ", a.n_in,
             " activations and ", a.n_out, " weight rows needs ", needed);
    }
    if (!tensor_cores) {
        if (a.input == LinearInput::Plain || gemv_takes_norm(a)) {
            launch_gemv(a, stream);
            return;
        }
        // The transformed input to scratch [a.n, a.n_in] first.
        QuantizedLinearArgs plain = a;
        transform_input(a, scratch, stream);
        plain.x = scratch;
        plain.input = LinearInput::Plain;
        launch_gemv(plain, stream);
        return;
    }
    // The input rounded to bfloat16 at the start of scratch (unless x_bf16 holds it), then the product: a few
    // rows with WINT8/WINT4 weights dequantized in registers (quantized-mma.cu), otherwise through cuBLAS.
    const uint16_t* x_bf16 = a.x_bf16;
    if (x_bf16 == nullptr) {
        auto* rounded = reinterpret_cast<__nv_bfloat16*>(scratch);
        if (a.input == LinearInput::Plain) {
            round_to_bf16(a.x, reinterpret_cast<uint16_t*>(rounded), a.n * a.n_in, stream);
        } else {
            transform_input(a, rounded, stream);
        }
        x_bf16 = reinterpret_cast<const uint16_t*>(rounded);
    }
    auto* w_bf16 = reinterpret_cast<uint16_t*>(scratch + input_scratch_floats(a));
    // [a.n, a.n_out]: the product itself, or before its paired output (in bfloat16 for a bfloat16 output)
    float* product = a.output != LinearOutput::Plain ? scratch + gemm_operand_floats(a) : a.y;
    auto* product_bf16 = a.y_bf16 != nullptr ? reinterpret_cast<uint16_t*>(product) : nullptr;
    if (quantized_mma_takes(a.n, a.n_in, a.n_out, a.format) && quantized_mma_aligned(a, x_bf16)) {
        quantized_mma_bf16(a, x_bf16, product_bf16 != nullptr ? nullptr : product, product_bf16, stream);
    } else {
        product_in_blocks(gemm, a, x_bf16, w_bf16, product, product_bf16, stream);
    }
    if (a.output == LinearOutput::Swiglu && product_bf16 != nullptr) {
        swiglu_bf16(product_bf16, a.y_bf16, a.n, a.n_out / 2, stream);
    } else if (a.output == LinearOutput::Swiglu) {
        swiglu_f32(product, a.y, a.n, a.n_out / 2, stream);
    } else if (a.output == LinearOutput::RopeToCache) {
        rope_qkv_to_cache_f32(product, a.rope, a.n, stream);
    }
}

}  // namespace folio::kernels
