#include "engine/models/layers.h"

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"

namespace folio {

void layer_norm_attention_add(Backend& backend, Tensor& x, const NormAttentionLayer& layer, const Tensor& cos,
                              const Tensor& sin, std::span<const AttentionSegment> segments, float scale,
                              AttentionPrecision precision) {
    const int64_t n = x.rows(), d = x.row_size();
    if (layer.n_head <= 0 || d % layer.n_head != 0) {
        fail("layer_norm_attention_add: rows of ", d, " are not ", layer.n_head, " heads");
    }
    LinearSpec qkv_spec = layer_normed(layer.norm_w, layer.norm_b, layer.eps);
    // Rounding q, k and v to bfloat16 is what attention at Bf16 allows.
    qkv_spec.bf16_output = precision == AttentionPrecision::Bf16;
    const Tensor qkv =
        reshaped(apply(backend, layer.qkv, x, qkv_spec), {n, 3, layer.n_head, d / layer.n_head});
    const Tensor a = backend.rope_attention(qkv, cos, sin, segments, scale, precision);  // [n, n_head, hd]
    apply(backend, layer.out, reshaped(a, {n, d}), {.residual = &x});
}

void layer_norm_mlp_add(Backend& backend, Tensor& x, const Linear& fc1, const Linear& fc2,
                        const Tensor& norm_w, const Tensor& norm_b, float eps, Activation act,
                        int64_t chunk_rows) {
    if (chunk_rows < 1) {
        fail("layer_norm_mlp_add: chunks of ", chunk_rows, " rows");
    }
    LinearSpec up = layer_normed(norm_w, norm_b, eps);
    // The linear operation fuses the activations its epilogues have; any other runs as a pass of its own.
    const bool fused = act == Activation::GeluTanh || act == Activation::None;
    up.activation = fused ? act : Activation::None;
    up.bf16_output = fused;
    const auto add = [&](Tensor& rows) {
        Tensor h = apply(backend, fc1, rows, up);  // [rows, d_ff]
        if (!fused) {
            backend.apply_activation(h, act);
        }
        apply(backend, fc2, h, {.residual = &rows});
    };
    const int64_t n = x.rows(), d = x.row_size();
    if (n <= chunk_rows) {
        add(x);
        return;
    }
    for (int64_t first = 0; first < n; first += chunk_rows) {
        Tensor part = x.view(first * d, {std::min(chunk_rows, n - first), d});  // x's rows, in place
        add(part);
    }
}

void rms_norm_paged_attention_add(Backend& backend, Tensor& x, const PagedAttentionLayer& attention,
                                  const DecoderStep& step, PagedKvCache& cache, int layer) {
    const int64_t n = x.rows(), hd = attention.head_dim, block_size = cache.params().block_size;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    // The input norm and the qkv product, q returned, k and v turned and stored at the step's cache rows.
    LinearSpec qkv_spec = rms_normed(attention.norm_w, attention.eps);
    qkv_spec.output = LinearOutputKind::RopeToCache;
    qkv_spec.rope_to_cache = {&step.positions, &step.slots, &attention.rope, &cache.keys(layer),
                              &cache.values(layer)};
    const Tensor q = apply(backend, attention.qkv, x, qkv_spec);  // [n, n_head, hd]
    const Tensor a =
        step.batch != nullptr
            ? backend.paged_attention(q, cache.keys(layer), cache.values(layer), step.batch->seqs,
                                      step.batch->block_tables, block_size, scale, attention.precision)
            : backend.paged_decode_attention(q, cache.keys(layer), cache.values(layer), step.seq_lens,
                                             step.block_tables, block_size, scale,
                                             attention.precision);  // [n, n_head, hd]
    apply(backend, attention.out, reshaped(a, {n, attention.n_head * hd}), {.residual = &x});
}

void rms_norm_mlp_add(Backend& backend, Tensor& x, const Linear& gate_up, const Linear& down,
                      const Tensor& norm_w, float eps) {
    LinearSpec up = rms_normed(norm_w, eps);
    up.activation = Activation::Swiglu;
    up.bf16_output = true;
    apply(backend, down, apply(backend, gate_up, x, up), {.residual = &x});  // through [n, d_ff]
}

}  // namespace folio
