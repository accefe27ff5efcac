// Rotary layouts: which axis each frequency turns with (contiguous sections, interleaved runs, one axis),
// the CPU backend's rotary step against the definition written out here, and the reordering that lets a
// checkpoint of adjacent pairs run on the rotate-half backends with the same attention scores.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/runtime/rope.h"

namespace folio {
namespace {

TEST(RotaryLayoutTest, SectionsAndInterleavedRunsAssignAxesInFrequencyOrder) {
    EXPECT_EQ(RotaryLayout(3).section(0, 2).section(1, 3).section(2, 1).pair_axis(),
              (std::vector<int32_t>{0, 0, 1, 1, 1, 2}));
    const std::pair<int, int> hw[] = {{1, 3}, {2, 3}};
    EXPECT_EQ(RotaryLayout(3).interleaved(hw).section(0, 2).pair_axis(),
              (std::vector<int32_t>{1, 2, 1, 2, 1, 2, 0, 0}));
    const std::pair<int, int> uneven[] = {{0, 1}, {1, 3}, {2, 2}};
    EXPECT_EQ(RotaryLayout(3).interleaved(uneven).pair_axis(), (std::vector<int32_t>{0, 1, 2, 1, 2, 1}));
    EXPECT_EQ(RotaryLayout(1).section(0, 4).pair_axis(), (std::vector<int32_t>(4, 0)));
    EXPECT_EQ(RotaryLayout(3).section(0, 0).section(1, 2).pair_axis(), (std::vector<int32_t>{1, 1}));

    EXPECT_THROW(RotaryLayout(0), Error);
    EXPECT_THROW(RotaryLayout(2).section(2, 1), Error) << "axis 2 of 2";
    EXPECT_THROW(RotaryLayout(2).section(0, -1), Error);
    const std::pair<int, int> bad[] = {{0, 1}, {-1, 1}};
    EXPECT_THROW(RotaryLayout(2).interleaved(bad), Error);
    std::unique_ptr<Backend> backend = make_cpu_backend(1);
    EXPECT_THROW(RotaryLayout(1).section(0, 3).upload(*backend, 8, 1e4f), Error) << "3 frequencies for 8";
    EXPECT_THROW(RotaryLayout(1).section(0, 3).upload(*backend, 7, 1e4f), Error) << "odd head";
    EXPECT_THROW(adjacent_to_half_rows(5), Error);
}

// q of one head turned in rotate-half form: pair i is (x[i], x[i + d/2]), its angle position[axis[i]] * f_i.
std::vector<float> turned_half(std::span<const float> x, std::span<const int32_t> pos,
                               std::span<const int32_t> axis, std::span<const float> inv) {
    const size_t half = x.size() / 2;
    std::vector<float> y(x.size());
    for (size_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(pos[static_cast<size_t>(axis[i])]) * inv[i];
        y[i] = static_cast<float>(x[i] * std::cos(a) - x[i + half] * std::sin(a));
        y[i + half] = static_cast<float>(x[i + half] * std::cos(a) + x[i] * std::sin(a));
    }
    return y;
}

// A decoder step over two tokens of one q head and one k/v head, run on the CPU backend: q and the cached k
// equal the definition for every layout.
TEST(RotaryLayoutTest, CpuBackendTurnsEachFrequencyWithItsAxis) {
    std::unique_ptr<Backend> backend = make_cpu_backend(1);
    const int64_t hd = 16, n = 2;
    const std::pair<int, int> hw[] = {{1, 3}, {2, 3}};
    for (const RotaryLayout& layout :
         {RotaryLayout(1).section(0, 8), RotaryLayout(3).section(0, 2).section(1, 3).section(2, 3),
          RotaryLayout(3).interleaved(hw).section(0, 2)}) {
        const int n_axes = layout.n_axes();
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> qkv(static_cast<size_t>(n * 3 * hd));  // [n, q | k | v]
        for (float& v : qkv) {
            v = dist(rng);
        }
        std::vector<int32_t> positions;  // [n, n_axes]
        for (int64_t t = 0; t < n; ++t) {
            for (int a = 0; a < n_axes; ++a) {
                positions.push_back(static_cast<int32_t>(5 + 11 * t + 3 * a));
            }
        }
        const RopeParams rope = layout.upload(*backend, hd, 100.0f);
        Tensor k_cache = backend->upload(std::vector<float>(4 * hd, 0.0f), {4, 1, hd});
        Tensor v_cache = backend->upload(std::vector<float>(4 * hd, 0.0f), {4, 1, hd});
        const Tensor q = backend->rope_qkv_to_cache(
            backend->upload(qkv, {n, 3 * hd}), backend->upload_i32(positions, {n, n_axes}),
            backend->upload_i32(std::vector<int32_t>{2, 0}, {n}), rope, k_cache, v_cache);
        const std::vector<float> q_out = backend->download(q), k_out = backend->download(k_cache);
        const std::vector<float> inv = rope_inverse_frequencies(static_cast<int>(hd), 100.0f);
        const int64_t slot_of[] = {2, 0};
        for (int64_t t = 0; t < n; ++t) {
            const std::span<const int32_t> pos(positions.data() + t * n_axes, static_cast<size_t>(n_axes));
            const std::span<const float> row(qkv.data() + t * 3 * hd, static_cast<size_t>(3 * hd));
            const std::vector<float> q_ref = turned_half(row.subspan(0, hd), pos, layout.pair_axis(), inv);
            const std::vector<float> k_ref = turned_half(row.subspan(hd, hd), pos, layout.pair_axis(), inv);
            for (int64_t i = 0; i < hd; ++i) {
                EXPECT_NEAR(q_out[t * hd + i], q_ref[i], 1e-5)
                    << n_axes << " axes, token " << t << " value " << i;
                EXPECT_NEAR(k_out[slot_of[t] * hd + i], k_ref[i], 1e-5) << n_axes << " axes, token " << t;
            }
        }
    }
}

// Adjacent-pair RoPE (pair i is (x[2i], x[2i + 1])) written out on q and k, against rotate-half RoPE on the
// rows reordered by adjacent_to_half_rows: the same q . k for every pair of positions.
TEST(RotaryLayoutTest, ReorderedRowsGiveAdjacentPairScoresInRotateHalfForm) {
    const int64_t hd = 12;
    const std::vector<int64_t> order = adjacent_to_half_rows(hd);
    EXPECT_EQ(order, (std::vector<int64_t>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
    const std::vector<float> inv = rope_inverse_frequencies(static_cast<int>(hd), 50.0f);
    const std::vector<int32_t> axis(static_cast<size_t>(hd / 2), 0);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> q(static_cast<size_t>(hd)), k(static_cast<size_t>(hd));
    for (size_t i = 0; i < q.size(); ++i) {
        q[i] = dist(rng);
        k[i] = dist(rng);
    }
    const auto adjacent = [&](const std::vector<float>& x, int32_t p) {
        std::vector<float> y(x.size());
        for (size_t i = 0; i < x.size() / 2; ++i) {
            const double a = static_cast<double>(p) * inv[i];
            y[2 * i] = static_cast<float>(x[2 * i] * std::cos(a) - x[2 * i + 1] * std::sin(a));
            y[2 * i + 1] = static_cast<float>(x[2 * i + 1] * std::cos(a) + x[2 * i] * std::sin(a));
        }
        return y;
    };
    const auto reordered = [&](const std::vector<float>& x) {
        std::vector<float> y;
        for (const int64_t r : order) {
            y.push_back(x[static_cast<size_t>(r)]);
        }
        return y;
    };
    const auto dot = [](const std::vector<float>& a, const std::vector<float>& b) {
        double s = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            s += static_cast<double>(a[i]) * b[i];
        }
        return s;
    };
    for (const auto& [pq, pk] : {std::pair{0, 0}, std::pair{7, 3}, std::pair{100, 41}}) {
        const double want = dot(adjacent(q, pq), adjacent(k, pk));
        const int32_t posq[] = {pq}, posk[] = {pk};
        const double got =
            dot(turned_half(reordered(q), posq, axis, inv), turned_half(reordered(k), posk, axis, inv));
        EXPECT_NEAR(got, want, 1e-5) << pq << ", " << pk;
    }
}

}  // namespace
}  // namespace folio
