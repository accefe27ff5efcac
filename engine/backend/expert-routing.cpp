#include "engine/backend/expert-routing.h"

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

}  // namespace folio
