#include "engine/models/paddleocr-vl/positions.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "engine/common/error.h"
#include "engine/image/image-preprocess.h"

namespace folio {

MropePositions compute_mrope_positions(std::span<const TokenModality> modality,
                                       std::span<const ImageGrid> grids, int spatial_merge_size) {
    MropePositions out;
    out.n_axes = 3;
    out.pos.reserve(3 * modality.size());
    int64_t current = 0;
    size_t next_grid = 0;
    size_t i = 0;
    while (i < modality.size()) {
        if (!is_media(modality[i])) {
            out.pos.insert(out.pos.end(), {current, current, current});
            ++current;
            ++i;
            continue;
        }
        if (next_grid >= grids.size()) {
            fail("prompt has more image runs than the ", grids.size(), " images given");
        }
        const ImageGrid& g = grids[next_grid++];
        const int64_t gh = g.h / spatial_merge_size, gw = g.w / spatial_merge_size;
        const int64_t n_run = g.t * gh * gw;
        for (int64_t k = 0; k < n_run; ++k) {
            if (i + k >= modality.size() || !is_media(modality[i + k])) {
                fail("image ", next_grid - 1, " needs ", n_run, " placeholder tokens, the prompt has ", k);
            }
        }
        for (int64_t t = 0; t < g.t; ++t) {
            for (int64_t y = 0; y < gh; ++y) {
                for (int64_t x = 0; x < gw; ++x) {
                    out.pos.insert(out.pos.end(), {current + t, current + y, current + x});
                }
            }
        }
        current += std::max(gh, gw);
        i += static_cast<size_t>(n_run);
    }
    if (next_grid != grids.size()) {
        fail("prompt has ", next_grid, " image runs for ", grids.size(), " images");
    }
    const int64_t max_pos = out.pos.empty() ? -1 : *std::max_element(out.pos.begin(), out.pos.end());
    out.delta = max_pos + 1 - out.n_prompt();
    return out;
}

namespace {

int64_t total_patches(std::span<const ImageGrid> grids) {
    int64_t n = 0;
    for (const ImageGrid& g : grids) {
        n += g.n_patches();
    }
    return n;
}

// The two taps of index along an axis of size values resampled from side ones, and their weights.
struct AxisTaps {
    std::array<int64_t, 2> index;
    std::array<float, 2> weight;
};

std::vector<AxisTaps> axis_taps(int64_t size, int side) {
    std::vector<AxisTaps> taps(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) {
        const float src = static_cast<float>(i) * static_cast<float>(side - 1) /
                          static_cast<float>(std::max<int64_t>(size - 1, 1));
        const float fl = std::floor(src);
        for (int k = 0; k < 2; ++k) {
            taps[i].index[k] = std::clamp<int64_t>(static_cast<int64_t>(fl) + k, 0, side - 1);
            taps[i].weight[k] = std::max(0.0f, 1.0f - std::fabs(src - fl - static_cast<float>(k)));
        }
    }
    return taps;
}

}  // namespace

PositionTaps vision_position_taps(std::span<const ImageGrid> grids, int side) {
    const auto n = static_cast<size_t>(4 * total_patches(grids));
    PositionTaps taps{std::vector<int64_t>(n), std::vector<float>(n)};
    int64_t* rows = taps.rows.data();
    float* weights = taps.weights.data();
    for (const ImageGrid& g : grids) {
        const std::vector<AxisTaps> along_h = axis_taps(g.h, side), along_w = axis_taps(g.w, side);
        for (int64_t t = 0; t < g.t; ++t) {
            for (const AxisTaps& h : along_h) {
                for (const AxisTaps& w : along_w) {
                    for (int i = 0; i < 4; ++i) {
                        rows[i] = h.index[i / 2] * side + w.index[i % 2];
                        weights[i] = h.weight[i / 2] * w.weight[i % 2];
                    }
                    rows += 4;
                    weights += 4;
                }
            }
        }
    }
    return taps;
}

}  // namespace folio
