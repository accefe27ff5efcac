// Choosing the next token from logits: greedy, or sampling with temperature, top-k, top-p and a repetition
// penalty, applied in the reference's order (penalty, temperature, top-k, top-p).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace folio {

struct SamplingParams {
    float temperature = 0.0f;         // 0: greedy
    int top_k = 0;                    // 0: off
    float top_p = 1.0f;               // 1: off
    float repetition_penalty = 1.0f;  // 1: off
    uint64_t seed = 0;
};

void validate(const SamplingParams& params);

class Sampler {
public:
    explicit Sampler(const SamplingParams& params);

    // history: the tokens the penalty applies to (prompt and generated so far). logits are modified.
    int32_t sample(std::span<float> logits, std::span<const int32_t> history);
    // The choice is the largest logit, whatever the history: backends can make it where the logits are.
    bool is_greedy() const { return params_.temperature == 0.0f && params_.repetition_penalty == 1.0f; }

private:
    SamplingParams params_;
    std::mt19937_64 rng_;
    std::vector<int32_t> order_;
};

}  // namespace folio
