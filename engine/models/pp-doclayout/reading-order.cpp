#include "engine/models/pp-doclayout/reading-order.h"

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"

namespace folio {

namespace {

constexpr float kMasked = -1e30f;  // an attention bias that takes a key out (exp gives 0)
constexpr int kIndexSections = 9;  // ReadingOrderBatch::indices' rows of n * tokens

// Each group's rows of a times its rows of b: a_g [m, k] · b_gᵀ with b_g [cols, k], groups one after another.
// a [groups, m, k], b [groups, cols, k]  ->  [groups, m, cols]
Tensor group_products(Backend& be, const Tensor& a, const Tensor& b, int64_t groups, int64_t m, int64_t cols,
                      int64_t k) {
    return be.batched_products(a.view(0, {groups, m, k}), b.view(0, {groups, cols, k}));
}

}  // namespace

ReadingOrder::ReadingOrder(LayoutWeights& weights, const ReadingOrderConfig& config, int n_queries)
    : backend_(weights.backend()), config_(config), n_queries_(n_queries) {
    const int64_t hidden = config.hidden_size;
    const std::string e = "reading_order.embeddings.";
    word_ = weights.tensor(e + "word_embeddings.weight", {config.vocab_size, hidden});
    token_type_ = weights.tensor(e + "token_type_embeddings.weight", {config.type_vocab_size, hidden});
    position_ = weights.tensor(e + "position_embeddings.weight", {config.max_position_embeddings, hidden});
    const int64_t n_2d = config.max_2d_position_embeddings;
    x_pos_ = weights.tensor(e + "x_position_embeddings.weight", {n_2d, config.coordinate_size});
    y_pos_ = weights.tensor(e + "y_position_embeddings.weight", {n_2d, config.coordinate_size});
    h_pos_ = weights.tensor(e + "h_position_embeddings.weight", {n_2d, config.shape_size});
    w_pos_ = weights.tensor(e + "w_position_embeddings.weight", {n_2d, config.shape_size});
    spatial_proj_ =
        weights.linear(e + "spatial_proj", hidden, 4LL * config.coordinate_size + 2LL * config.shape_size);
    embed_norm_w_ = weights.tensor(e + "norm.weight", {hidden});
    embed_norm_b_ = weights.tensor(e + "norm.bias", {hidden});
    label_table_ = weights.tensor("reading_order.label_embeddings.weight", {config.num_classes, hidden});
    label_proj_ = weights.linear("reading_order.label_features_projection", hidden, hidden);
    const int64_t head_size = hidden / config.num_attention_heads;
    for (int i = 0; i < config.num_hidden_layers; ++i) {
        const std::string p = "reading_order.encoder.layer." + std::to_string(i);
        Layer layer;
        layer.query = weights.scaled_linear(p + ".attention.self.query", hidden, hidden,
                                            1.0f / std::sqrt(static_cast<float>(head_size)));
        layer.key = weights.linear(p + ".attention.self.key", hidden, hidden);
        layer.value = weights.linear(p + ".attention.self.value", hidden, hidden);
        layer.attn_out = weights.linear(p + ".attention.output.dense", hidden, hidden);
        layer.attn_norm_w = weights.tensor(p + ".attention.output.norm.weight", {hidden});
        layer.attn_norm_b = weights.tensor(p + ".attention.output.norm.bias", {hidden});
        layer.intermediate = weights.linear(p + ".intermediate.dense", config.intermediate_size, hidden);
        layer.output = weights.linear(p + ".output.dense", hidden, config.intermediate_size);
        layer.out_norm_w = weights.tensor(p + ".output.norm.weight", {hidden});
        layer.out_norm_b = weights.tensor(p + ".output.norm.bias", {hidden});
        layers_.push_back(std::move(layer));
    }
    const int64_t embed = config.relation_bias_embed_dim;
    const int64_t heads = config.num_attention_heads;
    std::vector<float> w =
        weights.host("reading_order.encoder.rel_bias_module.pos_proj.weight", {heads, 4 * embed, 1, 1});
    std::vector<float> b = weights.host("reading_order.encoder.rel_bias_module.pos_proj.bias", {heads});
    pos_proj_ = Linear{dense_weight(backend_.upload(w, {heads, 4 * embed})), backend_.upload(b, {heads})};
    // transformers' default rope parameters: 1 / theta^(2i / (dim / 2)).
    const auto half = static_cast<float>(embed / 2);
    for (int64_t i = 0; i < embed; i += 2) {
        inv_freq_.push_back(1.0f / std::pow(config.relation_bias_theta, static_cast<float>(i) / half));
    }
    pointer_ =
        weights.linear("reading_order.relative_head.dense", 2LL * config.global_pointer_head_size, hidden);
}

ReadingOrderBatch ReadingOrder::pack(std::span<const ReadingOrderInput> pages) const {
    const ReadingOrderConfig& c = config_;
    const auto n = static_cast<int64_t>(pages.size());
    const int64_t q = n_queries_;
    const int64_t tokens = q + 2;
    const int64_t nt = n * tokens;
    ReadingOrderBatch batch;
    batch.n = n;
    batch.indices.assign(static_cast<size_t>(kIndexSections * nt + 2 * n * q), 0);
    batch.boxes.assign(static_cast<size_t>(nt * 4), 0.0f);
    batch.padding.assign(static_cast<size_t>(nt * tokens), 0.0f);
    const auto at = [&](int section, int64_t row) -> int32_t& {
        return batch.indices[static_cast<size_t>(section * nt + row)];
    };
    // Boxes as cx, cy, w + eps, h + eps (the start and end tokens and padding have zero boxes).
    constexpr float eps = 1e-5f;
    for (int64_t p = 0; p < n; ++p) {
        const ReadingOrderInput& page = pages[static_cast<size_t>(p)];
        if (static_cast<int64_t>(page.boxes.size()) != q * 4 ||
            static_cast<int64_t>(page.classes.size()) != q || page.n_kept < 0 || page.n_kept > q) {
            fail("reading order: a page's input does not fit ", q, " queries");
        }
        for (int64_t t = 0; t < tokens; ++t) {
            const int64_t row = p * tokens + t;
            int64_t id = c.pad_token_id;
            if (t == 0) {
                id = c.start_token_id;
            } else if (t <= page.n_kept) {
                id = c.pred_token_id;
            } else if (t == page.n_kept + 1) {
                id = c.end_token_id;
            }
            // LayoutLMv3's positions: counted from padding_idx + 1 over the tokens that are not padding.
            const int64_t position = id != c.pad_token_id ? t + 1 + c.pad_token_id : c.pad_token_id;
            if (position >= c.max_position_embeddings) {
                fail("reading order: position ", position, " outside max_position_embeddings ",
                     c.max_position_embeddings);
            }
            float corners[4] = {0, 0, 0, 0};
            if (t >= 1 && t <= q) {
                std::copy_n(page.boxes.data() + (t - 1) * 4, 4, corners);
            }
            // .long() truncates toward zero; the boxes are clamped to 0..1000 before.
            int64_t box[4];
            for (size_t k = 0; k < 4; ++k) {
                box[k] = static_cast<int64_t>(corners[k]);
            }
            at(0, row) = static_cast<int32_t>(id);
            at(1, row) = 0;  // token type
            at(2, row) = static_cast<int32_t>(position);
            for (int k = 0; k < 4; ++k) {
                at(3 + k, row) = static_cast<int32_t>(box[k]);
            }
            at(7, row) = static_cast<int32_t>(std::clamp<int64_t>(box[3] - box[1], 0, 1023));
            at(8, row) = static_cast<int32_t>(std::clamp<int64_t>(box[2] - box[0], 0, 1023));
            float* cwh = batch.boxes.data() + row * 4;
            cwh[0] = (corners[0] + corners[2]) * 0.5f;
            cwh[1] = (corners[1] + corners[3]) * 0.5f;
            cwh[2] = std::max(corners[2] - corners[0], 1e-3f) + eps;
            cwh[3] = std::max(corners[3] - corners[1], 1e-3f) + eps;
            float* mask = batch.padding.data() + row * tokens;
            std::fill(mask + std::min<int64_t>(page.n_kept + 2, tokens), mask + tokens, kMasked);
        }
        for (int64_t i = 0; i < q; ++i) {
            const int k = page.classes[static_cast<size_t>(i)];
            if (k < 0 || k >= c.num_classes) {
                fail("reading order: class ", k, " outside num_classes ", c.num_classes);
            }
            batch.indices[static_cast<size_t>(kIndexSections * nt + p * q + i)] = k;
            batch.indices[static_cast<size_t>(kIndexSections * nt + n * q + p * q + i)] =
                static_cast<int32_t>(p * tokens + 1 + i);
        }
    }
    return batch;
}

ReadingOrderTensors ReadingOrder::upload(const ReadingOrderBatch& batch) const {
    const int64_t tokens = n_queries_ + 2;
    Backend& be = backend_;
    return {batch.n, be.upload_i32(batch.indices, {static_cast<int64_t>(batch.indices.size())}),
            be.upload(batch.boxes, {batch.n, tokens, 4}),
            be.upload(batch.padding, {batch.n, 1, tokens, tokens})};
}

void ReadingOrder::update(ReadingOrderTensors& in, const ReadingOrderBatch& batch) const {
    if (batch.n != in.n) {
        fail("reading order: a batch of ", batch.n, " pages into inputs of ", in.n);
    }
    backend_.update(in.indices, batch.indices);
    const std::span<const float> boxes[] = {batch.boxes};
    const std::span<const float> padding[] = {batch.padding};
    backend_.update(in.boxes, boxes);
    backend_.update(in.padding, padding);
}

Tensor ReadingOrder::relation_bias(const ReadingOrderTensors& in) const {
    Backend& be = backend_;
    const int64_t n = in.n;
    const int64_t tokens = n_queries_ + 2;
    const int64_t heads = config_.num_attention_heads;
    const int64_t embed = config_.relation_bias_embed_dim;
    // Each pair's relative position (log distances over the source's size, log size ratios), scaled.
    Tensor relative = be.pair_relations(in.boxes, config_.relation_bias_scale);
    relative.shape = {n * tokens * tokens * 4};
    Tensor features = be.sinusoid(relative, inv_freq_);  // [n * t * t * 4, embed]
    features.shape = {n * tokens * tokens, 4 * embed};
    Tensor bias = apply(be, pos_proj_, features);  // [n * t * t, heads]
    bias.shape = {n, tokens, tokens, heads};
    const int perm[] = {0, 3, 1, 2};
    bias = be.permute(bias, perm);  // [n, heads, t, t]
    // The same padding for every head.
    const std::vector<Tensor> per_head(static_cast<size_t>(heads), in.padding);
    be.add(bias, be.concat(per_head, 1));
    return bias;
}

Tensor ReadingOrder::products(const ReadingOrderTensors& in) const {
    Backend& be = backend_;
    const ReadingOrderConfig& c = config_;
    const int64_t n = in.n;
    const int64_t q = n_queries_;
    const int64_t tokens = q + 2;
    const int64_t nt = n * tokens;
    const int64_t hidden = c.hidden_size;
    const int64_t heads = c.num_attention_heads;
    const int64_t head_size = hidden / heads;
    const auto section = [&](int k) { return in.indices.view(k * nt, {nt}); };
    const Tensor labels = in.indices.view(kIndexSections * nt, {n * q});
    const Tensor detection_rows = in.indices.view(kIndexSections * nt + n * q, {n * q});

    // Embeddings: words, token type 0, positions, then the projected 2D positions.  ->  [n * t, hidden]
    Tensor x = be.gather_rows(word_, section(0));
    be.add(x, be.gather_rows(token_type_, section(1)));
    be.add(x, be.gather_rows(position_, section(2)));
    const Tensor spatial_parts[] = {be.gather_rows(x_pos_, section(3)), be.gather_rows(y_pos_, section(4)),
                                    be.gather_rows(x_pos_, section(5)), be.gather_rows(y_pos_, section(6)),
                                    be.gather_rows(h_pos_, section(7)), be.gather_rows(w_pos_, section(8))};
    be.add(x, apply(be, spatial_proj_, be.concat(spatial_parts, 1)));
    // The labels' projected embeddings on the detection tokens (zeros on start and end).
    const Tensor label_features =
        apply(be, label_proj_, be.gather_rows(label_table_, labels));  // [n * q, hidden]
    Tensor label_rows = be.alloc({nt, hidden});
    be.scatter_rows(label_rows, detection_rows, label_features);
    be.add(x, label_rows);
    x = be.layer_norm(x, embed_norm_w_, embed_norm_b_, c.layer_norm_eps);

    const Tensor bias = relation_bias(in);  // [n, heads, t, t]
    const int to_heads[] = {0, 2, 1, 3};    // [n, t, heads, d]  ->  [n, heads, t, d]
    const int to_columns[] = {0, 2, 3, 1};  // [n, t, heads, d]  ->  [n, heads, d, t]
    for (const Layer& layer : layers_) {
        Tensor qh = apply(be, layer.query, x);
        Tensor kh = apply(be, layer.key, x);
        Tensor vh = apply(be, layer.value, x);
        for (Tensor* t : {&qh, &kh, &vh}) {
            t->shape = {n, tokens, heads, head_size};
        }
        qh = be.permute(qh, to_heads);
        kh = be.permute(kh, to_heads);
        vh = be.permute(vh, to_columns);
        Tensor probs = group_products(be, qh, kh, n * heads, tokens, tokens, head_size);
        probs.shape = {n, heads, tokens, tokens};
        be.add(probs, bias);
        be.softmax(probs);
        Tensor context = group_products(be, probs, vh, n * heads, tokens, head_size, tokens);
        context.shape = {n, heads, tokens, head_size};
        context = be.permute(context, to_heads);  // [n, t, heads, head_size]
        context.shape = {nt, hidden};
        Tensor residual = be.copy(x);
        apply(be, layer.attn_out, context, {.residual = &residual});
        x = be.layer_norm(residual, layer.attn_norm_w, layer.attn_norm_b, c.layer_norm_eps);
        const Tensor inner = apply(be, layer.intermediate, x, {.activation = c.hidden_act});
        Tensor out = be.copy(x);
        apply(be, layer.output, inner, {.residual = &out});
        x = be.layer_norm(out, layer.out_norm_w, layer.out_norm_b, c.layer_norm_eps);
    }

    // The global pointer over the detection tokens.
    return global_pointer_products(be, apply(be, pointer_, be.gather_rows(x, detection_rows)), n, q,
                                   c.global_pointer_head_size);
}

std::vector<float> ReadingOrder::forward(std::span<const ReadingOrderInput> pages) const {
    if (pages.empty()) {
        return {};
    }
    return logits(products(upload(pack(pages))));
}

std::vector<float> ReadingOrder::logits(const Tensor& products) const {
    std::vector<float> out = backend_.download(products);
    finish_global_pointer(out, n_queries_, config_.global_pointer_head_size);
    return out;
}

}  // namespace folio
