// Choosing the next token from logits: greedy, or sampling with temperature, top-k, top-p and a repetition
// penalty, applied in the reference's order (penalty, temperature, top-k, top-p). A sampled choice is a
// function of the logits and one uniform number, so that every backend makes the same one (choose_token).
#pragma once

#include <bit>
#include <cstdint>
#include <random>
#include <span>

namespace folio {

struct SamplingParams {
    float temperature = 0.0f;         // 0: greedy
    int top_k = 0;                    // 0: off
    float top_p = 1.0f;               // 1: off
    float repetition_penalty = 1.0f;  // 1: off
    uint64_t seed = 0;
};

void validate(const SamplingParams& params);

// One row's choice: its parameters, its uniform number and its history, the tokens the penalty applies to,
// as history[history_begin, history_begin + history_count) of an array the rows share. The history may
// repeat tokens: each distinct token is penalised once.
struct RowSampling {
    float temperature = 0.0f;
    int top_k = 0;
    float top_p = 1.0f;
    float repetition_penalty = 1.0f;
    float uniform = 0.0f;  // in [0, 1)
    int64_t history_begin = 0;
    int64_t history_count = 0;
};

// Throws folio::Error naming the value out of range: the parameters as validate(SamplingParams) holds them,
// and a uniform number in [0, 1).
void validate(const RowSampling& row);

// The order the filters rank tokens in: a larger key ranks first. Keys order by value (float bits made
// unsigned-comparable, so -0 ranks below +0) and, between equal values, the lower token first.
inline uint32_t ordered_bits(float value) {
    const auto bits = std::bit_cast<uint32_t>(value);
    return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}
inline uint64_t rank_key(float value, int64_t token) {
    return uint64_t{ordered_bits(value)} << 32 | ~static_cast<uint32_t>(token);
}

// The token chosen from logits [vocab] for a row, with history as in RowSampling:
// - the repetition penalty: each distinct history token's logit l becomes l > 0 ? l / p : l * p;
// - temperature 0: the largest logit, the first of equal ones (std::max_element);
// - otherwise the logits divided by the temperature, and the kept tokens: the top_k of largest rank_key when
//   top_k > 0, then, when top_p < 1, the fewest of those in rank order whose softmax mass (over the top-k
//   set) reaches top_p, at least one;
// - the pick: with weights exp(l - max) of the kept tokens, walked in ascending token order, the first whose
//   running sum exceeds uniform times their total, else the last kept token.
// Sums run in double. logits are modified: penalised and divided by the temperature.
int32_t choose_token(std::span<float> logits, const RowSampling& row, std::span<const int32_t> history);

class Sampler {
public:
    explicit Sampler(const SamplingParams& params);

    // The next choice's parameters with the next uniform number of the seeded generator, (rng() >> 40) *
    // 2^-24 (exact in a float, below 1), and an empty history. Every choice takes one number, greedy ones
    // included.
    RowSampling next_row();
    // choose_token with the next row and history as the row's history (prompt and generated so far).
    // logits are modified.
    int32_t sample(std::span<float> logits, std::span<const int32_t> history);
    // The choice is the largest logit, whatever the history: backends can make it where the logits are.
    bool is_greedy() const { return params_.temperature == 0.0f && params_.repetition_penalty == 1.0f; }
    // The choice reads the tokens before it (a repetition penalty).
    bool needs_history() const { return params_.repetition_penalty != 1.0f; }

private:
    SamplingParams params_;
    std::mt19937_64 rng_;
};

}  // namespace folio
