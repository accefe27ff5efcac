#include "engine/backend/backend-vision-checks.h"

#include <algorithm>

#include "engine/common/error.h"

namespace folio {

namespace {

void check_rank(const Tensor& t, size_t rank, const char* op, const char* what) {
    if (t.shape.size() != rank || t.empty() || !t.fits_buffer()) {
        fail(op, ": ", what, " of shape ", shape_string(t.shape), ", expected ", rank,
             " dimensions and a buffer holding them");
    }
}

void check_pair(const std::array<int64_t, 2>& v, int64_t min, const char* op, const char* what) {
    if (v[0] < min || v[1] < min) {
        fail(op, ": ", what, " (", v[0], ", ", v[1], ") below ", min);
    }
}

}  // namespace

void check_f32(const Tensor& t, const char* op, const char* what) {
    if (t.dtype != ScalarType::F32) {
        fail(op, ": ", what, " of ", dtype_name(t.dtype), " elements; float32 only");
    }
}

std::vector<int64_t> check_conv2d(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dParams& p) {
    const char* op = "conv2d";
    check_rank(x, 4, op, "x");
    check_rank(w, 4, op, "w");
    check_f32(x, op, "x");
    check_f32(w, op, "w");
    check_pair(p.stride, 1, op, "stride");
    check_pair(p.dilation, 1, op, "dilation");
    check_pair(p.padding, 0, op, "padding");
    const int64_t c_in = x.shape[1], c_out = w.shape[0];
    if (p.groups < 1 || c_in % p.groups != 0 || c_out % p.groups != 0 || w.shape[1] * p.groups != c_in) {
        fail(op, ": x ", shape_string(x.shape), " and w ", shape_string(w.shape), " in ", p.groups,
             " groups; w needs [c_out, c_in / groups, kh, kw] with both channel counts multiples of groups");
    }
    if (b != nullptr) {
        check_rank(*b, 1, op, "b");
        check_f32(*b, op, "b");
        if (b->shape[0] != c_out) {
            fail(op, ": bias ", shape_string(b->shape), " for ", c_out, " output channels");
        }
    }
    const int64_t h_out = conv_output_size(x.shape[2], w.shape[2], p.stride[0], p.padding[0], p.dilation[0]);
    const int64_t w_out = conv_output_size(x.shape[3], w.shape[3], p.stride[1], p.padding[1], p.dilation[1]);
    if (h_out < 1 || w_out < 1 || w.shape[2] < 1 || w.shape[3] < 1) {
        fail(op, ": kernel ", shape_string(w.shape), " does not fit x ", shape_string(x.shape),
             " with its padding and dilation");
    }
    return {x.shape[0], c_out, h_out, w_out};
}

std::vector<int64_t> check_pool2d(const Tensor& x, const Pool2dParams& p) {
    const char* op = "pool2d";
    check_rank(x, 4, op, "x");
    check_f32(x, op, "x");
    check_pair(p.kernel, 1, op, "kernel");
    check_pair(p.stride, 1, op, "stride");
    check_pair(p.padding, 0, op, "padding");
    if (2 * p.padding[0] > p.kernel[0] || 2 * p.padding[1] > p.kernel[1]) {
        fail(op, ": padding (", p.padding[0], ", ", p.padding[1], ") above half the kernel (", p.kernel[0],
             ", ", p.kernel[1], ")");
    }
    const int64_t h_out = pool_output_size(x.shape[2], p.kernel[0], p.stride[0], p.padding[0], p.ceil_mode);
    const int64_t w_out = pool_output_size(x.shape[3], p.kernel[1], p.stride[1], p.padding[1], p.ceil_mode);
    if (h_out < 1 || w_out < 1) {
        fail(op, ": kernel (", p.kernel[0], ", ", p.kernel[1], ") does not fit x ", shape_string(x.shape));
    }
    return {x.shape[0], x.shape[1], h_out, w_out};
}

std::vector<int64_t> check_pad2d(const Tensor& x, const std::array<int64_t, 4>& pads) {
    check_rank(x, 4, "pad2d", "x");
    check_f32(x, "pad2d", "x");
    if (*std::min_element(pads.begin(), pads.end()) < 0) {
        fail("pad2d: negative padding (", pads[0], ", ", pads[1], ", ", pads[2], ", ", pads[3], ")");
    }
    return {x.shape[0], x.shape[1], x.shape[2] + pads[0] + pads[1], x.shape[3] + pads[2] + pads[3]};
}

std::vector<int64_t> check_interpolate2d(const Tensor& x, int64_t out_h, int64_t out_w) {
    check_rank(x, 4, "interpolate2d", "x");
    check_f32(x, "interpolate2d", "x");
    if (out_h < 1 || out_w < 1 || x.shape[2] < 1 || x.shape[3] < 1) {
        fail("interpolate2d: x ", shape_string(x.shape), " to ", out_h, " x ", out_w);
    }
    return {x.shape[0], x.shape[1], out_h, out_w};
}

void check_multiply(const Tensor& x, const Tensor& y) {
    check_f32(x, "multiply", "x");
    check_f32(y, "multiply", "y");
    if (x.shape != y.shape || !x.fits_buffer() || !y.fits_buffer()) {
        fail("multiply: x ", shape_string(x.shape), " and y ", shape_string(y.shape), " differ");
    }
}

void check_softmax(const Tensor& x) {
    check_f32(x, "softmax", "x");
    if (x.shape.empty() || x.shape.back() < 1 || !x.fits_buffer()) {
        fail("softmax: x ", shape_string(x.shape), " has no last dimension to normalize");
    }
}

std::vector<int64_t> check_batched_products(const Tensor& a, const Tensor& b) {
    check_f32(a, "batched_products", "a");
    check_f32(b, "batched_products", "b");
    if (a.shape.size() != 3 || b.shape.size() != 3 || a.shape[0] != b.shape[0] || a.shape[2] != b.shape[2] ||
        !a.fits_buffer() || !b.fits_buffer()) {
        fail("batched_products: a ", shape_string(a.shape), " and b ", shape_string(b.shape),
             " are not [g, m, k] and [g, n, k]");
    }
    return {a.shape[0], a.shape[1], b.shape[1]};
}

std::vector<int64_t> check_permute(const Tensor& x, std::span<const int> axes) {
    const auto rank = static_cast<int>(x.shape.size());
    if (x.dtype == ScalarType::BF16 || !x.fits_buffer()) {
        fail("permute: x ", shape_string(x.shape), " of ", dtype_name(x.dtype), "; float32 or int32 only");
    }
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    bool valid = static_cast<int>(axes.size()) == rank && rank <= kMaxPermuteDims;
    std::vector<int64_t> shape;
    for (size_t i = 0; valid && i < axes.size(); ++i) {
        valid = axes[i] >= 0 && axes[i] < rank && !seen[static_cast<size_t>(axes[i])];
        if (valid) {
            seen[static_cast<size_t>(axes[i])] = true;
            shape.push_back(x.shape[static_cast<size_t>(axes[i])]);
        }
    }
    if (!valid) {
        std::vector<int64_t> given(axes.begin(), axes.end());
        fail("permute: axes ", shape_string(given), " are no permutation of the ", rank, " dimensions of ",
             shape_string(x.shape), " (at most ", kMaxPermuteDims, ")");
    }
    return shape;
}

std::vector<int64_t> check_concat(std::span<const Tensor> parts, int& axis) {
    if (parts.empty()) {
        fail("concat: no parts");
    }
    const Tensor& first = parts.front();
    const auto rank = static_cast<int>(first.shape.size());
    if (axis < 0) {
        axis += rank;
    }
    if (axis < 0 || axis >= rank) {
        fail("concat: axis ", axis, " outside the ", rank, " dimensions of ", shape_string(first.shape));
    }
    std::vector<int64_t> shape = first.shape;
    shape[static_cast<size_t>(axis)] = 0;
    for (const Tensor& part : parts) {
        bool same = part.shape.size() == first.shape.size() && part.dtype == first.dtype &&
                    part.dtype != ScalarType::BF16 && part.fits_buffer();
        for (int d = 0; same && d < rank; ++d) {
            same = d == axis || part.shape[static_cast<size_t>(d)] == first.shape[static_cast<size_t>(d)];
        }
        if (!same) {
            fail("concat: part ", shape_string(part.shape), " of ", dtype_name(part.dtype), " beside ",
                 shape_string(first.shape), " of ", dtype_name(first.dtype), " along axis ", axis);
        }
        shape[static_cast<size_t>(axis)] += part.shape[static_cast<size_t>(axis)];
    }
    return shape;
}

std::vector<int64_t> check_grid_sample(const Tensor& x, const Tensor& grid) {
    check_rank(x, 4, "grid_sample", "x");
    check_rank(grid, 4, "grid_sample", "grid");
    check_f32(x, "grid_sample", "x");
    check_f32(grid, "grid_sample", "grid");
    if (grid.shape[0] != x.shape[0] || grid.shape[3] != 2) {
        fail("grid_sample: grid ", shape_string(grid.shape), " for x ", shape_string(x.shape),
             "; expected [n, h_out, w_out, 2]");
    }
    return {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]};
}

std::vector<int64_t> check_multi_scale_deformable_attention(const Tensor& value,
                                                            std::span<const FeatureLevel> levels,
                                                            const Tensor& sampling_locations,
                                                            const Tensor& attention_weights) {
    const char* op = "multi_scale_deformable_attention";
    check_rank(value, 4, op, "value");
    check_rank(sampling_locations, 6, op, "sampling_locations");
    check_rank(attention_weights, 5, op, "attention_weights");
    check_f32(value, op, "value");
    check_f32(sampling_locations, op, "sampling_locations");
    check_f32(attention_weights, op, "attention_weights");
    const int64_t n = value.shape[0], s = value.shape[1], n_head = value.shape[2];
    const std::vector<int64_t>& loc = sampling_locations.shape;
    const std::vector<int64_t> weights_shape(loc.begin(), loc.end() - 1);
    if (loc[0] != n || loc[2] != n_head || loc[3] != static_cast<int64_t>(levels.size()) || loc[5] != 2 ||
        attention_weights.shape != weights_shape) {
        fail(op, ": value ", shape_string(value.shape), ", ", levels.size(), " levels, sampling_locations ",
             shape_string(loc), ", attention_weights ", shape_string(attention_weights.shape),
             "; expected [n, q, n_head, n_levels, n_points, 2] and [n, q, n_head, n_levels, n_points]");
    }
    for (size_t l = 0; l < levels.size(); ++l) {
        const FeatureLevel& lv = levels[l];
        if (lv.height < 1 || lv.width < 1 || lv.start < 0 || lv.start + lv.height * lv.width > s) {
            fail(op, ": level ", l, " of ", lv.height, " x ", lv.width, " at row ", lv.start, " outside the ",
                 s, " rows of value");
        }
    }
    return {n, loc[1], n_head * value.shape[3]};
}

std::vector<int64_t> check_top_k(const Tensor& x, int64_t k) {
    check_f32(x, "top_k", "x");
    if (x.shape.empty() || k < 1 || k > x.shape.back() || !x.fits_buffer()) {
        fail("top_k: k ", k, " of the last dimension of x ", shape_string(x.shape));
    }
    std::vector<int64_t> shape = x.shape;
    shape.back() = k;
    return shape;
}

std::vector<int64_t> check_mask_boxes(const Tensor& x) {
    check_f32(x, "mask_boxes", "x");
    if (x.shape.size() < 2 || !x.fits_buffer()) {
        fail("mask_boxes: x ", shape_string(x.shape), " is not a stack of maps");
    }
    std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 2);
    shape.push_back(4);
    return shape;
}

std::vector<int64_t> check_box_sample_locations(const Tensor& boxes, const Tensor& offsets,
                                                int64_t n_points) {
    check_f32(boxes, "box_sample_locations", "boxes");
    check_f32(offsets, "box_sample_locations", "offsets");
    if (boxes.shape.size() != 2 || boxes.shape[1] != 4 || offsets.shape.size() != 3 ||
        offsets.shape[0] != boxes.shape[0] || offsets.shape[2] != 2 || n_points < 1 || !boxes.fits_buffer() ||
        !offsets.fits_buffer()) {
        fail("box_sample_locations: boxes ", shape_string(boxes.shape), ", offsets ",
             shape_string(offsets.shape), " and ", n_points,
             " points are not [r, 4], [r, s, 2] and at least one");
    }
    return offsets.shape;
}

void check_refine_boxes(const Tensor& boxes, const Tensor& delta) {
    check_f32(boxes, "refine_boxes", "boxes");
    check_f32(delta, "refine_boxes", "delta");
    if (boxes.shape.size() != 2 || boxes.shape[1] != 4 || delta.shape != boxes.shape ||
        !boxes.fits_buffer() || !delta.fits_buffer()) {
        fail("refine_boxes: boxes ", shape_string(boxes.shape), " and delta ", shape_string(delta.shape),
             " are not both [r, 4]");
    }
}

std::vector<int64_t> check_pair_relations(const Tensor& boxes) {
    check_f32(boxes, "pair_relations", "boxes");
    if (boxes.shape.size() != 3 || boxes.shape[2] != 4 || !boxes.fits_buffer()) {
        fail("pair_relations: boxes ", shape_string(boxes.shape), " are not [n, t, 4]");
    }
    return {boxes.shape[0], boxes.shape[1], boxes.shape[1], 4};
}

std::vector<int64_t> check_sigmoid_bits(const Tensor& x) {
    check_f32(x, "sigmoid_bits", "x");
    if (x.shape.empty() || !x.fits_buffer()) {
        fail("sigmoid_bits: x ", shape_string(x.shape), " has no rows");
    }
    std::vector<int64_t> shape = x.shape;
    shape.back() = (shape.back() + 31) / 32;
    return shape;
}

std::vector<int64_t> check_sinusoid(const Tensor& x, std::span<const float> freqs) {
    check_f32(x, "sinusoid", "x");
    if (x.shape.size() != 1 || !x.fits_buffer()) {
        fail("sinusoid: x ", shape_string(x.shape), " must be a vector");
    }
    if (freqs.empty() || static_cast<int64_t>(freqs.size()) > kMaxSinusoidFreqs) {
        fail("sinusoid: ", freqs.size(), " frequencies, expected 1..", kMaxSinusoidFreqs);
    }
    return {x.shape[0], 2 * static_cast<int64_t>(freqs.size())};
}

}  // namespace folio
