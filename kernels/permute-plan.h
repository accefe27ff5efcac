// A permutation of a tensor's axes restated over as few axes as it needs, in plain C++ so that the host and
// its tests share it: axes of size 1 left out, and axes that stay next to each other in the output joined.
// What is left says which kernel moves the elements: a copy, a (batched) transpose, or the general
// permutation.
#pragma once

#include <cstdint>
#include <utility>

namespace folio::kernels {

constexpr int kMaxLayoutDims = 6;

struct PermutePlan {
    int rank = 0;                        // 0 or 1: the elements stay where they are
    int64_t shape[kMaxLayoutDims] = {};  // x's shape over the joined axes
    int axes[kMaxLayoutDims] = {};       // y's axis i is the joined axis axes[i]

    // y [batch, cols, rows] from x [batch, rows, cols] (batch 1 where the plan has two axes).
    bool is_transpose() const {
        return (rank == 2 && axes[0] == 1) || (rank == 3 && axes[0] == 0 && axes[1] == 2 && axes[2] == 1);
    }
};

// The plan of y's axis i being x's axis axes[i].  x [x_shape], rank up to kMaxLayoutDims
inline PermutePlan plan_permute(const int64_t* x_shape, const int* axes, int rank) {
    int compact[kMaxLayoutDims] = {};  // x's axes numbered without those of size 1
    for (int d = 0, k = 0; d < rank; ++d) {
        compact[d] = k;
        k += x_shape[d] == 1 ? 0 : 1;
    }
    // y's runs of x's axes that follow one another: each run's first axis (compact) and its size.
    int first[kMaxLayoutDims] = {};
    int64_t size[kMaxLayoutDims] = {};
    int n_runs = 0;
    int last = -2;
    for (int i = 0; i < rank; ++i) {
        const int d = axes[i];
        if (x_shape[d] == 1) {
            continue;
        }
        if (n_runs > 0 && compact[d] == last + 1) {
            size[n_runs - 1] *= x_shape[d];
        } else {
            first[n_runs] = compact[d];
            size[n_runs] = x_shape[d];
            ++n_runs;
        }
        last = compact[d];
    }
    // The runs in x's order.
    int order[kMaxLayoutDims] = {};
    for (int j = 0; j < n_runs; ++j) {
        order[j] = j;
        for (int k = j; k > 0 && first[order[k]] < first[order[k - 1]]; --k) {
            std::swap(order[k], order[k - 1]);
        }
    }
    PermutePlan plan;
    plan.rank = n_runs;
    for (int j = 0; j < n_runs; ++j) {
        plan.shape[j] = size[order[j]];
        plan.axes[order[j]] = j;
    }
    return plan;
}

}  // namespace folio::kernels
