#include "engine/models/pp-doclayout/hgnet-backbone.h"

namespace folio {

namespace {

// transformers' HGNetV2ConvLayer: padding (k - 1) / 2, no bias, batch norm with eps 1e-5.
Conv conv_layer(LayoutWeights& w, const std::string& prefix, int64_t c_in, int64_t c_out, int64_t kernel,
                int64_t stride, int64_t groups, Activation act) {
    const ConvShape shape{c_out, c_in / groups, kernel, stride, (kernel - 1) / 2, groups, act};
    return w.conv_bn(prefix + ".convolution.weight", prefix + ".normalization", shape, 1e-5f);
}

}  // namespace

HgnetBackbone::HgnetBackbone(LayoutWeights& weights, const HgnetConfig& config, const std::string& prefix)
    : backend_(weights.backend()), config_(config) {
    const std::string stem = prefix + ".embedder.";
    const auto& ch = config.stem_channels;
    const auto& st = config.stem_strides;
    const Activation act = config.hidden_act;
    stem1_ = conv_layer(weights, stem + "stem1", ch[0], ch[1], 3, st[0], 1, act);
    stem2a_ = conv_layer(weights, stem + "stem2a", ch[1], ch[1] / 2, 2, st[1], 1, act);
    stem2b_ = conv_layer(weights, stem + "stem2b", ch[1] / 2, ch[1], 2, st[2], 1, act);
    stem3_ = conv_layer(weights, stem + "stem3", ch[1] * 2, ch[1], 3, st[3], 1, act);
    stem4_ = conv_layer(weights, stem + "stem4", ch[1], ch[2], 1, st[4], 1, act);

    for (size_t s = 0; s < config.stage_in_channels.size(); ++s) {
        const std::string sp = prefix + ".encoder.stages." + std::to_string(s);
        const int64_t in = config.stage_in_channels[s];
        const int64_t mid = config.stage_mid_channels[s];
        const int64_t out = config.stage_out_channels[s];
        const int64_t k = config.stage_kernel_size[s];
        Stage stage;
        stage.downsample = config.stage_downsample[s];
        if (stage.downsample) {
            stage.down = conv_layer(weights, sp + ".downsample", in, in, 3,
                                    config.stage_downsample_strides[s], in, Activation::None);
        }
        for (int b = 0; b < config.stage_num_blocks[s]; ++b) {
            const std::string bp = sp + ".blocks." + std::to_string(b);
            const int64_t block_in = b == 0 ? in : out;
            Block block;
            block.residual = b != 0;
            for (int l = 0; l < config.stage_num_layers[s]; ++l) {
                const std::string lp = bp + ".layers." + std::to_string(l);
                const int64_t layer_in = l == 0 ? block_in : mid;
                Layer layer;
                layer.light = config.stage_light_block[s];
                if (layer.light) {
                    layer.pointwise =
                        conv_layer(weights, lp + ".conv1", layer_in, mid, 1, 1, 1, Activation::None);
                    layer.conv = conv_layer(weights, lp + ".conv2", mid, mid, k, 1, mid, Activation::Relu);
                } else {
                    layer.conv = conv_layer(weights, lp, layer_in, mid, k, 1, 1, Activation::Relu);
                }
                block.layers.push_back(std::move(layer));
            }
            const int64_t total = block_in + config.stage_num_layers[s] * mid;
            block.squeeze =
                conv_layer(weights, bp + ".aggregation.0", total, out / 2, 1, 1, 1, Activation::Relu);
            block.excite =
                conv_layer(weights, bp + ".aggregation.1", out / 2, out, 1, 1, 1, Activation::Relu);
            stage.blocks.push_back(std::move(block));
        }
        stages_.push_back(std::move(stage));
    }
}

std::vector<Tensor> HgnetBackbone::forward(const Tensor& pixels) const {
    Backend& be = backend_;
    // The stem: a 3x3 convolution, then a branch of two 2x2 convolutions beside a 2x2 max-pool, both over the
    // map padded by one on the bottom and right.
    Tensor x = run(be, stem1_, pixels);  // [n, ch1, h/2, w/2]
    x = be.pad2d(x, {0, 1, 0, 1});       // [n, ch1, h/2 + 1, w/2 + 1]
    Tensor branch = be.pad2d(run(be, stem2a_, x), {0, 1, 0, 1});
    branch = run(be, stem2b_, branch);  // [n, ch1, h/2, w/2]
    Pool2dParams pool;
    pool.kernel = {2, 2};
    pool.stride = {1, 1};
    pool.ceil_mode = true;
    const Tensor pooled = be.pool2d(x, pool);  // [n, ch1, h/2, w/2]
    const Tensor joined[] = {pooled, branch};
    x = run(be, stem3_, be.concat(joined, 1));  // [n, ch1, h/4, w/4]
    x = run(be, stem4_, x);                     // [n, ch2, h/4, w/4]

    std::vector<Tensor> stage_outputs;
    for (const Stage& stage : stages_) {
        if (stage.downsample) {
            x = run(be, stage.down, x);
        }
        for (const Block& block : stage.blocks) {
            std::vector<Tensor> parts{x};
            Tensor h = x;
            for (const Layer& layer : block.layers) {
                if (layer.light) {
                    h = run(be, layer.pointwise, h);
                }
                h = run(be, layer.conv, h);  // [n, mid, ., .]
                parts.push_back(h);
            }
            Tensor y = run(be, block.excite, run(be, block.squeeze, be.concat(parts, 1)));  // [n, out, ., .]
            if (block.residual) {
                be.add(y, x);
            }
            x = y;
        }
        stage_outputs.push_back(x);
    }
    std::vector<Tensor> out;
    for (const int s : config_.out_stages) {
        out.push_back(stage_outputs[static_cast<size_t>(s)]);
    }
    return out;
}

}  // namespace folio
