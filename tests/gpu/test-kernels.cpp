// The CUDA kernels against plain CPU arithmetic; skipped where no CUDA device is present.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda-check.h"
#include "kernels/elementwise.h"

namespace folio {
namespace {

class KernelTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
    }

    // Device copy of host values; freed by the returned deleter.
    static std::unique_ptr<float, void (*)(float*)> to_device(const std::vector<float>& host) {
        float* d = nullptr;
        CUDA_CHECK(cudaMalloc(&d, std::max<size_t>(host.size(), 1) * sizeof(float)));
        CUDA_CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
        return {d, [](float* p) { cudaFree(p); }};
    }

    static std::vector<float> to_host(const float* d, size_t n) {
        std::vector<float> host(n);
        CUDA_CHECK(cudaMemcpy(host.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
        return host;
    }

    static std::vector<float> random_values(size_t n, uint32_t seed) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal;
        std::vector<float> v(n);
        for (float& x : v) {
            x = normal(rng);
        }
        return v;
    }
};

TEST_F(KernelTest, AddMatchesCpu) {
    for (const int64_t n : {1, 255, 256, 1000003}) {
        const auto x = random_values(static_cast<size_t>(n), 1), y = random_values(static_cast<size_t>(n), 2);
        auto dx = to_device(x);
        auto dy = to_device(y);
        kernels::add_f32(dx.get(), dy.get(), n, nullptr);
        const auto out = to_host(dx.get(), static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            ASSERT_FLOAT_EQ(out[i], x[i] + y[i]) << i;
        }
    }
}

TEST_F(KernelTest, LinearMatchesCpu) {
    cublasHandle_t handle = nullptr;
    CUBLAS_CHECK(cublasCreate(&handle));
    const std::unique_ptr<cublasContext, void (*)(cublasHandle_t)> owner(
        handle, [](cublasHandle_t h) { cublasDestroy(h); });
    const int64_t n = 37, in = 129, out = 65;
    const auto x = random_values(n * in, 3), w = random_values(out * in, 4), b = random_values(out, 5);
    auto dx = to_device(x);
    auto dw = to_device(w);
    auto db = to_device(b);
    auto dy = to_device(std::vector<float>(n * out, std::nanf("")));
    kernels::linear_f32(handle, dx.get(), dw.get(), db.get(), dy.get(), n, in, out, nullptr);
    const auto y = to_host(dy.get(), static_cast<size_t>(n * out));
    for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < out; ++c) {
            double expected = b[c];
            for (int64_t k = 0; k < in; ++k) {
                expected += static_cast<double>(x[r * in + k]) * w[c * in + k];
            }
            ASSERT_NEAR(y[r * out + c], expected, 1e-3 * (1.0 + std::fabs(expected))) << r << "," << c;
        }
    }
}

}  // namespace
}  // namespace folio
