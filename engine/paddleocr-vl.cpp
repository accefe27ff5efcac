#include "paddleocr-vl.h"

#include <algorithm>
#include <cmath>

#include "error.h"
#include "image-preprocess.h"
#include "kv-cache.h"
#include "rope.h"
#include "weight-source.h"

namespace folio {

namespace {

Tensor reshaped(const Tensor& t, std::vector<int64_t> shape) {
    Tensor r = t;
    r.shape = std::move(shape);
    if (r.n_elements() != t.n_elements()) {
        fail("reshape of ", shape_string(t.shape), " to ", shape_string(r.shape));
    }
    return r;
}

// A layer's bias, or null where it has none.
const Tensor* bias_of(const Linear& layer) {
    return layer.b.empty() ? nullptr : &layer.b;
}

constexpr float kProjectorNormEps = 1e-5f;  // fixed in the reference projector, not read from the config

// How one linear layer is stored. WINT4 groups must tile a row; a layer whose input size they do not divide
// (the vision MLP's 4304) is kept in WINT8 instead. Unquantized layers are bfloat16 when asked.
Quantization layer_quantization(Quantization q, int64_t n_in, const ModelLoadParams& load) {
    if (q == Quantization::None && load.bf16_weights) {
        return Quantization::Bf16;
    }
    return q == Quantization::Wint4 && n_in % load.group_size != 0 ? Quantization::Wint8 : q;
}

// The language model's layers, final norm and LM head as stored (the tied table only when it has its own
// copy).
int64_t text_weight_bytes(const ModelConfig& config, const ModelLoadParams& load) {
    const TextConfig& tc = config.text;
    constexpr auto f32 = static_cast<int64_t>(sizeof(float));
    const auto linear = [&](Quantization q, int64_t n_out, int64_t n_in) {
        return quantized_bytes(layer_quantization(q, n_in, load), n_out, n_in, load.group_size);
    };
    const int64_t d = tc.hidden_size, ff = tc.intermediate_size, hd = tc.head_dim;
    const int64_t q_dim = tc.num_attention_heads * hd, kv_dim = tc.num_key_value_heads * hd;
    const Quantization tq = load.quantization;
    int64_t text_layer = linear(tq, q_dim, d) + 2 * linear(tq, kv_dim, d) + linear(tq, d, q_dim) +
                         2 * linear(tq, ff, d) + linear(tq, d, ff) + 2 * d * f32;
    if (tc.use_bias) {
        text_layer += (q_dim + 2 * kv_dim + d + 2 * ff + d) * f32;
    }
    int64_t bytes = tc.num_hidden_layers * text_layer + d * f32;
    if (!tc.tie_word_embeddings || load.bf16_weights) {
        bytes += linear(Quantization::None, tc.vocab_size, d);
    }
    return bytes;
}

}  // namespace

int64_t weight_bytes(const ModelConfig& config, const ModelLoadParams& load) {
    const VisionConfig& vc = config.vision;
    const TextConfig& tc = config.text;
    constexpr auto f32 = static_cast<int64_t>(sizeof(float));
    const Quantization vq = load.quantize_vision ? load.quantization : Quantization::None;
    const auto linear = [&](Quantization q, int64_t n_out, int64_t n_in) {
        return quantized_bytes(layer_quantization(q, n_in, load), n_out, n_in, load.group_size);
    };
    const int64_t vd = vc.hidden_size, vff = vc.intermediate_size;
    const int64_t side = vc.image_size / vc.patch_size;
    const int64_t patch_dim = vc.patch_dim();
    const int64_t merged = vd * vc.spatial_merge_size * vc.spatial_merge_size;
    int64_t bytes =
        (vd * patch_dim + vd + side * side * vd + 2 * vd) * f32;  // patches, positions, final norm
    bytes += linear(Quantization::None, merged, merged) + linear(Quantization::None, tc.hidden_size, merged) +
             (merged + tc.hidden_size + 2 * vd) * f32;  // projector
    const int64_t vision_layer = 4 * linear(vq, vd, vd) + linear(vq, vff, vd) + linear(vq, vd, vff) +
                                 (4 * vd + 4 * vd + vff + vd) * f32;
    bytes += vc.num_hidden_layers * vision_layer;
    return bytes + text_weight_bytes(config, load) + tc.vocab_size * tc.hidden_size * f32;  // the embedding
}

int64_t decode_weight_bytes(const ModelConfig& config, const ModelLoadParams& load) {
    const TextConfig& tc = config.text;
    const int64_t head = !tc.tie_word_embeddings || load.bf16_weights
                             ? 0
                             : tc.vocab_size * tc.hidden_size * static_cast<int64_t>(sizeof(float));
    return text_weight_bytes(config, load) + head;
}

Tensor PaddleOcrVl::load(WeightSource& weights, const std::string& name, std::vector<int64_t> shape) {
    std::vector<float> values = weights.load(name, shape);
    n_params_ += static_cast<int64_t>(values.size());
    n_weight_bytes_ += static_cast<int64_t>(values.size() * sizeof(float));
    return backend_.upload(values, std::move(shape));
}

Linear PaddleOcrVl::load_linear(WeightSource& weights, const std::string& prefix, int64_t n_out, int64_t n_in,
                                bool bias, Quantization quantization) {
    return load_stacked_linear(weights, {prefix}, {n_out}, n_in, bias, quantization);
}

Linear PaddleOcrVl::load_stacked_linear(WeightSource& weights, const std::vector<std::string>& prefixes,
                                        const std::vector<int64_t>& n_outs, int64_t n_in, bool bias,
                                        Quantization quantization) {
    std::vector<float> values, biases;  // [sum of n_outs, n_in], [sum of n_outs]
    int64_t n_out = 0;
    for (size_t i = 0; i < prefixes.size(); ++i) {
        const std::vector<float> w = weights.load(prefixes[i] + ".weight", {n_outs[i], n_in});
        values.insert(values.end(), w.begin(), w.end());
        if (bias) {
            const std::vector<float> b = weights.load(prefixes[i] + ".bias", {n_outs[i]});
            biases.insert(biases.end(), b.begin(), b.end());
        }
        n_out += n_outs[i];
    }
    n_params_ += static_cast<int64_t>(values.size() + biases.size());
    Linear layer;
    quantization = layer_quantization(quantization, n_in, load_params_);
    if (quantization == Quantization::None) {
        n_weight_bytes_ += static_cast<int64_t>(values.size() * sizeof(float));
        layer.w = backend_.upload(values, {n_out, n_in});
    } else {
        n_weight_bytes_ += quantized_bytes(quantization, n_out, n_in, load_params_.group_size);
        layer.q = backend_.upload(quantize(values, n_out, n_in, quantization, load_params_.group_size));
    }
    if (bias) {
        n_weight_bytes_ += static_cast<int64_t>(biases.size() * sizeof(float));
        layer.b = backend_.upload(biases, {n_out});
    }
    return layer;
}

Tensor PaddleOcrVl::apply(const Linear& layer, const Tensor& x) {
    const Tensor* bias = bias_of(layer);
    return layer.q.data ? backend_.linear(x, layer.q, bias) : backend_.linear(x, layer.w, bias);
}

Tensor PaddleOcrVl::apply_gelu_tanh(const Linear& layer, const Tensor& x) {
    const Tensor* bias = bias_of(layer);
    if (layer.q.data) {
        return backend_.linear_gelu_tanh(x, layer.q, bias);
    }
    Tensor y = backend_.linear(x, layer.w, bias);
    backend_.gelu_tanh(y);
    return y;
}

void PaddleOcrVl::apply_add(Tensor& y, const Linear& layer, const Tensor& x) {
    const Tensor* bias = bias_of(layer);
    if (layer.q.data) {
        backend_.linear_add(y, x, layer.q, bias);
    } else {
        backend_.add(y, backend_.linear(x, layer.w, bias));
    }
}

Tensor PaddleOcrVl::apply_layer_norm(const Linear& layer, const Tensor& x, const Tensor& norm_w,
                                     const Tensor& norm_b, float eps) {
    if (layer.q.data) {
        return backend_.linear_layer_norm(x, norm_w, norm_b, eps, layer.q, bias_of(layer));
    }
    return apply(layer, backend_.layer_norm(x, norm_w, norm_b, eps));
}

void PaddleOcrVl::apply_layer_norm_mlp_add(Tensor& x, const Linear& fc1, const Linear& fc2,
                                           const Tensor& norm_w, const Tensor& norm_b, float eps) {
    if (fc1.q.data && fc2.q.data) {
        backend_.layer_norm_mlp_add(x, norm_w, norm_b, eps, fc1.q, bias_of(fc1), fc2.q, bias_of(fc2));
        return;
    }
    apply_add(x, fc2,
              apply_gelu_tanh(fc1, backend_.layer_norm(x, norm_w, norm_b, eps)));  // through [n, d_ff]
}

Tensor PaddleOcrVl::apply_rms_norm(const Linear& layer, const Tensor& x, const Tensor& norm, float eps) {
    if (layer.q.data) {
        return backend_.linear_rms_norm(x, norm, eps, layer.q, bias_of(layer));
    }
    return apply(layer, backend_.rms_norm(x, norm, eps));
}

Tensor PaddleOcrVl::apply_rms_norm_swiglu(const Linear& layer, const Tensor& x, const Tensor& norm,
                                          float eps) {
    if (layer.q.data) {
        return backend_.linear_rms_norm_swiglu(x, norm, eps, layer.q, bias_of(layer));
    }
    return backend_.swiglu(apply_rms_norm(layer, x, norm, eps));
}

void PaddleOcrVl::apply_rms_norm_mlp_add(Tensor& x, const Linear& gate_up, const Linear& down,
                                         const Tensor& norm, float eps) {
    if (gate_up.q.data && down.q.data) {
        backend_.rms_norm_mlp_add(x, norm, eps, gate_up.q, bias_of(gate_up), down.q, bias_of(down));
        return;
    }
    apply_add(x, down, apply_rms_norm_swiglu(gate_up, x, norm, eps));  // through [n, ff]
}

Tensor PaddleOcrVl::apply_rms_norm_rope_qkv_to_cache(const Linear& layer, const Tensor& x, const Tensor& norm,
                                                     float eps, const DecoderStep& step, Tensor& k_cache,
                                                     Tensor& v_cache) {
    if (layer.q.data) {
        return backend_.linear_rms_norm_rope_qkv_to_cache(
            x, norm, eps, layer.q, bias_of(layer), step.positions, step.slots, text_rope, k_cache, v_cache);
    }
    return backend_.rope_qkv_to_cache(apply_rms_norm(layer, x, norm, eps), step.positions, step.slots,
                                      text_rope, k_cache, v_cache);
}

Tensor PaddleOcrVl::load_optional_bias(WeightSource& weights, const std::string& name, int64_t n,
                                       bool present) {
    return present ? load(weights, name, {n}) : Tensor{};
}

PaddleOcrVl::PaddleOcrVl(Backend& backend, const ModelConfig& config, WeightSource& weights,
                         const ModelLoadParams& load_params)
    : load_params_(load_params), backend_(backend), config_(config) {
    const Quantization text_q = load_params.quantization;
    const Quantization vision_q = load_params.quantize_vision ? text_q : Quantization::None;
    const VisionConfig& vc = config.vision;
    const TextConfig& tc = config.text;
    const int64_t vd = vc.hidden_size, vff = vc.intermediate_size;
    const int64_t patch_dim = vc.patch_dim();
    const int64_t side = vc.image_size / vc.patch_size;
    const std::string vp = "model.visual.vision_model.";

    patch_w = load(weights, vp + "embeddings.patch_embedding.weight",
                   {vd, vc.num_channels, vc.patch_size, vc.patch_size});
    patch_w.shape = {vd, patch_dim};
    patch_b = load(weights, vp + "embeddings.patch_embedding.bias", {vd});
    position_grid = load(weights, vp + "embeddings.position_embedding.weight", {side * side, vd});
    for (int l = 0; l < vc.num_hidden_layers; ++l) {
        const std::string p = vp + "encoder.layers." + std::to_string(l) + ".";
        VisionLayer& L = vision_layers.emplace_back();
        L.ln1_w = load(weights, p + "layer_norm1.weight", {vd});
        L.ln1_b = load(weights, p + "layer_norm1.bias", {vd});
        L.qkv_proj = load_stacked_linear(
            weights, {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"}, {vd, vd, vd},
            vd, true, vision_q);
        L.o_proj = load_linear(weights, p + "self_attn.out_proj", vd, vd, true, vision_q);
        L.ln2_w = load(weights, p + "layer_norm2.weight", {vd});
        L.ln2_b = load(weights, p + "layer_norm2.bias", {vd});
        L.fc1 = load_linear(weights, p + "mlp.fc1", vff, vd, true, vision_q);
        L.fc2 = load_linear(weights, p + "mlp.fc2", vd, vff, true, vision_q);
    }
    post_ln_w = load(weights, vp + "post_layernorm.weight", {vd});
    post_ln_b = load(weights, vp + "post_layernorm.bias", {vd});

    const int64_t merged = vd * vc.spatial_merge_size * vc.spatial_merge_size;
    proj_ln_w = load(weights, "model.projector.pre_norm.weight", {vd});
    proj_ln_b = load(weights, "model.projector.pre_norm.bias", {vd});
    proj_fc1 = load_linear(weights, "model.projector.linear_1", merged, merged, true, Quantization::None);
    proj_fc2 =
        load_linear(weights, "model.projector.linear_2", tc.hidden_size, merged, true, Quantization::None);

    const int64_t d = tc.hidden_size, ff = tc.intermediate_size, hd = tc.head_dim;
    const int64_t q_dim = tc.num_attention_heads * hd, kv_dim = tc.num_key_value_heads * hd;
    const std::string tp = "model.language_model.";
    embed_tokens = load(weights, tp + "embed_tokens.weight", {tc.vocab_size, d});
    for (int l = 0; l < tc.num_hidden_layers; ++l) {
        const std::string p = tp + "layers." + std::to_string(l) + ".";
        TextLayer& L = text_layers.emplace_back();
        L.input_norm = load(weights, p + "input_layernorm.weight", {d});
        L.qkv_proj = load_stacked_linear(
            weights, {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"},
            {q_dim, kv_dim, kv_dim}, d, tc.use_bias, text_q);
        L.o_proj = load_linear(weights, p + "self_attn.o_proj", d, q_dim, tc.use_bias, text_q);
        L.post_norm = load(weights, p + "post_attention_layernorm.weight", {d});
        L.gate_up_proj = load_stacked_linear(weights, {p + "mlp.gate_proj", p + "mlp.up_proj"}, {ff, ff}, d,
                                             tc.use_bias, text_q);
        L.down_proj = load_linear(weights, p + "mlp.down_proj", d, ff, tc.use_bias, text_q);
    }
    final_norm = load(weights, tp + "norm.weight", {d});
    text_rope.inv_freq =
        backend_.upload(rope_inverse_frequencies(static_cast<int>(hd), tc.rope_theta), {hd / 2});  // [hd / 2]
    text_rope.section = tc.mrope_section;
    const bool untied_head = !tc.tie_word_embeddings && weights.has("lm_head.weight");
    if (untied_head) {
        lm_head = load_linear(weights, "lm_head", tc.vocab_size, d, false, Quantization::None);
    } else if (load_params.bf16_weights) {
        // A bfloat16 copy of the tied table: decoding reads the head every step, the embedding only by row.
        const std::vector<float> table = backend_.download(embed_tokens);
        lm_head.q = backend_.upload(quantize(table, tc.vocab_size, d, Quantization::Bf16, d));
        n_weight_bytes_ += quantized_bytes(Quantization::Bf16, tc.vocab_size, d, d);
    } else {
        lm_head.w = embed_tokens;
    }
}

std::pair<Tensor, Tensor> PaddleOcrVl::vision_rope(std::span<const ImageGrid> grids) {
    const VisionConfig& vc = config_.vision;
    const int64_t hd = vc.head_dim();
    int64_t side = 0, n = 0;
    for (const ImageGrid& g : grids) {
        side = std::max({side, g.h, g.w});
        n += g.n_patches();
    }
    if (n == 0) {
        return {backend_.alloc({0, hd}), backend_.alloc({0, hd})};
    }
    if (side > vision_rope_side_) {
        const RopeTables axis = vision_axis_rope_tables(side, static_cast<int>(hd), vc.rope_theta);
        std::vector<float> both = axis.cos;
        both.insert(both.end(), axis.sin.begin(), axis.sin.end());
        vision_axis_rope_ = backend_.upload(both, {2 * side, hd / 4});
        vision_rope_side_ = side;
    }
    // A patch's cos row from rows (y, x, y, x), its sin row from the same rows of the sin half.
    const std::vector<int64_t> rows = vision_rope_rows(grids, 2, vision_rope_side_);
    const Tensor tables = backend_.gather_rows(vision_axis_rope_, rows);  // [2 * n * 4, hd / 4]
    return {tables.view(0, {n, hd}), tables.view(n * hd, {n, hd})};
}

Tensor PaddleOcrVl::encode_vision(std::span<const std::span<const float>> pixels,
                                  std::span<const ImageGrid> grids) {
    const int64_t n = patches_of(grids, total_size(pixels), "pixel values");
    return encode_patches(backend_.upload(pixels, {n, patch_w.shape[1]}), grids);
}

Tensor PaddleOcrVl::encode_vision(std::span<const std::span<const uint8_t>> levels,
                                  const ChannelLevels& level_values, std::span<const ImageGrid> grids) {
    const int64_t n = patches_of(grids, total_size(levels), "levels");
    const int64_t patch_dim = patch_w.shape[1];
    if (patch_dim % 3 != 0) {
        fail("vision encoder: patches of ", patch_dim, " values are not three channels");
    }
    return encode_patches(backend_.upload_levels(levels, level_values, patch_dim / 3, {n, patch_dim}), grids);
}

int64_t PaddleOcrVl::patches_of(std::span<const ImageGrid> grids, int64_t n_values, const char* what) const {
    const int64_t patch_dim = patch_w.shape[1];
    int64_t n = 0;
    for (const ImageGrid& g : grids) {
        n += g.n_patches();
    }
    if (n_values != n * patch_dim) {
        fail("vision encoder: ", n_values, " ", what, " for ", n, " patches of ", patch_dim);
    }
    return n;
}

Tensor PaddleOcrVl::encode_patches(const Tensor& patches, std::span<const ImageGrid> grids) {
    const VisionConfig& vc = config_.vision;
    const int64_t vd = vc.hidden_size, n_head = vc.num_attention_heads, hd = vd / n_head;
    const int64_t n = patches.rows();
    std::vector<AttentionSegment> segments;
    for (int64_t first = 0; const ImageGrid& g : grids) {
        segments.push_back({first, g.n_patches(), first, g.n_patches(), false, 0});
        first += g.n_patches();
    }
    // Patch embedding (a stride-14 convolution is a linear map of each flattened patch) plus the learned
    // position grid resampled to each image.
    Tensor x = backend_.linear(patches, patch_w, &patch_b);  // [n, vd]
    // The learned position grid, resampled onto each image: four bilinear taps a patch.
    const PositionTaps taps = vision_position_taps(grids, static_cast<int>(vc.image_size / vc.patch_size));
    backend_.add_weighted_rows(x, position_grid, taps.rows, taps.weights);
    const auto [cos, sin] = vision_rope(grids);  // [n, hd] each
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (const VisionLayer& L : vision_layers) {
        if (L.qkv_proj.q.data && L.o_proj.q.data) {
            backend_.layer_norm_attention_add(x,
                                              {L.ln1_w, L.ln1_b, vc.layer_norm_eps, L.qkv_proj.q,
                                               bias_of(L.qkv_proj), L.o_proj.q, bias_of(L.o_proj), n_head},
                                              cos, sin, segments, scale, attention_precision());
        } else {
            // [n, 3, n_head, hd]
            const Tensor qkv = reshaped(apply_layer_norm(L.qkv_proj, x, L.ln1_w, L.ln1_b, vc.layer_norm_eps),
                                        {n, 3, n_head, hd});
            // [n, n_head, hd]
            const Tensor a = backend_.rope_attention(qkv, cos, sin, segments, scale, attention_precision());
            apply_add(x, L.o_proj, reshaped(a, {n, vd}));
        }
        apply_layer_norm_mlp_add(x, L.fc1, L.fc2, L.ln2_w, L.ln2_b, vc.layer_norm_eps);
    }
    return backend_.layer_norm(x, post_ln_w, post_ln_b, vc.layer_norm_eps);
}

Tensor PaddleOcrVl::project(const Tensor& vision_features, std::span<const ImageGrid> grids) {
    const int64_t m = config_.vision.spatial_merge_size;
    const int64_t vd = config_.vision.hidden_size;
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
    const Tensor normed = backend_.layer_norm(vision_features, proj_ln_w, proj_ln_b, kProjectorNormEps);
    const int64_t n_merged = base / (m * m);
    const Tensor merged =
        reshaped(backend_.gather_rows(normed, order), {n_merged, vd * m * m});  // [n / 4, 4 vd]
    Tensor h = apply(proj_fc1, merged);                                         // [n / 4, 4 vd]
    backend_.gelu_erf(h);
    return apply(proj_fc2, h);  // [n / 4, hidden]
}

Tensor PaddleOcrVl::embed(std::span<const int32_t> ids) {
    std::vector<int64_t> rows(ids.begin(), ids.end());
    for (const int64_t id : rows) {
        if (id < 0 || id >= config_.text.vocab_size) {
            fail("token id ", id, " outside the vocabulary of ", config_.text.vocab_size);
        }
    }
    return backend_.gather_rows(embed_tokens, rows);  // [n, hidden]
}

Tensor PaddleOcrVl::embed(const Tensor& ids, const Tensor& pending) {
    return backend_.gather_token_rows(embed_tokens, ids, pending);  // [n, hidden]
}

Tensor PaddleOcrVl::forward_text(Tensor embeds, std::span<const std::array<int64_t, 3>> positions,
                                 PagedKvCache& cache, const KvBatch& batch) {
    const int64_t n = embeds.rows();
    if (static_cast<int64_t>(positions.size()) != n || static_cast<int64_t>(batch.slots.size()) != n) {
        fail("language model: ", positions.size(), " positions and ", batch.slots.size(), " cache slots for ",
             n, " tokens");
    }
    std::vector<int32_t> flat_positions, slots;  // [n, 3], [n]
    for (int64_t i = 0; i < n; ++i) {
        for (const int64_t p : positions[i]) {
            flat_positions.push_back(static_cast<int32_t>(p));
        }
        slots.push_back(static_cast<int32_t>(batch.slots[i]));
    }
    DecoderStep step;
    step.positions = backend_.upload_i32(flat_positions, {n, 3});
    step.slots = backend_.upload_i32(slots, {n});
    step.batch = &batch;
    return forward_text(std::move(embeds), step, cache);
}

KvCacheParams PaddleOcrVl::kv_cache_params(int64_t n_blocks, int64_t block_size) const {
    const TextConfig& tc = config_.text;
    KvCacheParams params{tc.num_hidden_layers, tc.num_key_value_heads, tc.head_dim, n_blocks, block_size};
    params.dtype = backend_.kv_dtype(attention_precision());
    return params;
}

Tensor PaddleOcrVl::forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) {
    const TextConfig& tc = config_.text;
    const int64_t n = embeds.rows(), hd = tc.head_dim, n_head = tc.num_attention_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int64_t block_size = cache.params().block_size;

    Tensor x = std::move(embeds);  // [n, d]; the residual stream
    for (size_t l = 0; l < text_layers.size(); ++l) {
        const TextLayer& L = text_layers[l];
        const auto layer = static_cast<int>(l);
        const Tensor q =
            apply_rms_norm_rope_qkv_to_cache(L.qkv_proj, x, L.input_norm, tc.rms_norm_eps, step,
                                             cache.keys(layer), cache.values(layer));  // [n, n_head, hd]
        const Tensor a =
            step.batch != nullptr
                ? backend_.paged_attention(q, cache.keys(layer), cache.values(layer), step.batch->seqs,
                                           step.batch->block_tables, block_size, scale, attention_precision())
                : backend_.paged_decode_attention(q, cache.keys(layer), cache.values(layer), step.seq_lens,
                                                  step.block_tables, block_size, scale,
                                                  attention_precision());  // [n, n_head, hd]
        apply_add(x, L.o_proj, reshaped(a, {n, n_head * hd}));
        apply_rms_norm_mlp_add(x, L.gate_up_proj, L.down_proj, L.post_norm,
                               tc.rms_norm_eps);  // through [n, ff]
    }
    return x;
}

Tensor PaddleOcrVl::logits(const Tensor& hidden) {
    // The norm as a pass of its own: inside the head's GEMV, each of its many blocks would scale its input by
    // the norm's weights again, which costs more than the pass.
    return apply(lm_head, backend_.rms_norm(hidden, final_norm, config_.text.rms_norm_eps));
}

}  // namespace folio
