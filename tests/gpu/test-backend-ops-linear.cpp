// The CUDA backend's linear layers (every weight format, epilogue, norm and gating) and the fused
// norm-MLP blocks against the CPU reference backend; skipped where no CUDA device is present.
#include "backend-ops-fixture.h"
#include "kernels/quantized-mma.h"

namespace folio::backend_ops_test {
namespace {

TEST_F(BackendOpsTest, Linear) {
    for (const int64_t n : {1, 3, 17, 130}) {
        for (const auto& [in, out] :
             std::vector<std::pair<int64_t, int64_t>>{{1, 7}, {7, 96}, {96, 1000}, {1000, 7}}) {
            for (const bool with_bias : {false, true}) {
                const Pair x = random({n, in}), w = random({out, in}), b = random({out});
                const Tensor y_cpu = cpu_->linear(x.cpu, w.cpu, with_bias ? &b.cpu : nullptr);
                const Tensor y_gpu = gpu_->linear(x.gpu, w.gpu, with_bias ? &b.gpu : nullptr);
                expect_close("linear", y_gpu, y_cpu, kF32Bound,
                             label(dims({n, in, out}), with_bias ? " bias" : ""));
            }
        }
    }
    const Pair x = random({3, 7}), w = random({5, 8}), b = random({4});
    EXPECT_THROW(gpu_->linear(x.gpu, w.gpu, nullptr), Error);
    const Pair w7 = random({5, 7});
    EXPECT_THROW(gpu_->linear(x.gpu, w7.gpu, &b.gpu), Error);
}

TEST_F(BackendOpsTest, QuantizedLinear) {
    const std::vector<LinearCase> cases = {
        {Quantization::Wint8, 1, 7, 0},
        {Quantization::Wint8, 7, 96, 0},
        {Quantization::Wint8, 96, 1000, 0},
        {Quantization::Wint8, 1000, 7, 0},
        {Quantization::Wint8, 1024, 1, 0},
        {Quantization::Wint4, 64, 7, 64},
        {Quantization::Wint4, 192, 1000, 64},
        {Quantization::Wint4, 1024, 96, 128},
        {Quantization::Wint4, 128, 1, 128},
        {Quantization::Bf16, 1, 7, 0},
        {Quantization::Bf16, 96, 1000, 0},
        {Quantization::Bf16, 1000, 7, 0},
        {Quantization::Bf16, 1024, 96, 0},
        // Wide enough that the GEMV hands a few rows to the tensor cores (quantized_gemv_takes).
        {Quantization::Wint4, 4096, 64, 128},
        {Quantization::Wint8, 4096, 40, 0},
        {Quantization::Bf16, 4096, 40, 0},
    };
    for (const LinearCase& c : cases) {
        const auto w = quantize(random_values(c.out * c.in, seed_++), c.out, c.in, c.type, c.group_size);
        const Weight w_cpu = cpu_->upload(w);
        const Weight w_gpu = gpu_->upload(w);
        for (const int64_t n : {1, 2, 3, 5, 8, 9, 17, 130}) {
            for (const bool with_bias : {false, true}) {
                const Pair x = random({n, c.in}), b = random({c.out});
                const Tensor y_cpu = cpu_->linear(x.cpu, w_cpu, with_bias ? &b.cpu : nullptr);
                const Tensor y_gpu = gpu_->linear(x.gpu, w_gpu, with_bias ? &b.gpu : nullptr);
                expect_close(label("linear ", quantization_name(c.type)), y_gpu, y_cpu,
                             linear_bound(n, c.in, c.type, c.out),
                             label(dims({n, c.in, c.out}), with_bias ? " bias" : ""));
            }
        }
    }
    // More weights than one block of dequantization scratch (16 Mi values): the product runs in blocks of
    // rows.
    for (const Quantization type : {Quantization::Wint8, Quantization::Wint4}) {
        const int64_t in = 1024, out = 17000;
        const auto w = quantize(random_values(out * in, seed_++), out, in, type, 128);
        const Weight w_cpu = cpu_->upload(w);
        const Weight w_gpu = gpu_->upload(w);
        const Pair x = random({17, in}), b = random({out});
        expect_close(label("linear ", quantization_name(type)), gpu_->linear(x.gpu, w_gpu, &b.gpu),
                     cpu_->linear(x.cpu, w_cpu, &b.cpu), kBf16TensorCoreBound, dims({17, in, out}));
    }
    const Weight w_gpu = gpu_->upload(quantize(random_values(4 * 64, 9), 4, 64, Quantization::Wint8, 0));
    const Pair x = random({2, 63});
    EXPECT_THROW(gpu_->linear(x.gpu, w_gpu, nullptr), Error);
}

// Up to 16 rows (64 of weights of 2^23 values or more), WINT8/WINT4 weights of inputs in multiples of 64 are
// dequantized in registers on the tensor cores (quantized-mma.cu): every batch tile count (rows to 8, 16, 32,
// 64), weight rows that do not fill a block of 32, both WINT4 group sizes, the bias and each epilogue.
TEST_F(BackendOpsTest, QuantizedFewRowProducts) {
    const std::vector<LinearCase> cases = {
        {Quantization::Wint4, 64, 1, 64},       {Quantization::Wint4, 576, 100, 64},
        {Quantization::Wint4, 4096, 31, 128},   {Quantization::Wint8, 64, 33, 0},
        {Quantization::Wint8, 576, 100, 0},     {Quantization::Wint8, 1024, 200, 0},
        {Quantization::Wint4, 4096, 2048, 128}, {Quantization::Wint8, 2048, 4100, 0},
    };
    for (const LinearCase& c : cases) {
        const auto w = quantize(random_values(c.out * c.in, seed_++), c.out, c.in, c.type, c.group_size);
        const Weight w_cpu = cpu_->upload(w);
        const Weight w_gpu = gpu_->upload(w);
        for (const int64_t n : {5, 8, 9, 16, 17, 32, 33, 64}) {
            const auto format = c.type == Quantization::Wint4 ? kernels::QuantizedFormat::Wint4
                                                              : kernels::QuantizedFormat::Wint8;
            const bool wide = c.in * c.out >= kernels::kQuantizedMmaWideValues;
            if (n > 16 && !wide) {
                EXPECT_FALSE(kernels::quantized_mma_takes(n, c.in, c.out, format)) << dims({n, c.in, c.out});
                continue;
            }
            EXPECT_TRUE(kernels::quantized_gemv_takes(n, c.in, c.out, format) ||
                        kernels::quantized_mma_takes(n, c.in, c.out, format))
                << dims({n, c.in, c.out}) << " reach neither few-row product";
            const std::string where = dims({n, c.in, c.out});
            const double bound = linear_bound(n, c.in, c.type, c.out);
            const Pair x = random({n, c.in}), b = random({c.out});
            expect_close(label("linear ", quantization_name(c.type)), gpu_->linear(x.gpu, w_gpu, &b.gpu),
                         cpu_->linear(x.cpu, w_cpu, &b.cpu), bound, label(where, " bias"));
            expect_close(label("linear gelu_tanh ", quantization_name(c.type)),
                         gpu_->linear(x.gpu, w_gpu, {.activation = Activation::GeluTanh}),
                         cpu_->linear(x.cpu, w_cpu, {.activation = Activation::GeluTanh}), bound, where);
            Pair y = random({n, c.out});
            gpu_->linear(x.gpu, w_gpu, {.bias = &b.gpu, .residual = &y.gpu});
            cpu_->linear(x.cpu, w_cpu, {.bias = &b.cpu, .residual = &y.cpu});
            expect_close(label("linear residual ", quantization_name(c.type)), y.gpu, y.cpu, bound, where);
        }
    }
    using kernels::QuantizedFormat;
    EXPECT_FALSE(kernels::quantized_mma_takes(8, 96, 4096, QuantizedFormat::Wint8)) << "inputs not of 64s";
    EXPECT_FALSE(kernels::quantized_mma_takes(65, 4096, 4096, QuantizedFormat::Wint8)) << "65 rows";
    EXPECT_FALSE(kernels::quantized_mma_takes(8, 64, 64, QuantizedFormat::Bf16)) << "bfloat16 weights";
    // Called directly with what it does not take, it throws rather than reading out of bounds.
    kernels::QuantizedLinearArgs a;
    a.format = QuantizedFormat::Wint8;
    a.n = 8;
    a.n_in = 96;
    a.n_out = 32;
    EXPECT_THROW(kernels::quantized_mma_bf16(a, nullptr, nullptr, nullptr, nullptr), Error);
}

// Rows already in bfloat16 (decoding attention's outputs) go into the tensor-core products as they are, with
// the result of the float32 rows they were rounded from; the GEMV's rows are widened to float32 first.
TEST_F(BackendOpsTest, LinearTakesBfloat16Rows) {
    for (const Quantization type : {Quantization::Bf16, Quantization::Wint8, Quantization::Wint4}) {
        const int64_t in = 256, out = 96;
        const auto w = quantize(random_values(out * in, seed_++), out, in, type, 128);
        const Weight w_cpu = cpu_->upload(w);
        const Weight w_gpu = gpu_->upload(w);
        for (const int64_t n : {9, 130}) {
            const std::vector<float> x = random_values(n * in, seed_++);
            const Tensor x_bf16 = gpu_->upload_kv(x, {n, in}, ScalarType::BF16);
            const Tensor x_f32 = gpu_->upload(x, {n, in});
            const Pair b = random({out});
            const std::string what = label(quantization_name(type), " ", dims({n, in, out}));
            EXPECT_EQ(gpu_->download(gpu_->linear(x_bf16, w_gpu, &b.gpu)),
                      gpu_->download(gpu_->linear(x_f32, w_gpu, &b.gpu)))
                << what;
            Tensor y_from_bf16 = gpu_->upload(random_values(n * out, 5), {n, out});
            Tensor y_from_f32 = gpu_->copy(y_from_bf16);
            gpu_->linear(x_bf16, w_gpu, LinearSpec{.residual = &y_from_bf16});
            gpu_->linear(x_f32, w_gpu, LinearSpec{.residual = &y_from_f32});
            EXPECT_EQ(gpu_->download(y_from_bf16), gpu_->download(y_from_f32)) << what;
            expect_close("linear (bfloat16 rows)", gpu_->linear(x_bf16, w_gpu, nullptr),
                         cpu_->linear(cpu_->upload(x, {n, in}), w_cpu, nullptr), kBf16TensorCoreBound, what);
        }
        const std::vector<float> eight = random_values(8 * in, seed_++);
        EXPECT_EQ(
            gpu_->download(gpu_->linear(gpu_->upload_kv(eight, {8, in}, ScalarType::BF16), w_gpu, nullptr)),
            gpu_->download(
                gpu_->linear(gpu_->upload(rounded(eight, ScalarType::BF16), {8, in}), w_gpu, nullptr)))
            << "8 rows go to the GEMV widened";
    }
}

// The weight rows the tensor-core path multiplies: each weight of a block of rows (starting past row 0)
// exactly dequantize_row's value rounded to bfloat16, eight a thread where the columns allow (n_in a
// multiple of 8) and one a thread where they do not.
TEST_F(BackendOpsTest, DequantizeRowsBf16) {
    const std::vector<LinearCase> cases = {
        {Quantization::Wint8, 1000, 37, 0},  {Quantization::Wint8, 7, 37, 0},
        {Quantization::Wint8, 3072, 9, 0},   {Quantization::Wint4, 192, 37, 64},
        {Quantization::Wint4, 1024, 9, 128},
    };
    constexpr int64_t kFirstRow = 5;
    for (const LinearCase& c : cases) {
        const QuantizedWeights w =
            quantize(random_values(c.out * c.in, seed_++), c.out, c.in, c.type, c.group_size);
        const int64_t n_rows = c.out - kFirstRow;
        const auto format =
            c.type == Quantization::Wint8 ? kernels::QuantizedFormat::Wint8 : kernels::QuantizedFormat::Wint4;
        const DeviceBytes q = device_bytes(w.q.size(), w.q.data());
        const DeviceBytes scales = device_bytes(w.scales.size() * sizeof(float), w.scales.data());
        std::vector<uint16_t> actual(static_cast<size_t>(n_rows * c.in));
        const DeviceBytes out = device_bytes(actual.size() * sizeof(uint16_t));
        kernels::dequantize_rows_bf16(
            format, static_cast<const int8_t*>(q.get()), static_cast<const float*>(scales.get()),
            static_cast<uint16_t*>(out.get()), kFirstRow, n_rows, c.in, w.group_size, nullptr);
        CUDA_CHECK(
            cudaMemcpy(actual.data(), out.get(), actual.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
        std::vector<float> row(static_cast<size_t>(c.in));
        for (int64_t r = 0; r < n_rows; ++r) {
            dequantize_row(c.type, w.q.data(), w.scales.data(), c.in, w.group_size, kFirstRow + r,
                           row.data());
            for (int64_t i = 0; i < c.in; ++i) {
                ASSERT_EQ(actual[static_cast<size_t>(r * c.in + i)], to_bf16(row[static_cast<size_t>(i)]))
                    << quantization_name(c.type) << " " << dims({c.out, c.in}) << " row " << kFirstRow + r
                    << " column " << i;
            }
        }
    }
    // WINT4 scales are found by a shift: groups of a size that is not a power of two are refused.
    constexpr int64_t kRows = 2, kColumns = 96;
    const DeviceBytes q = device_bytes(kRows * kColumns / 2), scales = device_bytes(kRows * sizeof(float)),
                      out = device_bytes(kRows * kColumns * sizeof(uint16_t));
    EXPECT_THROW(kernels::dequantize_rows_bf16(
                     kernels::QuantizedFormat::Wint4, static_cast<const int8_t*>(q.get()),
                     static_cast<const float*>(scales.get()), static_cast<uint16_t*>(out.get()), 0, kRows,
                     kColumns, kColumns, nullptr),
                 Error);
}

// The epilogues fused into the product: GELU after the bias, and the sum added to an existing tensor (the
// CPU backend runs them as separate operations).
// One row through a wide plain WINT8/WINT4 output, as a model's o and down products take it: plain, with a
// bias, GELU, a residual and an RMSNorm input, output counts that leave the last block part empty.
TEST_F(BackendOpsTest, WideSingleRowProducts) {
    for (const Quantization type : {Quantization::Wint4, Quantization::Wint8}) {
        for (const int64_t out : {int64_t{2048}, int64_t{4098}, int64_t{6150}}) {
            const int64_t in = 512;
            const auto w = quantize(random_values(out * in, seed_++), out, in, type, 128);
            const Weight w_cpu = cpu_->upload(w), w_gpu = gpu_->upload(w);
            const Pair x = random({1, in}, 0.5f, 2.0f), b = random({out}), norm_w = random({in}, 1.0f, 0.1f);
            const double bound = linear_bound(1, in, type);
            const std::string where = dims({1, in, out});
            const std::string name = quantization_name(type);
            expect_close(label("wide linear ", name), gpu_->linear(x.gpu, w_gpu, nullptr),
                         cpu_->linear(x.cpu, w_cpu, nullptr), bound, where);
            expect_close(label("wide linear gelu_tanh bias ", name),
                         gpu_->linear(x.gpu, w_gpu, {.bias = &b.gpu, .activation = Activation::GeluTanh}),
                         cpu_->linear(x.cpu, w_cpu, {.bias = &b.cpu, .activation = Activation::GeluTanh}),
                         bound, where);
            Pair y = random({1, out});
            gpu_->linear(x.gpu, w_gpu, {.bias = &b.gpu, .residual = &y.gpu});
            cpu_->linear(x.cpu, w_cpu, {.bias = &b.cpu, .residual = &y.cpu});
            expect_close(label("wide linear residual ", name), y.gpu, y.cpu, bound, where);
            expect_close(
                label("wide linear rms norm ", name),
                gpu_->linear(x.gpu, w_gpu, {.norm = LinearNorm::Rms, .norm_w = &norm_w.gpu, .eps = 1e-5f}),
                cpu_->linear(x.cpu, w_cpu, {.norm = LinearNorm::Rms, .norm_w = &norm_w.cpu, .eps = 1e-5f}),
                bound, where);
        }
    }
}

// One row through WINT4 products as large as a chat model's, which the streamed GEMV takes (x held in
// registers, weight rows streamed past it; it needs a block a multiprocessor or more): inputs in 8, 5, 6 and
// 7 parts of each of its shapes, output counts that leave the last block part empty, every output: plain,
// GELU after a bias, a residual, an RMSNorm input, SwiGLU, and RoPE to the cache.
TEST_F(BackendOpsTest, StreamedSingleRowProducts) {
    struct Case {
        int64_t in, out;
    };
    for (const Case& c : std::vector<Case>{{4096, 4098}, {2560, 2200}, {6144, 1100}, {14336, 600}}) {
        const auto w = quantize(random_values(c.out * c.in, seed_++), c.out, c.in, Quantization::Wint4, 128);
        const Weight w_cpu = cpu_->upload(w), w_gpu = gpu_->upload(w);
        const Pair x = random({1, c.in}, 0.5f, 2.0f), b = random({c.out}),
                   norm_w = random({c.in}, 1.0f, 0.1f);
        const double bound = linear_bound(1, c.in, Quantization::Wint4);
        const std::string where = dims({1, c.in, c.out});
        expect_close("streamed linear", gpu_->linear(x.gpu, w_gpu, nullptr),
                     cpu_->linear(x.cpu, w_cpu, nullptr), bound, where);
        expect_close("streamed linear gelu_tanh bias",
                     gpu_->linear(x.gpu, w_gpu, {.bias = &b.gpu, .activation = Activation::GeluTanh}),
                     cpu_->linear(x.cpu, w_cpu, {.bias = &b.cpu, .activation = Activation::GeluTanh}), bound,
                     where);
        Pair y = random({1, c.out});
        gpu_->linear(x.gpu, w_gpu, {.bias = &b.gpu, .residual = &y.gpu});
        cpu_->linear(x.cpu, w_cpu, {.bias = &b.cpu, .residual = &y.cpu});
        expect_close("streamed linear residual", y.gpu, y.cpu, bound, where);
        expect_close(
            "streamed linear rms norm",
            gpu_->linear(x.gpu, w_gpu, {.norm = LinearNorm::Rms, .norm_w = &norm_w.gpu, .eps = 1e-5f}),
            cpu_->linear(x.cpu, w_cpu, {.norm = LinearNorm::Rms, .norm_w = &norm_w.cpu, .eps = 1e-5f}), bound,
            where);
        expect_close("streamed linear rms norm swiglu",
                     gpu_->linear(x.gpu, w_gpu,
                                  {.norm = LinearNorm::Rms,
                                   .norm_w = &norm_w.gpu,
                                   .eps = 1e-5f,
                                   .bias = &b.gpu,
                                   .activation = Activation::Swiglu}),
                     cpu_->linear(x.cpu, w_cpu,
                                  {.norm = LinearNorm::Rms,
                                   .norm_w = &norm_w.cpu,
                                   .eps = 1e-5f,
                                   .bias = &b.cpu,
                                   .activation = Activation::Swiglu}),
                     bound, where);
    }
    // q, k and v of Llama-8B's shape (32 and 8 heads of 128) with their RoPE into the cache.
    const int64_t hd = 128, n_q = 32, n_kv = 8, in = 4096, out = (n_q + 2 * n_kv) * hd, n_slots = 5;
    const RotaryLayout layout = RotaryLayout(1).section(0, 64);
    const RopeParams rope_gpu = layout.upload(*gpu_, hd, 500000.0f),
                     rope_cpu = layout.upload(*cpu_, hd, 500000.0f);
    const Pair pos = upload_i32({41}, {1, 1}), slot = upload_i32({3}, {1});
    const QuantizedWeights q =
        quantize(random_values(out * in, seed_++, 0.0f, 0.1f), out, in, Quantization::Wint4, 128);
    const Weight w_cpu = cpu_->upload(q), w_gpu = gpu_->upload(q);
    const Pair x = random({1, in}, 0.5f, 2.0f), norm_w = random({in}, 1.0f, 0.1f);
    Pair k_cache = random({n_slots, n_kv, hd}), v_cache = random({n_slots, n_kv, hd});
    const auto spec = [&](bool gpu) {
        return LinearSpec{.norm = LinearNorm::Rms,
                          .norm_w = gpu ? &norm_w.gpu : &norm_w.cpu,
                          .eps = 1e-5f,
                          .output = LinearOutputKind::RopeToCache,
                          .rope_to_cache = {gpu ? &pos.gpu : &pos.cpu, gpu ? &slot.gpu : &slot.cpu,
                                            gpu ? &rope_gpu : &rope_cpu, gpu ? &k_cache.gpu : &k_cache.cpu,
                                            gpu ? &v_cache.gpu : &v_cache.cpu}};
    };
    const Tensor q_gpu = gpu_->linear(x.gpu, w_gpu, spec(true));
    const Tensor q_cpu = cpu_->linear(x.cpu, w_cpu, spec(false));
    const double bound = linear_bound(1, in, Quantization::Wint4);
    const std::string where = dims({1, in, out});
    expect_close("streamed rope_to_cache (q)", q_gpu, q_cpu, bound, where);
    expect_close("streamed rope_to_cache (k)", k_cache.gpu, k_cache.cpu, bound, where);
    expect_close("streamed rope_to_cache (v)", v_cache.gpu, v_cache.cpu, bound, where);
}

TEST_F(BackendOpsTest, LinearEpilogues) {
    struct Case {
        Quantization type;
        int64_t in;
        int64_t out;
    };
    const std::vector<Case> cases = {
        {Quantization::Bf16, 96, 1000}, {Quantization::Bf16, 1000, 7},  {Quantization::Bf16, 7, 96},
        {Quantization::Wint8, 96, 130}, {Quantization::Wint4, 128, 96},
    };
    for (const Case& c : cases) {
        const auto w = quantize(random_values(c.out * c.in, seed_++), c.out, c.in, c.type, 64);
        const Weight w_cpu = cpu_->upload(w);
        const Weight w_gpu = gpu_->upload(w);
        for (const int64_t n : {1, 8, 9, 130}) {
            const double bound = linear_bound(n, c.in, c.type, c.out);
            for (const bool with_bias : {false, true}) {
                const std::string where = label(dims({n, c.in, c.out}), with_bias ? " bias" : "");
                const Pair x = random({n, c.in}), b = random({c.out});
                const Tensor* b_cpu = with_bias ? &b.cpu : nullptr;
                const Tensor* b_gpu = with_bias ? &b.gpu : nullptr;
                expect_close(label("linear gelu_tanh ", quantization_name(c.type)),
                             gpu_->linear(x.gpu, w_gpu, {.bias = b_gpu, .activation = Activation::GeluTanh}),
                             cpu_->linear(x.cpu, w_cpu, {.bias = b_cpu, .activation = Activation::GeluTanh}),
                             bound, where);
                Pair y = random({n, c.out});
                gpu_->linear(x.gpu, w_gpu, {.bias = b_gpu, .residual = &y.gpu});
                cpu_->linear(x.cpu, w_cpu, {.bias = b_cpu, .residual = &y.cpu});
                expect_close(label("linear residual ", quantization_name(c.type)), y.gpu, y.cpu, bound,
                             where);
            }
        }
    }
    const Weight w_gpu = gpu_->upload(quantize(random_values(4 * 64, 9), 4, 64, Quantization::Bf16, 0));
    const Pair x = random({2, 64});
    Pair y = random({2, 5});
    EXPECT_THROW(gpu_->linear(x.gpu, w_gpu, {.residual = &y.gpu}), Error);
    Pair y3 = random({3, 4});
    EXPECT_THROW(gpu_->linear(x.gpu, w_gpu, {.residual = &y3.gpu}), Error);
    const Pair x63 = random({2, 63});
    EXPECT_THROW(gpu_->linear(x63.gpu, w_gpu, {.activation = Activation::GeluTanh}), Error);
}

// FP8 weights (E4M3, a scale an output channel) multiply rows rounded to E4M3 with a scale each, on the
// tensor cores' FP8 path; the CPU backend rounds the rows the same way and multiplies in float32. Both read
// the same E4M3 values (the LayerNorm's float32 sums, computed in another order, may move a value across a
// rounding boundary now and then), and the device's sums and bfloat16 outputs keep within 2e-2 of the
// largest output. The vision encoder's specs: LayerNorm before, GELU or the residual add after, bfloat16 rows
// in and out, at its sizes and at odd row counts. A device below compute capability 8.9 refuses, saying why.
TEST_F(BackendOpsTest, Fp8Linear) {
    constexpr double kFp8Bound = 2e-2;
    if (const std::string why = gpu_->fp8_refusal(); !why.empty()) {
        const Weight w = gpu_->upload(quantize(random_values(16 * 32, 1), 16, 32, Quantization::Fp8, 0));
        EXPECT_THROW(gpu_->linear(random({2, 32}).gpu, w, nullptr), Error);
        GTEST_SKIP() << "skipped: " << why;
    }
    struct Case {
        int64_t in;
        int64_t out;
    };
    for (const Case c : {Case{1152, 3456}, Case{4304, 1152}, Case{32, 48}, Case{1152, 4304}}) {
        const auto w = quantize(random_values(c.out * c.in, seed_++), c.out, c.in, Quantization::Fp8, 0);
        const Weight w_cpu = cpu_->upload(w);
        const Weight w_gpu = gpu_->upload(w);
        for (const int64_t n : {1, 7, 130, 1030}) {
            const std::string where = dims({n, c.in, c.out});
            const Pair x = random({n, c.in}), b = random({c.out});
            const Pair norm_w = random({c.in}, 1.0f, 0.2f), norm_b = random({c.in}, 0.0f, 0.2f);
            expect_close("linear fp8", gpu_->linear(x.gpu, w_gpu, &b.gpu), cpu_->linear(x.cpu, w_cpu, &b.cpu),
                         kFp8Bound, where);
            expect_close("linear fp8 gelu_tanh",
                         gpu_->linear(x.gpu, w_gpu, {.bias = &b.gpu, .activation = Activation::GeluTanh}),
                         cpu_->linear(x.cpu, w_cpu, {.bias = &b.cpu, .activation = Activation::GeluTanh}),
                         kFp8Bound, where);
            const auto layer_norm = [&](const Pair& p, bool gpu) {
                return LinearSpec{.norm = LinearNorm::Layer,
                                  .norm_w = gpu ? &norm_w.gpu : &norm_w.cpu,
                                  .norm_b = gpu ? &norm_b.gpu : &norm_b.cpu,
                                  .eps = 1e-6f,
                                  .bias = gpu ? &p.gpu : &p.cpu,
                                  .bf16_output = gpu};
            };
            const Tensor normed = gpu_->linear(x.gpu, w_gpu, layer_norm(b, true));
            EXPECT_EQ(normed.dtype, ScalarType::BF16) << where;
            expect_close("linear fp8 layer_norm", normed, cpu_->linear(x.cpu, w_cpu, layer_norm(b, false)),
                         kFp8Bound, where);
            expect_close(
                "linear fp8 rms_norm",
                gpu_->linear(x.gpu, w_gpu, {.norm = LinearNorm::Rms, .norm_w = &norm_w.gpu, .eps = 1e-6f}),
                cpu_->linear(x.cpu, w_cpu, {.norm = LinearNorm::Rms, .norm_w = &norm_w.cpu, .eps = 1e-6f}),
                kFp8Bound, where);
            Pair y = random({n, c.out});
            gpu_->linear(x.gpu, w_gpu, {.bias = &b.gpu, .residual = &y.gpu});
            cpu_->linear(x.cpu, w_cpu, {.bias = &b.cpu, .residual = &y.cpu});
            expect_close("linear fp8 residual", y.gpu, y.cpu, kFp8Bound, where);
            // Rows in bfloat16 are rounded to E4M3 from their bfloat16 values.
            const std::vector<float> x_values = gpu_->download(x.gpu);
            const Tensor x_bf16 = gpu_->upload_kv(x_values, {n, c.in}, ScalarType::BF16);
            expect_close(
                "linear fp8 (bfloat16 rows)", gpu_->linear(x_bf16, w_gpu, &b.gpu),
                cpu_->linear(cpu_->upload(rounded(x_values, ScalarType::BF16), {n, c.in}), w_cpu, &b.cpu),
                kFp8Bound, where);
        }
    }
    // No rows: an empty product.
    const Weight small = gpu_->upload(quantize(random_values(16 * 32, 3), 16, 32, Quantization::Fp8, 0));
    EXPECT_EQ(gpu_->linear(gpu_->alloc({0, 32}), small, nullptr).shape, (std::vector<int64_t>{0, 16}));
    // FP8 products read rows of a multiple of 16 bytes.
    const Weight odd = gpu_->upload(quantize(random_values(16 * 40, 2), 16, 40, Quantization::Fp8, 0));
    EXPECT_THROW(gpu_->linear(random({3, 40}).gpu, odd, nullptr), Error);
}

// The norm before a layer (RMSNorm of the product's input) and the gating of a gated MLP (SwiGLU of the
// product's stacked gate and up halves). At one row with columns in chunks of eight the GEMV norms its input
// as it reads it; otherwise up to 8 rows the normed input goes to scratch in float32 for the GEMV first. The
// GEMV's blocks (at one or two rows, warps) hold both rows of each gate/up pair and write the gated value;
// more rows norm the input while rounding it for the tensor cores and gate the product in a pass after it.
// The CPU backend runs the operations one by one. Odd output counts (no halves) are refused.
TEST_F(BackendOpsTest, LinearNormAndGating) {
    const std::vector<LinearCase> cases = {
        {Quantization::Bf16, 1024, 96, 0},
        {Quantization::Bf16, 3072, 7, 0},
        {Quantization::Bf16, 3072, 14, 0},
        {Quantization::Bf16, 100, 33, 0},
        {Quantization::Wint8, 96, 130, 0},
        {Quantization::Wint4, 128, 96, 64},
        // Wide enough for two pairs a warp at one row, the last warp's second pair past the end.
        {Quantization::Wint4, 1024, 8194, 128},
        {Quantization::Wint8, 512, 8194, 0},
    };
    for (const LinearCase& c : cases) {
        const auto w = quantize(random_values(c.out * c.in, seed_++), c.out, c.in, c.type, c.group_size);
        const Weight w_cpu = cpu_->upload(w);
        const Weight w_gpu = gpu_->upload(w);
        for (const int64_t n : {1, 2, 3, 4, 5, 8, 9, 130}) {
            const double bound = linear_bound(n, c.in, c.type, c.out);
            for (const bool with_bias : {false, true}) {
                const std::string where = label(dims({n, c.in, c.out}), with_bias ? " bias" : "");
                const Pair b = random({c.out});
                const Tensor* b_cpu = with_bias ? &b.cpu : nullptr;
                const Tensor* b_gpu = with_bias ? &b.gpu : nullptr;
                const Pair x = random({n, c.in}, 0.5f, 2.0f), norm = random({c.in}, 1.0f, 0.1f);
                const Pair shift = random({c.in});
                const auto check = [&](const char* what, LinearSpec on_gpu, LinearSpec on_cpu) {
                    expect_close(label(what, " ", quantization_name(c.type)),
                                 gpu_->linear(x.gpu, w_gpu, on_gpu), cpu_->linear(x.cpu, w_cpu, on_cpu),
                                 bound, where);
                };
                check("linear rms_norm",
                      {.norm = LinearNorm::Rms, .norm_w = &norm.gpu, .eps = 1e-5f, .bias = b_gpu},
                      {.norm = LinearNorm::Rms, .norm_w = &norm.cpu, .eps = 1e-5f, .bias = b_cpu});
                check("linear layer_norm",
                      {.norm = LinearNorm::Layer,
                       .norm_w = &norm.gpu,
                       .norm_b = &shift.gpu,
                       .eps = 1e-6f,
                       .bias = b_gpu},
                      {.norm = LinearNorm::Layer,
                       .norm_w = &norm.cpu,
                       .norm_b = &shift.cpu,
                       .eps = 1e-6f,
                       .bias = b_cpu});
                check("linear layer_norm gelu_tanh",
                      {.norm = LinearNorm::Layer,
                       .norm_w = &norm.gpu,
                       .norm_b = &shift.gpu,
                       .eps = 1e-6f,
                       .bias = b_gpu,
                       .activation = Activation::GeluTanh},
                      {.norm = LinearNorm::Layer,
                       .norm_w = &norm.cpu,
                       .norm_b = &shift.cpu,
                       .eps = 1e-6f,
                       .bias = b_cpu,
                       .activation = Activation::GeluTanh});
                const LinearSpec swiglu_gpu{.norm = LinearNorm::Rms,
                                            .norm_w = &norm.gpu,
                                            .eps = 1e-5f,
                                            .bias = b_gpu,
                                            .activation = Activation::Swiglu};
                if (c.out % 2 != 0) {
                    EXPECT_THROW(gpu_->linear(x.gpu, w_gpu, swiglu_gpu), Error) << where;
                    continue;
                }
                check("linear rms_norm swiglu", swiglu_gpu,
                      {.norm = LinearNorm::Rms,
                       .norm_w = &norm.cpu,
                       .eps = 1e-5f,
                       .bias = b_cpu,
                       .activation = Activation::Swiglu});
            }
        }
    }
    const Weight w_gpu = gpu_->upload(quantize(random_values(4 * 64, 9), 4, 64, Quantization::Bf16, 0));
    const Pair x = random({2, 64});
    const Pair norm63 = random({63}), norm64 = random({64}), norm32 = random({32}), x32 = random({2, 32});
    EXPECT_THROW(gpu_->linear(x.gpu, w_gpu, {.norm = LinearNorm::Rms, .norm_w = &norm63.gpu}), Error)
        << "norm width";
    EXPECT_THROW(gpu_->linear(x32.gpu, w_gpu, {.norm = LinearNorm::Rms, .norm_w = &norm32.gpu}), Error);
    EXPECT_THROW(
        gpu_->linear(x.gpu, w_gpu,
                     {.norm = LinearNorm::Rms, .norm_w = &norm63.gpu, .activation = Activation::Swiglu}),
        Error)
        << "norm width";
    EXPECT_THROW(
        gpu_->linear(x.gpu, w_gpu, {.norm = LinearNorm::Layer, .norm_w = &norm64.gpu, .norm_b = &norm63.gpu}),
        Error)
        << "norm bias width";
    EXPECT_THROW(gpu_->linear(x.gpu, w_gpu, {.norm = LinearNorm::Rms}), Error) << "no norm weight";
    EXPECT_THROW(
        cpu_->linear(x.cpu, cpu_->upload(quantize(random_values(5 * 64, 9), 5, 64, Quantization::Bf16, 0)),
                     {.activation = Activation::Swiglu}),
        Error)
        << "odd rows";
}

// Every combination of LinearSpec the models use, over every weight format: input norm (none, RMSNorm,
// LayerNorm) × activation × residual add × bfloat16 output allowed, with and without a bias, at the GEMV's
// rows (one row takes its RMSNorm inside) and the tensor cores'. What the CUDA backend does not fuse (an
// activation with the residual add, GELU's erf form, SiLU, ReLU, float32 weights) runs as its parts.
TEST_F(BackendOpsTest, LinearSpecCombinations) {
    const int64_t in = 128, out = 96;
    for (const Quantization type :
         {Quantization::None, Quantization::Bf16, Quantization::Wint8, Quantization::Wint4}) {
        const std::vector<float> values = random_values(out * in, seed_++, 0.0f, 0.1f);
        Weight w_cpu, w_gpu;
        if (type == Quantization::None) {
            w_cpu = dense_weight(cpu_->upload(values, {out, in}));
            w_gpu = dense_weight(gpu_->upload(values, {out, in}));
        } else {
            const QuantizedWeights q = quantize(values, out, in, type, 64);
            w_cpu = cpu_->upload(q);
            w_gpu = gpu_->upload(q);
        }
        const std::string format = type == Quantization::None ? "float32" : quantization_name(type);
        for (const int64_t n : {1, 2, 9, 130}) {
            const Pair x = random({n, in}, 0.5f, 2.0f), norm_w = random({in}, 1.0f, 0.1f),
                       norm_b = random({in});
            const Pair b = random({out});
            for (const LinearNorm norm : {LinearNorm::None, LinearNorm::Rms, LinearNorm::Layer}) {
                for (const Activation activation : {Activation::None, Activation::GeluTanh, Activation::Gelu,
                                                    Activation::Silu, Activation::Relu, Activation::Swiglu}) {
                    for (const int variant : {0, 1, 2, 3}) {  // bit 0: a bias; bit 1: a residual
                        for (const bool bf16_output : {false, true}) {
                            const bool with_bias = (variant & 1) != 0, with_residual = (variant & 2) != 0;
                            const int64_t n_y = activation == Activation::Swiglu ? out / 2 : out;
                            Pair residual = random({n, n_y});
                            const auto spec = [&](bool gpu) {
                                LinearSpec s{.norm = norm,
                                             .norm_w = gpu ? &norm_w.gpu : &norm_w.cpu,
                                             .norm_b = gpu ? &norm_b.gpu : &norm_b.cpu,
                                             .eps = 1e-5f,
                                             .bias = with_bias ? (gpu ? &b.gpu : &b.cpu) : nullptr,
                                             .activation = activation};
                                s.residual = with_residual ? (gpu ? &residual.gpu : &residual.cpu) : nullptr;
                                s.bf16_output = bf16_output;
                                return s;
                            };
                            const Tensor y_gpu = gpu_->linear(x.gpu, w_gpu, spec(true));
                            const Tensor y_cpu = cpu_->linear(x.cpu, w_cpu, spec(false));
                            const std::string where =
                                label(dims({n, in, out}), " norm ", static_cast<int>(norm), " activation ",
                                      static_cast<int>(activation), with_bias ? " bias" : "",
                                      with_residual ? " residual" : "", bf16_output ? " bf16 output" : "");
                            // A bfloat16 output adds its rounding (2^-9) to the tensor cores' bound.
                            expect_close(label("linear spec ", format), y_gpu, y_cpu,
                                         linear_bound(n, in, type), where);
                            if (with_residual) {
                                EXPECT_EQ(y_gpu.buffer, residual.gpu.buffer) << where;
                            }
                        }
                    }
                }
            }
            // The RoPE-to-cache output, after no norm or an RMSNorm: q, k and v heads of 16 (4 q heads, 1
            // k/v head) from 96 rows.
            const int64_t hd = 16, n_slots = n + 3;
            std::vector<int32_t> positions(static_cast<size_t>(3 * n)), slots(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) {
                positions[static_cast<size_t>(3 * i)] = static_cast<int32_t>(7 * i);
                positions[static_cast<size_t>(3 * i + 1)] = static_cast<int32_t>(3 * i + 1);
                positions[static_cast<size_t>(3 * i + 2)] = static_cast<int32_t>(i / 2);
                slots[static_cast<size_t>(i)] = static_cast<int32_t>(n_slots - 1 - i);
            }
            const Pair pos = upload_i32(positions, {n, 3}), slot = upload_i32(slots, {n});
            const RotaryLayout layout = RotaryLayout(3).section(0, 4).section(1, 2).section(2, 2);
            const RopeParams rope_gpu = layout.upload(*gpu_, hd, 10000.0f),
                             rope_cpu = layout.upload(*cpu_, hd, 10000.0f);
            for (const LinearNorm norm : {LinearNorm::None, LinearNorm::Rms}) {
                Pair k_cache = random({n_slots, 1, hd}), v_cache = random({n_slots, 1, hd});
                const Tensor q_gpu = gpu_->linear(
                    x.gpu, w_gpu,
                    {.norm = norm,
                     .norm_w = &norm_w.gpu,
                     .eps = 1e-5f,
                     .bias = &b.gpu,
                     .output = LinearOutputKind::RopeToCache,
                     .rope_to_cache = {&pos.gpu, &slot.gpu, &rope_gpu, &k_cache.gpu, &v_cache.gpu}});
                const Tensor q_cpu = cpu_->linear(
                    x.cpu, w_cpu,
                    {.norm = norm,
                     .norm_w = &norm_w.cpu,
                     .eps = 1e-5f,
                     .bias = &b.cpu,
                     .output = LinearOutputKind::RopeToCache,
                     .rope_to_cache = {&pos.cpu, &slot.cpu, &rope_cpu, &k_cache.cpu, &v_cache.cpu}});
                const std::string where = label(dims({n, in, out}), " norm ", static_cast<int>(norm));
                expect_close(label("linear spec rope_to_cache (q) ", format), q_gpu, q_cpu,
                             linear_bound(n, in, type), where);
                expect_close(label("linear spec rope_to_cache (k) ", format), k_cache.gpu, k_cache.cpu,
                             linear_bound(n, in, type), where);
                expect_close(label("linear spec rope_to_cache (v) ", format), v_cache.gpu, v_cache.cpu,
                             linear_bound(n, in, type), where);
            }
        }
    }
    const Pair x = random({2, 128}), b = random({96});
    Pair residual = random({2, 96});
    const Weight w = dense_weight(gpu_->upload(random_values(96 * 128, 3), {96, 128}));
    EXPECT_THROW(gpu_->linear(x.gpu, w, {.output = LinearOutputKind::RopeToCache}), Error) << "no cache";
    EXPECT_THROW(gpu_->linear(x.gpu, w, {.activation = Activation::Swiglu, .residual = &residual.gpu}), Error)
        << "a residual of 96 columns for 48";
}

// One row through a wide q/k/v product with its RoPE-to-cache output, as a language model's decode step takes
// it (24 query heads and 4 key/value heads of 64: 1,024 pairs), after no norm or an RMSNorm.
TEST_F(BackendOpsTest, WideRopeToCache) {
    const int64_t hd = 64, n_q = 24, n_kv = 4, in = 512, out = (n_q + 2 * n_kv) * hd, n_slots = 9;
    const RotaryLayout layout = RotaryLayout(3).section(0, 16).section(1, 8).section(2, 8);
    const RopeParams rope_gpu = layout.upload(*gpu_, hd, 10000.0f),
                     rope_cpu = layout.upload(*cpu_, hd, 10000.0f);
    const Pair pos = upload_i32({37, 5, 2}, {1, 3}), slot = upload_i32({6}, {1});
    for (const Quantization type : {Quantization::Wint4, Quantization::Wint8}) {
        const QuantizedWeights q = quantize(random_values(out * in, seed_++, 0.0f, 0.1f), out, in, type, 128);
        const Weight w_cpu = cpu_->upload(q), w_gpu = gpu_->upload(q);
        const Pair x = random({1, in}, 0.5f, 2.0f), norm_w = random({in}, 1.0f, 0.1f), b = random({out});
        for (const LinearNorm norm : {LinearNorm::None, LinearNorm::Rms}) {
            Pair k_cache = random({n_slots, n_kv, hd}), v_cache = random({n_slots, n_kv, hd});
            const auto spec = [&](bool gpu) {
                return LinearSpec{
                    .norm = norm,
                    .norm_w = gpu ? &norm_w.gpu : &norm_w.cpu,
                    .eps = 1e-5f,
                    .bias = gpu ? &b.gpu : &b.cpu,
                    .output = LinearOutputKind::RopeToCache,
                    .rope_to_cache = {gpu ? &pos.gpu : &pos.cpu, gpu ? &slot.gpu : &slot.cpu,
                                      gpu ? &rope_gpu : &rope_cpu, gpu ? &k_cache.gpu : &k_cache.cpu,
                                      gpu ? &v_cache.gpu : &v_cache.cpu}};
            };
            const Tensor q_gpu = gpu_->linear(x.gpu, w_gpu, spec(true));
            const Tensor q_cpu = cpu_->linear(x.cpu, w_cpu, spec(false));
            const std::string where = label(dims({1, in, out}), " norm ", static_cast<int>(norm));
            const std::string name = quantization_name(type);
            const double bound = linear_bound(1, in, type);
            expect_close(label("wide rope_to_cache (q) ", name), q_gpu, q_cpu, bound, where);
            expect_close(label("wide rope_to_cache (k) ", name), k_cache.gpu, k_cache.cpu, bound, where);
            expect_close(label("wide rope_to_cache (v) ", name), v_cache.gpu, v_cache.cpu, bound, where);
        }
    }
}

// The vision encoder's norm and MLP added to the residual stream (PaddleOCR-VL's layer_norm_mlp_add, two
// spec'd linear operations): bfloat16 weights above the GEMV's rows keep the norm and hidden values in
// bfloat16 between two tensor-core products; other rows and formats take float32 between them.
TEST_F(BackendOpsTest, LayerNormMlpAdd) {
    struct Case {
        Quantization type;
        int64_t d, d_ff;
    };
    for (const Case& c : std::vector<Case>{{Quantization::Bf16, 96, 130},
                                           {Quantization::Bf16, 1152, 4304},
                                           {Quantization::Wint8, 64, 128}}) {
        const auto w1 = quantize(random_values(c.d_ff * c.d, seed_++), c.d_ff, c.d, c.type, 0);
        const auto w2 = quantize(random_values(c.d * c.d_ff, seed_++), c.d, c.d_ff, c.type, 0);
        const Weight w1_cpu = cpu_->upload(w1), w1_gpu = gpu_->upload(w1);
        const Weight w2_cpu = cpu_->upload(w2), w2_gpu = gpu_->upload(w2);
        for (const int64_t n : {1, 9, 130}) {
            for (const bool with_bias : {false, true}) {
                const std::string where = label(dims({n, c.d, c.d_ff}), with_bias ? " bias" : "");
                const Pair b1 = random({c.d_ff}), b2 = random({c.d});
                const Pair norm_w = random({c.d}, 1.0f, 0.1f), norm_b = random({c.d});
                Pair x = random({n, c.d});
                const Linear fc1_cpu{w1_cpu, with_bias ? b1.cpu : Tensor{}};
                const Linear fc2_cpu{w2_cpu, with_bias ? b2.cpu : Tensor{}};
                const Linear fc1_gpu{w1_gpu, with_bias ? b1.gpu : Tensor{}};
                const Linear fc2_gpu{w2_gpu, with_bias ? b2.gpu : Tensor{}};
                Tensor chunked = gpu_->upload(gpu_->download(x.gpu), x.gpu.shape);
                layer_norm_mlp_add(*cpu_, x.cpu, fc1_cpu, fc2_cpu, norm_w.cpu, norm_b.cpu, 1e-6f);
                layer_norm_mlp_add(*gpu_, x.gpu, fc1_gpu, fc2_gpu, norm_w.gpu, norm_b.gpu, 1e-6f);
                const double bound = linear_bound(n, {c.d, c.d_ff}, c.type);
                expect_close(label("layer_norm_mlp_add ", quantization_name(c.type)), x.gpu, x.cpu, bound,
                             where);
                // Chunks of 4 rows, each a view into the residual rows.
                layer_norm_mlp_add(*gpu_, chunked, fc1_gpu, fc2_gpu, norm_w.gpu, norm_b.gpu, 1e-6f,
                                   Activation::GeluTanh, 4);
                expect_close(label("layer_norm_mlp_add in chunks ", quantization_name(c.type)), chunked,
                             x.cpu, bound, where);
            }
        }
    }
    const Weight w = gpu_->upload(quantize(random_values(32 * 16, 3), 32, 16, Quantization::Bf16, 0));
    Pair x = random({9, 16});
    const Pair norm = random({16});
    EXPECT_THROW(layer_norm_mlp_add(*gpu_, x.gpu, {w, {}}, {w, {}}, norm.gpu, norm.gpu, 1e-6f), Error)
        << "w2 takes 16 values, not w1's 32";
}

// The language model's norm and gated MLP added to the residual stream (PaddleOCR-VL's rms_norm_mlp_add):
// above the GEMV's rows without a bias on the gate and up rows, the gated values go from the first
// tensor-core product to the second in bfloat16 (SwiGLU over 8 columns a thread where d_ff is a multiple of
// 8, else one); other calls take float32 between them.
TEST_F(BackendOpsTest, RmsNormMlpAdd) {
    struct Case {
        Quantization type;
        int64_t d, d_ff, group_size;
    };
    for (const Case& c : std::vector<Case>{{Quantization::Bf16, 96, 130, 0},
                                           {Quantization::Bf16, 1024, 3072, 0},
                                           {Quantization::Wint8, 64, 136, 0},
                                           {Quantization::Wint4, 128, 256, 64}}) {
        const auto w1 =
            quantize(random_values(2 * c.d_ff * c.d, seed_++), 2 * c.d_ff, c.d, c.type, c.group_size);
        const auto w2 = quantize(random_values(c.d * c.d_ff, seed_++), c.d, c.d_ff, c.type, c.group_size);
        const Weight w1_cpu = cpu_->upload(w1), w1_gpu = gpu_->upload(w1);
        const Weight w2_cpu = cpu_->upload(w2), w2_gpu = gpu_->upload(w2);
        for (const int64_t n : {1, 8, 9, 130}) {
            for (const bool with_bias : {false, true}) {
                const std::string where = label(dims({n, c.d, c.d_ff}), with_bias ? " biases" : "");
                const Pair b1 = random({2 * c.d_ff}), b2 = random({c.d});
                const Pair norm_w = random({c.d}, 1.0f, 0.1f);
                Pair x = random({n, c.d});
                rms_norm_mlp_add(*cpu_, x.cpu, {w1_cpu, with_bias ? b1.cpu : Tensor{}},
                                 {w2_cpu, with_bias ? b2.cpu : Tensor{}}, norm_w.cpu, 1e-6f);
                rms_norm_mlp_add(*gpu_, x.gpu, {w1_gpu, with_bias ? b1.gpu : Tensor{}},
                                 {w2_gpu, with_bias ? b2.gpu : Tensor{}}, norm_w.gpu, 1e-6f);
                const double bound = linear_bound(n, {c.d, c.d_ff}, c.type);
                expect_close(label("rms_norm_mlp_add ", quantization_name(c.type)), x.gpu, x.cpu, bound,
                             where);
            }
        }
    }
    const Weight w = gpu_->upload(quantize(random_values(32 * 16, 3), 32, 16, Quantization::Bf16, 0));
    Pair x = random({9, 16});
    const Pair norm = random({16});
    EXPECT_THROW(rms_norm_mlp_add(*gpu_, x.gpu, {w, {}}, {w, {}}, norm.gpu, 1e-6f), Error)
        << "w2 gives 32 values, not x's 16";
    EXPECT_THROW(rms_norm_mlp_add(
                     *cpu_, x.cpu,
                     {cpu_->upload(quantize(random_values(33 * 16, 3), 33, 16, Quantization::Bf16, 0)), {}},
                     {cpu_->upload(quantize(random_values(16 * 16, 3), 16, 16, Quantization::Bf16, 0)), {}},
                     norm.cpu, 1e-6f),
                 Error)
        << "33 gate and up rows";
}

// Rows of a multiple of 4 values up to 2,048 take LayerNorm's warp-a-row kernel, others the block-a-row one.
TEST_F(BackendOpsTest, LayerNormAndRmsNorm) {
    for (const int64_t n : {1, 3, 17, 130}) {
        for (const int64_t d : {1, 7, 96, 1000, 1152, 1500, 2048, 2052, 2560, 4096, 4100}) {
            const Pair x = random({n, d}, 3.0f, 2.0f), w = random({d}), b = random({d});
            expect_close("layer_norm", gpu_->layer_norm(x.gpu, w.gpu, b.gpu, 1e-6f),
                         cpu_->layer_norm(x.cpu, w.cpu, b.cpu, 1e-6f), kF32Bound, dims({n, d}));
            expect_close("rms_norm", gpu_->rms_norm(x.gpu, w.gpu, 1e-5f), cpu_->rms_norm(x.cpu, w.cpu, 1e-5f),
                         kF32Bound, dims({n, d}));
        }
    }
    const Pair x = random({3, 7}), w = random({6});
    EXPECT_THROW(gpu_->layer_norm(x.gpu, w.gpu, w.gpu, 1e-6f), Error);
    EXPECT_THROW(gpu_->rms_norm(x.gpu, w.gpu, 1e-6f), Error);
}

}  // namespace
}  // namespace folio::backend_ops_test
