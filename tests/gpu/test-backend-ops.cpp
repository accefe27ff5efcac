// Every operation of the CUDA backend against the CPU reference backend, on fresh random inputs of odd and
// even sizes; skipped where no CUDA device is present. The CUDA backend fills new tensors with NaN, so an
// output element an operation fails to write shows up as an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/host-staging.h"
#include "engine/backend/cuda/make-cuda-backend.h"
#include "engine/backend/sampling.h"
#include "engine/common/error.h"
#include "engine/models/layers.h"
#include "engine/models/linear.h"
#include "engine/runtime/rope.h"
#include "kernels/cuda-check.h"
#include "kernels/elementwise.h"
#include "kernels/quantized-linear.h"
#include "kernels/transfer.h"

namespace folio {
namespace {

// Float32 paths: both backends compute in float32 and differ only in summation order and in the libm
// versus CUDA versions of exp, tanh and erf, a few ulp each.
constexpr double kF32Bound = 1e-4;
// Quantized GEMV paths (up to kQuantizedGemvMaxRows rows): the CPU dots x with each int times its scale, the
// GEMV dots x with the ints (exact as floats) and scales each chunk's sum once, so they too differ only in
// the order of roundings; the inputs' magnitudes are those of the float32 tests.
constexpr double kQuantizedBound = 1e-4;
// With more than kQuantizedGemvMaxRows rows the weights (BF16, or WINT8/WINT4 dequantized and rounded to
// bfloat16) multiply on the tensor cores with the activations rounded to bfloat16 (8 significant bits, a
// relative rounding error up to 2^-9 on each), while the CPU keeps them in float32; over hundreds of products
// the errors partly cancel, and 1e-2 of the largest output bounds them with margin. Up to
// kQuantizedGemvMaxRows rows the activations stay float32, as on the CPU.
constexpr double kBf16TensorCoreBound = 1e-2;
// The bound of a linear layer's output for n rows of activations.
constexpr double linear_bound(int64_t n) {
    return n > kernels::kQuantizedGemvMaxRows ? kBf16TensorCoreBound : kQuantizedBound;
}
// A bfloat16 cache holds what the CPU's float32 cache holds rounded to 8 significant bits: a relative
// error up to 2^-9 of each element, beside the float32 paths' own.
constexpr double kBf16CacheBound = 4e-3;

// The element types of key/value caches the CUDA backend reads.
constexpr std::array<ScalarType, 2> kCacheTypes = {ScalarType::F32, ScalarType::BF16};

// A weight matrix [out, in] of the products' tests, packed as type says.
struct LinearCase {
    Quantization type;
    int64_t in;
    int64_t out;
    int64_t group_size;
};

// max |actual - expected| / max |expected|; infinite where actual holds a NaN or an infinity.
double relative_error(const std::vector<float>& actual, const std::vector<float>& expected) {
    if (actual.size() != expected.size()) {
        return INFINITY;
    }
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < actual.size(); ++i) {
        if (!std::isfinite(actual[i])) {
            return INFINITY;
        }
        max_diff = std::max(max_diff, std::fabs(static_cast<double>(actual[i]) - expected[i]));
        max_ref = std::max(max_ref, std::fabs(static_cast<double>(expected[i])));
    }
    return max_ref > 0.0 ? max_diff / max_ref : max_diff;
}

// The largest error seen per operation, printed when the test program ends.
std::map<std::string, double>& worst_errors() {
    static std::map<std::string, double> errors;
    return errors;
}

class WorstErrorReport : public ::testing::Environment {
public:
    void TearDown() override {
        for (const auto& [op, err] : worst_errors()) {
            std::cout << "max relative error " << op << ": " << err << "\n";
        }
    }
};

const auto* const report = ::testing::AddGlobalTestEnvironment(new WorstErrorReport);

std::vector<float> random_values(int64_t n, uint32_t seed, float mean = 0.0f, float stddev = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(mean, stddev);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) {
        x = normal(rng);
    }
    return v;
}

// Device memory of n_bytes, a copy of host's where given, freed with its owner.
using DeviceBytes = std::unique_ptr<void, cudaError_t (*)(void*)>;
DeviceBytes device_bytes(size_t n_bytes, const void* host = nullptr) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n_bytes, 1)));
    DeviceBytes owned(p, cudaFree);
    if (host != nullptr) {
        CUDA_CHECK(cudaMemcpy(p, host, n_bytes, cudaMemcpyHostToDevice));
    }
    return owned;
}

class BackendOpsTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
        cpu_ = make_cpu_backend();
        gpu_ = make_cuda_backend(CudaBackendOptions{0, true});
    }

    // The same values as a tensor of each backend.
    struct Pair {
        Tensor cpu;
        Tensor gpu;
    };

    Pair upload(const std::vector<float>& values, std::vector<int64_t> shape) {
        return {cpu_->upload(values, shape), gpu_->upload(values, shape)};
    }

    Pair upload_i32(const std::vector<int32_t>& values, std::vector<int64_t> shape) {
        return {cpu_->upload_i32(values, shape), gpu_->upload_i32(values, shape)};
    }

    Pair random(std::vector<int64_t> shape, float mean = 0.0f, float stddev = 1.0f) {
        const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
        return upload(random_values(n, seed_++, mean, stddev), std::move(shape));
    }

    // A key/value cache of random values: the GPU's of dtype elements, the CPU's float32 holding the same
    // values (rounded to bfloat16 for a bfloat16 cache).
    Pair random_kv(std::vector<int64_t> shape, ScalarType dtype) {
        const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
        const std::vector<float> values = random_values(n, seed_++);
        return {cpu_->upload(rounded(values, dtype), shape), gpu_->upload_kv(values, shape, dtype)};
    }

    static std::vector<float> rounded(std::vector<float> values, ScalarType dtype) {
        if (dtype == ScalarType::BF16) {
            for (float& x : values) {
                x = from_bf16(to_bf16(x));
            }
        }
        return values;
    }

    // Checks shapes and values of a result and records its error under `op`.
    void expect_close(const std::string& op, const Tensor& gpu, const Tensor& cpu, double bound,
                      const std::string& where) {
        ASSERT_EQ(gpu.shape, cpu.shape) << op << " " << where;
        const double err = relative_error(gpu_->download(gpu), cpu_->download(cpu));
        EXPECT_LT(err, bound) << op << " " << where;
        double& worst = worst_errors()[op];
        worst = std::max(worst, err);
    }

    std::unique_ptr<Backend> cpu_;
    std::unique_ptr<Backend> gpu_;
    uint32_t seed_ = 1;
};

// A case's description for failure messages, from its parts.
template <typename... Parts>
std::string label(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
}

std::string dims(std::initializer_list<int64_t> values) {
    std::ostringstream out;
    for (const int64_t v : values) {
        out << (out.tellp() > 0 ? "x" : "") << v;
    }
    return out.str();
}

TEST_F(BackendOpsTest, AllocUploadDownloadCopy) {
    const Tensor zeros = gpu_->alloc({3, 5});
    EXPECT_EQ(gpu_->download(zeros), std::vector<float>(15, 0.0f));
    for (const int64_t n : {1, 7, 1000, 130 * 96}) {
        const auto values = random_values(n, seed_++);
        Tensor t = gpu_->upload(values, {n});
        EXPECT_EQ(gpu_->download(t), values);
        const Tensor c = gpu_->copy(t);
        gpu_->gelu_erf(t);
        EXPECT_EQ(gpu_->download(c), values) << "a copy is independent of its source";
        EXPECT_EQ(c.shape, t.shape);
    }
    const Tensor empty = gpu_->alloc({0, 4});
    EXPECT_TRUE(gpu_->download(empty).empty());
    EXPECT_THROW(gpu_->alloc({2, -1}), Error);
    EXPECT_THROW(gpu_->upload(std::vector<float>(5), {2, 3}), Error);
    EXPECT_THROW(gpu_->download(cpu_->alloc({4})), Error) << "a CPU tensor is refused";
    EXPECT_THROW(gpu_->download(gpu_->upload_i32(std::vector<int32_t>{1, 2}, {2})), Error)
        << "int32 elements";
}

// Key/value caches of either element type: zeros from alloc_kv, rounded values from upload_kv (exactly what
// the host's rounding gives), copies of their own type; other types are refused.
TEST_F(BackendOpsTest, KeyValueCacheTensors) {
    EXPECT_EQ(gpu_->kv_dtype(AttentionPrecision::Bf16), ScalarType::BF16);
    EXPECT_EQ(gpu_->kv_dtype(AttentionPrecision::F32), ScalarType::F32);
    for (const ScalarType dtype : kCacheTypes) {
        const Tensor zeros = gpu_->alloc_kv({6, 2, 5}, dtype);
        EXPECT_EQ(zeros.dtype, dtype);
        EXPECT_EQ(gpu_->download(zeros), std::vector<float>(60, 0.0f));
        for (const int64_t n : {1, 7, 1000}) {
            const auto values = random_values(n, seed_++);
            const Tensor t = gpu_->upload_kv(values, {n}, dtype);
            const std::vector<float> expected = rounded(values, dtype);
            EXPECT_EQ(gpu_->download(t), expected) << dtype_name(dtype) << " " << n;
            const Tensor c = gpu_->copy(t);
            EXPECT_EQ(c.dtype, dtype);
            EXPECT_EQ(gpu_->download(c), expected);
            EXPECT_EQ(gpu_->download(t.view(n - 1, {1})), std::vector<float>{expected.back()}) << "a view";
        }
    }
    EXPECT_NE(rounded({1.0f + 1.0f / 512.0f}, ScalarType::BF16), std::vector<float>{1.0f + 1.0f / 512.0f})
        << "bfloat16 rounds";
    EXPECT_THROW(gpu_->alloc_kv({4}, ScalarType::I32), Error);
    EXPECT_THROW(gpu_->upload_kv(std::vector<float>(3), {4}, ScalarType::BF16), Error) << "3 values for 4";
    EXPECT_THROW(cpu_->alloc_kv({4}, ScalarType::BF16), Error) << "the CPU keeps float32 caches";
    EXPECT_EQ(cpu_->kv_dtype(AttentionPrecision::Bf16), ScalarType::F32);
}

// Parts go through page-locked memory and the copy runs after upload() returns: the sources are overwritten
// at once, four uploads (more than the two staging buffers) are in flight before the first download, and
// larger ones grow the buffers.
TEST_F(BackendOpsTest, UploadInParts) {
    std::vector<std::vector<float>> expected;
    std::vector<Tensor> uploaded;
    // Sizes around the staging chunks and beyond the whole ring (kMaxChunks of kChunkBytes), so that one
    // upload refills chunks its own copies still read.
    const auto chunk_floats = static_cast<int64_t>(kernels::HostStaging::kChunkBytes / sizeof(float));
    const auto ring_floats = chunk_floats * static_cast<int64_t>(kernels::HostStaging::kMaxChunks);
    for (const int64_t n : {int64_t{1000}, int64_t{300'000}, chunk_floats, chunk_floats + 1, int64_t{5} << 20,
                            int64_t{777}, 2 * ring_floats + 12'345}) {
        std::vector<float> values = random_values(n, seed_++);
        const std::span<const float> all(values);
        const size_t cut = static_cast<size_t>(n / 3), second_cut = static_cast<size_t>(n - n / 7);
        const std::vector<std::span<const float>> parts = {
            all.first(cut), all.subspan(cut, 0), all.subspan(cut, second_cut - cut), all.subspan(second_cut)};
        uploaded.push_back(gpu_->upload(parts, {n}));
        expected.push_back(values);
        std::fill(values.begin(), values.end(), -1.0f);
    }
    for (size_t i = 0; i < uploaded.size(); ++i) {
        EXPECT_EQ(gpu_->download(uploaded[i]), expected[i]) << "upload " << i;
    }
    const std::vector<float> values = random_values(10, seed_++);
    const std::vector<std::span<const float>> parts = {std::span(values)};
    EXPECT_THROW(gpu_->upload(parts, {11}), Error);
    EXPECT_TRUE(gpu_->download(gpu_->upload(std::vector<std::span<const float>>{}, {0, 3})).empty());
}

// 8-bit levels expand to their channel's values exactly as the CPU backend expands them: rows of one, three
// and more channels of odd sizes, parts that split rows, uploads beyond a staging chunk, and every level.
TEST_F(BackendOpsTest, UploadLevels) {
    std::mt19937 rng(seed_++);
    std::uniform_int_distribution<int> level(0, 255);
    struct Case {
        int64_t n_rows, n_channels, channel_size;
    };
    for (const Case c : {Case{1, 1, 1}, Case{7, 3, 196}, Case{300, 3, 5}, Case{3, 2, 1001},
                         Case{static_cast<int64_t>(kernels::HostStaging::kChunkBytes / 588 + 3), 3, 196}}) {
        const int64_t row = c.n_channels * c.channel_size;
        std::vector<uint8_t> levels(static_cast<size_t>(c.n_rows * row));
        std::generate(levels.begin(), levels.end(), [&] { return static_cast<uint8_t>(level(rng)); });
        const std::vector<float> table = random_values(c.n_channels * 256, seed_++);
        const std::span<const uint8_t> all(levels);
        const size_t cut = levels.size() / 3 + 1;
        const std::vector<std::span<const uint8_t>> parts = {all.first(cut), all.subspan(cut, 0),
                                                             all.subspan(cut)};
        const std::string where = dims({c.n_rows, c.n_channels, c.channel_size});
        const std::vector<float> expected =
            cpu_->download(cpu_->upload_levels(parts, table, c.channel_size, {c.n_rows, row}));
        EXPECT_EQ(gpu_->download(gpu_->upload_levels(parts, table, c.channel_size, {c.n_rows, row})),
                  expected)
            << where;
        // The CPU's expansion is the table itself: the level's entry of the element's channel.
        const size_t last = levels.size() - 1;
        const auto channel = static_cast<size_t>(static_cast<int64_t>(last) % row / c.channel_size);
        EXPECT_EQ(expected[last], table[channel * 256 + levels[last]]) << where;
    }
    const std::vector<uint8_t> levels(12, 3);
    const std::vector<std::span<const uint8_t>> parts = {std::span(levels)};
    const std::vector<float> table(3 * 256, 1.0f);
    EXPECT_THROW(gpu_->upload_levels(parts, table, 3, {2, 6}), Error)
        << "a table for three channels, rows of two";
    EXPECT_THROW(gpu_->upload_levels(parts, table, 5, {2, 6}), Error) << "rows not whole channels";
    EXPECT_THROW(gpu_->upload_levels(parts, table, 2, {3, 6}), Error) << "levels for another shape";
    EXPECT_TRUE(gpu_->download(gpu_->upload_levels({}, table, 2, {0, 6})).empty());
}

TEST_F(BackendOpsTest, FactoryAndLifetimes) {
    EXPECT_THROW(make_cuda_backend(kernels::device_count()), Error) << "no device of that number";
    EXPECT_NE(gpu_->name().find("cuda"), std::string::npos) << gpu_->name();
    // Tensors may outlive their backend.
    Tensor t = gpu_->upload(random_values(7, 1), {7});
    gpu_.reset();
    t = Tensor{};
    gpu_ = make_cuda_backend();
    // Memory freed by one tensor is taken by the next of the same size, and zeroed by alloc().
    for (int i = 0; i < 3; ++i) {
        Tensor x = gpu_->upload(random_values(1000, 2), {1000});
        gpu_->gelu_tanh(x);
        EXPECT_EQ(gpu_->download(gpu_->alloc({1000})), std::vector<float>(1000, 0.0f));
    }
}

TEST_F(BackendOpsTest, MemoryStatsCountBytesAndPeak) {
    const MemoryStats before = gpu_->memory_stats();
    {
        const Tensor a = gpu_->alloc({1000});
        const Tensor b = gpu_->alloc({24, 10});
        EXPECT_EQ(gpu_->memory_stats().in_use, before.in_use + 4960);
    }
    EXPECT_EQ(gpu_->memory_stats().in_use, before.in_use);
    EXPECT_GE(gpu_->memory_stats().peak, before.in_use + 4960);
    gpu_->reset_peak();
    EXPECT_EQ(gpu_->memory_stats().peak, before.in_use);
    const Weight q = gpu_->upload(quantize(random_values(8 * 128, 3), 8, 128, Quantization::Wint4, 64));
    EXPECT_EQ(gpu_->memory_stats().in_use, before.in_use + quantized_bytes(Quantization::Wint4, 8, 128, 64));
}

TEST_F(BackendOpsTest, OutOfMemoryThrowsWithTheRequest) {
    const int64_t n = int64_t{1} << 40;  // 4 TiB of floats
    try {
        gpu_->alloc({n});
        FAIL() << "allocated 4 TiB";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("out of memory"), std::string::npos) << what;
        EXPECT_NE(what.find(std::to_string(n * 4)), std::string::npos) << what;
        EXPECT_NE(what.find("free of"), std::string::npos) << what;
    }
    // The backend goes on working.
    Pair x = random({3, 7});
    cpu_->gelu_tanh(x.cpu);
    gpu_->gelu_tanh(x.gpu);
    expect_close("gelu_tanh", x.gpu, x.cpu, kF32Bound, "after out of memory");
}

// --device-memory: the backend reports the limit as its memory and refuses tensors beyond it, live and cached
// blocks counted together; a tensor that goes makes room again.
TEST_F(BackendOpsTest, MemoryLimitBoundsTheDevice) {
    CudaBackendOptions options;
    options.memory_limit_bytes = int64_t{64} << 20;
    const std::unique_ptr<Backend> small = make_cuda_backend(options);
    EXPECT_EQ(small->total_memory(), int64_t{64} << 20);
    {
        const Tensor a = small->alloc({int64_t{10} << 20});  // 40 MiB
        try {
            small->alloc({int64_t{8} << 20});  // 32 MiB more
            FAIL() << "went past the limit";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
        }
    }
    const Tensor b = small->alloc({int64_t{12} << 20});  // 48 MiB once the first is gone
    EXPECT_EQ(small->memory_stats().in_use, int64_t{48} << 20);
    Pair x = random({3, 7});
    Tensor y = small->upload(std::span<const float>(x.cpu.f32(), 21), {3, 7});
    small->gelu_tanh(y);
    cpu_->gelu_tanh(x.cpu);
    expect_close("gelu_tanh", y, x.cpu, kF32Bound, "under a memory limit");
}

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
        {Quantization::Wint8, 1, 7, 0},       {Quantization::Wint8, 7, 96, 0},
        {Quantization::Wint8, 96, 1000, 0},   {Quantization::Wint8, 1000, 7, 0},
        {Quantization::Wint8, 1024, 1, 0},    {Quantization::Wint4, 64, 7, 64},
        {Quantization::Wint4, 192, 1000, 64}, {Quantization::Wint4, 1024, 96, 128},
        {Quantization::Wint4, 128, 1, 128},   {Quantization::Bf16, 1, 7, 0},
        {Quantization::Bf16, 96, 1000, 0},    {Quantization::Bf16, 1000, 7, 0},
        {Quantization::Bf16, 1024, 96, 0},
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
                const bool tensor_cores = n > kernels::kQuantizedGemvMaxRows;
                expect_close(label("linear ", quantization_name(c.type)), y_gpu, y_cpu,
                             tensor_cores ? kBf16TensorCoreBound : kQuantizedBound,
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
            const double bound = linear_bound(n);
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

// The norm before a layer (RMSNorm of the product's input) and the gating of a gated MLP (SwiGLU of the
// product's stacked gate and up halves). At one row with columns in chunks of eight the GEMV norms its input
// as it reads it; otherwise up to 8 rows the normed input goes to scratch in float32 for the GEMV first. The
// GEMV's blocks (at one or two rows, warps) hold both rows of each gate/up pair and write the gated value;
// more rows norm the input while rounding it for the tensor cores and gate the product in a pass after it.
// The CPU backend runs the operations one by one. Odd output counts (no halves) are refused.
TEST_F(BackendOpsTest, LinearNormAndGating) {
    const std::vector<LinearCase> cases = {
        {Quantization::Bf16, 1024, 96, 0}, {Quantization::Bf16, 3072, 7, 0},
        {Quantization::Bf16, 3072, 14, 0}, {Quantization::Bf16, 100, 33, 0},
        {Quantization::Wint8, 96, 130, 0}, {Quantization::Wint4, 128, 96, 64},
    };
    for (const LinearCase& c : cases) {
        const auto w = quantize(random_values(c.out * c.in, seed_++), c.out, c.in, c.type, c.group_size);
        const Weight w_cpu = cpu_->upload(w);
        const Weight w_gpu = gpu_->upload(w);
        for (const int64_t n : {1, 2, 3, 4, 5, 8, 9, 130}) {
            const double bound = linear_bound(n);
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
                            expect_close(label("linear spec ", format), y_gpu, y_cpu, linear_bound(n), where);
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
                expect_close(label("linear spec rope_to_cache (q) ", format), q_gpu, q_cpu, linear_bound(n),
                             where);
                expect_close(label("linear spec rope_to_cache (k) ", format), k_cache.gpu, k_cache.cpu,
                             linear_bound(n), where);
                expect_close(label("linear spec rope_to_cache (v) ", format), v_cache.gpu, v_cache.cpu,
                             linear_bound(n), where);
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
                layer_norm_mlp_add(*cpu_, x.cpu, fc1_cpu, fc2_cpu, norm_w.cpu, norm_b.cpu, 1e-6f);
                layer_norm_mlp_add(*gpu_, x.gpu, fc1_gpu, fc2_gpu, norm_w.gpu, norm_b.gpu, 1e-6f);
                const double bound = linear_bound(n);
                expect_close(label("layer_norm_mlp_add ", quantization_name(c.type)), x.gpu, x.cpu, bound,
                             where);
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
                const double bound = linear_bound(n);
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
        for (const int64_t d : {1, 7, 96, 1000, 1152, 1500, 2048, 2052}) {
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

TEST_F(BackendOpsTest, ElementWise) {
    for (const int64_t n : {1, 7, 96 * 3, 1000 * 17 + 1}) {
        Pair x = random({n}, 0.0f, 3.0f);
        const Pair y = random({n});
        cpu_->add(x.cpu, y.cpu);
        gpu_->add(x.gpu, y.gpu);
        expect_close("add", x.gpu, x.cpu, kF32Bound, dims({n}));
        cpu_->gelu_tanh(x.cpu);
        gpu_->gelu_tanh(x.gpu);
        expect_close("gelu_tanh", x.gpu, x.cpu, kF32Bound, dims({n}));
        Pair z = random({n}, 0.0f, 3.0f);
        cpu_->gelu_erf(z.cpu);
        gpu_->gelu_erf(z.gpu);
        expect_close("gelu_erf", z.gpu, z.cpu, kF32Bound, dims({n}));
    }
    Pair a = random({3, 4});
    const Pair b = random({4, 3});
    EXPECT_THROW(gpu_->add(a.gpu, b.gpu), Error);
}

TEST_F(BackendOpsTest, Rope) {
    for (const int64_t n : {1, 3, 17, 130}) {
        for (const int64_t n_head : {1, 3, 16}) {
            for (const int64_t hd : {2, 8, 72, 128}) {
                Pair x = random({n, n_head, hd});
                const Pair cos = random({n, hd}), sin = random({n, hd});
                cpu_->rope(x.cpu, cos.cpu, sin.cpu);
                gpu_->rope(x.gpu, cos.gpu, sin.gpu);
                expect_close("rope", x.gpu, x.cpu, kF32Bound, dims({n, n_head, hd}));
            }
        }
    }
    Pair x = random({3, 2, 7});
    const Pair cs = random({3, 7});
    EXPECT_THROW(gpu_->rope(x.gpu, cs.gpu, cs.gpu), Error);
    Pair y = random({3, 2, 8});
    const Pair cs4 = random({4, 8});
    EXPECT_THROW(gpu_->rope(y.gpu, cs4.gpu, cs4.gpu), Error);
}

// Both precisions: float32 within the float32 bound, bfloat16 (the tensor cores for tiles of rows, head_dim
// up to 128) within the bfloat16 bound. A head_dim of 1 is float32 only: a score of one product has no sum
// to average the rounding of q and k out, and bfloat16 keeps it only to about 1e-2.
const std::vector<std::pair<AttentionPrecision, double>> kAttentionPrecisions = {
    {AttentionPrecision::F32, kF32Bound}, {AttentionPrecision::Bf16, kBf16TensorCoreBound}};

std::string precision_name(AttentionPrecision precision) {
    return precision == AttentionPrecision::Bf16 ? "bf16" : "f32";
}

TEST_F(BackendOpsTest, Attention) {
    struct Case {
        std::string name;
        int64_t n_q_total, n_kv_total, n_head, n_kv_head;
        std::vector<AttentionSegment> segments;
    };
    const std::vector<Case> cases = {
        // Vision: several images packed in one sequence, each attending within itself.
        {"vision", 234, 234, 4, 4, {{0, 1, 0, 1}, {1, 7, 1, 7}, {8, 96, 8, 96}, {104, 130, 104, 130}}},
        // Text prefill, causal, grouped heads.
        {"prefill", 17, 17, 8, 2, {{0, 17, 0, 17, true, 0}}},
        // A longer prompt: several tiles of rows and blocks of keys.
        {"long prefill", 200, 200, 16, 2, {{0, 200, 0, 200, true, 0}}},
        // Decode against a longer cache.
        {"decode", 1, 130, 16, 2, {{0, 1, 0, 130, true, 129}}},
        // Decode against a long cache, whose keys are split over several blocks, beside a short one.
        {"long decode", 2, 3005, 16, 2, {{0, 1, 0, 3000, true, 2999}, {1, 1, 3000, 5}}},
        // A chunk of a prompt after 133 cached tokens, and a second sequence decoding, some q rows uncovered.
        {"chunked", 24, 300, 6, 3, {{0, 17, 0, 150, true, 133}, {20, 1, 150, 150, true, 149}}},
        // Segments with no keys and a causal window cut by n_kv; short segments go row by row through the
        // kernels, longer ones in tiles.
        {"edge", 23, 9, 2, 1, {{0, 2, 0, 0}, {2, 3, 0, 4, true, 3}, {5, 9, 0, 0}, {14, 9, 0, 6, true, 0}}},
    };
    for (const auto& [precision, bound] : kAttentionPrecisions) {
        for (const Case& c : cases) {
            for (const int64_t hd : {1, 7, 32, 72, 128, 256}) {
                if (precision == AttentionPrecision::Bf16 && hd == 1) {
                    continue;
                }
                const Pair q = random({c.n_q_total, c.n_head, hd}),
                           k = random({c.n_kv_total, c.n_kv_head, hd}),
                           v = random({c.n_kv_total, c.n_kv_head, hd});
                const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
                expect_close("attention " + precision_name(precision),
                             gpu_->attention(q.gpu, k.gpu, v.gpu, c.segments, scale, precision),
                             cpu_->attention(q.cpu, k.cpu, v.cpu, c.segments, scale, AttentionPrecision::F32),
                             bound, label(c.name, " hd ", hd));
            }
        }
    }
    // The tensor-core kernels take a positive scale only; others go through the float32 kernels.
    const std::vector<AttentionSegment> image = {{0, 40, 0, 40}};
    for (const float scale : {-0.3f, 0.0f}) {
        const Pair qi = random({40, 2, 72}), ki = random({40, 2, 72}), vi = random({40, 2, 72});
        expect_close("attention bf16, scale not positive",
                     gpu_->attention(qi.gpu, ki.gpu, vi.gpu, image, scale, AttentionPrecision::Bf16),
                     cpu_->attention(qi.cpu, ki.cpu, vi.cpu, image, scale, AttentionPrecision::F32),
                     kF32Bound, label("scale ", scale));
        const Pair qkv = random({40, 3, 2, 72}), cs = random({40, 72});
        expect_close("rope_attention bf16, scale not positive",
                     gpu_->rope_attention(qkv.gpu, cs.gpu, cs.gpu, image, scale, AttentionPrecision::Bf16),
                     cpu_->rope_attention(qkv.cpu, cs.cpu, cs.cpu, image, scale, AttentionPrecision::F32),
                     kF32Bound, label("scale ", scale));
    }
    const Pair q = random({4, 4, 8}), k = random({6, 3, 8});
    const std::vector<AttentionSegment> segment = {{0, 4, 0, 6}};
    EXPECT_THROW(gpu_->attention(q.gpu, k.gpu, k.gpu, segment, 1.0f, AttentionPrecision::Bf16), Error)
        << "4 heads over 3 K/V heads";
    const Pair k2 = random({6, 2, 8});
    const std::vector<AttentionSegment> outside = {{0, 4, 3, 4}};
    EXPECT_THROW(gpu_->attention(q.gpu, k2.gpu, k2.gpu, outside, 1.0f, AttentionPrecision::Bf16), Error);
}

// Stacked q, k and v turned and attended in one call, against the CPU's split, rope() and attention(): images
// long enough for tiles on the tensor cores, and segments too short for them or causal, which take the
// default path.
TEST_F(BackendOpsTest, RopeAttention) {
    const std::vector<std::pair<std::string, std::vector<AttentionSegment>>> cases = {
        {"images", {{0, 8, 0, 8}, {8, 96, 8, 96}, {104, 130, 104, 130}}},
        {"short image", {{0, 7, 0, 7}, {7, 227, 7, 227}}},
        {"causal", {{0, 234, 0, 234, true, 0}}},
        {"rows uncovered", {{10, 100, 10, 100}}},
    };
    for (const auto& [precision, bound] : kAttentionPrecisions) {
        for (const auto& [name, segments] : cases) {
            for (const int64_t n_head : {1, 16}) {
                for (const int64_t hd : {8, 72, 128}) {
                    const int64_t n = 234;
                    // Turns by angles, as rotary tables hold them.
                    const std::vector<float> angles = random_values(n * hd, seed_++, 0.0f, 3.0f);
                    std::vector<float> cos_values(angles.size()), sin_values(angles.size());
                    std::transform(angles.begin(), angles.end(), cos_values.begin(),
                                   [](float a) { return std::cos(a); });
                    std::transform(angles.begin(), angles.end(), sin_values.begin(),
                                   [](float a) { return std::sin(a); });
                    const Pair qkv = random({n, 3, n_head, hd}), cos = upload(cos_values, {n, hd}),
                               sin = upload(sin_values, {n, hd});
                    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
                    expect_close("rope_attention " + precision_name(precision),
                                 gpu_->rope_attention(qkv.gpu, cos.gpu, sin.gpu, segments, scale, precision),
                                 cpu_->rope_attention(qkv.cpu, cos.cpu, sin.cpu, segments, scale,
                                                      AttentionPrecision::F32),
                                 bound, label(name, " heads ", n_head, " hd ", hd));
                }
            }
        }
    }
    const Pair qkv = random({4, 3, 2, 8}), cs = random({4, 8});
    const std::vector<AttentionSegment> segment = {{0, 4, 0, 4}};
    EXPECT_THROW(gpu_->rope_attention(random({4, 2, 2, 8}).gpu, cs.gpu, cs.gpu, segment, 1.0f,
                                      AttentionPrecision::Bf16),
                 Error)
        << "two parts";
    EXPECT_THROW(gpu_->rope_attention(random({4, 3, 2, 7}).gpu, random({4, 7}).gpu, random({4, 7}).gpu,
                                      segment, 1.0f, AttentionPrecision::Bf16),
                 Error)
        << "odd head_dim";
    EXPECT_THROW(gpu_->rope_attention(qkv.gpu, random({5, 8}).gpu, random({5, 8}).gpu, segment, 1.0f,
                                      AttentionPrecision::Bf16),
                 Error)
        << "cos rows";
    const std::vector<AttentionSegment> outside = {{0, 4, 1, 4}};
    EXPECT_THROW(gpu_->rope_attention(qkv.gpu, cs.gpu, cs.gpu, outside, 1.0f, AttentionPrecision::Bf16),
                 Error);
}

// A vision layer's attention half against the CPU's norm, product, RoPE, attention and product: on the tensor
// cores with bfloat16 between the steps where every segment goes in tiles, the default path for few rows,
// short segments and WINT8 weights; rows outside every segment add only the output bias.
TEST_F(BackendOpsTest, LayerNormAttentionAdd) {
    struct Case {
        std::string name;
        Quantization type;
        int64_t n, n_head, head_dim;
        std::vector<AttentionSegment> segments;
    };
    const std::vector<Case> cases = {
        {"images", Quantization::Bf16, 234, 4, 16, {{0, 8, 0, 8}, {8, 96, 8, 96}, {104, 130, 104, 130}}},
        {"vision size", Quantization::Bf16, 300, 16, 72, {{0, 100, 0, 100}, {100, 200, 100, 200}}},
        {"rows uncovered", Quantization::Bf16, 130, 2, 36, {{10, 100, 10, 100}}},
        {"short image", Quantization::Bf16, 40, 4, 16, {{0, 7, 0, 7}, {7, 33, 7, 33}}},
        {"few rows", Quantization::Bf16, 5, 4, 16, {{0, 5, 0, 5}}},
        {"wint8", Quantization::Wint8, 130, 2, 32, {{0, 130, 0, 130}}},
    };
    for (const auto& [precision, unused_bound] : kAttentionPrecisions) {
        for (const Case& c : cases) {
            for (const bool with_bias : {false, true}) {
                const int64_t d = c.n_head * c.head_dim;
                const float w_scale = 1.0f / std::sqrt(static_cast<float>(d));  // q and k rows of unit scale
                const auto w_qkv =
                    quantize(random_values(3 * d * d, seed_++, 0.0f, w_scale), 3 * d, d, c.type, 0);
                const auto w_out = quantize(random_values(d * d, seed_++, 0.0f, w_scale), d, d, c.type, 0);
                const Weight qkv_cpu = cpu_->upload(w_qkv), qkv_gpu = gpu_->upload(w_qkv);
                const Weight out_cpu = cpu_->upload(w_out), out_gpu = gpu_->upload(w_out);
                const Pair qkv_b = random({3 * d}), out_b = random({d});
                const Pair norm_w = random({d}, 1.0f, 0.1f), norm_b = random({d});
                const std::vector<float> angles = random_values(c.n * c.head_dim, seed_++, 0.0f, 3.0f);
                std::vector<float> cos_values(angles.size()), sin_values(angles.size());
                std::transform(angles.begin(), angles.end(), cos_values.begin(),
                               [](float a) { return std::cos(a); });
                std::transform(angles.begin(), angles.end(), sin_values.begin(),
                               [](float a) { return std::sin(a); });
                const Pair cos = upload(cos_values, {c.n, c.head_dim}),
                           sin = upload(sin_values, {c.n, c.head_dim});
                const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
                Pair x = random({c.n, d});
                const Linear qkv_l_cpu{qkv_cpu, with_bias ? qkv_b.cpu : Tensor{}};
                const Linear out_l_cpu{out_cpu, with_bias ? out_b.cpu : Tensor{}};
                const Linear qkv_l_gpu{qkv_gpu, with_bias ? qkv_b.gpu : Tensor{}};
                const Linear out_l_gpu{out_gpu, with_bias ? out_b.gpu : Tensor{}};
                layer_norm_attention_add(*cpu_, x.cpu,
                                         {norm_w.cpu, norm_b.cpu, 1e-6f, qkv_l_cpu, out_l_cpu, c.n_head},
                                         cos.cpu, sin.cpu, c.segments, scale, AttentionPrecision::F32);
                layer_norm_attention_add(*gpu_, x.gpu,
                                         {norm_w.gpu, norm_b.gpu, 1e-6f, qkv_l_gpu, out_l_gpu, c.n_head},
                                         cos.gpu, sin.gpu, c.segments, scale, precision);
                const double bound = linear_bound(c.n);
                expect_close(label("layer_norm_attention_add ", quantization_name(c.type), " ",
                                   precision_name(precision)),
                             x.gpu, x.cpu, bound, label(c.name, with_bias ? " bias" : ""));
            }
        }
    }
    const Weight w = gpu_->upload(quantize(random_values(48 * 16, 3), 48, 16, Quantization::Bf16, 0));
    const Pair norm = random({16}), cs = random({9, 4});
    const std::vector<AttentionSegment> segment = {{0, 9, 0, 9}};
    Pair x = random({9, 16});
    const Linear w_l{w, {}};
    EXPECT_THROW(layer_norm_attention_add(*gpu_, x.gpu, {norm.gpu, norm.gpu, 1e-6f, w_l, w_l, 4}, cs.gpu,
                                          cs.gpu, segment, 0.5f, AttentionPrecision::Bf16),
                 Error)
        << "out takes 16 values to 16, not 16 to 48";
    const Linear out{gpu_->upload(quantize(random_values(16 * 16, 4), 16, 16, Quantization::Bf16, 0)), {}};
    EXPECT_THROW(layer_norm_attention_add(*gpu_, x.gpu, {norm.gpu, norm.gpu, 1e-6f, w_l, out, 3}, cs.gpu,
                                          cs.gpu, segment, 0.5f, AttentionPrecision::Bf16),
                 Error)
        << "16 values are not 3 heads";
    EXPECT_THROW(
        layer_norm_attention_add(*gpu_, x.gpu, {norm.gpu, norm.gpu, 1e-6f, w_l, out, 4}, random({9, 6}).gpu,
                                 random({9, 6}).gpu, segment, 0.5f, AttentionPrecision::Bf16),
        Error)
        << "cos of head_dim 6, not 4";
    const std::vector<AttentionSegment> outside = {{0, 10, 0, 10}};
    EXPECT_THROW(layer_norm_attention_add(*gpu_, x.gpu, {norm.gpu, norm.gpu, 1e-6f, w_l, out, 4}, cs.gpu,
                                          cs.gpu, outside, 0.5f, AttentionPrecision::Bf16),
                 Error)
        << "a segment past the rows";
}

TEST_F(BackendOpsTest, PagedAttention) {
    for (const auto& [precision, bound] : kAttentionPrecisions) {
        for (const auto& [cache_type, block_size] : {std::pair{ScalarType::F32, int64_t{1}},
                                                     {ScalarType::F32, 5},
                                                     {ScalarType::F32, 16},
                                                     {ScalarType::BF16, 1},
                                                     {ScalarType::BF16, 5},
                                                     {ScalarType::BF16, 16}}) {
            // 16 heads of 128 over 2 K/V heads: at bfloat16 precision over a bfloat16 cache, the rows of the
            // short sequences go to decode_attention_bf16.
            for (const auto& [hd, n_head] :
                 {std::pair<int64_t, int64_t>{7, 8}, {32, 8}, {128, 8}, {128, 16}}) {
                const int64_t n_kv_head = 2;
                // Sequences: (n_q, n_kv) — decodes, a prefill, a chunk after cached tokens, a decode whose
                // keys are split over several blocks, and two long chunks whose keys with the others' exceed
                // what the tensor-core path gathers at once (8,192 keys here), so that it gathers twice.
                const std::vector<std::pair<int64_t, int64_t>> shapes = {
                    {1, 1}, {1, 3}, {17, 17}, {5, 130}, {1, 2000}, {70, 300}, {150, 4500}, {9, 4200}};
                std::vector<PagedSequence> seqs;
                std::vector<int32_t> tables;
                int64_t n_tokens = 0, n_blocks_used = 0;
                for (const auto& [n_q, n_kv] : shapes) {
                    const int64_t n_table = (n_kv + block_size - 1) / block_size;
                    seqs.push_back({n_tokens, n_q, n_kv, static_cast<int64_t>(tables.size())});
                    for (int64_t i = 0; i < n_table; ++i) {
                        tables.push_back(static_cast<int32_t>(n_blocks_used++));
                    }
                    n_tokens += n_q;
                }
                // Blocks scattered over a larger cache, in a shuffled order.
                const int64_t n_blocks = n_blocks_used + 7;
                std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
                std::iota(perm.begin(), perm.end(), 0);
                std::shuffle(perm.begin(), perm.end(), std::mt19937(seed_++));
                for (int32_t& b : tables) {
                    b = perm[static_cast<size_t>(b)];
                }
                const Pair q = random({n_tokens + 2, n_head, hd}),
                           k = random_kv({n_blocks * block_size, n_kv_head, hd}, cache_type),
                           v = random_kv({n_blocks * block_size, n_kv_head, hd}, cache_type);
                const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
                expect_close(
                    label("paged_attention ", precision_name(precision), ", ", dtype_name(cache_type),
                          " cache"),
                    gpu_->paged_attention(q.gpu, k.gpu, v.gpu, seqs, tables, block_size, scale, precision),
                    cpu_->paged_attention(q.cpu, k.cpu, v.cpu, seqs, tables, block_size, scale,
                                          AttentionPrecision::F32),
                    bound, label("block ", block_size, " hd ", hd));
            }
        }
    }
    const Pair q = random({2, 4, 8}), k = random({32, 2, 8});
    const std::vector<PagedSequence> seq = {{0, 2, 20, 0}};
    const std::vector<int32_t> short_table = {0};
    constexpr auto kF32 = AttentionPrecision::F32;
    EXPECT_THROW(gpu_->paged_attention(q.gpu, k.gpu, k.gpu, seq, short_table, 16, 1.0f, kF32), Error);
    const std::vector<int32_t> bad_block = {0, 2};
    EXPECT_THROW(gpu_->paged_attention(q.gpu, k.gpu, k.gpu, seq, bad_block, 16, 1.0f, kF32), Error);
    EXPECT_THROW(gpu_->paged_attention(q.gpu, k.gpu, k.gpu, seq, bad_block, 7, 1.0f, kF32), Error)
        << "32 % 7";
    const std::vector<int32_t> table = {0, 1};
    const Tensor v_bf16 = gpu_->upload_kv(std::vector<float>(32 * 2 * 8), {32, 2, 8}, ScalarType::BF16);
    EXPECT_THROW(gpu_->paged_attention(q.gpu, k.gpu, v_bf16, seq, table, 16, 1.0f, kF32), Error)
        << "a float32 k cache with a bfloat16 v cache";
}

// Exact: both backends choose the first of the largest values; ties are planted on purpose.
TEST_F(BackendOpsTest, ArgmaxRows) {
    for (const int64_t d : {1, 7, 1000, 103424}) {
        for (const int64_t n : {1, 3, 130}) {
            std::vector<float> values = random_values(n * d, seed_++, 0.0f, 1.0f);
            for (int64_t r = 0; r < n; r += 2) {
                values[r * d + (r * 7919) % d] = 9.0f;
                values[r * d + (r * 104729 + d / 2) % d] = 9.0f;
            }
            const Pair x = upload(values, {n, d});
            EXPECT_EQ(gpu_->argmax_rows(x.gpu), cpu_->argmax_rows(x.cpu)) << dims({n, d});
        }
    }
    // NaNs and infinities, the largest value in a later chunk of columns: as std::max_element, a NaN never
    // wins, except in column 0, where nothing beats it.
    const int64_t d = 103424;
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> values(4 * d, -inf);
    values[0 * d + 0] = nan;  // row 0: NaN first, a larger number later
    values[0 * d + 70000] = 5.0f;
    for (int64_t c = 1; c < d; c += 3) {
        values[1 * d + c] = nan;  // row 1: NaNs everywhere but column 0's -inf and one 1.0
    }
    values[1 * d + 99001] = 1.0f;
    // row 2: all -inf; row 3: +inf twice, in different chunks
    values[3 * d + 8191] = inf;
    values[3 * d + 100000] = inf;
    const Pair x = upload(values, {4, d});
    const std::vector<int32_t> expected = cpu_->argmax_rows(x.cpu);
    EXPECT_EQ(expected, (std::vector<int32_t>{0, 99001, 0, 8191}));
    EXPECT_EQ(gpu_->argmax_rows(x.gpu), expected);
    const Pair empty = random({3, 0});
    EXPECT_THROW(gpu_->argmax_rows(empty.gpu), Error);
}

// Whether a choice of row [vocab] hangs on float rounding: recomputed in double, a running sum of the top-p
// walk (in rank order) lies within margin · total of the top-p mass, or one of the pick's running sums (in
// token order) within margin · total of the target. Greedy rows compare exactly.
bool near_boundary(std::vector<float> logits, const RowSampling& row, std::span<const int32_t> history,
                   double margin) {
    if (row.temperature == 0.0f) {
        return false;
    }
    const std::span<const int32_t> own = history.subspan(row.history_begin, row.history_count);
    for (const int32_t id : std::set<int32_t>(own.begin(), own.end())) {
        logits[id] =
            logits[id] > 0.0f ? logits[id] / row.repetition_penalty : logits[id] * row.repetition_penalty;
    }
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    for (float& l : logits) {
        l /= row.temperature;
    }
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return rank_key(logits[a], a) > rank_key(logits[b], b); });
    auto n_keep = static_cast<int64_t>(order.size());
    if (row.top_k > 0) {
        n_keep = std::min<int64_t>(n_keep, row.top_k);
    }
    std::vector<double> weights(logits.size(), 0.0);
    double total = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        weights[order[i]] = std::exp(static_cast<double>(logits[order[i]]) - logits[order[0]]);
        total += weights[order[i]];
    }
    bool near = false;
    if (row.top_p < 1.0f) {
        const double mass = row.top_p * total;
        double cumulative = 0.0;
        for (int64_t i = 0; i < n_keep; ++i) {
            cumulative += weights[order[i]];
            near = near || std::fabs(cumulative - mass) <= margin * total;
            if (cumulative >= mass) {
                n_keep = i + 1;
                break;
            }
        }
    }
    std::sort(order.begin(), order.begin() + n_keep);
    double kept_total = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        kept_total += weights[order[i]];
    }
    const double target = row.uniform * kept_total;
    double cumulative = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        cumulative += weights[order[i]];
        near = near || std::fabs(cumulative - target) <= margin * kept_total;
    }
    return near;
}

// The same token from both backends, on random logits (some rounded to plant ties), parameters, uniform
// numbers and histories with repeats. The GPU sums in float in another order than the CPU, so a choice may
// differ only where it hangs on rounding (near_boundary), and then in fewer than 1% of the rows.
TEST_F(BackendOpsTest, SampleRows) {
    constexpr double kMargin = 1e-4;
    std::mt19937_64 rng(2024);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    int64_t n_rows_total = 0, n_differ = 0;
    for (const int64_t vocab : {1, 7, 1000, 4099, 103424}) {
        const int64_t n_rows = vocab > 10000 ? 48 : 300;
        std::vector<float> values = random_values(n_rows * vocab, seed_++, 0.0f, 1.0f);
        std::vector<RowSampling> rows(static_cast<size_t>(n_rows));
        std::vector<int32_t> history;
        for (int64_t r = 0; r < n_rows; ++r) {
            const float scale = std::array{0.5f, 2.0f, 8.0f}[r % 3];
            for (int64_t i = 0; i < vocab; ++i) {
                float& v = values[r * vocab + i];
                v = r % 4 == 0 ? std::round(v * 2.0f) / 2.0f * scale : v * scale;
            }
            RowSampling& row = rows[r];
            row.temperature = r % 10 == 0 ? 0.0f : 0.2f + 1.8f * unit(rng);
            const uint64_t k_kind = rng() % 4;
            row.top_k = k_kind == 0   ? 0
                        : k_kind == 1 ? 1 + static_cast<int>(rng() % 50)
                        : k_kind == 2 ? static_cast<int>(rng() % (vocab + 3))
                                      : static_cast<int>(vocab);
            row.top_p = rng() % 3 == 0 ? 1.0f : 0.05f + 0.95f * unit(rng);
            row.repetition_penalty = rng() % 2 == 0 ? 1.0f : 0.5f + 1.5f * unit(rng);
            row.uniform = static_cast<float>(rng() >> 40) * 0x1.0p-24f;
            row.history_begin = static_cast<int64_t>(history.size());
            row.history_count = static_cast<int64_t>(rng() % 65);
            const int64_t window = std::min<int64_t>(vocab, 1 + static_cast<int64_t>(rng() % 40));
            for (int64_t i = 0; i < row.history_count; ++i) {
                history.push_back(static_cast<int32_t>(rng() % window));
            }
        }
        const Pair logits = upload(values, {n_rows, vocab});
        const std::vector<int32_t> gpu = gpu_->sample_rows(logits.gpu, rows, history);
        const std::vector<int32_t> cpu = cpu_->sample_rows(logits.cpu, rows, history);
        ASSERT_EQ(gpu.size(), cpu.size());
        for (int64_t r = 0; r < n_rows; ++r) {
            if (gpu[r] == cpu[r]) {
                continue;
            }
            ++n_differ;
            const RowSampling& row = rows[r];
            const std::vector<float> own(values.begin() + r * vocab, values.begin() + (r + 1) * vocab);
            EXPECT_TRUE(near_boundary(own, row, history, kMargin))
                << label("vocab ", vocab, " row ", r, ": gpu ", gpu[r], ", cpu ", cpu[r],
                         " with temperature ", row.temperature, ", top_k ", row.top_k, ", top_p ", row.top_p,
                         ", penalty ", row.repetition_penalty, ", uniform ", row.uniform);
        }
        n_rows_total += n_rows;
        EXPECT_EQ(gpu_->download(logits.gpu), values) << "the logits are left as they are";
    }
    std::cout << "sample_rows: " << n_differ << " of " << n_rows_total
              << " rows differ, each near a boundary\n";
    EXPECT_LT(n_differ * 100, n_rows_total);

    const Pair logits = random({2, 7});
    const std::vector<int32_t> history{1, 2, 3};
    std::vector<RowSampling> rows(2);
    rows[1].temperature = 1.0f;
    EXPECT_EQ(gpu_->sample_rows(logits.gpu, rows, history).size(), 2u);
    EXPECT_THROW(gpu_->sample_rows(logits.gpu, std::span(rows).first(1), history), Error);
    const auto rejects = [&](auto change, const std::string& what) {
        std::vector<RowSampling> bad = rows;
        change(bad[1]);
        EXPECT_THROW(gpu_->sample_rows(logits.gpu, bad, history), Error) << what;
    };
    rejects([](RowSampling& r) { r.history_count = 4; }, "history past the end");
    rejects([](RowSampling& r) { r.history_begin = -1; }, "history before the start");
    rejects([](RowSampling& r) { r.top_p = 1.5f; }, "top_p");
    rejects([](RowSampling& r) { r.temperature = NAN; }, "temperature");
    rejects([](RowSampling& r) { r.uniform = 1.0f; }, "uniform");
    const std::vector<int32_t> outside{7};
    rows[0].history_count = 1;
    rows[0].repetition_penalty = 1.2f;
    EXPECT_THROW(gpu_->sample_rows(logits.gpu, rows, outside), Error) << "token outside the vocabulary";
    rows[0].history_count = 0;
    EXPECT_THROW(gpu_->sample_rows(random({2, 0}).gpu, rows, history), Error) << "no columns";
}

// The vision position grid resampled onto images: each row of x gains a weighted sum of rows of the table.
TEST_F(BackendOpsTest, AddWeightedRows) {
    std::mt19937 rng(seed_++);
    for (const int64_t d : {1, 7, 1152}) {
        for (const int64_t n_taps : {1, 4}) {
            const int64_t n = 301, n_src = 729;
            const Pair src = random({n_src, d});
            Pair x = random({n, d});
            std::vector<int64_t> rows(static_cast<size_t>(n * n_taps));
            std::vector<float> weights(rows.size());
            for (size_t i = 0; i < rows.size(); ++i) {
                rows[i] = static_cast<int64_t>(rng() % n_src);
                weights[i] = static_cast<float>(rng() % 1000) / 1000.0f;
            }
            cpu_->add_weighted_rows(x.cpu, src.cpu, rows, weights);
            gpu_->add_weighted_rows(x.gpu, src.gpu, rows, weights);
            expect_close("add_weighted_rows", x.gpu, x.cpu, kF32Bound, dims({n, n_taps, d}));
        }
    }
    Pair x = random({2, 3});
    const Pair src = random({4, 3});
    const std::vector<int64_t> rows = {0, 1, 2, 4};
    const std::vector<float> weights = {1, 1, 1, 1};
    EXPECT_THROW(gpu_->add_weighted_rows(x.gpu, src.gpu, rows, weights), Error) << "row 4 of 4";
    EXPECT_THROW(
        gpu_->add_weighted_rows(x.gpu, src.gpu, std::span(rows).first(3), std::span(weights).first(3)), Error)
        << "3 taps for 2 rows";
    EXPECT_THROW(gpu_->add_weighted_rows(x.gpu, random({4, 2}).gpu, std::span(rows).first(2),
                                         std::span(weights).first(2)),
                 Error)
        << "row sizes 3 and 2";
}

// Routing, the products with each row's expert and the weighted sum of the mixture of experts, and one
// expert's rows of a stacked weight as an ordinary linear layer, in every weight format.
TEST_F(BackendOpsTest, MixtureOfExperts) {
    for (const int n_experts : {8, 64, 160}) {
        for (const int k : {1, 6}) {
            const int64_t n = 37;
            const Pair logits = random({n, n_experts}, 0.0f, 2.0f), bias = random({n_experts}, 0.0f, 0.05f);
            const ExpertRouting c = cpu_->route_experts(logits.cpu, bias.cpu, k, 1e-12f);
            const ExpertRouting g = gpu_->route_experts(logits.gpu, bias.gpu, k, 1e-12f);
            EXPECT_EQ(gpu_->download_i32(g.experts), cpu_->download_i32(c.experts))
                << n_experts << " top " << k;
            expect_close("route_experts", g.weights, c.weights, kF32Bound, dims({n, n_experts, k}));
        }
    }
    const Pair bad_logits = random({2, 4}), bad_bias = random({4});
    EXPECT_THROW(gpu_->route_experts(bad_logits.gpu, bad_bias.gpu, 5, 0.0f), Error) << "top 5 of 4";

    const std::vector<LinearCase> formats = {{Quantization::None, 128, 48, 0},
                                             {Quantization::Bf16, 128, 48, 0},
                                             {Quantization::Wint8, 128, 48, 0},
                                             {Quantization::Wint4, 128, 48, 64},
                                             // Rows longer than a warp's four chunks of 256 columns, with a
                                             // partial last round.
                                             {Quantization::Bf16, 1288, 24, 0},
                                             {Quantization::Wint8, 1288, 24, 0},
                                             {Quantization::Wint4, 1344, 24, 64}};
    std::mt19937 rng(seed_++);
    for (const LinearCase& f : formats) {
        const int64_t n_experts = 5, n_rows = 2 * f.out, n = 3, k = 2;
        const std::vector<float> values = random_values(n_experts * n_rows * f.in, seed_++);
        Weight w_cpu, w_gpu;
        if (f.type == Quantization::None) {
            w_cpu = dense_weight(cpu_->upload(values, {n_experts * n_rows, f.in}));
            w_gpu = dense_weight(gpu_->upload(values, {n_experts * n_rows, f.in}));
        } else {
            const auto q = quantize(values, n_experts * n_rows, f.in, f.type, f.group_size);
            w_cpu = cpu_->upload(q);
            w_gpu = gpu_->upload(q);
        }
        std::vector<int32_t> chosen(static_cast<size_t>(n * k));
        for (int32_t& e : chosen) {
            e = static_cast<int32_t>(rng() % n_experts);
        }
        const Pair experts = upload_i32(chosen, {n, k});
        const Pair x = random({n, f.in});
        const std::string where = label(quantization_name(f.type), " ", dims({n, k, f.in, n_rows}));
        const double bound = f.type == Quantization::None ? kF32Bound : kQuantizedBound;
        const Tensor h_cpu =
            cpu_->expert_rows_linear(x.cpu, w_cpu, experts.cpu, n_rows, k, Activation::Swiglu);
        const Tensor h_gpu =
            gpu_->expert_rows_linear(x.gpu, w_gpu, experts.gpu, n_rows, k, Activation::Swiglu);
        expect_close("expert_rows_linear", h_gpu, h_cpu, bound, where + " swiglu");
        const Tensor y_cpu = cpu_->expert_rows_linear(x.cpu, w_cpu, experts.cpu, n_rows, k, Activation::None);
        const Tensor y_gpu = gpu_->expert_rows_linear(x.gpu, w_gpu, experts.gpu, n_rows, k, Activation::None);
        expect_close("expert_rows_linear", y_gpu, y_cpu, bound, where);
        // Row r of the plain product is expert chosen[r]'s rows of the stacked weight as a linear layer.
        const std::vector<float> y_rows = cpu_->download(y_cpu);  // [n k, n_rows]
        for (int64_t r = 0; r < n * k; ++r) {
            const int32_t e = chosen[static_cast<size_t>(r)];
            const Tensor one = gpu_->linear(x.gpu.view((r / k) * f.in, {1, f.in}),
                                            weight_rows(w_gpu, e * n_rows, n_rows), LinearSpec{});
            const std::vector<float> expected(y_rows.begin() + r * n_rows, y_rows.begin() + (r + 1) * n_rows);
            expect_close("weight_rows", one, cpu_->upload(expected, {1, n_rows}), bound, where);
        }
        Pair sums = random({n, n_rows});
        const Pair mix = random({n, k});
        cpu_->add_expert_outputs(sums.cpu, y_cpu, mix.cpu);
        gpu_->add_expert_outputs(sums.gpu, y_gpu, mix.gpu);
        expect_close("add_expert_outputs", sums.gpu, sums.cpu, bound, where);
    }
    const Weight w = dense_weight(gpu_->upload(random_values(4 * 8, 3), {4, 8}));
    const Pair x = random({2, 8});
    const Pair one_each = upload_i32({0, 1}, {2});
    EXPECT_THROW(gpu_->expert_rows_linear(x.gpu, w, one_each.gpu, 3, 1, Activation::None), Error)
        << "4 rows in 3s";
    EXPECT_THROW(gpu_->expert_rows_linear(x.gpu, w, one_each.gpu, 2, 2, Activation::None), Error)
        << "x_step 2";
}

TEST_F(BackendOpsTest, GatherAndScatterRows) {
    for (const int64_t d : {1, 7, 1000}) {
        const Pair src = random({130, d});
        for (const std::vector<int64_t>& rows : std::vector<std::vector<int64_t>>{
                 {}, {129}, {0, 5, 5, 3}, {7, 1, 2, 8, 9, 100, 64, 0, 33, 12, 129, 4, 4, 4, 17, 18, 19}}) {
            expect_close("gather_rows", gpu_->gather_rows(src.gpu, rows), cpu_->gather_rows(src.cpu, rows),
                         kF32Bound, dims({static_cast<int64_t>(rows.size()), d}));
        }
        for (const std::vector<int64_t>& rows :
             std::vector<std::vector<int64_t>>{{129}, {0, 5, 3}, {3, 9, 3, 0, 9}, {120, 7, 64, 1, 2, 99}}) {
            Pair dst = random({130, d});
            const Pair rows_src = random({static_cast<int64_t>(rows.size()), d});
            cpu_->scatter_rows(dst.cpu, rows, rows_src.cpu);
            gpu_->scatter_rows(dst.gpu, rows, rows_src.gpu);
            expect_close("scatter_rows", dst.gpu, dst.cpu, kF32Bound,
                         dims({static_cast<int64_t>(rows.size()), d}));
        }
    }
    const Pair src3 = random({9, 4, 5});
    const std::vector<int64_t> rows = {8, 0};
    expect_close("gather_rows", gpu_->gather_rows(src3.gpu, rows), cpu_->gather_rows(src3.cpu, rows),
                 kF32Bound, "9x4x5");
    const std::vector<int64_t> outside = {9};
    EXPECT_THROW(gpu_->gather_rows(src3.gpu, outside), Error);
    Pair dst = random({9, 4, 5});
    EXPECT_THROW(gpu_->scatter_rows(dst.gpu, outside, random({1, 20}).gpu), Error);
    EXPECT_THROW(gpu_->scatter_rows(dst.gpu, rows, random({2, 21}).gpu), Error);
}

// Scattering at distinct int32 rows on the backend gives what the host's row list gives; a row outside is
// skipped on the GPU.
TEST_F(BackendOpsTest, ScatterRowsAtRowsOnTheBackend) {
    for (const int64_t d : {1, 7, 1000}) {
        for (const std::vector<int32_t>& rows :
             std::vector<std::vector<int32_t>>{{}, {129}, {0, 5, 3}, {120, 7, 64, 1, 2, 99}}) {
            const auto n = static_cast<int64_t>(rows.size());
            Pair dst = random({130, d});
            const Pair src = random({n, d});
            const Pair at = upload_i32(rows, {n});
            cpu_->scatter_rows(dst.cpu, at.cpu, src.cpu);
            gpu_->scatter_rows(dst.gpu, at.gpu, src.gpu);
            expect_close("scatter_rows", dst.gpu, dst.cpu, kF32Bound, dims({n, d}));
        }
    }
    Pair dst = random({4, 3});
    const std::vector<float> before = gpu_->download(dst.gpu);
    gpu_->scatter_rows(dst.gpu, gpu_->upload_i32(std::vector<int32_t>{4, -1}, {2}), random({2, 3}).gpu);
    EXPECT_EQ(gpu_->download(dst.gpu), before) << "rows outside dst";
    EXPECT_THROW(
        gpu_->scatter_rows(dst.gpu, gpu_->upload_i32(std::vector<int32_t>{0}, {1}), random({1, 2}).gpu),
        Error)
        << "row sizes 3 and 2";
    EXPECT_THROW(gpu_->scatter_rows(dst.gpu, random({1}).gpu, random({1, 3}).gpu), Error) << "float32 rows";
}

// New float32 values for a tensor, in parts, replace all of it; the parts must cover it exactly.
TEST_F(BackendOpsTest, Float32Update) {
    const std::vector<float> a = random_values(70, seed_++, 0.0f, 1.0f),
                             b = random_values(30, seed_++, 0.0f, 1.0f);
    Tensor t = gpu_->alloc({10, 10});
    const std::span<const float> parts[] = {a, b};
    gpu_->update(t, parts);
    std::vector<float> expected = a;
    expected.insert(expected.end(), b.begin(), b.end());
    EXPECT_EQ(gpu_->download(t), expected);
    const std::span<const float> short_parts[] = {a};
    EXPECT_THROW(gpu_->update(t, short_parts), Error);
    Tensor i = gpu_->upload_i32(std::vector<int32_t>(100, 0), {100});
    EXPECT_THROW(gpu_->update(i, parts), Error) << "int32 tensor";
}

TEST_F(BackendOpsTest, Int32UploadAndUpdate) {
    const std::vector<int32_t> values = {3, -1, 2147483647, 0, -2147483647 - 1, 42};
    Tensor t = gpu_->upload_i32(values, {2, 3});
    EXPECT_EQ(t.dtype, ScalarType::I32);
    const std::vector<float> raw = gpu_->download(Tensor{t.shape, t.buffer});  // the same bits as float32
    std::vector<int32_t> back(raw.size());
    std::memcpy(back.data(), raw.data(), raw.size() * sizeof(int32_t));
    EXPECT_EQ(back, values);
    const std::vector<int32_t> wrong_size = {1, 2};
    EXPECT_THROW(gpu_->update(t, wrong_size), Error);
    Tensor f = gpu_->alloc({2});
    EXPECT_THROW(gpu_->update(f, wrong_size), Error) << "float32 tensor";
    EXPECT_THROW(gpu_->add(f, t.view(0, {2})), Error) << "int32 input to a float32 operation";
    EXPECT_THROW(static_cast<void>(t.view(4, {3})), Error) << "view past the end";
}

// Uploads, updates and readbacks of int32 values at sizes that the launch of a kernel carries and beyond,
// several in flight at once, each source overwritten as soon as its call returns.
TEST_F(BackendOpsTest, Int32TransfersInFlight) {
    std::mt19937 rng(static_cast<uint32_t>(seed_++));
    std::uniform_int_distribution<int32_t> word(std::numeric_limits<int32_t>::min(),
                                                std::numeric_limits<int32_t>::max());
    for (const int64_t n :
         {int64_t{1}, int64_t{7}, kernels::kStoreWordsMax, kernels::kStoreWordsMax + 1, int64_t{5000}}) {
        std::vector<int32_t> values(static_cast<size_t>(n));
        std::generate(values.begin(), values.end(), [&] { return word(rng); });
        Tensor t = gpu_->upload_i32(values, {n});
        std::vector<std::vector<int32_t>> expected = {values};
        std::vector<std::unique_ptr<TokenReadback>> readbacks;
        readbacks.push_back(gpu_->read_back(t));
        for (int step = 0; step < 4; ++step) {
            std::generate(values.begin(), values.end(), [&] { return word(rng); });
            gpu_->update(t, values);
            expected.push_back(values);
            readbacks.push_back(gpu_->read_back(t));
        }
        std::fill(values.begin(), values.end(), -7);
        for (size_t i = readbacks.size(); i-- > 0;) {
            EXPECT_EQ(readbacks[i]->wait(), expected[i]) << n << " values, readback " << i;
        }
    }
}

TEST_F(BackendOpsTest, Swiglu) {
    for (const auto& [n, d] :
         std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {5, 1024}, {130, 33}}) {
        const Pair gate_up = random({n, 2 * d});
        expect_close("swiglu", gpu_->swiglu(gate_up.gpu), cpu_->swiglu(gate_up.cpu), kF32Bound, dims({n, d}));
    }
    EXPECT_THROW(gpu_->swiglu(random({2, 5}).gpu), Error) << "odd width";
}

// Both backends turn q and k by the same float angles (position times the same inverse frequency) with libm's
// and CUDA's sine and cosine, and store k and v at the same rows; rows not named keep their values. The same
// from the normed input of the stacked q, k and v projections: up to 8 rows the GEMV pairs each row of a head
// with its rotate-half partner and stores the turned pair as it comes out (columns a multiple of 8 or not),
// more rows run the product on the tensor cores first. Frequencies turn with one axis (a text model), three
// in contiguous sections (PaddleOCR-VL's mRoPE) or interleaved ones (height and width in turn, then
// temporal, as ERNIE-4.5-VL's).
TEST_F(BackendOpsTest, RopeQkvToCache) {
    const auto sections = [](int t, int h, int w) {
        return RotaryLayout(3).section(0, t).section(1, h).section(2, w);
    };
    const auto interleaved = [](int hw, int t) {
        const std::pair<int, int> axes[] = {{1, hw}, {2, hw}};
        return RotaryLayout(3).interleaved(axes).section(0, t);
    };
    const auto one_axis = [](int n) { return RotaryLayout(1).section(0, n); };
    struct Case {
        int64_t n, n_head, n_kv_head, hd;
        RotaryLayout layout;
        int64_t in;
        Quantization type;
    };
    for (const ScalarType cache_type : kCacheTypes) {
        for (const Case& c : {Case{1, 2, 1, 6, sections(1, 1, 1), 64, Quantization::Bf16},
                              Case{5, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Bf16},
                              Case{1, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Wint8},
                              Case{1, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Wint4},
                              Case{2, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Bf16},
                              Case{8, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Wint4},
                              Case{37, 4, 2, 64, sections(8, 12, 12), 96, Quantization::Bf16},
                              Case{3, 3, 3, 2, sections(0, 1, 0), 20, Quantization::Wint8},
                              Case{1, 20, 4, 128, interleaved(22, 20), 256, Quantization::Wint4},
                              Case{7, 20, 4, 128, interleaved(22, 20), 256, Quantization::Bf16},
                              Case{2, 8, 2, 128, one_axis(64), 256, Quantization::Wint8},
                              Case{40, 8, 2, 128, one_axis(64), 256, Quantization::Bf16},
                              // From 256 tokens a block a token, its angles found once for all its heads.
                              Case{300, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Bf16},
                              Case{260, 20, 4, 128, interleaved(22, 20), 256, Quantization::Bf16},
                              Case{257, 3, 3, 2, sections(0, 1, 0), 20, Quantization::Wint8}}) {
            const int64_t n_slots = 2 * c.n + 5, n_qkv = (c.n_head + 2 * c.n_kv_head) * c.hd;
            const int n_axes = c.layout.n_axes();
            const Pair qkv = random({c.n, n_qkv});
            std::mt19937 rng(seed_++);
            std::vector<int32_t> positions(static_cast<size_t>(n_axes * c.n)),
                slots(static_cast<size_t>(n_slots));
            for (int32_t& p : positions) {
                p = static_cast<int32_t>(rng() % 20000);
            }
            std::iota(slots.begin(), slots.end(), 0);
            std::shuffle(slots.begin(), slots.end(), rng);
            slots.resize(static_cast<size_t>(c.n));
            slots[0] = -1;  // padding: not stored
            const Pair pos = upload_i32(positions, {c.n, n_axes});
            const Pair slot = upload_i32(slots, {c.n});
            const RopeParams rope_gpu = c.layout.upload(*gpu_, c.hd, 10000.0f),
                             rope_cpu = c.layout.upload(*cpu_, c.hd, 10000.0f);
            Pair k_cache = random_kv({n_slots, c.n_kv_head, c.hd}, cache_type),
                 v_cache = random_kv({n_slots, c.n_kv_head, c.hd}, cache_type);
            const double cache_bound = cache_type == ScalarType::BF16 ? kBf16CacheBound : kF32Bound;
            const Tensor q_gpu =
                gpu_->rope_qkv_to_cache(qkv.gpu, pos.gpu, slot.gpu, rope_gpu, k_cache.gpu, v_cache.gpu);
            const Tensor q_cpu =
                cpu_->rope_qkv_to_cache(qkv.cpu, pos.cpu, slot.cpu, rope_cpu, k_cache.cpu, v_cache.cpu);
            const std::string where = label(c.n, " tokens, ", c.n_head, "/", c.n_kv_head, " heads of ", c.hd,
                                            ", ", n_axes, " axes, ", dtype_name(cache_type), " cache");
            expect_close("rope_qkv_to_cache (q)", q_gpu, q_cpu, kF32Bound, where);
            expect_close(label("rope_qkv_to_cache (", dtype_name(cache_type), " k cache)"), k_cache.gpu,
                         k_cache.cpu, cache_bound, where);
            expect_close(label("rope_qkv_to_cache (", dtype_name(cache_type), " v cache)"), v_cache.gpu,
                         v_cache.cpu, cache_bound, where);

            const auto w = quantize(random_values(n_qkv * c.in, seed_++), n_qkv, c.in, c.type,
                                    c.type == Quantization::Wint4 ? 64 : 0);
            const Weight w_cpu = cpu_->upload(w);
            const Weight w_gpu = gpu_->upload(w);
            const Pair x = random({c.n, c.in}, 0.5f, 2.0f), norm = random({c.in}, 1.0f, 0.1f),
                       b = random({n_qkv});
            const Tensor linear_q_gpu =
                gpu_->linear(x.gpu, w_gpu,
                             {.norm = LinearNorm::Rms,
                              .norm_w = &norm.gpu,
                              .eps = 1e-5f,
                              .bias = &b.gpu,
                              .output = LinearOutputKind::RopeToCache,
                              .rope_to_cache = {&pos.gpu, &slot.gpu, &rope_gpu, &k_cache.gpu, &v_cache.gpu}});
            const Tensor linear_q_cpu =
                cpu_->linear(x.cpu, w_cpu,
                             {.norm = LinearNorm::Rms,
                              .norm_w = &norm.cpu,
                              .eps = 1e-5f,
                              .bias = &b.cpu,
                              .output = LinearOutputKind::RopeToCache,
                              .rope_to_cache = {&pos.cpu, &slot.cpu, &rope_cpu, &k_cache.cpu, &v_cache.cpu}});
            const double bound = linear_bound(c.n);
            const std::string format = quantization_name(c.type);
            expect_close(label("linear rms_norm rope_to_cache (q) ", format), linear_q_gpu, linear_q_cpu,
                         bound, where);
            expect_close(
                label("linear rms_norm rope_to_cache (", dtype_name(cache_type), " k cache) ", format),
                k_cache.gpu, k_cache.cpu, std::max(bound, cache_bound), where);
            expect_close(
                label("linear rms_norm rope_to_cache (", dtype_name(cache_type), " v cache) ", format),
                v_cache.gpu, v_cache.cpu, std::max(bound, cache_bound), where);
        }
    }
    const Pair qkv = random({2, 4 * 8}), pos = upload_i32({0, 0, 0, 1, 1, 1}, {2, 3});
    const Pair slot = upload_i32({0, 1}, {2});
    Pair cache = random({4, 1, 8});
    const RopeParams rope = RotaryLayout(3).section(0, 2).section(1, 1).section(2, 1).upload(*gpu_, 8, 1e4f);
    EXPECT_THROW(gpu_->rope_qkv_to_cache(
                     qkv.gpu, pos.gpu, slot.gpu,
                     RotaryLayout(3).section(0, 1).section(1, 1).section(2, 1).upload(*gpu_, 6, 1e4f),
                     cache.gpu, cache.gpu),
                 Error)
        << "three frequencies, not four";
    EXPECT_THROW(
        gpu_->rope_qkv_to_cache(qkv.gpu, pos.gpu, slot.gpu,
                                RotaryLayout(1).section(0, 4).upload(*gpu_, 8, 1e4f), cache.gpu, cache.gpu),
        Error)
        << "positions of three axes for a one-axis layout";
    EXPECT_THROW(gpu_->rope_qkv_to_cache(qkv.gpu, slot.gpu, slot.gpu, rope, cache.gpu, cache.gpu), Error)
        << "positions [2]";
    EXPECT_THROW(gpu_->rope_qkv_to_cache(qkv.gpu, pos.gpu, qkv.gpu, rope, cache.gpu, cache.gpu), Error)
        << "float32 slots";
    const Weight w = gpu_->upload(quantize(random_values(4 * 8 * 16, 3), 4 * 8, 16, Quantization::Bf16, 0));
    const Pair x = random({2, 16});
    const Pair norm15 = random({15}), norm16 = random({16});
    EXPECT_THROW(gpu_->linear(x.gpu, w,
                              {.norm = LinearNorm::Rms,
                               .norm_w = &norm15.gpu,
                               .eps = 1e-5f,
                               .output = LinearOutputKind::RopeToCache,
                               .rope_to_cache = {&pos.gpu, &slot.gpu, &rope, &cache.gpu, &cache.gpu}}),
                 Error)
        << "norm width";
    Pair two_head_cache = random({4, 2, 8});
    EXPECT_THROW(gpu_->linear(x.gpu, w,
                              {.norm = LinearNorm::Rms,
                               .norm_w = &norm16.gpu,
                               .eps = 1e-5f,
                               .output = LinearOutputKind::RopeToCache,
                               .rope_to_cache = {&pos.gpu, &slot.gpu, &rope, &two_head_cache.gpu,
                                                 &two_head_cache.gpu}}),
                 Error)
        << "32 rows are not q, k and v heads for 2 k/v heads of 8";
}

// Sequences of random lengths (0 for padding rows) over shuffled blocks of a larger cache; table entries past
// a sequence's length hold blocks the kernel must not read. One sequence splits its keys most, 300 sequences
// not at all (in three on the tensor cores); rows of fewer keys than a tile have their splits' outputs at
// once. A second identical call must give the same output, the split counters having been left at zero.
TEST_F(BackendOpsTest, PagedDecodeAttention) {
    std::vector<int32_t> many(300);
    std::mt19937 length_rng(seed_++);
    for (int32_t& len : many) {
        len = static_cast<int32_t>(length_rng() % 700);
    }
    struct Case {
        std::vector<int32_t> lengths;
        int64_t n_head, n_kv_head;
    };
    // Groups of 8 heads of 128 take the tensor cores at bfloat16 precision, with a bfloat16 cache in each
    // warp's own tiles of 16 keys (decode-attention.cu), with a float32 cache in the split-row kernel's tiles
    // of 32: lengths that end at every place in a tile, rows of no key and of one. The row of 545 keys merges
    // 9 splits; the 300 rows of `many` fill the device with one split each over a bfloat16 cache, with three
    // each over a float32 one.
    const std::vector<Case> cases = {{{1, 0, 17, 64, 65, 2999, 300, 0, 1000}, 8, 2},
                                     {{545}, 16, 2},
                                     {{2999}, 6, 3},
                                     {{33, 1, 700, 0}, 16, 2},
                                     {{1, 31, 32, 33, 64, 97, 0, 2999}, 16, 2},
                                     {many, 16, 2}};
    for (const auto& [precision, bound] : kAttentionPrecisions) {
        for (const Case& c : cases) {
            for (const auto& [cache_type, block_size] : {std::pair{ScalarType::F32, int64_t{1}},
                                                         {ScalarType::BF16, 1},
                                                         {ScalarType::F32, 16},
                                                         {ScalarType::BF16, 16},
                                                         {ScalarType::BF16, 64}}) {
                for (const int64_t hd : {5, 64, 128, 256}) {
                    const int64_t n_head = c.n_head, n_kv_head = c.n_kv_head,
                                  max_blocks = 3000 / block_size + 1;
                    const auto n = static_cast<int64_t>(c.lengths.size());
                    int64_t n_blocks = 0;
                    for (const int32_t len : c.lengths) {
                        n_blocks += (len + block_size - 1) / block_size;
                    }
                    n_blocks += 5;
                    std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
                    std::iota(perm.begin(), perm.end(), 0);
                    std::mt19937 rng(seed_++);
                    std::shuffle(perm.begin(), perm.end(), rng);
                    std::vector<int32_t> tables(static_cast<size_t>(n * max_blocks));
                    size_t next = 0;
                    for (int64_t i = 0; i < n; ++i) {
                        for (int64_t b = 0; b < max_blocks; ++b) {
                            tables[i * max_blocks + b] = b < (c.lengths[i] + block_size - 1) / block_size
                                                             ? perm[next++]
                                                             : static_cast<int32_t>(rng() % n_blocks);
                        }
                    }
                    const Pair q = random({n, n_head, hd}),
                               k = random_kv({n_blocks * block_size, n_kv_head, hd}, cache_type),
                               v = random_kv({n_blocks * block_size, n_kv_head, hd}, cache_type);
                    const Pair lens = upload_i32(c.lengths, {n});
                    const Pair table = upload_i32(tables, {n, max_blocks});
                    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
                    const std::string what = label(n, " sequences, ", n_head, "/", n_kv_head,
                                                   " heads, block ", block_size, ", hd ", hd);
                    const Tensor first = gpu_->paged_decode_attention(
                        q.gpu, k.gpu, v.gpu, lens.gpu, table.gpu, block_size, scale, precision);
                    expect_close(label("paged_decode_attention ", precision_name(precision), ", ",
                                       dtype_name(cache_type), " cache"),
                                 first,
                                 cpu_->paged_decode_attention(q.cpu, k.cpu, v.cpu, lens.cpu, table.cpu,
                                                              block_size, scale, AttentionPrecision::F32),
                                 bound, what);
                    const Tensor second = gpu_->paged_decode_attention(
                        q.gpu, k.gpu, v.gpu, lens.gpu, table.gpu, block_size, scale, precision);
                    EXPECT_EQ(gpu_->download(first), gpu_->download(second)) << what << ": a repeated call";
                }
            }
        }
    }
    const Pair q = random({2, 4, 8}), k = random({32, 2, 8});
    const Pair lens = upload_i32({3, 4}, {2}), table = upload_i32({0, 1}, {2, 1});
    EXPECT_THROW(gpu_->paged_decode_attention(q.gpu, k.gpu, k.gpu, lens.gpu, table.gpu, 7, 1.0f,
                                              AttentionPrecision::F32),
                 Error)
        << "32 % 7";
    EXPECT_THROW(gpu_->paged_decode_attention(q.gpu, k.gpu, k.gpu, table.gpu, lens.gpu, 16, 1.0f,
                                              AttentionPrecision::F32),
                 Error)
        << "tables [2]";
    EXPECT_THROW(cpu_->paged_decode_attention(q.cpu, k.cpu, k.cpu, lens.cpu, table.cpu, 2, 1.0f,
                                              AttentionPrecision::F32),
                 Error)
        << "length 3 beyond one block of 2";
}

// A decoding row of a step that also runs prompt chunks comes out bit for bit as in a decoding step, but for
// the decoding step rounding it to bfloat16: at bfloat16 precision both take decode_attention_bf16, with one
// split a row when the rows fill the device.
TEST_F(BackendOpsTest, PagedAttentionRowsMatchDecode) {
    constexpr int64_t kRows = 150, kHeadDim = 128, kHeads = 16, kKvHeads = 2, kBlockSize = 16;
    constexpr int64_t kMaxBlocks = 3000 / kBlockSize + 1;
    std::mt19937 rng(seed_++);
    std::vector<int32_t> lengths(kRows);
    for (int32_t& n : lengths) {
        n = static_cast<int32_t>(1 + rng() % 2999);
    }
    lengths[0] = 1;
    lengths[1] = 2999;
    lengths[2] = 64;
    const int64_t n_blocks = kRows * kMaxBlocks + 9;
    std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    // The decoding rows' tables, [kRows, kMaxBlocks], and a prompt chunk of 40 rows after 100 cached tokens,
    // whose q rows come after the decoding rows'.
    std::vector<int32_t> tables(perm.begin(), perm.begin() + kRows * kMaxBlocks);
    std::vector<PagedSequence> seqs;
    for (int64_t i = 0; i < kRows; ++i) {
        seqs.push_back({i, 1, lengths[static_cast<size_t>(i)], i * kMaxBlocks});
    }
    constexpr int64_t kChunkRows = 40, kChunkKeys = 140;
    seqs.push_back({kRows, kChunkRows, kChunkKeys, static_cast<int64_t>(tables.size())});
    for (int64_t b = 0; b < (kChunkKeys + kBlockSize - 1) / kBlockSize; ++b) {
        tables.push_back(perm[static_cast<size_t>(kRows * kMaxBlocks + b)]);
    }
    const Pair k = random_kv({n_blocks * kBlockSize, kKvHeads, kHeadDim}, ScalarType::BF16),
               v = random_kv({n_blocks * kBlockSize, kKvHeads, kHeadDim}, ScalarType::BF16);
    const std::vector<float> q_values = random_values((kRows + kChunkRows) * kHeads * kHeadDim, seed_++);
    const Tensor q_step = gpu_->upload(q_values, {kRows + kChunkRows, kHeads, kHeadDim});
    const Tensor q_decode =
        gpu_->upload(std::vector<float>(q_values.begin(), q_values.begin() + kRows * kHeads * kHeadDim),
                     {kRows, kHeads, kHeadDim});
    const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    // The decoding step's outputs come rounded to bfloat16 for the output projection.
    std::vector<float> mixed = gpu_->download(gpu_->paged_attention(
        q_step, k.gpu, v.gpu, seqs, tables, kBlockSize, scale, AttentionPrecision::Bf16));
    for (float& x : mixed) {
        x = from_bf16(to_bf16(x));
    }
    const Pair lens = upload_i32(lengths, {kRows});
    const Pair table = upload_i32(std::vector<int32_t>(tables.begin(), tables.begin() + kRows * kMaxBlocks),
                                  {kRows, kMaxBlocks});
    const std::vector<float> decoded = gpu_->download(gpu_->paged_decode_attention(
        q_decode, k.gpu, v.gpu, lens.gpu, table.gpu, kBlockSize, scale, AttentionPrecision::Bf16));
    ASSERT_EQ(decoded.size(), static_cast<size_t>(kRows * kHeads * kHeadDim));
    for (int64_t i = 0; i < kRows; ++i) {
        const auto row = [&](const std::vector<float>& x) {
            const auto first = x.begin() + i * kHeads * kHeadDim;
            return std::vector<float>(first, first + kHeads * kHeadDim);
        };
        ASSERT_EQ(row(mixed), row(decoded))
            << "row " << i << " of " << lengths[static_cast<size_t>(i)] << " keys";
    }
}

TEST_F(BackendOpsTest, GatherRowsByInt32Tensor) {
    for (const int64_t d : {1, 7, 1000}) {
        const Pair src = random({130, d});
        for (const std::vector<int32_t>& rows : std::vector<std::vector<int32_t>>{
                 {}, {129}, {0, 5, 5, 3}, {7, 1, 2, 8, 100, 64, 0, 33, 129, 4}}) {
            const auto n = static_cast<int64_t>(rows.size());
            const Pair r = upload_i32(rows, {n});
            expect_close("gather_rows (int32 rows)", gpu_->gather_rows(src.gpu, r.gpu),
                         cpu_->gather_rows(src.cpu, r.cpu), kF32Bound, dims({n, d}));
        }
    }
    EXPECT_THROW(gpu_->gather_rows(random({3, 2}).gpu, random({2}).gpu), Error) << "float32 rows";
}

// A step's tokens chosen on the device feed the next step's embeddings there (a negative id -p - 1 is pending
// token p), in recorded work too, and come to the host through readbacks queued behind the work, each with
// the values of its own step although later steps rewrite the tensor.
TEST_F(BackendOpsTest, PendingTokensAndReadBacks) {
    const int64_t vocab = 130, d = 48;
    const Pair table = random({vocab, d});
    const auto choose = [&](Pair& pending, int64_t n) {
        const Pair logits = random({n, vocab});
        cpu_->argmax_rows_to(logits.cpu, pending.cpu);
        gpu_->argmax_rows_to(logits.gpu, pending.gpu);
    };
    for (const int64_t n_pending : {1, 5, 64}) {
        Pair pending = upload_i32(std::vector<int32_t>(static_cast<size_t>(n_pending), 0), {n_pending});
        choose(pending, n_pending);
        std::vector<int32_t> ids;  // known and pending ids in turn
        for (int64_t i = 0; i < 2 * n_pending + 3; ++i) {
            ids.push_back(static_cast<int32_t>(i % 2 == 1 ? -(i / 2 % n_pending) - 1 : i * 37 % vocab));
        }
        const auto n = static_cast<int64_t>(ids.size());
        const Pair id_tensor = upload_i32(ids, {n});
        expect_close("gather_token_rows", gpu_->gather_token_rows(table.gpu, id_tensor.gpu, pending.gpu),
                     cpu_->gather_token_rows(table.cpu, id_tensor.cpu, pending.cpu), kF32Bound,
                     dims({n, n_pending}));
        EXPECT_EQ(gpu_->read_back(pending.gpu)->wait(), cpu_->read_back(pending.cpu)->wait());
    }

    const int64_t n = 4;
    Pair pending = upload_i32(std::vector<int32_t>(n, 0), {n});
    const Pair ids = upload_i32({-1, 7, -4, -2}, {n});
    gpu_->begin_recording();
    EXPECT_THROW(gpu_->read_back(pending.gpu), Error) << "nothing comes to the host while recording";
    const Tensor out = gpu_->gather_token_rows(table.gpu, ids.gpu, pending.gpu);
    const std::unique_ptr<RecordedWork> work = gpu_->end_recording();
    for (int step = 0; step < 3; ++step) {
        choose(pending, n);
        work->replay();
        expect_close("recorded gather_token_rows", out,
                     cpu_->gather_token_rows(table.cpu, ids.cpu, pending.cpu), kF32Bound,
                     label("replay ", step));
    }

    std::vector<std::unique_ptr<TokenReadback>> readbacks;
    std::vector<std::vector<int32_t>> expected;
    for (int step = 0; step < 6; ++step) {
        choose(pending, n);
        readbacks.push_back(gpu_->read_back(pending.gpu));
        expected.push_back(cpu_->read_back(pending.cpu)->wait());
    }
    for (size_t step = readbacks.size(); step-- > 0;) {
        EXPECT_EQ(readbacks[step]->wait(), expected[step]) << "step " << step;
    }
}

// Work recorded once and replayed with new inputs equals the CPU running it on those inputs; the replay
// writes the tensors made while recording, and nothing may cross between host and device while recording.
TEST_F(BackendOpsTest, RecordedWorkReplaysWithNewInputs) {
    EXPECT_FALSE(cpu_->can_record());
    EXPECT_THROW(cpu_->begin_recording(), Error);
    ASSERT_TRUE(gpu_->can_record());
    const int64_t n = 5, d = 48;
    const Pair table = random({40, d}), w = random({d}, 1.0f, 0.1f), up_w = random({2 * d, d});
    const auto run = [&](Backend& backend, const Tensor& rows, const Tensor& ids, const Tensor& weight,
                         const Tensor& up) {
        Tensor x = backend.gather_rows(rows, ids);  // [n, d]
        backend.add(x, backend.copy(x));
        const Tensor h = backend.rms_norm(x, weight, 1e-5f);
        return backend.swiglu(backend.linear(h, up, nullptr));  // [n, d]
    };
    std::vector<int32_t> ids = {3, 0, 39, 7, 7};
    Tensor gpu_ids = gpu_->upload_i32(ids, {n});
    gpu_->begin_recording();
    EXPECT_THROW(gpu_->download(w.gpu), Error);
    EXPECT_THROW(gpu_->upload_i32(ids, {n}), Error);
    const Tensor out = run(*gpu_, table.gpu, gpu_ids, w.gpu, up_w.gpu);
    const std::unique_ptr<RecordedWork> work = gpu_->end_recording();
    EXPECT_THROW(gpu_->end_recording(), Error) << "not recording";
    for (int step = 0; step < 3; ++step) {
        for (int32_t& id : ids) {
            id = static_cast<int32_t>((id * 7 + step + 1) % 40);
        }
        gpu_->update(gpu_ids, ids);
        work->replay();
        const Tensor expected = run(*cpu_, table.cpu, cpu_->upload_i32(ids, {n}), w.cpu, up_w.cpu);
        expect_close("recorded work", out, expected, kF32Bound, label("replay ", step));
    }
}

// Marks on the queue time the device's work between them: more work takes longer, marks of different
// backends are not compared, and nothing is marked while recording.
TEST_F(BackendOpsTest, QueueMarksTimeTheWorkBetweenThem) {
    const Pair a = random({512, 512});
    const auto time = [&](int n_products) {
        const std::unique_ptr<QueueMark> start = gpu_->mark_queue();
        for (int i = 0; i < n_products; ++i) {
            gpu_->batched_products(a.gpu.view(0, {1, 512, 512}), a.gpu.view(0, {1, 512, 512}));
        }
        const std::unique_ptr<QueueMark> end = gpu_->mark_queue();
        return end->seconds_since(*start);
    };
    time(2);
    const double one = time(1), many = time(50);
    EXPECT_GT(one, 0.0);
    EXPECT_GT(many, 5 * one);
    const std::unique_ptr<QueueMark> host = cpu_->mark_queue(), device = gpu_->mark_queue();
    EXPECT_THROW(device->seconds_since(*host), Error);
    EXPECT_GE(cpu_->mark_queue()->seconds_since(*host), 0.0);
    gpu_->begin_recording();
    EXPECT_THROW(gpu_->mark_queue(), Error);
    gpu_->end_recording();
}

}  // namespace
}  // namespace folio
