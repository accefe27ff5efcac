#include "engine/runtime/rope.h"

#include <cmath>

#include "engine/common/error.h"

namespace folio {

std::vector<float> rope_inverse_frequencies(int dim, float theta) {
    std::vector<float> inv(static_cast<size_t>(dim / 2));
    for (int i = 0; i < dim / 2; ++i) {
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
        inv[i] = 1.0f / std::pow(theta, exponent);
    }
    return inv;
}

RotaryLayout::RotaryLayout(int n_axes) : n_axes_(n_axes) {
    if (n_axes < 1) {
        fail("rotary layout: ", n_axes, " position axes");
    }
}

void RotaryLayout::check_axis(int axis, int count) const {
    if (axis < 0 || axis >= n_axes_ || count < 0) {
        fail("rotary layout: ", count, " frequencies on axis ", axis, " of ", n_axes_);
    }
}

RotaryLayout& RotaryLayout::section(int axis, int n_frequencies) {
    check_axis(axis, n_frequencies);
    pair_axis_.insert(pair_axis_.end(), static_cast<size_t>(n_frequencies), axis);
    return *this;
}

RotaryLayout& RotaryLayout::interleaved(std::span<const std::pair<int, int>> axis_counts) {
    std::vector<int> left;
    for (const auto& [axis, count] : axis_counts) {
        check_axis(axis, count);
        left.push_back(count);
    }
    for (bool any = true; any;) {
        any = false;
        for (size_t i = 0; i < axis_counts.size(); ++i) {
            if (left[i] > 0) {
                pair_axis_.push_back(axis_counts[i].first);
                --left[i];
                any = true;
            }
        }
    }
    return *this;
}

RopeParams RotaryLayout::upload(Backend& backend, int64_t head_dim, float theta) const {
    if (head_dim <= 0 || head_dim % 2 != 0) {
        fail("rotary layout: ", n_frequencies(), " frequencies for head_dim ", head_dim);
    }
    return upload(backend, head_dim, rope_inverse_frequencies(static_cast<int>(head_dim), theta));
}

RopeParams RotaryLayout::upload(Backend& backend, int64_t head_dim, std::span<const float> inv_freq) const {
    if (head_dim <= 0 || head_dim % 2 != 0 || n_frequencies() != head_dim / 2 ||
        static_cast<int64_t>(inv_freq.size()) != head_dim / 2) {
        fail("rotary layout: ", n_frequencies(), " frequencies and ", inv_freq.size(),
             " inverse frequencies for head_dim ", head_dim);
    }
    RopeParams params;
    params.inv_freq = backend.upload(inv_freq, {head_dim / 2});
    params.pair_axis = backend.upload_i32(pair_axis_, {head_dim / 2});
    params.n_axes = n_axes_;
    return params;
}

std::vector<int64_t> adjacent_to_half_rows(int64_t head_dim) {
    if (head_dim <= 0 || head_dim % 2 != 0) {
        fail("rotary layout: head_dim ", head_dim, " is not even");
    }
    std::vector<int64_t> order(static_cast<size_t>(head_dim));
    const int64_t half = head_dim / 2;
    for (int64_t i = 0; i < half; ++i) {
        order[static_cast<size_t>(i)] = 2 * i;
        order[static_cast<size_t>(i + half)] = 2 * i + 1;
    }
    return order;
}

}  // namespace folio
