// The plan the CUDA backend's permutation runs by (kernels/permute-plan.h): for every shape and order of
// axes, moving the elements by the plan's fewer axes puts each where the full permutation puts it, and the
// layout models' reshapes come out as the transposes the tiled kernel takes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/permute-plan.h"

namespace folio {
namespace {

using kernels::PermutePlan;
using kernels::plan_permute;

// y's axis i is x's axis axes[i], element by element.  x [shape]
std::vector<int> permuted(const std::vector<int>& x, const std::vector<int64_t>& shape,
                          const std::vector<int>& axes) {
    const auto rank = static_cast<int>(shape.size());
    std::vector<int64_t> x_strides(shape.size(), 1);
    for (int d = rank - 2; d >= 0; --d) {
        x_strides[static_cast<size_t>(d)] =
            x_strides[static_cast<size_t>(d + 1)] * shape[static_cast<size_t>(d + 1)];
    }
    std::vector<int> y(x.size());
    for (size_t e = 0; e < y.size(); ++e) {
        auto rest = static_cast<int64_t>(e);
        int64_t offset = 0;
        for (int i = rank - 1; i >= 0; --i) {
            const auto axis = static_cast<size_t>(axes[static_cast<size_t>(i)]);
            offset += rest % shape[axis] * x_strides[axis];
            rest /= shape[axis];
        }
        y[e] = x[static_cast<size_t>(offset)];
    }
    return y;
}

std::vector<int> by_plan(const std::vector<int>& x, const PermutePlan& plan) {
    if (plan.rank <= 1) {
        return x;
    }
    return permuted(x, std::vector<int64_t>(plan.shape, plan.shape + plan.rank),
                    std::vector<int>(plan.axes, plan.axes + plan.rank));
}

TEST(PermutePlan, MovesEveryElementAsTheFullPermutation) {
    std::mt19937 rng(11);
    for (int rank = 1; rank <= kernels::kMaxLayoutDims; ++rank) {
        for (int trial = 0; trial < 40; ++trial) {
            std::vector<int64_t> shape;
            for (int d = 0; d < rank; ++d) {
                shape.push_back(std::uniform_int_distribution<int64_t>(1, 4)(rng));  // size-1 axes among them
            }
            std::vector<int> axes(static_cast<size_t>(rank));
            std::iota(axes.begin(), axes.end(), 0);
            std::shuffle(axes.begin(), axes.end(), rng);
            std::vector<int> x(static_cast<size_t>(
                std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>())));
            std::iota(x.begin(), x.end(), 0);
            const PermutePlan plan = plan_permute(shape.data(), axes.data(), rank);
            EXPECT_LE(plan.rank, rank);
            EXPECT_EQ(by_plan(x, plan), permuted(x, shape, axes)) << "rank " << rank << ", trial " << trial;
        }
    }
}

struct Case {
    std::vector<int64_t> shape;
    std::vector<int> axes;
    std::vector<int64_t> plan_shape;  // empty: no transpose
};

TEST(PermutePlan, LayoutReshapesAreTransposes) {
    const Case cases[] = {
        {{32, 256, 100, 100},
         {0, 2, 3, 1},
         {32, 256, 10000}},                            // feature maps to rows: [n, c, h, w] -> [n, hw, c]
        {{1, 256, 25, 25}, {0, 2, 3, 1}, {256, 625}},  // one page: a plain transpose
        {{32, 302, 302, 8}, {0, 3, 1, 2}, {32, 91204, 8}},  // pair biases to heads
        {{32, 302, 8, 64}, {0, 2, 3, 1}, {32, 302, 512}},   // keys to columns
        {{32, 302, 8, 64}, {0, 2, 1, 3}, {}},               // heads first: rows of 64 move whole
        {{4, 1, 7}, {1, 0, 2}, {}},                         // only a size-1 axis moves: a copy
    };
    for (const Case& c : cases) {
        const PermutePlan plan =
            plan_permute(c.shape.data(), c.axes.data(), static_cast<int>(c.shape.size()));
        EXPECT_EQ(plan.is_transpose(), !c.plan_shape.empty());
        if (!c.plan_shape.empty()) {
            EXPECT_EQ(std::vector<int64_t>(plan.shape, plan.shape + plan.rank), c.plan_shape);
        }
    }
    const int64_t unit[] = {4, 1, 7};
    const int axes[] = {1, 0, 2};
    EXPECT_LE(plan_permute(unit, axes, 3).rank, 1);
}

}  // namespace
}  // namespace folio
