#include "engine/models/ernie45-vl/vision-model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/common/error.h"
#include "engine/models/layers.h"
#include "engine/models/vision-rope.h"

namespace folio {

namespace {

int64_t frame_pairs(const ImageGrid& grid, const Ernie45VlVisionConfig& config) {
    return grid.t == 1 ? 1 : grid.t / config.temporal_merge_size;
}

}  // namespace

int64_t ernie45_vl_media_tokens(const ImageGrid& grid, const Ernie45VlVisionConfig& config) {
    const int64_t m = config.spatial_merge_size;
    return frame_pairs(grid, config) * (grid.h / m) * (grid.w / m);
}

Ernie45VlVision::Ernie45VlVision(WeightLoader& weights, const Ernie45VlConfig& config)
    : backend_(weights.backend()),
      config_(config),
      precision_(attention_precision(weights.params())),
      act_(config.vision.hidden_act == "quick_gelu" ? Activation::QuickGelu : Activation::GeluTanh),
      rope_(config.vision.head_dim(), config.vision.rope_theta) {
    const Quantization q = weights.vision_quantization();
    const Ernie45VlVisionConfig& vc = config.vision;
    const int64_t vd = vc.hidden_size, vff = vc.intermediate_size;
    const int64_t m2 = int64_t{vc.spatial_merge_size} * vc.spatial_merge_size;
    const std::string vp = "model.vision_model.";
    patch_w_ = weights.load(vp + "patch_embed.proj.weight", {vd, vc.patch_dim()});
    for (int l = 0; l < vc.depth; ++l) {
        const std::string p = vp + "blocks." + std::to_string(l) + ".";
        Block& B = blocks_.emplace_back();
        B.norm1_w = weights.load(p + "norm1.weight", {vd});
        B.norm1_b = weights.load(p + "norm1.bias", {vd});
        B.qkv = weights.load_linear(p + "attn.qkv", 3 * vd, vd, true, q);
        B.proj = weights.load_linear(p + "attn.proj", vd, vd, true, q);
        B.norm2_w = weights.load(p + "norm2.weight", {vd});
        B.norm2_b = weights.load(p + "norm2.bias", {vd});
        B.fc1 = weights.load_linear(p + "mlp.fc1", vff, vd, true, q);
        B.fc2 = weights.load_linear(p + "mlp.fc2", vd, vff, true, q);
    }
    ln_w_ = weights.load(vp + "ln.weight", {vd});
    ln_b_ = weights.load(vp + "ln.bias", {vd});
    const std::string rp = "model.resampler_model.";
    const auto merge_mlp = [&](const std::string& p, int64_t n_in) {
        MergeMlp M;
        M.fc1 = weights.load_linear(p + "0", m2 * vd, n_in, true, Quantization::None);
        M.fc2 = weights.load_linear(p + "2", m2 * vd, m2 * vd, true, Quantization::None);
        M.ln_w = weights.load(p + "3.weight", {m2 * vd});
        M.ln_b = weights.load(p + "3.bias", {m2 * vd});
        return M;
    };
    spatial_ = merge_mlp(rp + "spatial_linear.", m2 * vd);
    temporal_ = merge_mlp(rp + "temporal_linear.", m2 * vd * vc.temporal_merge_size);
    mlp_ = weights.load_linear(rp + "mlp", config.text.hidden_size, m2 * vd, true, Quantization::None);
    after_norm_ = weights.load(rp + "after_norm.weight", {config.text.hidden_size});
}

Tensor Ernie45VlVision::encode(const Tensor& patches, std::span<const ImageGrid> grids) {
    const Ernie45VlVisionConfig& vc = config_.vision;
    const int64_t n_head = vc.num_heads, hd = vc.head_dim();
    std::vector<AttentionSegment> segments;
    int64_t n = 0;
    // Attention within each frame: a video's frames see each other only through the temporal merge.
    for (const ImageGrid& g : grids) {
        for (int64_t t = 0; t < g.t; ++t) {
            segments.push_back({n, g.h * g.w, n, g.h * g.w, false, 0});
            n += g.h * g.w;
        }
    }
    if (patches.rows() != n || patches.row_size() != vc.patch_dim()) {
        fail("ERNIE-4.5-VL vision: patches ", shape_string(patches.shape), " for ", n, " patches of ",
             vc.patch_dim(), " values");
    }
    Tensor x = backend_.linear(patches, patch_w_, nullptr);  // [n, vd]
    const auto [cos, sin] = rope_.rows(backend_, grids);     // [n, hd] each
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (const Block& B : blocks_) {
        layer_norm_attention_add(backend_, x, {B.norm1_w, B.norm1_b, vc.eps, B.qkv, B.proj, n_head}, cos, sin,
                                 segments, scale, precision_);
        layer_norm_mlp_add(backend_, x, B.fc1, B.fc2, B.norm2_w, B.norm2_b, vc.eps, act_, mlp_chunk_rows_);
    }
    return backend_.layer_norm(x, ln_w_, ln_b_, vc.eps);
}

Tensor Ernie45VlVision::resample(const Tensor& features, std::span<const ImageGrid> grids) {
    const Ernie45VlVisionConfig& vc = config_.vision;
    const int64_t m = vc.spatial_merge_size, vd = vc.hidden_size;
    // The spatial merge: each window's patches, row by row, side by side in one row.
    std::vector<int64_t> window_rows;  // [n_patches]
    // The temporal merge: each pair of frames' windows side by side (an image's with themselves).
    std::vector<int64_t> first_rows, second_rows;  // [n_tokens]: rows of the merged windows
    int64_t patch0 = 0, window0 = 0;
    for (const ImageGrid& g : grids) {
        if (g.h % m != 0 || g.w % m != 0 || (g.t > 1 && g.t % vc.temporal_merge_size != 0)) {
            fail("ERNIE-4.5-VL resampler: a grid of ", g.t, "x", g.h, "x", g.w, " does not merge by ", m,
                 " (and frames by ", vc.temporal_merge_size, ")");
        }
        const int64_t windows = (g.h / m) * (g.w / m);
        for (int64_t t = 0; t < g.t; ++t) {
            for (int64_t wy = 0; wy < g.h / m; ++wy) {
                for (int64_t wx = 0; wx < g.w / m; ++wx) {
                    for (int64_t dy = 0; dy < m; ++dy) {
                        for (int64_t dx = 0; dx < m; ++dx) {
                            window_rows.push_back(patch0 + (t * g.h + wy * m + dy) * g.w + wx * m + dx);
                        }
                    }
                }
            }
        }
        for (int64_t pair = 0; pair < frame_pairs(g, vc); ++pair) {
            const int64_t t0 = g.t == 1 ? 0 : 2 * pair, t1 = g.t == 1 ? 0 : 2 * pair + 1;
            for (int64_t w = 0; w < windows; ++w) {
                first_rows.push_back(window0 + t0 * windows + w);
                second_rows.push_back(window0 + t1 * windows + w);
            }
        }
        patch0 += g.n_patches();
        window0 += g.t * windows;
    }
    if (features.rows() != patch0) {
        fail("ERNIE-4.5-VL resampler: ", features.rows(), " feature rows for ", patch0, " patches");
    }
    const auto merge = [&](const MergeMlp& M, const Tensor& x) {
        LinearSpec up;
        up.activation = Activation::Gelu;
        Tensor h = apply(backend_, M.fc1, x, up);
        return backend_.layer_norm(apply(backend_, M.fc2, h), M.ln_w, M.ln_b, vc.eps);
    };
    // Windows and tokens are merged chunk_rows at a time: each is independent of the others, and a large
    // image's merged rows, several times its features' width, would otherwise all be held at once.
    const int64_t chunk = resample_chunk_rows_;
    const auto joined = [&](std::vector<Tensor>& pieces) {
        Tensor all = pieces.size() == 1 ? pieces.front() : backend_.concat(pieces, 0);
        pieces.clear();
        return all;
    };
    std::vector<Tensor> pieces;
    for (int64_t w = 0; w < window0; w += chunk) {
        const int64_t n = std::min(chunk, window0 - w);
        const std::span<const int64_t> rows = std::span(window_rows).subspan(w * m * m, n * m * m);
        pieces.push_back(merge(spatial_, reshaped(backend_.gather_rows(features, rows), {n, m * m * vd})));
    }
    const Tensor spatial = joined(pieces);  // [n_windows, 4 vd]
    const auto n_tokens = static_cast<int64_t>(first_rows.size());
    for (int64_t t = 0; t < n_tokens; t += chunk) {
        const auto n = static_cast<size_t>(std::min(chunk, n_tokens - t));
        const Tensor parts[] = {backend_.gather_rows(spatial, std::span(first_rows).subspan(t, n)),
                                backend_.gather_rows(spatial, std::span(second_rows).subspan(t, n))};
        const Tensor temporal = merge(temporal_, backend_.concat(parts, 1));  // [n, 4 vd]
        pieces.push_back(
            backend_.rms_norm(apply(backend_, mlp_, temporal), after_norm_, config_.text.rms_norm_eps));
    }
    return joined(pieces);  // [n_tokens, hidden]
}

}  // namespace folio
