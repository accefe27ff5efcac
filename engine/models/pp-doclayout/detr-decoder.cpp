#include "engine/models/pp-doclayout/detr-decoder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/common/error.h"

namespace folio {

namespace {

// Each page's queries times its prototypes: per page [q, p] · [hw, p]ᵀ.  queries [n * q, p], prototypes
// [n, p, h, w]  ->  [n * q, h * w]
Tensor query_masks(Backend& be, const Tensor& queries, const Tensor& prototypes, int64_t n, int64_t q) {
    const Nchw s = prototypes.nchw();
    const int perm[] = {0, 2, 3, 1};
    const Tensor proto_rows = be.permute(prototypes, perm);  // [n, h, w, p]
    Tensor masks = be.batched_products(queries.view(0, {n, q, s.c}), proto_rows.view(0, {n, s.h * s.w, s.c}));
    masks.shape = {n * q, s.h * s.w};
    return masks;
}

}  // namespace

DetrDecoder::DetrDecoder(LayoutWeights& weights, const PpDocLayoutConfig& config)
    : backend_(weights.backend()), config_(config) {
    const int64_t d = config.d_model;
    const int64_t n_levels = config.num_feature_levels;
    const int64_t heads = config.decoder_attention_heads;
    const int64_t points = config.decoder_n_points;
    int64_t in_channels = 0;
    for (int64_t l = 0; l < n_levels; ++l) {
        const std::string p = "model.decoder_input_proj." + std::to_string(l);
        const bool extra = l >= static_cast<int64_t>(config.decoder_in_channels.size());
        if (!extra) {
            in_channels = config.decoder_in_channels[static_cast<size_t>(l)];
        }
        const ConvShape shape = extra ? ConvShape{d, in_channels, 3, 2, 1, 1, Activation::None}
                                      : ConvShape{d, in_channels, 1, 1, 0, 1, Activation::None};
        input_proj_.push_back(weights.conv_bn(p + ".0.weight", p + ".1", shape, config.batch_norm_eps));
        if (extra) {
            in_channels = d;
        }
    }
    enc_output_ = weights.linear("model.enc_output.0", d, d);
    enc_norm_w_ = weights.tensor("model.enc_output.1.weight", {d});
    enc_norm_b_ = weights.tensor("model.enc_output.1.bias", {d});
    const int64_t n_labels = config.num_labels();
    enc_score_ = weights.linear("model.enc_score_head", n_labels, d);
    enc_bbox_ = weights.mlp("model.enc_bbox_head", d, d, 4, 3);
    query_pos_ = weights.mlp("model.decoder.query_pos_head", 4, 2 * d, d, 2);
    for (int i = 0; i < config.decoder_layers; ++i) {
        const std::string p = "model.decoder.layers." + std::to_string(i);
        Layer layer;
        layer.self_attn =
            load_attention_block(weights, p + ".self_attn", p + ".self_attn_layer_norm", d, heads);
        layer.sampling_offsets =
            weights.linear(p + ".encoder_attn.sampling_offsets", heads * n_levels * points * 2, d);
        layer.attention_weights =
            weights.linear(p + ".encoder_attn.attention_weights", heads * n_levels * points, d);
        layer.value_proj = weights.linear(p + ".encoder_attn.value_proj", d, d);
        layer.output_proj = weights.linear(p + ".encoder_attn.output_proj", d, d);
        layer.cross_norm_w = weights.tensor(p + ".encoder_attn_layer_norm.weight", {d});
        layer.cross_norm_b = weights.tensor(p + ".encoder_attn_layer_norm.bias", {d});
        layer.fc1 = weights.linear(p + ".fc1", config.decoder_ffn_dim, d);
        layer.fc2 = weights.linear(p + ".fc2", d, config.decoder_ffn_dim);
        layer.final_norm_w = weights.tensor(p + ".final_layer_norm.weight", {d});
        layer.final_norm_b = weights.tensor(p + ".final_layer_norm.bias", {d});
        layers_.push_back(std::move(layer));
    }
    if (config.kind == LayoutModelKind::V2) {
        for (int i = 0; i < config.decoder_layers; ++i) {
            class_heads_.push_back(
                weights.linear("model.decoder.class_embed." + std::to_string(i), n_labels, d));
            box_heads_.push_back(weights.mlp("model.decoder.bbox_embed." + std::to_string(i), d, d, 4, 3));
        }
        return;
    }
    // V3 ties the decoder's heads to the encoder's unless the checkpoint has its own.
    class_heads_.push_back(weights.has("model.decoder.class_embed.weight")
                               ? weights.linear("model.decoder.class_embed", n_labels, d)
                               : enc_score_);
    box_heads_.push_back(weights.has("model.decoder.bbox_embed.layers.0.weight")
                             ? weights.mlp("model.decoder.bbox_embed", d, d, 4, 3)
                             : enc_bbox_);
    decoder_norm_w_ = weights.tensor("model.decoder_norm.weight", {d});
    decoder_norm_b_ = weights.tensor("model.decoder_norm.bias", {d});
    mask_query_ = weights.mlp("model.mask_query_head", d, d, config.num_prototypes, 3);
    order_head_ =
        weights.linear("model.decoder_order_head." + std::to_string(config.decoder_layers - 1), d, d);
    global_pointer_ =
        weights.linear("model.decoder_global_pointer.dense", 2LL * config.global_pointer_head_size, d);
}

const DetrDecoder::AnchorTable& DetrDecoder::anchors(const std::vector<FeatureLevel>& levels,
                                                     int64_t n) const {
    std::vector<int64_t> key;
    int64_t s = 0;
    for (const FeatureLevel& level : levels) {
        key.push_back(level.height);
        key.push_back(level.width);
        s += level.height * level.width;
    }
    const std::lock_guard lock(anchors_mutex_);
    const auto add_rows = [&](AnchorTable& table) -> const AnchorTable& {
        if (!table.invalid.empty() && !table.invalid_rows.contains(n)) {
            if (n * s > std::numeric_limits<int32_t>::max()) {
                fail("the layout decoder's ", n, " pages of ", s, " positions are too many for int32 rows");
            }
            std::vector<int32_t> rows;
            for (int64_t b = 0; b < n; ++b) {
                for (const int64_t r : table.invalid) {
                    rows.push_back(static_cast<int32_t>(b * s + r));
                }
            }
            table.invalid_rows[n] = backend_.upload_i32(rows, {static_cast<int64_t>(rows.size())});
        }
        return table;
    };
    if (const auto it = anchor_tables_.find(key); it != anchor_tables_.end()) {
        return add_rows(it->second);
    }
    AnchorTable& table = anchor_tables_[key];
    std::vector<float> out;
    std::vector<int64_t>& invalid = table.invalid;
    for (size_t l = 0; l < levels.size(); ++l) {
        const FeatureLevel& level = levels[l];
        const float wh = 0.05f * std::pow(2.0f, static_cast<float>(l));
        for (int64_t y = 0; y < level.height; ++y) {
            for (int64_t x = 0; x < level.width; ++x) {
                const float a[4] = {(static_cast<float>(x) + 0.5f) / static_cast<float>(level.width),
                                    (static_cast<float>(y) + 0.5f) / static_cast<float>(level.height), wh,
                                    wh};
                bool valid = true;
                for (const float v : a) {
                    valid = valid && v > 0.01f && v < 0.99f;
                }
                if (!valid) {
                    invalid.push_back(level.start + y * level.width + x);
                }
                for (const float v : a) {
                    out.push_back(valid ? std::log(v / (1.0f - v)) : std::numeric_limits<float>::max());
                }
            }
        }
    }
    table.anchors = backend_.upload(out, {static_cast<int64_t>(out.size() / 4), 4});
    return add_rows(table);
}

DecoderResult DetrDecoder::forward(const EncoderOutput& encoded) const {
    Backend& be = backend_;
    const PpDocLayoutConfig& c = config_;
    const int64_t d = c.d_model;
    const int64_t n = encoded.maps[0].nchw().n;
    const int64_t q = c.num_queries;
    const int64_t heads = c.decoder_attention_heads;
    const int64_t n_levels = c.num_feature_levels;
    const int64_t points = c.decoder_n_points;
    const float eps = c.layer_norm_eps;

    // The levels' maps through their projections, flattened and joined: [n, s, d].
    std::vector<Tensor> flat;
    std::vector<FeatureLevel> levels;
    int64_t s = 0;
    for (int64_t l = 0; l < n_levels; ++l) {
        const size_t src = std::min(static_cast<size_t>(l), encoded.maps.size() - 1);
        const Tensor map = run(be, input_proj_[static_cast<size_t>(l)], encoded.maps[src]);  // [n, d, h, w]
        const Nchw shape = map.nchw();
        levels.push_back({shape.h, shape.w, s});
        s += shape.h * shape.w;
        const int perm[] = {0, 2, 3, 1};
        Tensor rows = be.permute(map, perm);
        rows.shape = {n, shape.h * shape.w, d};
        flat.push_back(rows);
    }
    if (s < q) {
        fail("the layout model's input is too small: ", s, " positions for ", q, " queries");
    }
    Tensor source = be.concat(flat, 1);  // [n, s, d]
    source.shape = {n * s, d};

    const AnchorTable& anchor_table = anchors(levels, n);
    const std::vector<int64_t>& invalid = anchor_table.invalid;
    if (c.anchor_image_size) {
        for (size_t l = 0; l < levels.size(); ++l) {
            const int64_t stride = c.feat_strides[std::min(l, c.feat_strides.size() - 1)];
            if (levels[l].height != (*c.anchor_image_size)[0] / stride ||
                levels[l].width != (*c.anchor_image_size)[1] / stride) {
                fail("the layout model's anchor_image_size does not match its input size");
            }
        }
    }
    Tensor memory = be.copy(source);
    if (!invalid.empty()) {
        const Tensor& rows = anchor_table.invalid_rows.at(n);
        be.scatter_rows(memory, rows, be.alloc({rows.n_elements(), d}));
    }
    const Tensor output_memory =
        be.layer_norm(apply(be, enc_output_, memory), enc_norm_w_, enc_norm_b_, eps);  // [n * s, d]
    const Tensor enc_class = apply(be, enc_score_, output_memory);                     // [n * s, labels]
    const Tensor enc_coord = run(be, enc_bbox_, output_memory);                        // [n * s, 4]

    // Query selection on the backend: the q positions of each page whose best class scores highest, with
    // their rows of the encoder's memory and their boxes.
    Tensor best = be.top_k(enc_class, 1).values;  // [n * s, 1]
    best.shape = {n, s};
    const Tensor top = be.top_k(best, q).indices;  // [n, q] int32, positions within each page
    // Each page's rows of x [n * s, cols] at its selected positions.  ->  [n * q, cols]
    const auto gather_selected = [&](const Tensor& x, int64_t cols) {
        std::vector<Tensor> parts;
        for (int64_t b = 0; b < n; ++b) {
            parts.push_back(be.gather_rows(x.view(b * s * cols, {s, cols}), top.view(b * q, {q})));
        }
        return n == 1 ? parts.front() : be.concat(parts, 0);
    };
    Tensor h = gather_selected(output_memory, d);  // [n * q, d]
    Tensor ref_t;  // [n * q, 4] cx, cy, w, h: the boxes, refined by each layer
    if (c.kind == LayoutModelKind::V3 && c.mask_enhanced) {
        // The boxes around the queries' first masks: sigmoid(inverse_sigmoid(box)), as the reference
        // recomputes them.
        const Tensor out_query = be.layer_norm(h, decoder_norm_w_, decoder_norm_b_, eps);
        const Tensor mq = run(be, mask_query_, out_query);  // [n * q, prototypes]
        const Nchw ps = encoded.mask_prototypes.nchw();
        Tensor masks = query_masks(be, mq, encoded.mask_prototypes, n, q);  // [n * q, h4 * w4]
        masks.shape = {n * q, ps.h, ps.w};
        ref_t = be.mask_boxes(masks);
        be.refine_boxes(ref_t, be.alloc({n * q, 4}));
    } else {
        // sigmoid(the encoder's box + the position's anchor).
        ref_t = gather_selected(enc_coord, 4);
        Tensor positions = top;
        positions.shape = {n * q};
        be.add(ref_t, be.gather_rows(anchor_table.anchors, positions));
        be.apply_activation(ref_t, Activation::Sigmoid);
    }

    Tensor value_source = source;
    const int64_t head_dim = d / heads;
    const int64_t n_samples = heads * n_levels * points;
    for (size_t i = 0; i < layers_.size(); ++i) {
        const Layer& layer = layers_[i];
        const Tensor pos = run(be, query_pos_, ref_t);  // [n * q, d]
        h = run_attention_block(be, layer.self_attn, h, pos, n, q, heads, eps);

        // Multi-scale deformable attention around each query's box.
        Tensor hs = be.copy(h);
        be.add(hs, pos);
        Tensor value = apply(be, layer.value_proj, value_source);  // [n * s, d]
        value.shape = {n, s, heads, head_dim};
        Tensor offsets = apply(be, layer.sampling_offsets, hs);  // [n * q, samples * 2]
        offsets.shape = {n * q, n_samples, 2};
        Tensor weights = apply(be, layer.attention_weights, hs);  // [n * q, samples]
        weights.shape = {n * q * heads, n_levels * points};
        be.softmax(weights);
        weights.shape = {n, q, heads, n_levels, points};
        Tensor loc = be.box_sample_locations(ref_t, offsets, points);  // [n * q, samples, 2]
        loc.shape = {n, q, heads, n_levels, points, 2};
        Tensor sampled = be.multi_scale_deformable_attention(value, levels, loc, weights);  // [n, q, d]
        sampled.shape = {n * q, d};
        apply(be, layer.output_proj, sampled, {.residual = &h});
        h = be.layer_norm(h, layer.cross_norm_w, layer.cross_norm_b, eps);

        const Tensor ff = apply(be, layer.fc1, h, {.activation = c.decoder_activation});
        apply(be, layer.fc2, ff, {.residual = &h});
        h = be.layer_norm(h, layer.final_norm_w, layer.final_norm_b, eps);

        const Mlp& box_head = box_heads_[std::min(i, box_heads_.size() - 1)];
        be.refine_boxes(ref_t, run(be, box_head, h));
    }

    DecoderResult out;
    out.n = n;
    out.boxes = ref_t;  // [n * q, 4]
    if (c.kind == LayoutModelKind::V2) {
        out.logits = apply(be, class_heads_.back(), h);
        return out;
    }
    const Tensor out_query = be.layer_norm(h, decoder_norm_w_, decoder_norm_b_, eps);
    out.logits = apply(be, class_heads_.back(), out_query);
    const Nchw ps = encoded.mask_prototypes.nchw();
    out.mask_h = ps.h;
    out.mask_w = ps.w;
    out.masks = query_masks(be, run(be, mask_query_, out_query), encoded.mask_prototypes, n, q);
    // Global pointer: query i's vector against query j's, kept above the diagonal (-1e4 on and below it).
    const int64_t hs_size = c.global_pointer_head_size;
    const Tensor qk = apply(be, global_pointer_, apply(be, order_head_, out_query));  // [n * q, 2 * hs]
    out.order_products = global_pointer_products(be, qk, n, q, hs_size);
    return out;
}

}  // namespace folio
