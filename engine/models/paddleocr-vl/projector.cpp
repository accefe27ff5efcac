#include "engine/models/paddleocr-vl/projector.h"

#include <vector>

#include "engine/common/error.h"

namespace folio {

namespace {

constexpr float kProjectorNormEps = 1e-5f;  // fixed in the reference projector, not read from the config

}  // namespace

Projector::Projector(WeightLoader& weights, const ModelConfig& config)
    : backend_(weights.backend()),
      merge_(config.vision.spatial_merge_size),
      vision_hidden_(config.vision.hidden_size) {
    const int64_t vd = vision_hidden_;
    const int64_t merged = vd * merge_ * merge_;
    ln_w_ = weights.load("model.projector.pre_norm.weight", {vd});
    ln_b_ = weights.load("model.projector.pre_norm.bias", {vd});
    fc1_ = weights.load_linear("model.projector.linear_1", merged, merged, true, Quantization::None);
    fc2_ = weights.load_linear("model.projector.linear_2", config.text.hidden_size, merged, true,
                               Quantization::None);
}

Tensor Projector::project(const Tensor& vision_features, std::span<const ImageGrid> grids) {
    const int64_t m = merge_;
    const int64_t vd = vision_hidden_;
    // Row order of the merged sequence: each 2x2 block's four patches become one row of 4 * vd.
    std::vector<int64_t> order;
    int64_t base = 0;
    for (const ImageGrid& g : grids) {
        for (int64_t t = 0; t < g.t; ++t) {
            for (int64_t hb = 0; hb < g.h / m; ++hb) {
                for (int64_t wb = 0; wb < g.w / m; ++wb) {
                    for (int64_t i = 0; i < m; ++i) {
                        for (int64_t j = 0; j < m; ++j) {
                            order.push_back(base + t * g.h * g.w + (hb * m + i) * g.w + wb * m + j);
                        }
                    }
                }
            }
        }
        base += g.n_patches();
    }
    if (base != vision_features.rows()) {
        fail("projector: ", vision_features.rows(), " vision features for grids of ", base, " patches");
    }
    const Tensor normed = backend_.layer_norm(vision_features, ln_w_, ln_b_, kProjectorNormEps);
    const int64_t n_merged = base / (m * m);
    const Tensor merged =
        reshaped(backend_.gather_rows(normed, order), {n_merged, vd * m * m});         // [n / 4, 4 vd]
    const Tensor h = apply(backend_, fc1_, merged, {.activation = Activation::Gelu});  // [n / 4, 4 vd]
    return apply(backend_, fc2_, h);                                                   // [n / 4, hidden]
}

}  // namespace folio
