#include "engine/models/ernie45-vl/moe.h"

#include <algorithm>
#include <numeric>

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
    const Tensor bias = weights.load(prefix + "moe_statics.e_score_correction_bias", {2, n_experts});
    const std::vector<float> biases = backend_.download(bias);  // [2, n_experts]
    for (int pool = 0; pool < 2; ++pool) {
        Pool& P = pools_[pool];
        P.router = weights.load(prefix + (pool == 0 ? "gate.weight" : "gate.weight_1"), {n_experts, d});
        P.host_bias.assign(biases.begin() + pool * n_experts, biases.begin() + (pool + 1) * n_experts);
        P.score_bias = backend_.upload(P.host_bias, {n_experts});
        P.d_ff = config.moe_intermediate_size[static_cast<size_t>(pool)];
        std::vector<std::string> gate_up, down;
        for (int64_t e = 0; e < n_experts; ++e) {
            const std::string p = prefix + "experts." + std::to_string(pool * n_experts + e) + ".";
            gate_up.push_back(p + "gate_proj");
            gate_up.push_back(p + "up_proj");
            down.push_back(p + "down_proj");
        }
        P.gate_up =
            weights.load_stacked_linear(gate_up, std::vector<int64_t>(gate_up.size(), P.d_ff), d, false, q);
        P.down = weights.load_stacked_linear(down, std::vector<int64_t>(down.size(), d), P.d_ff, false, q);
    }
    if (config.n_shared_experts > 0) {
        const int64_t ff = config.moe_intermediate_size[0] * config.n_shared_experts;
        const std::string p = prefix + "shared_experts.";
        shared_gate_up_ =
            weights.load_stacked_linear({p + "gate_proj", p + "up_proj"}, {ff, ff}, d, false, q);
        shared_down_ = weights.load_linear(p + "down_proj", d, ff, false, q);
    }
}

void MoeBlock::add(Tensor& x, const Tensor& xn, std::span<const uint8_t> vision, bool decode) const {
    if (!vision.empty() && static_cast<int64_t>(vision.size()) != xn.rows()) {
        fail("mixture of experts: ", vision.size(), " modalities for ", xn.rows(), " tokens");
    }
    if (!shared_gate_up_.w.empty()) {
        LinearSpec gated;
        gated.activation = Activation::Swiglu;
        apply(backend_, shared_down_, apply(backend_, shared_gate_up_, xn, gated), {.residual = &x});
    }
    const bool all_text = std::none_of(vision.begin(), vision.end(), [](uint8_t v) { return v != 0; });
    if (decode && all_text) {
        add_decode(x, xn);
    } else {
        add_prompt(x, xn, vision);
    }
}

void MoeBlock::add_decode(Tensor& x, const Tensor& xn) const {
    const Pool& P = pools_[0];
    const Tensor logits = backend_.linear(xn, P.router, nullptr);  // [n, n_experts]
    const ExpertRouting routing = backend_.route_experts(logits, P.score_bias, k_, norm_min_);  // [n, k]
    const Tensor h =
        backend_.expert_rows_linear(xn, P.gate_up.w, routing.experts, 2 * P.d_ff, k_, Activation::Swiglu);
    const Tensor y = backend_.expert_rows_linear(h, P.down.w, routing.experts, d_, 1, Activation::None);
    backend_.add_expert_outputs(x, y, routing.weights);  // through [n k, d_ff] and [n k, d]
}

void MoeBlock::add_prompt(Tensor& x, const Tensor& xn, std::span<const uint8_t> vision) const {
    const int64_t n = xn.rows(), d = xn.row_size();
    // Each pool routes its own tokens; the choices are then made global (pool p's expert e is
    // p * n_experts + e) so that one pass runs every chosen expert over its tokens.
    std::vector<int32_t> expert(static_cast<size_t>(n * k_));  // [n, k]: global expert numbers
    std::vector<float> weight(static_cast<size_t>(n * k_));    // [n, k]
    for (int pool = 0; pool < 2; ++pool) {
        std::vector<int64_t> rows;  // the pool's tokens
        for (int64_t i = 0; i < n; ++i) {
            if ((!vision.empty() && vision[static_cast<size_t>(i)] != 0) == (pool == 1)) {
                rows.push_back(i);
            }
        }
        if (rows.empty()) {
            continue;
        }
        const Pool& P = pools_[pool];
        const Tensor pool_x = static_cast<int64_t>(rows.size()) == n ? xn : backend_.gather_rows(xn, rows);
        const std::vector<float> logits =
            backend_.download(backend_.linear(pool_x, P.router, nullptr));  // [m, n_experts]
        const ExpertChoice choice = route_top_k(logits, P.host_bias, k_, norm_min_);
        for (size_t r = 0; r < rows.size(); ++r) {
            for (int j = 0; j < k_; ++j) {
                const size_t at = static_cast<size_t>(rows[r] * k_ + j);
                expert[at] = static_cast<int32_t>(pool * n_experts_) + choice.experts[r * k_ + j];
                weight[at] = choice.weights[r * k_ + j];
            }
        }
    }
    // The (token, choice) pairs sorted by expert, so that each expert's tokens are consecutive rows.
    std::vector<int64_t> pairs(static_cast<size_t>(n * k_));
    std::iota(pairs.begin(), pairs.end(), 0);
    std::stable_sort(pairs.begin(), pairs.end(), [&](int64_t a, int64_t b) {
        return expert[static_cast<size_t>(a)] < expert[static_cast<size_t>(b)];
    });
    std::vector<int64_t> token_rows(pairs.size()), sorted_row_of_pair(pairs.size());
    for (size_t s = 0; s < pairs.size(); ++s) {
        token_rows[s] = pairs[s] / k_;
        sorted_row_of_pair[static_cast<size_t>(pairs[s])] = static_cast<int64_t>(s);
    }
    const Tensor sorted_x = backend_.gather_rows(xn, token_rows);  // [n k, d]
    LinearSpec gated;
    gated.activation = Activation::Swiglu;
    std::vector<Tensor> outputs;
    for (size_t s = 0; s < pairs.size();) {
        const int32_t e = expert[static_cast<size_t>(pairs[s])];
        size_t end = s;
        while (end < pairs.size() && expert[static_cast<size_t>(pairs[end])] == e) {
            ++end;
        }
        const Pool& P = pools_[e / n_experts_];
        const int64_t local = e % n_experts_;
        const Tensor rows = sorted_x.view(static_cast<int64_t>(s) * d, {static_cast<int64_t>(end - s), d});
        const Weight gate_up = weight_rows(P.gate_up.w, local * 2 * P.d_ff, 2 * P.d_ff);
        const Weight down = weight_rows(P.down.w, local * d, d);
        outputs.push_back(backend_.linear(backend_.linear(rows, gate_up, gated), down, LinearSpec{}));
        s = end;
    }
    const Tensor expert_out =
        outputs.size() == 1 ? outputs.front() : backend_.concat(outputs, 0);  // [n k, d]
    backend_.add_weighted_rows(x, expert_out, sorted_row_of_pair, weight);
}

}  // namespace folio
