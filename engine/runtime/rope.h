// Rotary position embedding as a model describes it: the frequencies, which position axis each frequency
// turns with (one axis for a text model; temporal, height and width for a multimodal RoPE, in contiguous
// sections or interleaved), and how checkpoints that pair adjacent values are brought to the rotate-half
// pairing the backends use.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"

namespace folio {

// 1 / theta^(2i / dim) for i < dim / 2.
std::vector<float> rope_inverse_frequencies(int dim, float theta);

// Which position axis each of a head's head_dim / 2 frequencies turns with, built in frequency order from
// sections (the next n frequencies with one axis) and interleaved runs (the next frequencies dealt to
// several axes in turn, each until its count is used up). Throws folio::Error for an axis outside
// [0, n_axes) or a negative count.
class RotaryLayout {
public:
    explicit RotaryLayout(int n_axes);

    // The next n_frequencies frequencies turn with axis.
    RotaryLayout& section(int axis, int n_frequencies);
    // The next frequencies go to the axes in turn, (axis, count) pairs, skipping an axis whose count is
    // used up: {{1, 2}, {2, 2}} gives 1, 2, 1, 2 and {{0, 1}, {1, 3}} gives 0, 1, 1, 1.
    RotaryLayout& interleaved(std::span<const std::pair<int, int>> axis_counts);

    int n_axes() const { return n_axes_; }
    int n_frequencies() const { return static_cast<int>(pair_axis_.size()); }
    const std::vector<int32_t>& pair_axis() const { return pair_axis_; }

    // The backend's parameters for a head of head_dim values; throws folio::Error unless the layout covers
    // exactly head_dim / 2 frequencies.
    RopeParams upload(Backend& backend, int64_t head_dim, float theta) const;
    // The same with the frequencies given (a scaled RoPE's); throws unless there are head_dim / 2 of them.
    RopeParams upload(Backend& backend, int64_t head_dim, std::span<const float> inv_freq) const;

private:
    void check_axis(int axis, int count) const;

    int n_axes_ = 1;
    std::vector<int32_t> pair_axis_;  // [n_frequencies]
};

// Rows of a head in a checkpoint that turns adjacent values (2i, 2i + 1) as pair i, reordered so that the
// rotate-half pairing (i, i + head_dim / 2) turns the same values: row j of the reordered head is row
// order[j] of the checkpoint's. Applied to the q and k projections' rows (and biases), attention scores are
// unchanged, since q and k heads are reordered alike.
std::vector<int64_t> adjacent_to_half_rows(int64_t head_dim);

}  // namespace folio
