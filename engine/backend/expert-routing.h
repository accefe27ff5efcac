// Mixture-of-experts routing as ERNIE-4.5's reference computes it, on the host: the CPU backend's
// route_experts and the models' routing of prompt steps share it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace folio {

// The experts chosen for each token and their weights.
struct ExpertChoice {
    int k = 0;
    std::vector<int32_t> experts;  // [n, k]: each token's experts in the order the scores rank them
    std::vector<float> weights;    // [n, k]
};

// Top-k routing: probabilities p = softmax(logits) of each row, the k experts of the largest p + score_bias
// (the bias only chooses; equal scores go to the lower expert), weights p of those over their sum (at least
// norm_min). Throws folio::Error for sizes that do not fit.  logits [n, n_experts], score_bias [n_experts]
ExpertChoice route_top_k(std::span<const float> logits, std::span<const float> score_bias, int k,
                         float norm_min);

}  // namespace folio
