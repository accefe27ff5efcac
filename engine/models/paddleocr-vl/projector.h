// PaddleOCR-VL's projector from vision features to the language model's embeddings: LayerNorm, each 2x2
// block of patches merged into one row, then Linear, GELU, Linear.
#pragma once

#include <span>

#include "engine/backend/backend.h"
#include "engine/image/image-preprocess.h"
#include "engine/models/linear.h"
#include "engine/models/paddleocr-vl/config.h"

namespace folio {

class Projector {
public:
    // Loads the weights under model.projector.
    Projector(WeightLoader& weights, const ModelConfig& config);

    // [n_patches, vision_hidden]  ->  [n_patches / merge^2, hidden]
    Tensor project(const Tensor& vision_features, std::span<const ImageGrid> grids);

private:
    Backend& backend_;
    int64_t merge_ = 0;
    int64_t vision_hidden_ = 0;
    Tensor ln_w_, ln_b_;  // [vision_hidden]
    Linear fc1_;          // [4 * vision_hidden, 4 * vision_hidden]
    Linear fc2_;          // [hidden, 4 * vision_hidden]
};

}  // namespace folio
