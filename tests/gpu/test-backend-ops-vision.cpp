// The CUDA backend's vision operations against the CPU reference backend, on random inputs of the layout
// models' shapes and of edge shapes (odd sizes, single positions, empty batches, kernels wider than their
// input's padding allows once); skipped where no CUDA device is present. New CUDA tensors are filled with
// NaN, so an output element an operation fails to write shows up as an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/make-cuda-backend.h"
#include "kernels/elementwise.h"

namespace folio {
namespace {

// Both backends compute in float32 and differ only in summation order (cuBLAS's GEMM against the CPU's
// blocked dot products for conv2d) and in libm versus CUDA exp and erf, a few ulp each.
constexpr double kF32Bound = 1e-4;

// max |actual - expected| / max |expected|; infinite where actual holds a NaN or an infinity.
double relative_error(const std::vector<float>& actual, const std::vector<float>& expected) {
    if (actual.size() != expected.size()) {
        return INFINITY;
    }
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < actual.size(); ++i) {
        if (!std::isfinite(actual[i])) {
            return INFINITY;
        }
        max_diff = std::max(max_diff, std::fabs(static_cast<double>(actual[i]) - expected[i]));
        max_ref = std::max(max_ref, std::fabs(static_cast<double>(expected[i])));
    }
    return max_ref > 0.0 ? max_diff / max_ref : max_diff;
}

std::map<std::string, double>& worst_errors() {
    static std::map<std::string, double> errors;
    return errors;
}

class WorstErrorReport : public ::testing::Environment {
public:
    void TearDown() override {
        for (const auto& [op, err] : worst_errors()) {
            std::cout << "max relative error " << op << ": " << err << "\n";
        }
    }
};

const auto* const report = ::testing::AddGlobalTestEnvironment(new WorstErrorReport);

std::vector<float> random_values(int64_t n, uint32_t seed, float low = -1.0f, float high = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(low, high);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) {
        x = uniform(rng);
    }
    return v;
}

int64_t product(const std::vector<int64_t>& shape) {
    return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

template <typename... Parts>
std::string label(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
}

class BackendVisionOpsTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
        cpu_ = make_cpu_backend();
        gpu_ = make_cuda_backend(CudaBackendOptions{0, true});
    }

    struct Pair {
        Tensor cpu;
        Tensor gpu;
    };

    Pair upload(const std::vector<float>& values, const std::vector<int64_t>& shape) {
        return {cpu_->upload(values, shape), gpu_->upload(values, shape)};
    }

    Pair random(const std::vector<int64_t>& shape, float low = -1.0f, float high = 1.0f) {
        return upload(random_values(product(shape), seed_++, low, high), shape);
    }

    void expect_close(const std::string& op, const Tensor& gpu, const Tensor& cpu, const std::string& where) {
        ASSERT_EQ(gpu.shape, cpu.shape) << op << " " << where;
        const double err = relative_error(gpu_->download(gpu), cpu_->download(cpu));
        EXPECT_LT(err, kF32Bound) << op << " " << where;
        double& worst = worst_errors()[op];
        worst = std::max(worst, err);
    }

    std::vector<int32_t> indices(Backend& be, const Tensor& t) {
        return t.n_elements() == 0 ? std::vector<int32_t>{}
                                   : be.read_back(t.view(0, {t.n_elements()}))->wait();
    }

    std::unique_ptr<Backend> cpu_;
    std::unique_ptr<Backend> gpu_;
    uint32_t seed_ = 1;
};

TEST_F(BackendVisionOpsTest, Conv2d) {
    struct Case {
        std::vector<int64_t> x, w;
        Conv2dParams p;
        bool bias;
    };
    const auto params = [](int64_t stride, int64_t pad, int64_t groups, Activation act,
                           int64_t dilation = 1) {
        return Conv2dParams{{stride, stride}, {pad, pad}, {dilation, dilation}, groups, act};
    };
    const std::vector<Case> cases = {
        {{1, 3, 64, 64}, {16, 3, 3, 3}, params(2, 1, 1, Activation::Relu), true},     // stem 3x3 s2
        {{1, 16, 33, 33}, {8, 16, 2, 2}, params(1, 0, 1, Activation::Relu), true},    // stem 2x2
        {{2, 24, 17, 19}, {24, 24, 3, 3}, params(1, 1, 1, Activation::Silu), true},   // 3x3 pad 1
        {{2, 32, 15, 13}, {48, 32, 1, 1}, params(1, 0, 1, Activation::None), true},   // 1x1
        {{1, 32, 15, 13}, {48, 16, 1, 1}, params(1, 0, 2, Activation::Gelu), false},  // 1x1, groups
        {{1, 32, 16, 16}, {32, 1, 3, 3}, params(2, 1, 32, Activation::None), true},   // depthwise s2
        {{2, 12, 11, 9}, {12, 1, 5, 5}, params(1, 2, 12, Activation::Relu), false},   // depthwise 5x5
        {{1, 6, 10, 10}, {12, 1, 3, 3}, params(1, 1, 6, Activation::Sigmoid), true},  // multiplier 2
        {{1, 12, 14, 10}, {18, 4, 3, 3}, params(2, 1, 3, Activation::None), true},    // groups 3
        {{1, 5, 12, 13}, {7, 5, 3, 3}, params(1, 2, 1, Activation::Silu, 2), true},   // dilation 2
        {{3, 4, 1, 1}, {5, 4, 1, 1}, params(1, 0, 1, Activation::None), true},        // one position
        {{1, 4, 3, 3}, {5, 4, 3, 3}, params(3, 0, 1, Activation::None), false},       // one output
        {{1, 3, 2, 2}, {2, 3, 3, 3}, params(1, 1, 1, Activation::Relu), true},        // kernel > input
        {{0, 4, 5, 5}, {4, 4, 3, 3}, params(1, 1, 1, Activation::None), true},        // empty batch
        {{1, 64, 40, 40}, {64, 64, 3, 3}, params(1, 1, 1, Activation::Relu), true},   // a stage's layer
        {{2, 12, 14, 10}, {18, 4, 3, 3}, params(1, 1, 3, Activation::Relu), true},    // groups, two images
        {{3, 16, 9, 7}, {8, 16, 1, 1}, params(1, 0, 1, Activation::None), false},     // 1x1, three images
        // With TF32 or bfloat16, the next four run as the implicit product (tiles enough to fill an H100's
        // resident blocks).
        {{2, 8, 490, 490}, {8, 8, 3, 3}, params(1, 1, 1, Activation::None), true},     // a chunk an image
        {{6, 20, 131, 101}, {70, 20, 3, 3}, params(1, 1, 1, Activation::Gelu), true},  // tiles across images
        {{4, 3, 320, 300}, {33, 3, 3, 3}, params(2, 1, 1, Activation::Relu), false},   // k of 27
        {{2, 16, 300, 300}, {32, 16, 2, 2}, params(1, 0, 1, Activation::Relu), true},  // 32 channels out
        // With bfloat16, the next three 3x3 convolutions run a tile of pixels at a time with their halo
        // (conv2d-halo; tiles enough to fill an H100's resident blocks), tiles of 128, 64 and 32 channels,
        // the images' edges inside tiles.
        {{4, 32, 100, 90}, {70, 32, 3, 3}, params(1, 1, 1, Activation::Silu), true},
        {{4, 48, 120, 130}, {48, 48, 3, 3}, params(1, 1, 1, Activation::Relu), false},
        {{6, 16, 128, 100}, {24, 16, 3, 3}, params(1, 1, 1, Activation::None), true},
    };
    for (const ConvPrecision precision :
         {ConvPrecision::Float32, ConvPrecision::Tf32, ConvPrecision::Bfloat16}) {
        for (Case c : cases) {
            c.p.precision = precision;
            const std::string where = label(
                "x ", shape_string(c.x), " w ", shape_string(c.w), " stride ", c.p.stride[0], " groups ",
                c.p.groups, " ", activation_name(c.p.activation), " ", conv_precision_name(precision));
            const Pair x = random(c.x), w = random(c.w, -0.3f, 0.3f), b = random({c.w[0]});
            const Tensor gpu = gpu_->conv2d(x.gpu, w.gpu, c.bias ? &b.gpu : nullptr, c.p);
            const Tensor cpu = cpu_->conv2d(x.cpu, w.cpu, c.bias ? &b.cpu : nullptr, c.p);
            if (precision == ConvPrecision::Float32) {
                expect_close("conv2d", gpu, cpu, where);
                continue;
            }
            // TF32 rounds each input to 10 mantissa bits: a relative error of about 2^-11 a product, 2.5e-4
            // to 3.3e-4 of the output's scale over these cases whether cuBLAS or the implicit product runs.
            // bfloat16 keeps 7 bits, about 2^-9 a product: bounds four times TF32's.
            ASSERT_EQ(gpu.shape, cpu.shape) << where;
            const double error = relative_error(gpu_->download(gpu), cpu_->download(cpu));
            EXPECT_LT(error, precision == ConvPrecision::Tf32 ? 1e-3 : 4e-3) << where;
            if (precision == ConvPrecision::Bfloat16) {
                std::cout << where << ": relative error " << error << "\n";
            }
        }
    }
}

TEST_F(BackendVisionOpsTest, Pool2d) {
    const std::vector<Pool2dParams> cases = {
        {PoolMode::Max, {2, 2}, {1, 1}, {0, 0}, true, true},   // HGNetV2's stem
        {PoolMode::Max, {3, 3}, {2, 2}, {1, 1}, false, true},  // ResNet-style
        {PoolMode::Max, {3, 3}, {2, 2}, {1, 1}, true, true},
        {PoolMode::Average, {2, 2}, {2, 2}, {0, 0}, true, true},  // ceil mode: a shrinking last window
        {PoolMode::Average, {3, 3}, {1, 1}, {1, 1}, false, true},
        {PoolMode::Average, {3, 3}, {2, 2}, {1, 1}, true, false},
        {PoolMode::Average, {5, 3}, {3, 2}, {2, 1}, false, false},
    };
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{2, 5, 13, 11}, std::vector<int64_t>{1, 3, 8, 8},
          std::vector<int64_t>{1, 2, 5, 3}}) {
        const Pair x = random(shape);
        for (const Pool2dParams& p : cases) {
            const std::string where =
                label(shape_string(shape), p.mode == PoolMode::Max ? " max" : " avg", " k ", p.kernel[0], "x",
                      p.kernel[1], " s ", p.stride[0], " p ", p.padding[0], " ceil ", p.ceil_mode,
                      " include_pad ", p.count_include_pad);
            expect_close("pool2d", gpu_->pool2d(x.gpu, p), cpu_->pool2d(x.cpu, p), where);
        }
    }
}

TEST_F(BackendVisionOpsTest, PadAndInterpolate) {
    const Pair x = random({2, 3, 7, 5});
    for (const std::array<int64_t, 4>& pads :
         {std::array<int64_t, 4>{0, 1, 0, 1}, std::array<int64_t, 4>{2, 0, 3, 1},
          std::array<int64_t, 4>{0, 0, 0, 0}}) {
        expect_close("pad2d", gpu_->pad2d(x.gpu, pads), cpu_->pad2d(x.cpu, pads),
                     label(pads[0], pads[1], pads[2], pads[3]));
    }
    for (const InterpolateMode mode : {InterpolateMode::Nearest, InterpolateMode::Bilinear}) {
        for (const auto& [h, w] :
             std::vector<std::pair<int64_t, int64_t>>{{14, 10}, {3, 2}, {7, 5}, {11, 13}, {1, 1}}) {
            expect_close("interpolate2d", gpu_->interpolate2d(x.gpu, h, w, mode),
                         cpu_->interpolate2d(x.cpu, h, w, mode),
                         label(mode == InterpolateMode::Nearest ? "nearest " : "bilinear ", h, "x", w));
        }
    }
}

TEST_F(BackendVisionOpsTest, ActivationsProductAndSoftmax) {
    for (const Activation act :
         {Activation::None, Activation::Relu, Activation::Silu, Activation::Gelu, Activation::Sigmoid}) {
        const Pair x = random({3, 1001}, -6.0f, 6.0f), y = random({3, 1001}, -6.0f, 6.0f);
        expect_close("multiply", gpu_->multiply(x.gpu, y.gpu, act), cpu_->multiply(x.cpu, y.cpu, act),
                     activation_name(act));
        Tensor gx = x.gpu, cx = x.cpu;
        gpu_->apply_activation(gx, act);
        cpu_->apply_activation(cx, act);
        expect_close("apply_activation", gx, cx, activation_name(act));
    }
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{5, 1}, std::vector<int64_t>{300, 8, 12}, std::vector<int64_t>{7, 33},
          std::vector<int64_t>{2, 3000}, std::vector<int64_t>{0, 4}}) {
        Pair x = random(shape, -20.0f, 20.0f);
        gpu_->softmax(x.gpu);
        cpu_->softmax(x.cpu);
        expect_close("softmax", x.gpu, x.cpu, shape_string(shape));
    }
}

TEST_F(BackendVisionOpsTest, PermuteAndConcat) {
    std::mt19937 rng(7);
    for (int rank = 1; rank <= 6; ++rank) {
        std::vector<int64_t> shape;
        for (int d = 0; d < rank; ++d) {
            shape.push_back(1 + (d * 5 + rank) % 6);
        }
        std::vector<int> axes(static_cast<size_t>(rank));
        std::iota(axes.begin(), axes.end(), 0);
        for (int trial = 0; trial < 3; ++trial) {
            std::shuffle(axes.begin(), axes.end(), rng);
            const Pair x = random(shape);
            expect_close("permute", gpu_->permute(x.gpu, axes), cpu_->permute(x.cpu, axes),
                         shape_string(shape));
        }
    }
    // The transposes the layout models make (a tile of 32 x 32 through shared memory, edges included), a
    // copy, and a permutation the tiles do not take.
    const std::pair<std::vector<int64_t>, std::vector<int>> layouts[] = {
        {{3, 70, 9, 11}, {0, 2, 3, 1}},
        {{1, 45, 33, 3}, {0, 2, 3, 1}},
        {{2, 19, 19, 5}, {0, 3, 1, 2}},
        {{2, 33, 4, 40}, {0, 2, 3, 1}},
        {{65, 40}, {1, 0}},
        {{4, 1, 7}, {1, 0, 2}},
        {{2, 33, 4, 40}, {0, 2, 1, 3}},
        {{3, 300, 8, 36}, {0, 2, 1, 3}},
        {{5, 6, 7, 4}, {2, 1, 0, 3}},
    };
    for (const auto& [shape, axes] : layouts) {
        const Pair x = random(shape);
        expect_close("permute", gpu_->permute(x.gpu, axes), cpu_->permute(x.cpu, axes), shape_string(shape));
    }
    // Rows of whole fours that do not start at a multiple of four words move a word at a time.
    {
        const std::vector<int64_t> shape{3, 5, 8};
        const std::vector<int> axes{1, 0, 2};
        const Pair x = random({3 * 5 * 8 + 1});
        expect_close("permute", gpu_->permute(x.gpu.view(1, shape), axes),
                     cpu_->permute(x.cpu.view(1, shape), axes), "a view one word in");
    }
    // int32: bits moved as they are.
    std::vector<int32_t> ids(60);
    std::iota(ids.begin(), ids.end(), -30);
    const std::vector<int> axes{2, 0, 1};
    const Tensor gi = gpu_->permute(gpu_->upload_i32(ids, {3, 4, 5}), axes);
    const Tensor ci = cpu_->permute(cpu_->upload_i32(ids, {3, 4, 5}), axes);
    EXPECT_EQ(gi.dtype, ScalarType::I32);
    EXPECT_EQ(indices(*gpu_, gi), indices(*cpu_, ci));

    // Rows of 5 move a word at a time; rows of 8 (whole fours at offsets of fours but along the last axis)
    // four words at a time.
    for (const std::vector<int64_t>& base :
         {std::vector<int64_t>{2, 3, 4, 5}, std::vector<int64_t>{2, 3, 4, 8}}) {
        for (int axis = -4; axis < 4; ++axis) {
            std::vector<Tensor> g, c;
            for (int64_t size : {1, 3, 2, 4}) {
                std::vector<int64_t> shape = base;
                shape[static_cast<size_t>(axis < 0 ? axis + 4 : axis)] = size;
                const Pair part = random(shape);
                g.push_back(part.gpu);
                c.push_back(part.cpu);
            }
            expect_close("concat", gpu_->concat(g, axis), cpu_->concat(c, axis),
                         shape_string(base) + label(" axis ", axis));
        }
    }
    const Tensor gj =
        gpu_->concat(std::vector<Tensor>{gpu_->upload_i32(ids, {60}), gpu_->upload_i32(ids, {60})}, 0);
    const Tensor cj =
        cpu_->concat(std::vector<Tensor>{cpu_->upload_i32(ids, {60}), cpu_->upload_i32(ids, {60})}, 0);
    EXPECT_EQ(indices(*gpu_, gj), indices(*cpu_, cj));
}

TEST_F(BackendVisionOpsTest, GridSample) {
    for (const auto& [x_shape, grid_shape] :
         std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{2, 3, 7, 9}, {2, 5, 4, 2}}, {{1, 16, 25, 25}, {1, 300, 4, 2}}, {{1, 1, 1, 1}, {1, 3, 3, 2}}}) {
        const Pair x = random(x_shape), grid = random(grid_shape, -1.2f, 1.2f);
        expect_close("grid_sample", gpu_->grid_sample(x.gpu, grid.gpu), cpu_->grid_sample(x.cpu, grid.cpu),
                     shape_string(x_shape) + " " + shape_string(grid_shape));
    }
}

TEST_F(BackendVisionOpsTest, MultiScaleDeformableAttention) {
    struct Case {
        int64_t n, n_q, n_head, d_head, n_points;
        std::vector<std::pair<int64_t, int64_t>> level_sizes;
    };
    const std::vector<Case> cases = {
        {1, 300, 8, 32, 4, {{25, 25}, {13, 13}, {7, 7}}},  // the decoder over an 800x800 page's levels
        {2, 17, 3, 5, 3, {{6, 9}, {3, 5}, {2, 3}, {1, 1}}},
        {1, 1, 1, 1, 1, {{1, 1}}},
    };
    for (const Case& c : cases) {
        std::vector<FeatureLevel> levels;
        int64_t s = 0;
        for (const auto& [h, w] : c.level_sizes) {
            levels.push_back({h, w, s});
            s += h * w;
        }
        const auto n_levels = static_cast<int64_t>(levels.size());
        const Pair value = random({c.n, s, c.n_head, c.d_head});
        const Pair loc = random({c.n, c.n_q, c.n_head, n_levels, c.n_points, 2}, -0.1f, 1.1f);
        Pair weights = random({c.n, c.n_q, c.n_head, n_levels * c.n_points});
        gpu_->softmax(weights.gpu);
        cpu_->softmax(weights.cpu);
        const std::vector<int64_t> w_shape{c.n, c.n_q, c.n_head, n_levels, c.n_points};
        expect_close(
            "multi_scale_deformable_attention",
            gpu_->multi_scale_deformable_attention(value.gpu, levels, loc.gpu, weights.gpu.view(0, w_shape)),
            cpu_->multi_scale_deformable_attention(value.cpu, levels, loc.cpu, weights.cpu.view(0, w_shape)),
            label(n_levels, " levels, ", c.n_q, " queries"));
    }
}

TEST_F(BackendVisionOpsTest, TopK) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    struct Case {
        int64_t n_rows, d, k;
        bool ties;
    };
    for (const Case& c : std::vector<Case>{{1, 13125, 300, false},
                                           {3, 13125, 300, true},
                                           {4, 1000, 1, false},
                                           {2, 257, 257, true},
                                           {5, 1, 1, false},
                                           {2, 64, 10, true},
                                           {1000, 20, 1, true},  // query selection's best class
                                           {7, 45, 1, true},
                                           {9, 20, 5, false}}) {
        std::vector<float> values = random_values(c.n_rows * c.d, seed_++, -4.0f, 4.0f);
        if (c.ties) {
            for (size_t i = 0; i < values.size(); ++i) {
                values[i] = std::round(values[i]);  // many equal values, -0 and +0 among them
                if (i % 37 == 5) {
                    values[i] = nan;
                }
            }
        }
        const std::string where = label(c.n_rows, "x", c.d, " k ", c.k, c.ties ? " ties" : "");
        const TopK g = gpu_->top_k(gpu_->upload(values, {c.n_rows, c.d}), c.k);
        const TopK r = cpu_->top_k(cpu_->upload(values, {c.n_rows, c.d}), c.k);
        ASSERT_EQ(g.values.shape, r.values.shape) << where;
        EXPECT_EQ(indices(*gpu_, g.indices), indices(*cpu_, r.indices)) << where;
        const std::vector<float> gv = gpu_->download(g.values), rv = cpu_->download(r.values);
        EXPECT_EQ(std::memcmp(gv.data(), rv.data(), gv.size() * sizeof(float)), 0) << where;
    }
}

TEST_F(BackendVisionOpsTest, BatchedProducts) {
    for (const auto& [g, m, n, k] : std::vector<std::array<int64_t, 4>>{
             {96, 302, 302, 64}, {8, 300, 40000, 32}, {5, 7, 3, 1}, {1, 1, 1, 9}, {2, 0, 3, 4}}) {
        const Pair a = random({g, m, k}), b = random({g, n, k});
        expect_close("batched_products", gpu_->batched_products(a.gpu, b.gpu),
                     cpu_->batched_products(a.cpu, b.cpu),
                     label(g, " groups of ", m, "x", k, " by ", n, "x", k));
    }
}

TEST_F(BackendVisionOpsTest, BoxOps) {
    const int64_t rows = 2400, samples = 96;
    const Pair boxes = random({rows, 4}, 0.01f, 0.99f), offsets = random({rows, samples, 2}, -6.0f, 6.0f);
    expect_close("box_sample_locations", gpu_->box_sample_locations(boxes.gpu, offsets.gpu, 4),
                 cpu_->box_sample_locations(boxes.cpu, offsets.cpu, 4), "2400 boxes");
    const Pair delta = random({rows, 4}, -3.0f, 3.0f);
    Tensor g = gpu_->copy(boxes.gpu), c = cpu_->copy(boxes.cpu);
    gpu_->refine_boxes(g, delta.gpu);
    cpu_->refine_boxes(c, delta.cpu);
    expect_close("refine_boxes", g, c, "2400 boxes");
    const Pair sized = random({3, 302, 4}, 0.5f, 900.0f);
    expect_close("pair_relations", gpu_->pair_relations(sized.gpu, 0.5f),
                 cpu_->pair_relations(sized.cpu, 0.5f), "3 pages of 302 tokens");
}

TEST_F(BackendVisionOpsTest, SigmoidBits) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (const auto& [rows, n, threshold] : std::vector<std::tuple<int64_t, int64_t, float>>{
             {300, 40000, 0.3f}, {7, 33, 0.5f}, {3, 32, 0.9f}, {5, 1, 0.01f}}) {
        std::vector<float> values = random_values(rows * n, seed_++, -6.0f, 6.0f);
        values[0] = nan;
        values[values.size() / 2] = std::numeric_limits<float>::infinity();
        const Tensor g = gpu_->sigmoid_bits(gpu_->upload(values, {rows, n}), threshold);
        const Tensor r = cpu_->sigmoid_bits(cpu_->upload(values, {rows, n}), threshold);
        ASSERT_EQ(g.shape, (std::vector<int64_t>{rows, (n + 31) / 32}));
        EXPECT_EQ(indices(*gpu_, g), indices(*cpu_, r)) << label(rows, "x", n, " at ", threshold);
        EXPECT_EQ(gpu_->download_i32(g), cpu_->download_i32(r)) << label(rows, "x", n, " at ", threshold);
    }
}

TEST_F(BackendVisionOpsTest, MaskBoxes) {
    for (const auto& [n, h, w] :
         std::vector<std::array<int64_t, 3>>{{600, 200, 200}, {7, 33, 17}, {3, 1, 1}}) {
        std::vector<float> values = random_values(n * h * w, seed_++, -8.0f, 1.0f);  // sparse positives
        for (int64_t m = 0; m < n; m += 5) {
            std::fill_n(values.begin() + m * h * w, h * w, -1.0f);  // some maps without any
        }
        const std::vector<float> g = gpu_->download(gpu_->mask_boxes(gpu_->upload(values, {n, h, w})));
        const std::vector<float> r = cpu_->download(cpu_->mask_boxes(cpu_->upload(values, {n, h, w})));
        EXPECT_EQ(g, r) << label(n, " maps of ", h, "x", w);
    }
}

TEST_F(BackendVisionOpsTest, Sinusoid) {
    const std::vector<float> values = random_values(302 * 302 * 4, seed_++, -600.0f, 600.0f);
    std::vector<float> freqs;
    for (int i = 0; i < 8; ++i) {
        freqs.push_back(1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / 8.0f));
    }
    const auto n = static_cast<int64_t>(values.size());
    expect_close("sinusoid", gpu_->sinusoid(gpu_->upload(values, {n}), freqs),
                 cpu_->sinusoid(cpu_->upload(values, {n}), freqs), label(n, " values"));
}

}  // namespace
}  // namespace folio
