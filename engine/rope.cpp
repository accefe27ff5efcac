#include "rope.h"

#include <algorithm>
#include <cmath>

#include "error.h"
#include "image-preprocess.h"

namespace folio {

MropePositions compute_mrope_positions(std::span<const uint8_t> is_image, std::span<const ImageGrid> grids,
                                       int spatial_merge_size) {
    MropePositions out;
    out.pos.reserve(is_image.size());
    int64_t current = 0;
    size_t next_grid = 0;
    size_t i = 0;
    while (i < is_image.size()) {
        if (!is_image[i]) {
            out.pos.push_back({current, current, current});
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
            if (i + k >= is_image.size() || !is_image[i + k]) {
                fail("image ", next_grid - 1, " needs ", n_run, " placeholder tokens, the prompt has ", k);
            }
        }
        for (int64_t t = 0; t < g.t; ++t) {
            for (int64_t y = 0; y < gh; ++y) {
                for (int64_t x = 0; x < gw; ++x) {
                    out.pos.push_back({current + t, current + y, current + x});
                }
            }
        }
        current += std::max(gh, gw);
        i += static_cast<size_t>(n_run);
    }
    if (next_grid != grids.size()) {
        fail("prompt has ", next_grid, " image runs for ", grids.size(), " images");
    }
    int64_t max_pos = -1;
    for (const auto& p : out.pos) {
        max_pos = std::max({max_pos, p[0], p[1], p[2]});
    }
    out.delta = max_pos + 1 - static_cast<int64_t>(out.pos.size());
    return out;
}

std::vector<float> rope_inverse_frequencies(int dim, float theta) {
    std::vector<float> inv(static_cast<size_t>(dim / 2));
    for (int i = 0; i < dim / 2; ++i) {
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
        inv[i] = 1.0f / std::pow(theta, exponent);
    }
    return inv;
}

RopeTables vision_axis_rope_tables(int64_t n_positions, int head_dim, float theta) {
    if (head_dim % 4 != 0) {
        fail("vision head_dim ", head_dim, " is not a multiple of 4");
    }
    const std::vector<float> inv = rope_inverse_frequencies(head_dim / 2, theta);  // head_dim / 4 values
    RopeTables tables;
    for (int64_t k = 0; k < n_positions; ++k) {
        for (const float f : inv) {
            const float angle = static_cast<float>(k) * f;
            tables.cos.push_back(std::cos(angle));
            tables.sin.push_back(std::sin(angle));
        }
    }
    return tables;
}

std::vector<int64_t> vision_rope_rows(std::span<const ImageGrid> grids) {
    std::vector<int64_t> rows;
    for (const ImageGrid& g : grids) {
        for (int64_t t = 0; t < g.t; ++t) {
            for (int64_t y = 0; y < g.h; ++y) {
                for (int64_t x = 0; x < g.w; ++x) {
                    rows.insert(rows.end(), {y, x, y, x});
                }
            }
        }
    }
    return rows;
}

PositionTaps vision_position_taps(std::span<const ImageGrid> grids, int side) {
    PositionTaps taps;
    auto axis = [side](int64_t index, int64_t size, int64_t out_taps[2], float out_w[2]) {
        const float src = static_cast<float>(index) * static_cast<float>(side - 1) /
                          static_cast<float>(std::max<int64_t>(size - 1, 1));
        const float fl = std::floor(src);
        for (int k = 0; k < 2; ++k) {
            out_taps[k] = std::clamp<int64_t>(static_cast<int64_t>(fl) + k, 0, side - 1);
            out_w[k] = std::max(0.0f, 1.0f - std::fabs(src - fl - static_cast<float>(k)));
        }
    };
    for (const ImageGrid& g : grids) {
        for (int64_t t = 0; t < g.t; ++t) {
            for (int64_t y = 0; y < g.h; ++y) {
                for (int64_t x = 0; x < g.w; ++x) {
                    int64_t ht[2], wt[2];
                    float hw[2], ww[2];
                    axis(y, g.h, ht, hw);
                    axis(x, g.w, wt, ww);
                    taps.rows.push_back({ht[0] * side + wt[0], ht[0] * side + wt[1], ht[1] * side + wt[0],
                                         ht[1] * side + wt[1]});
                    taps.weights.push_back({hw[0] * ww[0], hw[0] * ww[1], hw[1] * ww[0], hw[1] * ww[1]});
                }
            }
        }
    }
    return taps;
}

}  // namespace folio
