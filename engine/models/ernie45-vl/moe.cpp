#include "engine/models/ernie45-vl/moe.h"

#include <algorithm>
#include <vector>

#include "engine/backend/collectives.h"
#include "engine/common/error.h"

namespace folio {

MoeBlock::MoeBlock(WeightLoader& weights, const std::string& prefix, const Ernie45VlTextConfig& config)
    : backend_(weights.backend()),
      k_(config.n_experts_per_token),
      norm_min_(config.moe_norm_min),
      n_experts_(config.n_experts),
      d_(config.hidden_size) {
    if (config.use_bias) {
        fail(prefix, ": experts with biases are not supported (use_bias is true)");
    }
    const Quantization q = weights.params().quantization;
    const int64_t d = config.hidden_size, n_experts = config.n_experts;
    const TensorSplit& split = weights.params().split;
    reduce_ = split.n_ranks > 1 ? split.collectives : nullptr;
    const Tensor bias = weights.load(prefix + "moe_statics.e_score_correction_bias", {2, n_experts});
    const std::vector<float> biases = backend_.download(bias);  // [2, n_experts]
    for (int pool = 0; pool < 2; ++pool) {
        Pool& P = pools_[pool];
        P.router = weights.load(prefix + (pool == 0 ? "gate.weight" : "gate.weight_1"), {n_experts, d});
        P.score_bias = backend_.upload(
            std::span(biases).subspan(static_cast<size_t>(pool * n_experts), static_cast<size_t>(n_experts)),
            {n_experts});
        const int64_t d_ff = config.moe_intermediate_size[static_cast<size_t>(pool)];
        // A tensor-parallel rank holds its part of every expert's columns.
        P.d_ff = split.part(d_ff, "expert columns").count;
        std::vector<std::string> gate_up, down;
        for (int64_t e = 0; e < n_experts; ++e) {
            const std::string p = prefix + "experts." + std::to_string(pool * n_experts + e) + ".";
            gate_up.push_back(p + "gate_proj");
            gate_up.push_back(p + "up_proj");
            down.push_back(p + "down_proj");
        }
        P.gate_up = weights.load_column_parallel(gate_up, std::vector<int64_t>(gate_up.size(), d_ff),
                                                 std::vector<int64_t>(gate_up.size(), d_ff), d, false, q);
        P.down = weights.load_row_parallel(down, std::vector<int64_t>(down.size(), d), d_ff, d_ff, false, q);
    }
    if (config.n_shared_experts > 0) {
        const int64_t ff = config.moe_intermediate_size[0] * config.n_shared_experts;
        const std::string p = prefix + "shared_experts.";
        shared_gate_up_ =
            weights.load_column_parallel({p + "gate_proj", p + "up_proj"}, {ff, ff}, {ff, ff}, d, false, q);
        shared_down_ = weights.load_row_parallel(p + "down_proj", d, ff, ff, false, q);
        shared_down_.reduce = nullptr;  // summed over the ranks with the routed experts' outputs, in add()
    }
}

void MoeBlock::add(Tensor& x, const Tensor& norm_w, float eps, std::span<const uint8_t> vision,
                   bool decode) const {
    if (!vision.empty() && static_cast<int64_t>(vision.size()) != x.rows()) {
        fail("mixture of experts: ", vision.size(), " modalities for ", x.rows(), " tokens");
    }
    // A decode step whose tokens are all text runs in add_routed_experts, which takes the norm itself.
    const bool routed =
        decode && std::none_of(vision.begin(), vision.end(), [](uint8_t v) { return v != 0; });
    if (reduce_ == nullptr) {
        if (routed) {
            add_decode(x, x, norm_w, eps);
        } else {
            add_experts(x, backend_.rms_norm(x, norm_w, eps), vision);  // through xn [n, d]
        }
        return;
    }
    // A tensor-parallel rank's experts give part of each output: the parts summed over the ranks, then added
    // to the residual once.
    Tensor part = backend_.alloc({x.rows(), d_});  // [n, d], zeros
    if (routed) {
        add_decode(part, x, norm_w, eps);
    } else {
        add_experts(part, backend_.rms_norm(x, norm_w, eps), vision);
    }
    reduce_->all_reduce_sum(backend_, part);
    backend_.add(x, part);
}

void MoeBlock::add_experts(Tensor& x, const Tensor& xn, std::span<const uint8_t> vision) const {
    if (!shared_gate_up_.w.empty()) {
        LinearSpec gated;
        gated.activation = Activation::Swiglu;
        apply(backend_, shared_down_, apply(backend_, shared_gate_up_, xn, gated), {.residual = &x});
    }
    add_prompt(x, xn, vision);
}

void MoeBlock::add_decode(Tensor& x, const Tensor& input, const Tensor& norm_w, float eps) const {
    const Pool& P = pools_[0];
    ExpertLayer layer;
    layer.router = P.router;
    layer.score_bias = P.score_bias;
    layer.gate_up = P.gate_up.w;
    layer.down = P.down.w;
    layer.shared_gate_up = shared_gate_up_.w;
    layer.shared_down = shared_down_.w;
    layer.k = k_;
    layer.norm_min = norm_min_;
    layer.norm_w = norm_w;
    layer.norm_eps = eps;
    backend_.add_routed_experts(x, input, layer);
}

void MoeBlock::add_prompt(Tensor& x, const Tensor& xn, std::span<const uint8_t> vision) const {
    const int64_t n = xn.rows();
    if (n == 0) {
        return;
    }
    const auto n_vision =
        static_cast<int64_t>(std::count_if(vision.begin(), vision.end(), [](uint8_t v) { return v != 0; }));
    const bool has_text = n_vision < n;
    const bool has_vision = n_vision > 0;
    const bool has_pool[2] = {has_text, has_vision};
    // Each pool present routes every token by its own router; a token keeps its own pool's choice. With both
    // pools, pool p's expert e is numbered p · n_experts + e, so that one ordering groups all the pairs.
    ExpertRouting routed[2];
    for (int pool = 0; pool < 2; ++pool) {
        if (has_pool[pool]) {
            const Pool& P = pools_[pool];
            const Tensor logits = backend_.linear(xn, P.router, nullptr);  // [n, n_experts]
            routed[pool] = backend_.route_experts(logits, P.score_bias, k_, norm_min_);
        }
    }
    const bool both = has_pool[0] && has_pool[1];
    ExpertRouting routing = has_pool[0] ? routed[0] : routed[1];  // [n, k]
    if (both) {
        const std::vector<int32_t> use_vision(vision.begin(), vision.end());
        routing = backend_.merge_expert_routings(routed[0], routed[1], backend_.upload_i32(use_vision, {n}),
                                                 static_cast<int>(n_experts_));
    }
    const int n_numbered = static_cast<int>(both ? 2 * n_experts_ : n_experts_);
    const ExpertOrder order = backend_.order_by_expert(routing.experts, n_numbered);
    const Tensor sorted_x = backend_.gather_rows(xn, order.rows);  // [n k, d], grouped by expert
    Tensor out = backend_.alloc({n * k_, d_});                     // [n k, d], grouped by expert
    for (int pool = 0; pool < 2; ++pool) {
        if (!has_pool[pool]) {
            continue;
        }
        const Pool& P = pools_[pool];
        const int first = both ? static_cast<int>(pool * n_experts_) : 0;
        Tensor h = backend_.alloc({n * k_, P.d_ff});  // [n k, d_ff]: the pool's rows written
        backend_.grouped_expert_linear(sorted_x, P.gate_up.w, order.offsets, first, 2 * P.d_ff,
                                       Activation::Swiglu, h);
        backend_.grouped_expert_linear(h, P.down.w, order.offsets, first, d_, Activation::None, out);
    }
    // Back in (token, choice) order, each token's outputs summed by its weights.
    backend_.add_expert_outputs(x, backend_.gather_rows(out, order.slots), routing.weights);  // [n k, d]
}

}  // namespace folio
