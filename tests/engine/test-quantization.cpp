#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "engine/backend/backend.h"
#include "engine/backend/quantization.h"
#include "engine/common/error.h"

using namespace folio;

namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) {
        x = dist(rng);
    }
    return v;
}

}  // namespace

TEST(Quantization, ParsesNamesAndRejectsUnknownOnes) {
    EXPECT_EQ(parse_quantization("wint8"), Quantization::Wint8);
    EXPECT_EQ(parse_quantization("wint4"), Quantization::Wint4);
    EXPECT_EQ(parse_quantization("none"), Quantization::None);
    EXPECT_EQ(parse_quantization(""), Quantization::None);
    EXPECT_THROW(parse_quantization("WINT8 "), Error);
    EXPECT_THROW(parse_quantization("fp8"), Error);
}

TEST(Quantization, Wint8ErrorIsAtMostHalfAStepPerChannel) {
    const int64_t n_out = 7, n_in = 33;
    const std::vector<float> w = random_values(n_out * n_in, 1);
    const QuantizedWeights q = quantize(w, n_out, n_in, Quantization::Wint8, 0);
    ASSERT_EQ(q.scales.size(), static_cast<size_t>(n_out));
    const std::vector<float> d = dequantize(q);
    for (int64_t r = 0; r < n_out; ++r) {
        float max_abs = 0.0f;
        for (int64_t c = 0; c < n_in; ++c) {
            max_abs = std::max(max_abs, std::fabs(w[r * n_in + c]));
        }
        EXPECT_FLOAT_EQ(q.scales[r], max_abs / 127.0f);
        for (int64_t c = 0; c < n_in; ++c) {
            EXPECT_LE(std::fabs(d[r * n_in + c] - w[r * n_in + c]), q.scales[r] * 0.5f + 1e-7f);
        }
    }
}

TEST(Quantization, Wint4PacksTwoValuesPerByteWithGroupScales) {
    // Row 0 holds the integers -7..7 times 0.5 in its first group, so it is represented exactly.
    const int64_t n_out = 2, n_in = 128, group = 64;
    std::vector<float> w = random_values(n_out * n_in, 2);
    for (int64_t c = 0; c < group; ++c) {
        w[c] = 0.5f * static_cast<float>(c % 15 - 7);
    }
    const QuantizedWeights q = quantize(w, n_out, n_in, Quantization::Wint4, group);
    ASSERT_EQ(q.q.size(), static_cast<size_t>(n_out * n_in / 2));
    ASSERT_EQ(q.scales.size(), static_cast<size_t>(n_out * n_in / group));
    EXPECT_FLOAT_EQ(q.scales[0], 0.5f);
    // Column 0 is -7 (low nibble 0x9), column 1 is -6 (high nibble 0xa).
    EXPECT_EQ(static_cast<uint8_t>(q.q[0]), 0xa9);
    const std::vector<float> d = dequantize(q);
    for (int64_t c = 0; c < group; ++c) {
        EXPECT_EQ(d[c], w[c]);
    }
    for (int64_t r = 0; r < n_out; ++r) {
        for (int64_t c = 0; c < n_in; ++c) {
            const float scale = q.scales[r * (n_in / group) + c / group];
            EXPECT_LE(std::fabs(d[r * n_in + c] - w[r * n_in + c]), scale * 0.5f + 1e-6f);
        }
    }
}

// A level halfway between two integers goes to the even one (as nearbyint does), in both formats.
TEST(Quantization, LevelsRoundHalfwayToEven) {
    const int64_t n_in = 64;
    // WINT8: 127 sets the scale to 1, so each value is its own level before rounding.
    std::vector<float> w8(n_in, 0.0f);
    const float halves[] = {127.0f, 0.5f, 1.5f, 2.5f, -2.5f, -0.5f, 126.5f, 3.25f, -3.75f};
    std::copy(std::begin(halves), std::end(halves), w8.begin());
    const QuantizedWeights q8 = quantize(w8, 1, n_in, Quantization::Wint8, 0);
    ASSERT_FLOAT_EQ(q8.scales[0], 1.0f);
    const int8_t levels8[] = {127, 0, 2, 2, -2, 0, 126, 3, -4};
    for (size_t c = 0; c < std::size(levels8); ++c) {
        EXPECT_EQ(q8.q[c], levels8[c]) << halves[c];
    }
    // WINT4: 7 sets the scale to 1.
    std::vector<float> w4(n_in, 0.0f);
    const float halves4[] = {7.0f, 0.5f, 1.5f, 2.5f, -2.5f, -6.5f, 5.5f, -7.0f};
    std::copy(std::begin(halves4), std::end(halves4), w4.begin());
    const std::vector<float> d = dequantize(quantize(w4, 1, n_in, Quantization::Wint4, n_in));
    const float levels4[] = {7.0f, 0.0f, 2.0f, 2.0f, -2.0f, -6.0f, 6.0f, -7.0f};
    for (size_t c = 0; c < std::size(levels4); ++c) {
        EXPECT_EQ(d[c], levels4[c]) << halves4[c];
    }
}

TEST(Quantization, Bf16RoundsToNearestEven) {
    // 1 + 2^-8 lies halfway between two bfloat16 values and goes to the even one, 1; 1 + 3 * 2^-9 goes up.
    const std::vector<float> w{1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-9f, -2.5f,
                               0.0f, 3.0e-5f,        65504.0f,           -1e30f};
    const QuantizedWeights q = quantize(w, 2, 4, Quantization::Bf16, 0);
    EXPECT_EQ(q.q.size(), w.size() * 2);
    EXPECT_TRUE(q.scales.empty());
    const std::vector<float> d = dequantize(q);
    EXPECT_EQ(d[0], 1.0f);
    EXPECT_EQ(d[1], 1.0f);
    EXPECT_EQ(d[2], 1.0f + 0x1p-7f);
    EXPECT_EQ(d[3], -2.5f);
    EXPECT_EQ(d[4], 0.0f);
    for (size_t i = 5; i < w.size(); ++i) {
        EXPECT_LE(std::fabs(d[i] - w[i]), std::fabs(w[i]) * 0x1p-8f) << i;
    }
    EXPECT_EQ(quantized_bytes(Quantization::Bf16, 2, 4, 4), 16);
}

TEST(Quantization, RejectsLayoutsThatDoNotFit) {
    const std::vector<float> w(96 * 4, 1.0f);
    EXPECT_THROW(quantize(w, 4, 96, Quantization::Wint4, 64), Error) << "96 columns in groups of 64";
    EXPECT_THROW(quantize(w, 4, 96, Quantization::Wint4, 32), Error) << "group size 32";
    EXPECT_THROW(quantize(w, 4, 95, Quantization::Wint8, 0), Error) << "wrong value count";
    EXPECT_THROW(quantize(w, 4, 96, Quantization::None, 0), Error);
    QuantizedWeights q = quantize(w, 4, 96, Quantization::Wint8, 0);
    q.scales.pop_back();
    EXPECT_THROW(dequantize(q), Error);
    const auto backend = make_cpu_backend(1);
    EXPECT_THROW(backend->upload(q), Error);
}

// Weights quantized after their place was taken (a model's quantization pass) are the weights upload gives;
// packed weights of another type or size do not go into that place.
TEST(Quantization, WeightsWrittenIntoTheirPlaceEqualUploadedOnes) {
    const auto backend = make_cpu_backend(1);
    const Tensor x = backend->upload(random_values(3 * 128, 1), {3, 128});
    for (const Quantization type : {Quantization::Wint8, Quantization::Wint4, Quantization::Bf16}) {
        const QuantizedWeights q = quantize(random_values(8 * 128, 2, 0.05f), 8, 128, type, 64);
        const Weight placed = backend->alloc_weight(type, 8, 128, 64);
        EXPECT_EQ(placed.group_size, q.group_size) << quantization_name(type);
        backend->write_weight(placed, q);
        EXPECT_EQ(backend->download(backend->linear(x, placed, nullptr)),
                  backend->download(backend->linear(x, backend->upload(q), nullptr)))
            << quantization_name(type);
        EXPECT_THROW(backend->write_weight(backend->alloc_weight(type, 4, 128, 64), q), Error);
        EXPECT_THROW(backend->write_weight(backend->alloc_weight(type, 8, 256, 64), q), Error);
    }
    const QuantizedWeights wint8 = quantize(random_values(8 * 128, 2), 8, 128, Quantization::Wint8, 64);
    EXPECT_THROW(backend->write_weight(backend->alloc_weight(Quantization::Wint4, 8, 128, 64), wint8), Error);
    EXPECT_THROW(backend->write_weight(backend->alloc_weight(Quantization::Wint4, 8, 128, 128),
                                       quantize(random_values(8 * 128, 2), 8, 128, Quantization::Wint4, 64)),
                 Error)
        << "groups of 128 where the weights have groups of 64";
    EXPECT_THROW(backend->alloc_weight(Quantization::Wint4, 8, 96, 64), Error)
        << "96 columns in groups of 64";
    EXPECT_THROW(backend->alloc_weight(Quantization::None, 8, 128, 64), Error);
}

TEST(Quantization, ZeroRowsStayZero) {
    const std::vector<float> w(2 * 64, 0.0f);
    for (const Quantization type : {Quantization::Wint8, Quantization::Wint4}) {
        const std::vector<float> d = dequantize(quantize(w, 2, 64, type, 64));
        for (const float v : d) {
            EXPECT_EQ(v, 0.0f);
        }
    }
}

// A large weight, quantized on several threads, gives the bytes its rows give quantized one block at a time.
TEST(Quantization, LargeWeightsEqualTheirRowsQuantizedAlone) {
    constexpr int64_t kOut = 2048, kIn = 2304;  // 4.7 M values: past the threaded size
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> w(static_cast<size_t>(kOut * kIn));
    for (float& v : w) {
        v = normal(rng);
    }
    for (const Quantization type : {Quantization::Bf16, Quantization::Wint8, Quantization::Wint4}) {
        const QuantizedWeights whole = quantize(w, kOut, kIn, type, 64);
        constexpr int64_t kBlock = 128;
        std::vector<int8_t> q;
        std::vector<float> scales;
        for (int64_t r = 0; r < kOut; r += kBlock) {
            const QuantizedWeights part =
                quantize(std::span<const float>(w).subspan(r * kIn, kBlock * kIn), kBlock, kIn, type, 64);
            q.insert(q.end(), part.q.begin(), part.q.end());
            scales.insert(scales.end(), part.scales.begin(), part.scales.end());
        }
        EXPECT_EQ(whole.q, q) << quantization_name(type);
        EXPECT_EQ(whole.scales, scales) << quantization_name(type);
    }
}

TEST(Quantization, ByteCountsOfEachFormat) {
    EXPECT_EQ(quantized_bytes(Quantization::None, 10, 128, 64), 10 * 128 * 4);
    EXPECT_EQ(quantized_bytes(Quantization::Wint8, 10, 128, 64), 10 * 128 + 10 * 4);
    EXPECT_EQ(quantized_bytes(Quantization::Wint4, 10, 128, 64), 10 * 64 + 10 * 2 * 4);
}

class QuantizedLinear : public ::testing::TestWithParam<std::tuple<Quantization, int64_t, int64_t, int64_t>> {
};

// The CPU matmul over quantized weights equals the dense matmul over the dequantized matrix bit for bit: it
// dequantizes exactly and then runs the same micro-kernel.
TEST_P(QuantizedLinear, EqualsDenseLinearOverDequantizedWeights) {
    const auto [type, n_rows, n_out, n_in] = GetParam();
    const auto backend = make_cpu_backend(2);
    const std::vector<float> w = random_values(n_out * n_in, 3, 0.05f);
    const QuantizedWeights q = quantize(w, n_out, n_in, type, 64);
    const Tensor x = backend->upload(random_values(n_rows * n_in, 4), {n_rows, n_in});
    const Tensor b = backend->upload(random_values(n_out, 5), {n_out});
    const Tensor dense = backend->upload(dequantize(q), {n_out, n_in});
    const std::vector<float> expected = backend->download(backend->linear(x, dense, &b));
    const std::vector<float> actual = backend->download(backend->linear(x, backend->upload(q), &b));
    EXPECT_EQ(actual, expected);
    const Tensor wrong = backend->upload(random_values(n_rows * 3, 6), {n_rows, 3});
    EXPECT_THROW(backend->linear(wrong, backend->upload(q), &b), Error);
}

// The fused forms a backend may run in one pass: GELU after the bias, and the sum added to the residual.
TEST_P(QuantizedLinear, EpiloguesEqualTheSeparateOperations) {
    const auto [type, n_rows, n_out, n_in] = GetParam();
    const auto backend = make_cpu_backend(2);
    const Weight w = backend->upload(quantize(random_values(n_out * n_in, 7, 0.05f), n_out, n_in, type, 64));
    const Tensor x = backend->upload(random_values(n_rows * n_in, 8), {n_rows, n_in});
    const Tensor b = backend->upload(random_values(n_out, 9), {n_out});
    Tensor gelu = backend->linear(x, w, &b);
    backend->gelu_tanh(gelu);
    EXPECT_EQ(
        backend->download(backend->linear(x, w, LinearSpec{.bias = &b, .activation = Activation::GeluTanh})),
        backend->download(gelu));
    const std::vector<float> residual = random_values(n_rows * n_out, 10);
    Tensor sum = backend->upload(residual, {n_rows, n_out});
    backend->add(sum, backend->linear(x, w, nullptr));
    Tensor y = backend->upload(residual, {n_rows, n_out});
    backend->linear(x, w, LinearSpec{.residual = &y});
    EXPECT_EQ(backend->download(y), backend->download(sum));
    EXPECT_NE(backend->download(y), residual);
    Tensor wrong_rows = backend->upload(residual, {n_rows * n_out, 1});
    EXPECT_THROW(backend->linear(x, w, LinearSpec{.bias = &b, .residual = &wrong_rows}), Error);
}

INSTANTIATE_TEST_SUITE_P(Shapes, QuantizedLinear,
                         ::testing::Values(std::make_tuple(Quantization::Wint8, 1, 5, 33),
                                           std::make_tuple(Quantization::Wint8, 17, 130, 96),
                                           std::make_tuple(Quantization::Wint4, 1, 7, 128),
                                           std::make_tuple(Quantization::Wint4, 13, 33, 192),
                                           std::make_tuple(Quantization::Bf16, 1, 9, 40),
                                           std::make_tuple(Quantization::Bf16, 17, 33, 96)));

// E4M3 (OCP FP8): 4 exponent bits with bias 7, 3 mantissa bits, subnormals below 2^-6, no infinities, 448 the
// largest value; conversion rounds to nearest even and saturates.
TEST(Fp8, E4M3RoundsToNearestEvenAndSaturates) {
    struct Case {
        float value;
        uint8_t bits;
    };
    for (const Case c :
         {Case{0.0f, 0x00}, Case{-0.0f, 0x80}, Case{1.0f, 0x38}, Case{-2.0f, 0xc0}, Case{448.0f, 0x7e},
          Case{-448.0f, 0xfe}, Case{500.0f, 0x7e}, Case{1e9f, 0x7e}, Case{0x1p-9f, 0x01},
          Case{0x1p-10f, 0x00}, Case{0x3p-10f, 0x02}, Case{0x1p-6f, 0x08}, Case{0x7p-9f, 0x07},
          Case{0xfp-10f, 0x08},  // 7.5 subnormal steps: to 8, the first normal
          Case{1.0625f, 0x38}, Case{1.1875f, 0x3a}, Case{0.3f, 0x2a}, Case{240.0f, 0x77}}) {
        EXPECT_EQ(to_fp8_e4m3(c.value), c.bits) << c.value;
    }
    EXPECT_EQ(to_fp8_e4m3(std::nanf("")) & 0x7f, 0x7f);
    EXPECT_TRUE(std::isnan(from_fp8_e4m3(0x7f)));
    EXPECT_TRUE(std::isnan(from_fp8_e4m3(0xff)));
    // Every other byte is a value that converts back to itself; values are ordered as their codes.
    float previous = -1.0f;
    for (int b = 0; b < 0x7f; ++b) {
        const float v = from_fp8_e4m3(static_cast<uint8_t>(b));
        EXPECT_EQ(to_fp8_e4m3(v), b) << b;
        EXPECT_EQ(to_fp8_e4m3(-v), b | 0x80) << b;
        EXPECT_GT(v, previous) << b;
        previous = v;
    }
    EXPECT_EQ(from_fp8_e4m3(0x7e), 448.0f);
}

// FP8 weights: each row's largest magnitude becomes 448, and every weight is within half a step of its
// binade (2^-4 of its magnitude) or, below the normal range, half a subnormal step.
TEST(Fp8, WeightsKeepAScaleAChannel) {
    const int64_t n_out = 9, n_in = 64;
    std::vector<float> w = random_values(n_out * n_in, 21, 0.05f);
    std::fill(w.begin() + 3 * n_in, w.begin() + 4 * n_in, 0.0f);  // a row of zeros keeps scale 1
    const QuantizedWeights q = quantize(w, n_out, n_in, Quantization::Fp8, 0);
    EXPECT_EQ(q.group_size, n_in);
    ASSERT_EQ(q.scales.size(), static_cast<size_t>(n_out));
    EXPECT_EQ(q.scales[3], 1.0f);
    const std::vector<float> back = dequantize(q);
    for (int64_t r = 0; r < n_out; ++r) {
        for (int64_t c = 0; c < n_in; ++c) {
            const float v = w[r * n_in + c], d = back[r * n_in + c], scale = q.scales[r];
            const float tolerance = std::max(std::fabs(v) * 0x1p-4f, scale * 0x1p-10f) * 1.0001f;
            EXPECT_LE(std::fabs(v - d), tolerance) << r << ", " << c;
        }
    }
    EXPECT_EQ(quantized_bytes(Quantization::Fp8, n_out, n_in, 0), n_out * n_in + n_out * 4);
    EXPECT_STREQ(quantization_name(Quantization::Fp8), "fp8");
    EXPECT_THROW((void)parse_quantization("fp8"), Error);  // the language model has no FP8 path
}

// The CPU backend's FP8 product reads x's rows as an FP8 product does, rounded to E4M3 a scale a row: the
// dense product of those rounded rows over the dequantized weights, bit for bit, and the fused epilogues the
// separate operations.
TEST(Fp8, ProductReadsRowsRoundedToE4M3) {
    const auto backend = make_cpu_backend(2);
    const int64_t n = 5, n_out = 12, n_in = 48;
    const QuantizedWeights q =
        quantize(random_values(n_out * n_in, 22, 0.05f), n_out, n_in, Quantization::Fp8, 0);
    const std::vector<float> x = random_values(n * n_in, 23);
    std::vector<float> rounded = x;
    std::vector<float> scales(n);
    round_rows_to_fp8(rounded, n_in, scales);
    EXPECT_NE(rounded, x);
    for (int64_t r = 0; r < n; ++r) {
        float largest = 0.0f;
        for (int64_t c = 0; c < n_in; ++c) {
            largest = std::max(largest, std::fabs(x[r * n_in + c]));
        }
        EXPECT_EQ(scales[r], largest / 448.0f) << r;
    }
    const Tensor b = backend->upload(random_values(n_out, 24), {n_out});
    const Weight w = backend->upload(q);
    const Tensor dense = backend->upload(dequantize(q), {n_out, n_in});
    const Tensor x_t = backend->upload(x, {n, n_in});
    EXPECT_EQ(backend->download(backend->linear(x_t, w, &b)),
              backend->download(backend->linear(backend->upload(rounded, {n, n_in}), dense, &b)));
    Tensor gelu = backend->linear(x_t, w, &b);
    backend->gelu_tanh(gelu);
    EXPECT_EQ(backend->download(
                  backend->linear(x_t, w, LinearSpec{.bias = &b, .activation = Activation::GeluTanh})),
              backend->download(gelu));
    EXPECT_TRUE(backend->fp8_refusal().empty());
    EXPECT_THROW(round_rows_to_fp8(rounded, 7), Error);
}
