#include "engine/models/ernie45-vl/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/common/error.h"

namespace folio {

ExpertChoice route_top_k(std::span<const float> logits, std::span<const float> score_bias, int k,
                         float norm_min) {
    const auto n_experts = static_cast<int64_t>(score_bias.size());
    if (n_experts == 0 || k <= 0 || k > n_experts || logits.size() % static_cast<size_t>(n_experts) != 0) {
        fail("route_top_k: ", logits.size(), " logits for ", n_experts, " experts, top ", k);
    }
    const auto n = static_cast<int64_t>(logits.size()) / n_experts;
    ExpertChoice choice;
    choice.k = k;
    choice.experts.resize(static_cast<size_t>(n * k));
    choice.weights.resize(static_cast<size_t>(n * k));
    std::vector<float> p(static_cast<size_t>(n_experts));
    std::vector<int32_t> order(static_cast<size_t>(n_experts));
    for (int64_t i = 0; i < n; ++i) {
        const float* row = logits.data() + i * n_experts;
        const float max = *std::max_element(row, row + n_experts);
        float sum = 0.0f;
        for (int64_t e = 0; e < n_experts; ++e) {
            p[static_cast<size_t>(e)] = std::exp(row[e] - max);
            sum += p[static_cast<size_t>(e)];
        }
        for (float& v : p) {
            v /= sum;
        }
        std::iota(order.begin(), order.end(), 0);
        // The largest biased scores first; equal scores by the lower expert number.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
            const float sa = p[static_cast<size_t>(a)] + score_bias[static_cast<size_t>(a)];
            const float sb = p[static_cast<size_t>(b)] + score_bias[static_cast<size_t>(b)];
            return sa > sb || (sa == sb && a < b);
        });
        float chosen = 0.0f;
        for (int j = 0; j < k; ++j) {
            chosen += p[static_cast<size_t>(order[static_cast<size_t>(j)])];
        }
        chosen = std::max(chosen, norm_min);
        for (int j = 0; j < k; ++j) {
            const int32_t e = order[static_cast<size_t>(j)];
            choice.experts[static_cast<size_t>(i * k + j)] = e;
            choice.weights[static_cast<size_t>(i * k + j)] = p[static_cast<size_t>(e)] / chosen;
        }
    }
    return choice;
}

MoeBlock::MoeBlock(WeightLoader& weights, const std::string& prefix, const Ernie45VlTextConfig& config)
    : backend_(weights.backend()), k_(config.n_experts_per_token), norm_min_(config.moe_norm_min) {
    const Quantization q = weights.params().quantization;
    const int64_t d = config.hidden_size, n_experts = config.n_experts;
    const Tensor bias = weights.load(prefix + "moe_statics.e_score_correction_bias", {2, n_experts});
    const std::vector<float> biases = backend_.download(bias);  // [2, n_experts]
    for (int pool = 0; pool < 2; ++pool) {
        Pool& P = pools_[pool];
        P.router = weights.load(prefix + (pool == 0 ? "gate.weight" : "gate.weight_1"), {n_experts, d});
        P.score_bias.assign(biases.begin() + pool * n_experts, biases.begin() + (pool + 1) * n_experts);
        const int64_t ff = config.moe_intermediate_size[static_cast<size_t>(pool)];
        for (int64_t e = 0; e < n_experts; ++e) {
            const std::string p = prefix + "experts." + std::to_string(pool * n_experts + e) + ".";
            P.gate_up.push_back(weights.load_stacked_linear({p + "gate_proj", p + "up_proj"}, {ff, ff}, d,
                                                            config.use_bias, q));
            P.down.push_back(weights.load_linear(p + "down_proj", d, ff, config.use_bias, q));
        }
    }
    if (config.n_shared_experts > 0) {
        const int64_t ff = config.moe_intermediate_size[0] * config.n_shared_experts;
        const std::string p = prefix + "shared_experts.";
        shared_gate_up_ =
            weights.load_stacked_linear({p + "gate_proj", p + "up_proj"}, {ff, ff}, d, config.use_bias, q);
        shared_down_ = weights.load_linear(p + "down_proj", d, ff, config.use_bias, q);
    }
}

void MoeBlock::add(Tensor& x, const Tensor& xn, std::span<const uint8_t> vision) const {
    const int64_t n = xn.rows(), d = xn.row_size();
    if (!vision.empty() && static_cast<int64_t>(vision.size()) != n) {
        fail("mixture of experts: ", vision.size(), " modalities for ", n, " tokens");
    }
    LinearSpec gated;
    gated.activation = Activation::Swiglu;
    if (!shared_gate_up_.w.empty()) {
        apply(backend_, shared_down_, apply(backend_, shared_gate_up_, xn, gated), {.residual = &x});
    }
    // Each pool routes its own tokens; the choices are then made global (pool p's expert e is
    // p * n_experts + e) so that one pass runs every chosen expert over its tokens.
    const auto n_experts = static_cast<int64_t>(pools_[0].score_bias.size());
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
        const ExpertChoice choice = route_top_k(logits, P.score_bias, k_, norm_min_);
        for (size_t r = 0; r < rows.size(); ++r) {
            for (int j = 0; j < k_; ++j) {
                const size_t at = static_cast<size_t>(rows[r] * k_ + j);
                expert[at] = static_cast<int32_t>(pool * n_experts) + choice.experts[r * k_ + j];
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
    std::vector<Tensor> outputs;
    for (size_t s = 0; s < pairs.size();) {
        const int32_t e = expert[static_cast<size_t>(pairs[s])];
        size_t end = s;
        while (end < pairs.size() && expert[static_cast<size_t>(pairs[end])] == e) {
            ++end;
        }
        const Pool& P = pools_[e / n_experts];
        const auto local = static_cast<size_t>(e % n_experts);
        const Tensor rows = sorted_x.view(static_cast<int64_t>(s) * d, {static_cast<int64_t>(end - s), d});
        outputs.push_back(apply(backend_, P.down[local], apply(backend_, P.gate_up[local], rows, gated)));
        s = end;
    }
    const Tensor expert_out =
        outputs.size() == 1 ? outputs.front() : backend_.concat(outputs, 0);  // [n k, d]
    backend_.add_weighted_rows(x, expert_out, sorted_row_of_pair, weight);
}

}  // namespace folio
