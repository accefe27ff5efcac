#include "engine/models/vision-rope.h"

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"
#include "engine/image/image-preprocess.h"
#include "engine/runtime/rope.h"

namespace folio {

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

namespace {

int64_t total_patches(std::span<const ImageGrid> grids) {
    int64_t n = 0;
    for (const ImageGrid& g : grids) {
        n += g.n_patches();
    }
    return n;
}

}  // namespace

std::vector<int64_t> vision_rope_rows(std::span<const ImageGrid> grids, int n_copies, int64_t copy_offset) {
    const auto n_rows = static_cast<size_t>(4 * total_patches(grids));
    std::vector<int64_t> rows(n_rows * static_cast<size_t>(std::max(n_copies, 1)));
    int64_t* out = rows.data();
    for (const ImageGrid& g : grids) {
        for (int64_t t = 0; t < g.t; ++t) {
            for (int64_t y = 0; y < g.h; ++y) {
                for (int64_t x = 0; x < g.w; ++x) {
                    out[0] = y, out[1] = x, out[2] = y, out[3] = x;
                    out += 4;
                }
            }
        }
    }
    for (int c = 1; c < n_copies; ++c) {
        for (size_t i = 0; i < n_rows; ++i) {
            rows[c * n_rows + i] = rows[i] + c * copy_offset;
        }
    }
    return rows;
}

std::pair<Tensor, Tensor> VisionRope::rows(Backend& backend, std::span<const ImageGrid> grids) {
    const int64_t hd = head_dim_;
    int64_t side = 0, n = 0;
    for (const ImageGrid& g : grids) {
        side = std::max({side, g.h, g.w});
        n += g.n_patches();
    }
    if (n == 0) {
        return {backend.alloc({0, hd}), backend.alloc({0, hd})};
    }
    if (side > side_) {
        const RopeTables axis = vision_axis_rope_tables(side, static_cast<int>(hd), theta_);
        std::vector<float> both = axis.cos;
        both.insert(both.end(), axis.sin.begin(), axis.sin.end());
        axis_ = backend.upload(both, {2 * side, hd / 4});
        side_ = side;
    }
    // A patch's rows (y, x, y, x) of the cos half, then the same rows of the sin half.
    const std::vector<int64_t> rows = vision_rope_rows(grids, 2, side_);
    const Tensor tables = backend.gather_rows(axis_, rows);  // [2 * n * 4, hd / 4]
    return {tables.view(0, {n, hd}), tables.view(n * hd, {n, hd})};
}

}  // namespace folio
