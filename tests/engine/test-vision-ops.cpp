// The CPU backend's vision operations against values worked out by hand, and against plain loops written
// from the operations' definitions (a direct 7-loop convolution, pooling windows enumerated one by one).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/error.h"

using namespace folio;

namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) {
        x = dist(rng);
    }
    return v;
}

void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected, float tol) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
        EXPECT_NEAR(actual[i], expected[i], tol) << "element " << i;
    }
}

std::vector<int32_t> indices_of(Backend& be, const Tensor& t) {
    return be.read_back(t.view(0, {t.n_elements()}))->wait();
}

class VisionOps : public ::testing::Test {
protected:
    std::unique_ptr<Backend> be_ = make_cpu_backend(2);
};

// nn.Conv2d by its definition, accumulated in double.
std::vector<float> direct_conv(const std::vector<float>& x, const std::vector<int64_t>& xs,
                               const std::vector<float>& w, const std::vector<int64_t>& ws,
                               const std::vector<float>* b, const Conv2dParams& p) {
    const int64_t n = xs[0], c_in = xs[1], h = xs[2], wd = xs[3], c_out = ws[0], kh = ws[2], kw = ws[3];
    const int64_t cig = c_in / p.groups, cog = c_out / p.groups;
    const int64_t ho = (h + 2 * p.padding[0] - p.dilation[0] * (kh - 1) - 1) / p.stride[0] + 1;
    const int64_t wo = (wd + 2 * p.padding[1] - p.dilation[1] * (kw - 1) - 1) / p.stride[1] + 1;
    std::vector<float> y(static_cast<size_t>(n * c_out * ho * wo));
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t o = 0; o < c_out; ++o) {
            for (int64_t oy = 0; oy < ho; ++oy) {
                for (int64_t ox = 0; ox < wo; ++ox) {
                    double s = b ? (*b)[o] : 0.0;
                    for (int64_t ci = 0; ci < cig; ++ci) {
                        for (int64_t ky = 0; ky < kh; ++ky) {
                            for (int64_t kx = 0; kx < kw; ++kx) {
                                const int64_t iy = oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
                                const int64_t ix = ox * p.stride[1] - p.padding[1] + kx * p.dilation[1];
                                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) {
                                    continue;
                                }
                                const int64_t c = o / cog * cig + ci;
                                s += static_cast<double>(x[((i * c_in + c) * h + iy) * wd + ix]) *
                                     w[((o * cig + ci) * kh + ky) * kw + kx];
                            }
                        }
                    }
                    y[((i * c_out + o) * ho + oy) * wo + ox] = static_cast<float>(s);
                }
            }
        }
    }
    return y;
}

}  // namespace

TEST_F(VisionOps, TensorSizesOfNchw) {
    const Tensor t = be_->alloc({2, 3, 4, 5});
    const Nchw s = t.nchw();
    EXPECT_EQ(s.n, 2);
    EXPECT_EQ(s.c, 3);
    EXPECT_EQ(s.h, 4);
    EXPECT_EQ(s.w, 5);
    EXPECT_EQ(t.dim(-1), 5);
    EXPECT_EQ(t.dim(1), 3);
    EXPECT_THROW(t.dim(4), Error);
    EXPECT_THROW(be_->alloc({2, 3}).nchw(), Error);
}

TEST_F(VisionOps, Conv3x3ByHand) {
    // A box filter over 1..9 with padding 1: each output is the sum of the 3x3 neighbourhood inside.
    const Tensor x = be_->upload(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
    const Tensor w = be_->upload(std::vector<float>(9, 1.0f), {1, 1, 3, 3});
    Conv2dParams p;
    p.padding = {1, 1};
    EXPECT_EQ(be_->download(be_->conv2d(x, w, nullptr, p)),
              (std::vector<float>{12, 21, 16, 27, 45, 33, 24, 39, 28}));
    // Bias -30, then ReLU.
    const Tensor b = be_->upload(std::vector<float>{-30}, {1});
    p.activation = Activation::Relu;
    EXPECT_EQ(be_->download(be_->conv2d(x, w, &b, p)), (std::vector<float>{0, 0, 0, 0, 15, 3, 0, 9, 0}));
    // Stride 2: the corners of the padded grid's every other position.
    p.stride = {2, 2};
    p.activation = Activation::None;
    EXPECT_EQ(be_->download(be_->conv2d(x, w, nullptr, p)), (std::vector<float>{12, 16, 24, 28}));
    // A 2x2 kernel at dilation 2 over 1..9 sums the four corners.
    Conv2dParams dilated;
    dilated.dilation = {2, 2};
    const Tensor w2 = be_->upload(std::vector<float>(4, 1.0f), {1, 1, 2, 2});
    EXPECT_EQ(be_->download(be_->conv2d(x, w2, nullptr, dilated)), (std::vector<float>{1 + 3 + 7 + 9}));
}

TEST_F(VisionOps, ConvMatchesTheDefinition) {
    struct Case {
        std::vector<int64_t> x, w;
        Conv2dParams p;
        bool bias;
    };
    const std::vector<Case> cases = {
        {{2, 3, 9, 7}, {5, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1, Activation::None}, true},
        {{1, 4, 8, 8}, {6, 2, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, 2, Activation::None}, false},    // groups
        {{1, 6, 9, 10}, {6, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, 6, Activation::None}, false},   // depthwise
        {{1, 3, 11, 9}, {4, 3, 2, 2}, {{1, 1}, {0, 0}, {1, 1}, 1, Activation::None}, true},    // even kernel
        {{1, 2, 10, 12}, {3, 2, 3, 5}, {{1, 2}, {2, 1}, {2, 1}, 1, Activation::None}, true},   // dilation
        {{3, 20, 5, 5}, {17, 20, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 1, Activation::None}, true},  // 1x1
    };
    uint32_t seed = 10;
    for (const Case& c : cases) {
        const std::vector<float> xv = random_values(c.x[0] * c.x[1] * c.x[2] * c.x[3], seed++);
        const std::vector<float> wv = random_values(c.w[0] * c.w[1] * c.w[2] * c.w[3], seed++);
        const std::vector<float> bv = random_values(static_cast<size_t>(c.w[0]), seed++);
        const Tensor bt = be_->upload(bv, {c.w[0]});
        const Tensor y = be_->conv2d(be_->upload(xv, c.x), be_->upload(wv, c.w), c.bias ? &bt : nullptr, c.p);
        expect_near_all(be_->download(y), direct_conv(xv, c.x, wv, c.w, c.bias ? &bv : nullptr, c.p), 1e-4f);
    }
}

TEST_F(VisionOps, ConvActivations) {
    const Tensor x = be_->upload(std::vector<float>{-1, 0, 1, 2}, {1, 4, 1, 1});
    const Tensor w = be_->upload(std::vector<float>{1, 1, 1, 1}, {4, 1, 1, 1});
    Conv2dParams p;
    p.groups = 4;
    const float silu1 = 1.0f / (1.0f + std::exp(-1.0f)), silu_m1 = -1.0f / (1.0f + std::exp(1.0f));
    for (const auto& [act, expected] : std::vector<std::pair<Activation, std::vector<float>>>{
             {Activation::None, {-1, 0, 1, 2}},
             {Activation::Relu, {0, 0, 1, 2}},
             {Activation::Silu, {silu_m1, 0, silu1, 2.0f / (1.0f + std::exp(-2.0f))}},
             {Activation::Gelu, {-0.15865525f, 0, 0.84134475f, 1.9544997f}},
             {Activation::Sigmoid, {1.0f - silu1, 0.5f, silu1, 1.0f / (1.0f + std::exp(-2.0f))}}}) {
        p.activation = act;
        expect_near_all(be_->download(be_->conv2d(x, w, nullptr, p)), expected, 1e-6f);
    }
}

TEST_F(VisionOps, FoldBatchNorm) {
    // scale = 3 / sqrt(3 + 1) = 1.5: weights 2 and 4 become 3 and 6, bias (0 - 0.5) * 1.5 + 1 = 0.25.
    std::vector<float> w{2, 4, 1, 1}, b{0, 5};
    fold_batch_norm(w, b, std::vector<float>{3, 2}, std::vector<float>{1, -1}, std::vector<float>{0.5f, 1},
                    std::vector<float>{3, 0}, 1.0f);
    EXPECT_EQ(w, (std::vector<float>{3, 6, 2, 2}));
    EXPECT_EQ(b, (std::vector<float>{0.25f, 7}));
    std::vector<float> bad_b{0};
    EXPECT_THROW(fold_batch_norm(w, bad_b, std::vector<float>{1, 1}, std::vector<float>{1, 1},
                                 std::vector<float>{1, 1}, std::vector<float>{1, 1}, 1e-5f),
                 Error);
}

TEST_F(VisionOps, PoolingByHand) {
    const Tensor x = be_->upload(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
    // HGNetV2's stem pool: kernel 2, stride 1, ceil mode.
    Pool2dParams p{PoolMode::Max, {2, 2}, {1, 1}, {0, 0}, true, true};
    EXPECT_EQ(be_->download(be_->pool2d(x, p)), (std::vector<float>{5, 6, 8, 9}));
    // Max, kernel 3, stride 2, padding 1: padding never wins.
    const Tensor neg = be_->upload(std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8, -9}, {1, 1, 3, 3});
    p = {PoolMode::Max, {3, 3}, {2, 2}, {1, 1}, false, true};
    EXPECT_EQ(be_->download(be_->pool2d(neg, p)), (std::vector<float>{-1, -2, -4, -5}));
    // Average over ones with padding 1: a corner holds 4 of 9 with the padding counted, 4 of 4 without.
    const Tensor ones = be_->upload(std::vector<float>(9, 1.0f), {1, 1, 3, 3});
    p = {PoolMode::Average, {3, 3}, {1, 1}, {1, 1}, false, true};
    expect_near_all(be_->download(be_->pool2d(ones, p)),
                    {4.0f / 9, 6.0f / 9, 4.0f / 9, 6.0f / 9, 1, 6.0f / 9, 4.0f / 9, 6.0f / 9, 4.0f / 9},
                    1e-7f);
    p.count_include_pad = false;
    EXPECT_EQ(be_->download(be_->pool2d(ones, p)), std::vector<float>(9, 1.0f));
    // Average, kernel 2, stride 2, ceil mode: the windows past the input's edge shrink.
    p = {PoolMode::Average, {2, 2}, {2, 2}, {0, 0}, true, true};
    EXPECT_EQ(be_->download(be_->pool2d(x, p)), (std::vector<float>{3, 4.5f, 7.5f, 9}));
    EXPECT_THROW(be_->pool2d(x, {PoolMode::Max, {2, 2}, {1, 1}, {2, 2}, false, true}), Error);
}

TEST_F(VisionOps, SoftmaxSigmoidAndGatedProduct) {
    Tensor x = be_->upload(std::vector<float>{1, 2, 3, 0, 0, 0, 1000, 1000, 0}, {3, 3});
    be_->softmax(x);
    const float e = std::exp(1.0f), s = 1 + e + e * e;
    expect_near_all(be_->download(x), {1 / s, e / s, e * e / s, 1.0f / 3, 1.0f / 3, 1.0f / 3, 0.5f, 0.5f, 0},
                    1e-6f);
    Tensor y = be_->upload(std::vector<float>{0, 2, -2}, {3});
    const Tensor g = be_->multiply(be_->upload(std::vector<float>{4, 1, 1}, {3}), y, Activation::Sigmoid);
    expect_near_all(be_->download(g), {2, 1 / (1 + std::exp(-2.0f)), 1 / (1 + std::exp(2.0f))}, 1e-7f);
    be_->apply_activation(y, Activation::Relu);
    EXPECT_EQ(be_->download(y), (std::vector<float>{0, 2, 0}));
    EXPECT_THROW(be_->multiply(y, x, Activation::None), Error);
}

TEST_F(VisionOps, PermuteConcatAndPad) {
    std::vector<float> xv(24);
    for (size_t i = 0; i < xv.size(); ++i) {
        xv[i] = static_cast<float>(i);
    }
    const Tensor x = be_->upload(xv, {2, 3, 4});
    const std::vector<int> axes{2, 0, 1};
    const Tensor y = be_->permute(x, axes);
    ASSERT_EQ(y.shape, (std::vector<int64_t>{4, 2, 3}));
    const std::vector<float> yv = be_->download(y);
    for (int64_t i = 0; i < 4; ++i) {
        for (int64_t j = 0; j < 2; ++j) {
            for (int64_t k = 0; k < 3; ++k) {
                EXPECT_EQ(yv[(i * 2 + j) * 3 + k], xv[(j * 3 + k) * 4 + i]);
            }
        }
    }
    const Tensor ids = be_->upload_i32(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
    const Tensor ids_t = be_->permute(ids, std::vector<int>{1, 0});
    EXPECT_EQ(ids_t.dtype, ScalarType::I32);
    EXPECT_EQ(indices_of(*be_, ids_t), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
    EXPECT_THROW(be_->permute(x, std::vector<int>{0, 0, 1}), Error);

    const Tensor a = be_->upload(std::vector<float>{1, 2, 3, 4}, {2, 1, 2});
    const Tensor b = be_->upload(std::vector<float>{5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 2});
    const Tensor ab = be_->concat(std::vector<Tensor>{a, b}, 1);
    ASSERT_EQ(ab.shape, (std::vector<int64_t>{2, 3, 2}));
    EXPECT_EQ(be_->download(ab), (std::vector<float>{1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12}));
    const Tensor last = be_->concat(std::vector<Tensor>{a, a}, -1);
    EXPECT_EQ(be_->download(last), (std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4}));
    EXPECT_THROW(be_->concat(std::vector<Tensor>{a, b}, 2), Error);

    const Tensor padded = be_->pad2d(be_->upload(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2}), {0, 1, 1, 0});
    ASSERT_EQ(padded.shape, (std::vector<int64_t>{1, 1, 3, 3}));
    EXPECT_EQ(be_->download(padded), (std::vector<float>{0, 1, 2, 0, 3, 4, 0, 0, 0}));
}

TEST_F(VisionOps, InterpolateByHand) {
    const Tensor x = be_->upload(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2});
    EXPECT_EQ(be_->download(be_->interpolate2d(x, 4, 4, InterpolateMode::Nearest)),
              (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
    // Bilinear 2x of a row 0, 4: sources at -0.25 (clamped to 0), 0.25, 0.75, 1.25 (its second tap clamped).
    const Tensor row = be_->upload(std::vector<float>{0, 4}, {1, 1, 1, 2});
    EXPECT_EQ(be_->download(be_->interpolate2d(row, 1, 4, InterpolateMode::Bilinear)),
              (std::vector<float>{0, 1, 3, 4}));
    // Downsampling 4 -> 2 by nearest takes columns 0 and 2.
    const Tensor wide = be_->upload(std::vector<float>{5, 6, 7, 8}, {1, 1, 1, 4});
    EXPECT_EQ(be_->download(be_->interpolate2d(wide, 1, 2, InterpolateMode::Nearest)),
              (std::vector<float>{5, 7}));
}

TEST_F(VisionOps, GridSampleAtKnownPoints) {
    const Tensor x = be_->upload(std::vector<float>{1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 2, 2});
    // (-1, -1): the outer corner, a quarter of pixel (0, 0); (0, 0): the mean; (-0.5, -0.5): pixel (0, 0)'s
    // centre; (1, 1): a quarter of pixel (1, 1); (0.5, -0.5): pixel (0, 1); (3, 3): outside.
    const Tensor grid =
        be_->upload(std::vector<float>{-1, -1, 0, 0, -0.5f, -0.5f, 1, 1, 0.5f, -0.5f, 3, 3}, {1, 2, 3, 2});
    const Tensor y = be_->grid_sample(x, grid);
    ASSERT_EQ(y.shape, (std::vector<int64_t>{1, 2, 2, 3}));
    expect_near_all(be_->download(y), {0.25f, 2.5f, 1, 1, 2, 0, 2.5f, 25, 10, 10, 20, 0}, 1e-6f);
}

TEST_F(VisionOps, DeformableAttentionByHand) {
    // Two levels of one head with two channels: level 0 is 2x2 at rows 0..3, level 1 is 1x2 at rows 4..5.
    const Tensor value =
        be_->upload(std::vector<float>{1, -1, 2, -2, 3, -3, 4, -4, 100, 0, 200, 0}, {1, 6, 1, 2});
    const std::vector<FeatureLevel> levels{{2, 2, 0}, {1, 2, 4}};
    // Query 0: level 0 at pixel (1, 0)'s centre with weight 2, a point outside with weight 5; level 1 halfway
    // between its two pixels with weight 0.5.
    const Tensor loc =
        be_->upload(std::vector<float>{0.25f, 0.75f, 2, 2, 0.5f, 0.5f, 0.5f, 0.5f}, {1, 1, 1, 2, 2, 2});
    const Tensor weights = be_->upload(std::vector<float>{2, 5, 0.5f, 0}, {1, 1, 1, 2, 2});
    const Tensor out = be_->multi_scale_deformable_attention(value, levels, loc, weights);
    ASSERT_EQ(out.shape, (std::vector<int64_t>{1, 1, 2}));
    expect_near_all(be_->download(out), {2 * 3 + 0.5f * 150, -6}, 1e-5f);
    EXPECT_THROW(be_->multi_scale_deformable_attention(value, std::vector<FeatureLevel>{{2, 2, 0}, {2, 2, 4}},
                                                       loc, weights),
                 Error);
}

TEST_F(VisionOps, DeformableAttentionIsWeightedGridSamples) {
    // One image, 2 heads of 3 channels, levels 3x4 and 2x2, 2 points: each head's output is the weighted sum
    // of grid_sample over its channels of each level at 2 loc - 1.
    const int64_t n_head = 2, d_head = 3, n_points = 2, n_q = 3;
    const std::vector<FeatureLevel> levels{{3, 4, 0}, {2, 2, 12}};
    const std::vector<float> value = random_values(16 * n_head * d_head, 1);
    std::vector<float> loc = random_values(n_q * n_head * 2 * n_points * 2, 2);
    for (float& v : loc) {
        v = 0.5f + 0.4f * v;
    }
    const std::vector<float> weights = random_values(n_q * n_head * 2 * n_points, 3);
    const Tensor out =
        be_->multi_scale_deformable_attention(be_->upload(value, {1, 16, n_head, d_head}), levels,
                                              be_->upload(loc, {1, n_q, n_head, 2, n_points, 2}),
                                              be_->upload(weights, {1, n_q, n_head, 2, n_points}));
    const std::vector<float> got = be_->download(out);
    for (int64_t h = 0; h < n_head; ++h) {
        std::vector<double> expected(static_cast<size_t>(n_q * d_head), 0.0);
        for (int64_t l = 0; l < 2; ++l) {
            const FeatureLevel& lv = levels[static_cast<size_t>(l)];
            std::vector<float> plane(static_cast<size_t>(d_head * lv.height * lv.width));  // [d_head, h, w]
            for (int64_t d = 0; d < d_head; ++d) {
                for (int64_t r = 0; r < lv.height * lv.width; ++r) {
                    plane[d * lv.height * lv.width + r] = value[((lv.start + r) * n_head + h) * d_head + d];
                }
            }
            std::vector<float> grid;  // [1, n_q, n_points, 2]
            for (int64_t q = 0; q < n_q; ++q) {
                for (int64_t pt = 0; pt < n_points; ++pt) {
                    for (int64_t c = 0; c < 2; ++c) {
                        grid.push_back(2 * loc[(((q * n_head + h) * 2 + l) * n_points + pt) * 2 + c] - 1);
                    }
                }
            }
            const std::vector<float> sampled =
                be_->download(be_->grid_sample(be_->upload(plane, {1, d_head, lv.height, lv.width}),
                                               be_->upload(grid, {1, n_q, n_points, 2})));
            for (int64_t q = 0; q < n_q; ++q) {
                for (int64_t pt = 0; pt < n_points; ++pt) {
                    const float a = weights[((q * n_head + h) * 2 + l) * n_points + pt];
                    for (int64_t d = 0; d < d_head; ++d) {
                        expected[q * d_head + d] += a * sampled[(d * n_q + q) * n_points + pt];
                    }
                }
            }
        }
        for (int64_t q = 0; q < n_q; ++q) {
            for (int64_t d = 0; d < d_head; ++d) {
                EXPECT_NEAR(got[(q * n_head + h) * d_head + d], expected[q * d_head + d], 1e-5);
            }
        }
    }
}

// The boxes of transformers' mask_to_box_coordinate: positive positions only, extents inclusive, normalised.
TEST_F(VisionOps, MaskBoxesAroundPositivePositions) {
    std::vector<float> maps(3 * 4 * 5, -1.0f);
    maps[1 * 5 + 2] = 0.5f;         // map 0: (x 2, y 1) ...
    maps[3 * 5 + 4] = 2.0f;         // ... to (x 4, y 3)
    maps[20 + 0] = 0.0f;            // map 1: zero is not positive; nothing is
    maps[40 + 2 * 5 + 1] = 1e-30f;  // map 2: one position
    const std::vector<float> got = be_->download(be_->mask_boxes(be_->upload(maps, {3, 4, 5})));
    const std::vector<float> expected{
        (2 / 5.f + 5 / 5.f) / 2, (1 / 4.f + 4 / 4.f) / 2, 5 / 5.f - 2 / 5.f, 4 / 4.f - 1 / 4.f, 0, 0, 0, 0,
        (1 / 5.f + 2 / 5.f) / 2, (2 / 4.f + 3 / 4.f) / 2, 2 / 5.f - 1 / 5.f, 3 / 4.f - 2 / 4.f};
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_FLOAT_EQ(got[i], expected[i]) << i;
    }
    EXPECT_THROW(be_->mask_boxes(be_->upload(std::vector<float>{1, 2}, {2})), Error);
}

TEST_F(VisionOps, BatchedProductsMultiplyEachGroupByTheOthersTranspose) {
    const int64_t g = 3, m = 4, n = 5, k = 6;
    std::vector<float> a(static_cast<size_t>(g * m * k)), b(static_cast<size_t>(g * n * k));
    for (size_t i = 0; i < a.size(); ++i) {
        a[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    }
    for (size_t i = 0; i < b.size(); ++i) {
        b[i] = static_cast<float>(static_cast<int>(i % 5) - 2) * 0.5f;
    }
    const Tensor c = be_->batched_products(be_->upload(a, {g, m, k}), be_->upload(b, {g, n, k}));
    ASSERT_EQ(c.shape, (std::vector<int64_t>{g, m, n}));
    const std::vector<float> got = be_->download(c);
    for (int64_t x = 0; x < g; ++x) {
        for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
                float want = 0.0f;
                for (int64_t e = 0; e < k; ++e) {
                    want += a[static_cast<size_t>((x * m + i) * k + e)] *
                            b[static_cast<size_t>((x * n + j) * k + e)];
                }
                EXPECT_FLOAT_EQ(got[static_cast<size_t>((x * m + i) * n + j)], want)
                    << x << " " << i << " " << j;
            }
        }
    }
    EXPECT_THROW(be_->batched_products(be_->upload(a, {g, m, k}), be_->upload(b, {g, k, n})), Error);
    EXPECT_THROW(be_->batched_products(be_->upload(a, {g * m, k}), be_->upload(b, {g * n, k})), Error);
}

TEST_F(VisionOps, BoxSampleLocationsLieAroundTheBoxes) {
    // Two boxes (cx, cy, w, h), two samples each: centre + offset / 4 points * size / 2.
    const std::vector<float> boxes{0.5f, 0.5f, 0.2f, 0.4f, 0.1f, 0.9f, 1.0f, 0.0f};
    const std::vector<float> offsets{0, 0, 4, -4, 2, 1, -8, 3};
    const std::vector<float> got = be_->download(
        be_->box_sample_locations(be_->upload(boxes, {2, 4}), be_->upload(offsets, {2, 2, 2}), 4));
    const std::vector<float> expected{0.5f, 0.5f, 0.6f, 0.3f, 0.35f, 0.9f, -0.9f, 0.9f};
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], expected[i], 1e-6f) << i;
    }
    EXPECT_THROW(be_->box_sample_locations(be_->upload(boxes, {2, 4}), be_->upload(offsets, {2, 4}), 4),
                 Error);
    EXPECT_THROW(be_->box_sample_locations(be_->upload(boxes, {2, 4}), be_->upload(offsets, {2, 2, 2}), 0),
                 Error);
}

TEST_F(VisionOps, RefineBoxesAddsInLogOdds) {
    // sigmoid(delta + log(x / (1 - x))); x outside 0..1 is clamped, and the odds to 1e-5 at the ends.
    const std::vector<float> boxes{0.5f, 0.25f, 0.9f, 0.5f, 0.0f, 1.0f, -3.0f, 2.0f};
    const std::vector<float> delta{0.0f, std::log(3.0f), -std::log(9.0f), 2.0f, 0.0f, 0.0f, 1.0f, -1.0f};
    Tensor t = be_->upload(boxes, {2, 4});
    be_->refine_boxes(t, be_->upload(delta, {2, 4}));
    const std::vector<float> got = be_->download(t);
    auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    const double end = std::log(1e-5);
    const std::vector<double> expected{
        0.5, 0.5, 0.5, sigmoid(2.0), sigmoid(end), sigmoid(-end), sigmoid(end + 1), sigmoid(-end - 1)};
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], expected[i], 1e-6) << i;
    }
    EXPECT_THROW(be_->refine_boxes(t, be_->upload(delta, {4, 2})), Error);
}

TEST_F(VisionOps, PairRelationsOfTwoBoxes) {
    // Boxes (cx, cy, w, h): a at (10, 20) 4x8, b at (30, 20) 2x8; scale 2.
    const std::vector<float> boxes{10, 20, 4, 8, 30, 20, 2, 8};
    const std::vector<float> got = be_->download(be_->pair_relations(be_->upload(boxes, {1, 2, 4}), 2.0f));
    ASSERT_EQ(got.size(), 16u);
    const std::vector<float> expected{0,
                                      0,
                                      0,
                                      0,  // a to a
                                      2 * std::log(20.0f / 4 + 1),
                                      0,
                                      2 * std::log(2.0f),
                                      0,
                                      2 * std::log(20.0f / 2 + 1),
                                      0,
                                      2 * std::log(0.5f),
                                      0,
                                      0,
                                      0,
                                      0,
                                      0};
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], expected[i], 1e-5f) << i;
    }
    EXPECT_THROW(be_->pair_relations(be_->upload(boxes, {2, 4}), 1.0f), Error);
}

TEST_F(VisionOps, SigmoidBitsHoldTheValuesAboveTheThreshold) {
    // Row 0: 33 values, bits 0..31 in word 0 and bit 0 of word 1; row 1 likewise. sigmoid(0) = 0.5 is not
    // above 0.5; NaN never is.
    std::vector<float> x(2 * 33, -3.0f);
    x[0] = 3.0f;
    x[5] = 0.0f;
    x[31] = 0.01f;
    x[32] = 4.0f;
    x[33 + 1] = std::numeric_limits<float>::quiet_NaN();
    x[33 + 2] = std::numeric_limits<float>::infinity();
    const Tensor bits = be_->sigmoid_bits(be_->upload(x, {2, 33}), 0.5f);
    ASSERT_EQ(bits.shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(bits.dtype, ScalarType::I32);
    const std::vector<int32_t> got = indices_of(*be_, bits);
    EXPECT_EQ(be_->download_i32(bits), got);
    EXPECT_THROW(be_->download_i32(be_->upload(x, {2, 33})), Error);
    EXPECT_EQ(static_cast<uint32_t>(got[0]), (1U << 0) | (1U << 31));
    EXPECT_EQ(got[1], 1);
    EXPECT_EQ(got[2], 1 << 2);
    EXPECT_EQ(got[3], 0);
    EXPECT_THROW(be_->sigmoid_bits(be_->upload(std::vector<float>{1}, {1}).view(0, {}), 0.5f), Error);
}

// A download into parts (the layout model's outputs, straight into each page's vectors) writes the tensor's
// values one part after another, and refuses parts of another size or a tensor of another type.
TEST_F(VisionOps, DownloadIntoPartsSplitsTheValues) {
    const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7};
    std::vector<float> a(3), b(4);
    const std::vector<std::span<float>> parts = {std::span(a), std::span<float>(), std::span(b)};
    be_->download(be_->upload(x, {7}), parts);
    EXPECT_EQ(a, (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(b, (std::vector<float>{4, 5, 6, 7}));
    const std::vector<int32_t> ids = {-1, 0, 1, 2147483647};
    std::vector<int32_t> c(1), d(3);
    const std::vector<std::span<int32_t>> id_parts = {std::span(c), std::span(d)};
    be_->download_i32(be_->upload_i32(ids, {2, 2}), id_parts);
    EXPECT_EQ(c, (std::vector<int32_t>{-1}));
    EXPECT_EQ(d, (std::vector<int32_t>{0, 1, 2147483647}));
    EXPECT_THROW(be_->download(be_->upload(x, {7}), {parts.data(), 1}), Error) << "7 values into 3";
    EXPECT_THROW(be_->download(be_->upload_i32(std::vector<int32_t>(7), {7}), parts), Error) << "int32";
    EXPECT_THROW(be_->download_i32(be_->upload(std::vector<float>(4), {4}), id_parts), Error) << "float32";
}

TEST_F(VisionOps, SinusoidSinesThenCosines) {
    const std::vector<float> freqs{1.0f, 0.5f};
    const std::vector<float> got =
        be_->download(be_->sinusoid(be_->upload(std::vector<float>{0.0f, 2.0f}, {2}), freqs));
    const std::vector<float> expected{
        0, 0, 1, 1, std::sin(2.0f), std::sin(1.0f), std::cos(2.0f), std::cos(1.0f)};
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_FLOAT_EQ(got[i], expected[i]) << i;
    }
    EXPECT_THROW(be_->sinusoid(be_->upload(std::vector<float>{1}, {1}), std::vector<float>(65, 1.0f)), Error);
    EXPECT_THROW(be_->sinusoid(be_->upload(std::vector<float>{1, 2}, {1, 2}), freqs), Error);
}

TEST_F(VisionOps, TopKOrdersTiesByColumnAndNanFirst) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Tensor x = be_->upload(std::vector<float>{3, 1, 3, 2, -0.0f, 0.0f, nan, -5, 7, 7, 7, 7}, {3, 4});
    const TopK top = be_->top_k(x, 3);
    ASSERT_EQ(top.values.shape, (std::vector<int64_t>{3, 3}));
    EXPECT_EQ(top.indices.dtype, ScalarType::I32);
    EXPECT_EQ(indices_of(*be_, top.indices), (std::vector<int32_t>{0, 2, 3, 2, 0, 1, 0, 1, 2}));
    const std::vector<float> v = be_->download(top.values);
    EXPECT_EQ(v[0], 3);
    EXPECT_EQ(v[1], 3);
    EXPECT_EQ(v[2], 2);
    EXPECT_TRUE(std::isnan(v[3]));
    EXPECT_EQ(v[4], 0.0f);
    EXPECT_EQ(v[6], 7);
    // k = d sorts the whole row.
    const TopK all = be_->top_k(be_->upload(std::vector<float>{0.5f, -1, 4, 2}, {1, 4}), 4);
    EXPECT_EQ(be_->download(all.values), (std::vector<float>{4, 2, 0.5f, -1}));
    EXPECT_EQ(indices_of(*be_, all.indices), (std::vector<int32_t>{2, 3, 0, 1}));
    EXPECT_THROW(be_->top_k(x, 5), Error);
    EXPECT_THROW(be_->top_k(x, 0), Error);
}

// Rows scattered at int32 indices on the backend land where the host's list puts them; a list of the wrong
// type or size is refused.
TEST_F(VisionOps, ScatterRowsAtBackendIndices) {
    Tensor dst = be_->upload(random_values(5 * 3, 1), {5, 3});
    const std::vector<float> before = be_->download(dst);
    const Tensor src = be_->upload(random_values(2 * 3, 2), {2, 3});
    be_->scatter_rows(dst, be_->upload_i32(std::vector<int32_t>{4, 1}, {2}), src);
    std::vector<float> expected = before;
    const std::vector<float> rows = be_->download(src);
    std::copy(rows.begin(), rows.begin() + 3, expected.begin() + 12);
    std::copy(rows.begin() + 3, rows.end(), expected.begin() + 3);
    EXPECT_EQ(be_->download(dst), expected);
    EXPECT_THROW(be_->scatter_rows(dst, be_->upload(std::vector<float>{1.0f}, {1}), src.view(0, {1, 3})),
                 Error);
    EXPECT_THROW(be_->scatter_rows(dst, be_->upload_i32(std::vector<int32_t>{0}, {1}), src), Error);
    EXPECT_THROW(be_->scatter_rows(dst, be_->upload_i32(std::vector<int32_t>{5}, {1}), src.view(0, {1, 3})),
                 Error)
        << "row 5 of 5";
}

// New float32 values in parts replace a whole tensor; parts that do not cover it exactly are refused.
TEST_F(VisionOps, Float32UpdateInParts) {
    Tensor t = be_->alloc({2, 3});
    const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6};
    const std::span<const float> parts[] = {a, b};
    be_->update(t, parts);
    EXPECT_EQ(be_->download(t), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    const std::span<const float> short_parts[] = {a};
    EXPECT_THROW(be_->update(t, short_parts), Error);
    Tensor i = be_->upload_i32(std::vector<int32_t>(6, 0), {6});
    EXPECT_THROW(be_->update(i, parts), Error) << "an int32 tensor";
}
