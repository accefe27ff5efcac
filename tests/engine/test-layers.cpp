// The model layers shared by the families, on the CPU backend.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/models/layers.h"

using namespace folio;

namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 0.5f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) {
        x = uniform(rng);
    }
    return v;
}

}  // namespace

// A vision MLP over many rows runs a chunk of rows at a time, in place in the residual stream: every chunk
// size gives the rows one pass over all of them gives.
TEST(Layers, VisionMlpInChunksOfRowsEqualsOnePass) {
    const auto backend = make_cpu_backend(1);
    constexpr int64_t n = 37, d = 16, d_ff = 40;
    const auto weight = [&](int64_t n_out, int64_t n_in, uint32_t seed) {
        return dense_weight(
            backend->upload(random_values(static_cast<size_t>(n_out * n_in), seed), {n_out, n_in}));
    };
    const Linear fc1{weight(d_ff, d, 1), backend->upload(random_values(d_ff, 2), {d_ff})};
    const Linear fc2{weight(d, d_ff, 3), backend->upload(random_values(d, 4), {d})};
    const Tensor norm_w = backend->upload(random_values(d, 5, 1.0f), {d});
    const Tensor norm_b = backend->upload(random_values(d, 6), {d});
    const std::vector<float> input = random_values(static_cast<size_t>(n * d), 7, 2.0f);
    for (const Activation act : {Activation::GeluTanh, Activation::QuickGelu}) {
        Tensor whole = backend->upload(input, {n, d});
        layer_norm_mlp_add(*backend, whole, fc1, fc2, norm_w, norm_b, 1e-6f, act, n);
        const std::vector<float> expected = backend->download(whole);
        ASSERT_NE(expected, input) << "the MLP adds to the rows";
        for (const int64_t chunk : {1, 5, 36}) {
            Tensor x = backend->upload(input, {n, d});
            layer_norm_mlp_add(*backend, x, fc1, fc2, norm_w, norm_b, 1e-6f, act, chunk);
            EXPECT_EQ(x.shape, (std::vector<int64_t>{n, d}));
            const std::vector<float> got = backend->download(x);
            ASSERT_EQ(got.size(), expected.size());
            for (size_t i = 0; i < got.size(); ++i) {
                ASSERT_NEAR(got[i], expected[i], 1e-5f) << "chunks of " << chunk << ", value " << i;
            }
        }
    }
    Tensor x = backend->upload(input, {n, d});
    EXPECT_THROW(layer_norm_mlp_add(*backend, x, fc1, fc2, norm_w, norm_b, 1e-6f, Activation::GeluTanh, 0),
                 Error);
}
