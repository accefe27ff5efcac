// The fixture of the CUDA backend's operation tests: both backends, random inputs as pairs of tensors, the
// error bounds of each kind of path and the worst error seen per operation, printed when the program ends.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <initializer_list>
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

#include "cuda-handles.h"
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

namespace folio::backend_ops_test {

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
// The bound of a linear layer of n rows of n_in inputs and n_out outputs: float32 weights take cuBLAS's
// float32 product, up to kQuantizedGemvMaxRows rows exactly and with the tensor cores' bound above. Without
// n_out, the bound of the widest layers (the tensor cores wherever any width takes them).
inline double linear_bound(int64_t n, int64_t n_in, Quantization type,
                           int64_t n_out = std::numeric_limits<int32_t>::max() / 4) {
    if (type == Quantization::None) {
        return n > kernels::kQuantizedGemvMaxRows ? kBf16TensorCoreBound : kQuantizedBound;
    }
    const kernels::QuantizedFormat format = type == Quantization::Wint8   ? kernels::QuantizedFormat::Wint8
                                            : type == Quantization::Wint4 ? kernels::QuantizedFormat::Wint4
                                                                          : kernels::QuantizedFormat::Bf16;
    return kernels::quantized_gemv_takes(n, n_in, n_out, format) ? kQuantizedBound : kBf16TensorCoreBound;
}
// The same for layers in turn of these input sizes: the tensor cores' bound if any of them takes them.
inline double linear_bound(int64_t n, std::initializer_list<int64_t> n_ins, Quantization type) {
    double bound = 0.0;
    for (const int64_t n_in : n_ins) {
        bound = std::max(bound, linear_bound(n, n_in, type));
    }
    return bound;
}
// A bfloat16 cache holds what the CPU's float32 cache holds rounded to 8 significant bits: a relative
// error up to 2^-9 of each element, beside the float32 paths' own.
constexpr double kBf16CacheBound = 4e-3;

// The element types of key/value caches the CUDA backend reads.
constexpr std::array<ScalarType, 3> kCacheTypes = {ScalarType::F32, ScalarType::BF16, ScalarType::Q8};

// A weight matrix [out, in] of the products' tests, packed as type says.
struct LinearCase {
    Quantization type;
    int64_t in;
    int64_t out;
    int64_t group_size;
};

// max |actual - expected| / max |expected|; infinite where actual holds a NaN or an infinity.
inline double relative_error(const std::vector<float>& actual, const std::vector<float>& expected) {
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
inline std::map<std::string, double>& worst_errors() {
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

inline const auto* const report = ::testing::AddGlobalTestEnvironment(new WorstErrorReport);

inline std::vector<float> random_values(int64_t n, uint32_t seed, float mean = 0.0f, float stddev = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(mean, stddev);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) {
        x = normal(rng);
    }
    return v;
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
    // A cache of random values on both backends: the CPU's float32 holding the GPU's bfloat16 values, or
    // both of 8-bit levels with scales (the CPU reads those too).
    Pair random_kv(std::vector<int64_t> shape, ScalarType dtype) {
        const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
        const std::vector<float> values = random_values(n, seed_++);
        if (dtype == ScalarType::Q8) {
            return {cpu_->upload_kv(values, shape, dtype), gpu_->upload_kv(values, shape, dtype)};
        }
        return {cpu_->upload(rounded(values, dtype), shape), gpu_->upload_kv(values, shape, dtype)};
    }

    // values as a cache of dtype holds them: rounded to bfloat16, or as 8-bit levels of rows of row_size
    // values (all of them one row where row_size is 0).
    static std::vector<float> rounded(std::vector<float> values, ScalarType dtype, int64_t row_size = 0) {
        if (dtype == ScalarType::BF16) {
            for (float& x : values) {
                x = from_bf16(to_bf16(x));
            }
        }
        if (dtype == ScalarType::Q8 && !values.empty()) {
            const auto n = static_cast<int64_t>(values.size());
            const int64_t row = row_size > 0 ? row_size : n;
            std::vector<int8_t> levels(values.size());
            std::vector<float> scales(static_cast<size_t>(n / row));
            quantize_q8_rows(values.data(), n / row, row, levels.data(), scales.data());
            return dequantize_q8_rows(levels.data(), scales.data(), n / row, row);
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
inline std::string label(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
}

inline std::string dims(std::initializer_list<int64_t> values) {
    std::ostringstream out;
    for (const int64_t v : values) {
        out << (out.tellp() > 0 ? "x" : "") << v;
    }
    return out.str();
}

}  // namespace folio::backend_ops_test
