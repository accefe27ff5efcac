#include "engine/models/pp-doclayout/hybrid-encoder.h"

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"

namespace folio {

namespace {

// [n, c, h, w]  ->  rows [n * h * w, c]
Tensor map_to_rows(Backend& be, const Tensor& x) {
    const Nchw s = x.nchw();
    const int perm[] = {0, 2, 3, 1};
    Tensor rows = be.permute(x, perm);
    rows.shape = {s.n * s.h * s.w, s.c};
    return rows;
}

// rows [n * h * w, c]  ->  [n, c, h, w]
Tensor rows_to_map(Backend& be, Tensor rows, int64_t n, int64_t h, int64_t w) {
    const int64_t c = rows.shape[1];
    rows.shape = {n, h, w, c};
    const int perm[] = {0, 3, 1, 2};
    return be.permute(rows, perm);
}

// transformers' ConvLayer of the mask head: 3x3 (or k), padding k / 2, batch norm, SiLU.
Conv mask_conv(LayoutWeights& w, const std::string& prefix, int64_t c_in, int64_t c_out) {
    return w.conv_bn(prefix + ".convolution.weight", prefix + ".normalization",
                     {c_out, c_in, 3, 1, 1, 1, Activation::Silu}, 1e-5f);
}

}  // namespace

AttentionBlock load_attention_block(LayoutWeights& weights, const std::string& attn_prefix,
                                    const std::string& norm_prefix, int64_t d, int64_t n_heads) {
    AttentionBlock b;
    b.q = weights.scaled_linear(attn_prefix + ".q_proj", d, d,
                                1.0f / std::sqrt(static_cast<float>(d / n_heads)));
    b.k = weights.linear(attn_prefix + ".k_proj", d, d);
    b.v = weights.linear(attn_prefix + ".v_proj", d, d);
    b.o = weights.linear(attn_prefix + ".out_proj", d, d);
    b.norm_w = weights.tensor(norm_prefix + ".weight", {d});
    b.norm_b = weights.tensor(norm_prefix + ".bias", {d});
    return b;
}

Tensor run_attention_block(Backend& be, const AttentionBlock& block, const Tensor& x, const Tensor& pos,
                           int64_t n, int64_t seq, int64_t n_heads, float eps) {
    const int64_t d = x.shape[1];
    const int64_t head_dim = d / n_heads;
    Tensor qk_in = x;
    if (!pos.empty()) {
        qk_in = be.copy(x);
        be.add(qk_in, pos);
    }
    Tensor q = apply(be, block.q, qk_in);  // [n * seq, d], scaled by 1 / sqrt(head_dim) at load time
    Tensor k = apply(be, block.k, qk_in);
    Tensor v = apply(be, block.v, x);
    for (Tensor* t : {&q, &k, &v}) {
        t->shape = {n, seq, n_heads, head_dim};
    }
    // Each page's and head's scores and their weighted values as two batches of products, nothing staged
    // from the host (so the pass can be recorded).
    const int to_heads[] = {0, 2, 1, 3};    // [n, seq, heads, hd]  ->  [n, heads, seq, hd]
    const int to_columns[] = {0, 2, 3, 1};  // [n, seq, heads, hd]  ->  [n, heads, hd, seq]
    const int64_t groups = n * n_heads;
    const Tensor qh = be.permute(q, to_heads);
    const Tensor kh = be.permute(k, to_heads);
    const Tensor vt = be.permute(v, to_columns);
    Tensor probs = be.batched_products(qh.view(0, {groups, seq, head_dim}),
                                       kh.view(0, {groups, seq, head_dim}));  // [n * heads, seq, seq]
    be.softmax(probs);
    Tensor context = be.batched_products(probs, vt.view(0, {groups, head_dim, seq}));  // [n * heads, seq, hd]
    context.shape = {n, n_heads, seq, head_dim};
    Tensor attn = be.permute(context, to_heads);  // [n, seq, heads, hd]
    attn.shape = {n * seq, d};
    Tensor residual = be.copy(x);
    apply(be, block.o, attn, {.residual = &residual});
    return be.layer_norm(residual, block.norm_w, block.norm_b, eps);
}

HybridEncoder::HybridEncoder(LayoutWeights& weights, const PpDocLayoutConfig& config)
    : backend_(weights.backend()), config_(config) {
    if (config.normalize_before) {
        fail("the layout model's \"normalize_before\" is not supported (no PP-DocLayout checkpoint uses it)");
    }
    const int64_t d = config.encoder_hidden_dim;
    const float bn_eps = config.batch_norm_eps;
    for (size_t i = 0; i < config.encoder_in_channels.size(); ++i) {
        const std::string p = "model.encoder_input_proj." + std::to_string(i);
        input_proj_.push_back(
            weights.conv_bn(p + ".0.weight", p + ".1",
                            {d, config.encoder_in_channels[i], 1, 1, 0, 1, Activation::None}, 1e-5f));
    }
    for (size_t a = 0; a < config.encode_proj_layers.size(); ++a) {
        std::vector<AifiLayer> layers;
        for (int l = 0; l < config.encoder_layers; ++l) {
            const std::string p =
                "model.encoder.encoder." + std::to_string(a) + ".layers." + std::to_string(l);
            AifiLayer layer;
            layer.attn = load_attention_block(weights, p + ".self_attn", p + ".self_attn_layer_norm", d,
                                              config.encoder_attention_heads);
            layer.fc1 = weights.linear(p + ".fc1", config.encoder_ffn_dim, d);
            layer.fc2 = weights.linear(p + ".fc2", d, config.encoder_ffn_dim);
            layer.final_norm_w = weights.tensor(p + ".final_layer_norm.weight", {d});
            layer.final_norm_b = weights.tensor(p + ".final_layer_norm.bias", {d});
            layers.push_back(std::move(layer));
        }
        aifi_.push_back(std::move(layers));
    }
    const size_t n_stages = config.encoder_in_channels.size() - 1;
    for (size_t i = 0; i < n_stages; ++i) {
        const std::string idx = std::to_string(i);
        lateral_.push_back(weights.conv_bn("model.encoder.lateral_convs." + idx + ".conv.weight",
                                           "model.encoder.lateral_convs." + idx + ".norm",
                                           {d, d, 1, 1, 0, 1, config.activation}, bn_eps));
        fpn_.push_back(load_csp(weights, "model.encoder.fpn_blocks." + idx));
        downsample_.push_back(weights.conv_bn("model.encoder.downsample_convs." + idx + ".conv.weight",
                                              "model.encoder.downsample_convs." + idx + ".norm",
                                              {d, d, 3, 2, 1, 1, config.activation}, bn_eps));
        pan_.push_back(load_csp(weights, "model.encoder.pan_blocks." + idx));
    }
    if (config.kind == LayoutModelKind::V3) {
        const int64_t feat = config.mask_feature_channels[0];
        const int64_t out = config.mask_feature_channels[1];
        const int base = config.feat_strides[0];
        for (size_t i = 0; i < config.feat_strides.size(); ++i) {
            const int stride = config.feat_strides[i];
            const int length = std::max(1, static_cast<int>(std::log2(stride) - std::log2(base)));
            ScaleHead head;
            head.upsample = stride != base;
            for (int k = 0; k < length; ++k) {
                const int index = head.upsample ? 2 * k : k;
                head.convs.push_back(mask_conv(weights,
                                               "model.encoder.mask_feature_head.scale_heads." +
                                                   std::to_string(i) + ".layers." + std::to_string(index),
                                               k == 0 ? d : feat, feat));
            }
            scale_heads_.push_back(std::move(head));
        }
        mask_output_conv_ = mask_conv(weights, "model.encoder.mask_feature_head.output_conv", feat, out);
        mask_lateral_ = mask_conv(weights, "model.encoder.encoder_mask_lateral", config.x4_feat_dim, out);
        mask_base_conv_ = mask_conv(weights, "model.encoder.encoder_mask_output.base_conv", out, out);
        mask_proto_conv_ = weights.conv("model.encoder.encoder_mask_output.conv",
                                        {config.num_prototypes, out, 1, 1, 0, 1, Activation::None});
    }
}

HybridEncoder::CspRep HybridEncoder::load_csp(LayoutWeights& weights, const std::string& prefix) const {
    const int64_t d = config_.encoder_hidden_dim;
    const auto hidden = static_cast<int64_t>(static_cast<float>(d) * config_.hidden_expansion);
    const float eps = config_.batch_norm_eps;
    CspRep csp;
    csp.conv1 = weights.conv_bn(prefix + ".conv1.conv.weight", prefix + ".conv1.norm",
                                {hidden, 2 * d, 1, 1, 0, 1, config_.activation}, eps);
    csp.conv2 = weights.conv_bn(prefix + ".conv2.conv.weight", prefix + ".conv2.norm",
                                {hidden, 2 * d, 1, 1, 0, 1, config_.activation}, eps);
    for (int b = 0; b < 3; ++b) {
        csp.bottlenecks.push_back(
            weights.repvgg(prefix + ".bottlenecks." + std::to_string(b), hidden, config_.activation, eps));
    }
    if (hidden != d) {
        csp.conv3 = weights.conv_bn(prefix + ".conv3.conv.weight", prefix + ".conv3.norm",
                                    {d, hidden, 1, 1, 0, 1, config_.activation}, eps);
    }
    return csp;
}

Tensor HybridEncoder::run_csp(const CspRep& csp, const Tensor& x) const {
    Backend& be = backend_;
    Tensor h1 = run(be, csp.conv1, x);  // [n, hidden, h, w]
    for (const Conv& b : csp.bottlenecks) {
        h1 = run(be, b, h1);
    }
    const Tensor h2 = run(be, csp.conv2, x);
    be.add(h1, h2);
    return csp.conv3.w.empty() ? h1 : run(be, csp.conv3, h1);  // [n, d, h, w]
}

const Tensor& HybridEncoder::position_embedding(int64_t h, int64_t w) const {
    const std::lock_guard lock(position_mutex_);
    if (const auto it = position_tables_.find({h, w}); it != position_tables_.end()) {
        return it->second;
    }
    const int64_t d = config_.encoder_hidden_dim;
    const int64_t quarter = d / 4;
    std::vector<double> omega(static_cast<size_t>(quarter));
    for (int64_t i = 0; i < quarter; ++i) {
        omega[static_cast<size_t>(i)] =
            1.0 / std::pow(static_cast<double>(config_.positional_encoding_temperature),
                           static_cast<double>(i) / static_cast<double>(quarter));
    }
    std::vector<float> table(static_cast<size_t>(h * w * d));
    for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
            float* row = table.data() + (y * w + x) * d;
            for (int64_t i = 0; i < quarter; ++i) {
                const double ey = static_cast<double>(y) * omega[static_cast<size_t>(i)];
                const double ex = static_cast<double>(x) * omega[static_cast<size_t>(i)];
                row[i] = static_cast<float>(std::sin(ey));
                row[quarter + i] = static_cast<float>(std::cos(ey));
                row[2 * quarter + i] = static_cast<float>(std::sin(ex));
                row[3 * quarter + i] = static_cast<float>(std::cos(ex));
            }
        }
    }
    return position_tables_[{h, w}] = backend_.upload(table, {h * w, d});
}

Tensor HybridEncoder::run_aifi_layer(const AifiLayer& layer, const Tensor& x, const Tensor& pos, int64_t n,
                                     int64_t hw) const {
    Backend& be = backend_;
    const float eps = config_.layer_norm_eps;
    Tensor h = run_attention_block(be, layer.attn, x, pos, n, hw, config_.encoder_attention_heads, eps);
    const Tensor ff = apply(be, layer.fc1, h, {.activation = config_.encoder_activation});
    apply(be, layer.fc2, ff, {.residual = &h});
    return be.layer_norm(h, layer.final_norm_w, layer.final_norm_b, eps);
}

EncoderOutput HybridEncoder::forward(const std::vector<Tensor>& backbone) const {
    Backend& be = backend_;
    const size_t n_levels = config_.encoder_in_channels.size();
    const size_t first = backbone.size() - n_levels;  // V3: the stride-4 map comes first
    std::vector<Tensor> maps;
    for (size_t i = 0; i < n_levels; ++i) {
        maps.push_back(run(be, input_proj_[i], backbone[first + i]));  // [n, d, h_i, w_i]
    }
    for (size_t a = 0; a < config_.encode_proj_layers.size(); ++a) {
        const auto level = static_cast<size_t>(config_.encode_proj_layers[a]);
        const Nchw s = maps[level].nchw();
        Tensor rows = map_to_rows(be, maps[level]);  // [n * h * w, d]
        Tensor pos;
        if (!config_.has_eval_size) {
            const Tensor& table = position_embedding(s.h, s.w);  // [h * w, d]
            pos = s.n == 1 ? table : be.concat(std::vector<Tensor>(static_cast<size_t>(s.n), table), 0);
        }
        for (const AifiLayer& layer : aifi_[a]) {
            rows = run_aifi_layer(layer, rows, pos, s.n, s.h * s.w);
        }
        maps[level] = rows_to_map(be, rows, s.n, s.h, s.w);
    }

    // Top-down: each coarser map, through its lateral convolution, upsampled and joined with the next finer.
    const size_t n_stages = n_levels - 1;
    std::vector<Tensor> fpn{maps.back()};
    for (size_t i = 0; i < n_stages; ++i) {
        const Tensor& finer = maps[n_stages - i - 1];
        fpn.back() = run(be, lateral_[i], fpn.back());
        const Nchw s = fpn.back().nchw();
        const Tensor up = be.interpolate2d(fpn.back(), s.h * 2, s.w * 2, InterpolateMode::Nearest);
        const Tensor joined[] = {up, finer};
        fpn.push_back(run_csp(fpn_[i], be.concat(joined, 1)));
    }
    std::reverse(fpn.begin(), fpn.end());  // finest first
    // Bottom-up: each finer map downsampled and joined with the next coarser.
    std::vector<Tensor> pan{fpn[0]};
    for (size_t i = 0; i < n_stages; ++i) {
        const Tensor down = run(be, downsample_[i], pan.back());
        const Tensor joined[] = {down, fpn[i + 1]};
        pan.push_back(run_csp(pan_[i], be.concat(joined, 1)));
    }

    EncoderOutput out;
    out.maps = pan;
    if (config_.kind == LayoutModelKind::V3) {
        Tensor sum;
        for (size_t i = 0; i < scale_heads_.size(); ++i) {
            Tensor h = pan[i];
            for (const Conv& conv : scale_heads_[i].convs) {
                h = run(be, conv, h);
                if (scale_heads_[i].upsample) {
                    const Nchw s = h.nchw();
                    h = be.interpolate2d(h, s.h * 2, s.w * 2, InterpolateMode::Bilinear);
                }
            }
            if (i == 0) {
                sum = h;
                continue;
            }
            const Nchw target = sum.nchw();
            if (h.nchw().h != target.h || h.nchw().w != target.w) {
                h = be.interpolate2d(h, target.h, target.w, InterpolateMode::Bilinear);
            }
            be.add(sum, h);
        }
        Tensor mask = run(be, mask_output_conv_, sum);  // [n, feat_out, h8, w8]
        const Nchw s = mask.nchw();
        mask = be.interpolate2d(mask, s.h * 2, s.w * 2, InterpolateMode::Bilinear);
        be.add(mask, run(be, mask_lateral_, backbone[0]));  // [n, feat_out, h4, w4]
        out.mask_prototypes = run(be, mask_proto_conv_, run(be, mask_base_conv_, mask));
    }
    return out;
}

}  // namespace folio
