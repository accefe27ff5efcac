// ERNIE-4.5-VL's mixture of experts: two pools of routed experts (text and vision), each with its own router
// and score-correction bias, tokens routed by modality, plus shared experts every token passes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/linear.h"

namespace folio {

// The experts chosen for each token and their weights.
struct ExpertChoice {
    int k = 0;
    std::vector<int32_t> experts;  // [n, k]: each token's experts in the order the scores rank them
    std::vector<float> weights;    // [n, k]
};

// Top-k routing as the reference does it: probabilities p = softmax(logits) of each row, the k experts of the
// largest p + score_bias (the bias only chooses), weights p of those over their sum (at least norm_min).
// logits [n, n_experts], score_bias [n_experts]
ExpertChoice route_top_k(std::span<const float> logits, std::span<const float> score_bias, int k,
                         float norm_min);

class MoeBlock {
public:
    // Loads the layer's routers (prefix "model.layers.L.mlp."), biases, both pools' experts (text experts
    // numbered first) and the shared experts.
    MoeBlock(WeightLoader& weights, const std::string& prefix, const Ernie45VlTextConfig& config);

    // x += shared(xn) + Σ_k weight_k · expert_k(xn), each token's experts from its pool's router.
    // x, xn [n, d]; vision [n]: whether a row is routed to the vision pool (empty: all text)
    void add(Tensor& x, const Tensor& xn, std::span<const uint8_t> vision) const;

private:
    struct Pool {
        Tensor router;                  // [n_experts, d], float32
        std::vector<float> score_bias;  // [n_experts]
        std::vector<Linear> gate_up;    // [2 d_ff, d] each, the gate's rows first
        std::vector<Linear> down;       // [d, d_ff] each
    };

    Backend& backend_;
    int k_ = 0;
    float norm_min_ = 0.0f;
    Pool pools_[2];          // text, vision
    Linear shared_gate_up_;  // [2 n_shared d_ff, d]; empty without shared experts
    Linear shared_down_;     // [d, n_shared d_ff]
};

}  // namespace folio
