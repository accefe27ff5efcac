// ERNIE-4.5-VL's mixture of experts: two pools of routed experts (text and vision), each with its own router
// and score-correction bias, tokens routed by modality, plus shared experts every token passes.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "engine/backend/backend.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/linear.h"

namespace folio {

class MoeBlock {
public:
    // Loads the layer's routers (prefix "model.layers.L.mlp."), biases, both pools' experts (text experts
    // numbered first), each pool's experts stacked in one weight, and the shared experts.
    MoeBlock(WeightLoader& weights, const std::string& prefix, const Ernie45VlTextConfig& config);

    // x += shared(xn) + Σ_k weight_k · expert_k(xn), xn = rms_norm(x, norm_w, eps), routed on the backend. A
    // prompt step groups its (token, choice) pairs by expert and runs each pool's experts in one grouped
    // product; a decode step (every token text) runs each token's chosen experts' rows and the shared experts
    // in add_routed_experts, the norm with them, so that it can be recorded.
    // x [n, d], norm_w [d]; vision [n]: whether a row is routed to the vision pool (empty: all text)
    void add(Tensor& x, const Tensor& norm_w, float eps, std::span<const uint8_t> vision, bool decode) const;

private:
    struct Pool {
        Tensor router;      // [n_experts, d], float32
        Tensor score_bias;  // [n_experts]
        Linear gate_up;     // [n_experts · 2 d_ff, d]: each expert's gate rows, then its up rows
        Linear down;        // [n_experts · d, d_ff]
        int64_t d_ff = 0;
    };

    // The shared and routed experts' outputs added to x.
    void add_experts(Tensor& x, const Tensor& xn, std::span<const uint8_t> vision) const;
    void add_prompt(Tensor& x, const Tensor& xn, std::span<const uint8_t> vision) const;
    // x += the experts of rms_norm(input, norm_w, eps) in add_routed_experts (input may be x).
    void add_decode(Tensor& x, const Tensor& input, const Tensor& norm_w, float eps) const;

    Backend& backend_;
    int k_ = 0;
    float norm_min_ = 0.0f;
    int64_t n_experts_ = 0;
    int64_t d_ = 0;
    Collectives* reduce_ = nullptr;  // a tensor-parallel rank's: sums the experts' outputs over the ranks
    Pool pools_[2];                  // text, vision
    Linear shared_gate_up_;          // [2 n_shared d_ff, d]; empty without shared experts
    Linear shared_down_;             // [d, n_shared d_ff]
};

}  // namespace folio
