// HGNetV2, the layout models' CNN backbone (transformers' HGNetV2Backbone): a stem of five convolutions with
// a max-pool branch, then stages of blocks whose layers' outputs are concatenated and squeezed by two 1x1
// convolutions. Batch norms are folded into the convolutions.
#pragma once

#include <vector>

#include "engine/models/pp-doclayout/layout-weights.h"
#include "engine/models/pp-doclayout/pp-doclayout-config.h"

namespace folio {

class HgnetBackbone {
public:
    // Loads the weights under prefix (model.backbone.model).
    HgnetBackbone(LayoutWeights& weights, const HgnetConfig& config, const std::string& prefix);

    // The feature maps of the stages the config names, in that order.
    // pixels [n, 3, h, w]  ->  [n, stage_out_channels[s], h / stride_s, w / stride_s] for each named stage s
    std::vector<Tensor> forward(const Tensor& pixels) const;

private:
    struct Layer {
        Conv conv;       // a plain layer, or a light layer's depthwise convolution
        Conv pointwise;  // a light layer's 1x1 convolution first (empty otherwise)
        bool light = false;
    };
    struct Block {
        std::vector<Layer> layers;
        Conv squeeze, excite;
        bool residual = false;
    };
    struct Stage {
        bool downsample = false;
        Conv down;
        std::vector<Block> blocks;
    };

    Backend& backend_;
    HgnetConfig config_;
    Conv stem1_, stem2a_, stem2b_, stem3_, stem4_;
    std::vector<Stage> stages_;
};

}  // namespace folio
