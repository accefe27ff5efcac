// The argument checks of the vision operations every backend makes; each returns the output's shape where
// there is one and throws folio::Error naming the operation, the shapes and the value out of range.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/backend-vision.h"
#include "engine/backend/tensor.h"

namespace folio {

// x [n, c_in, h, w], w [c_out, c_in / groups, kh, kw], b [c_out] or null, float32; positive strides and
// dilations, padding >= 0, an output of at least one position.  ->  [n, c_out, h_out, w_out]
std::vector<int64_t> check_conv2d(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dParams& p);
// x [n, c, h, w] float32; padding at most half the kernel.  ->  [n, c, h_out, w_out]
std::vector<int64_t> check_pool2d(const Tensor& x, const Pool2dParams& p);
// x [n, c, h, w] float32, pads >= 0.  ->  [n, c, h + top + bottom, w + left + right]
std::vector<int64_t> check_pad2d(const Tensor& x, const std::array<int64_t, 4>& pads);
// x [n, c, h, w] float32, positive sizes.  ->  [n, c, out_h, out_w]
std::vector<int64_t> check_interpolate2d(const Tensor& x, int64_t out_h, int64_t out_w);
// A float32 tensor.
void check_f32(const Tensor& t, const char* op, const char* what);
// x and y float32 of one shape.
void check_multiply(const Tensor& x, const Tensor& y);
// At least one dimension, the last of at least one element.
void check_softmax(const Tensor& x);
// axes a permutation of x's dimensions (up to kMaxPermuteDims), x float32 or int32.  ->  the permuted shape
constexpr int kMaxPermuteDims = 6;
std::vector<int64_t> check_permute(const Tensor& x, std::span<const int> axes);
std::vector<int64_t> check_batched_products(const Tensor& a, const Tensor& b);
// At least one part, all of one dtype (float32 or int32) and rank, equal but along axis (negative: from the
// end).  ->  the joined shape; axis made non-negative
std::vector<int64_t> check_concat(std::span<const Tensor> parts, int& axis);
// x [n, c, h, w], grid [n, h_out, w_out, 2], float32.  ->  [n, c, h_out, w_out]
std::vector<int64_t> check_grid_sample(const Tensor& x, const Tensor& grid);
// value [n, s, n_head, d_head], levels inside s, sampling_locations [n, q, n_head, n_levels, n_points, 2],
// attention_weights [n, q, n_head, n_levels, n_points], float32, levels.size() == n_levels.
// ->  [n, q, n_head * d_head]
std::vector<int64_t> check_multi_scale_deformable_attention(const Tensor& value,
                                                            std::span<const FeatureLevel> levels,
                                                            const Tensor& sampling_locations,
                                                            const Tensor& attention_weights);
// x [..., d] float32 with 1 <= k <= d.  ->  [..., k]
std::vector<int64_t> check_top_k(const Tensor& x, int64_t k);
// -> the output shapes of mask_boxes and sinusoid.
std::vector<int64_t> check_mask_boxes(const Tensor& x);
std::vector<int64_t> check_sigmoid_bits(const Tensor& x);
std::vector<int64_t> check_box_sample_locations(const Tensor& boxes, const Tensor& offsets, int64_t n_points);
void check_refine_boxes(const Tensor& boxes, const Tensor& delta);
std::vector<int64_t> check_pair_relations(const Tensor& boxes);
std::vector<int64_t> check_sinusoid(const Tensor& x, std::span<const float> freqs);

}  // namespace folio
