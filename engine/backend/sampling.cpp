#include "engine/backend/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/common/error.h"

namespace folio {

void validate(const SamplingParams& p) {
    if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature)) {
        fail("temperature must be a finite number >= 0, got ", p.temperature);
    }
    if (p.top_k < 0) {
        fail("top_k must be >= 0, got ", p.top_k);
    }
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
        fail("top_p must be in (0, 1], got ", p.top_p);
    }
    if (!(p.repetition_penalty > 0.0f) || !std::isfinite(p.repetition_penalty)) {
        fail("repetition_penalty must be a finite number > 0, got ", p.repetition_penalty);
    }
}

void validate(const RowSampling& row) {
    validate(SamplingParams{row.temperature, row.top_k, row.top_p, row.repetition_penalty, 0});
    if (!(row.uniform >= 0.0f && row.uniform < 1.0f)) {
        fail("uniform must be in [0, 1), got ", row.uniform);
    }
}

int32_t choose_token(std::span<float> logits, const RowSampling& row, std::span<const int32_t> history) {
    const auto n = static_cast<int64_t>(logits.size());
    if (n == 0) {
        fail("sampler: empty logits");
    }
    if (row.history_begin < 0 || row.history_count < 0 ||
        row.history_begin + row.history_count > static_cast<int64_t>(history.size())) {
        fail("sampler: history [", row.history_begin, ", +", row.history_count, ") outside ", history.size(),
             " tokens");
    }
    if (row.repetition_penalty != 1.0f) {
        std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
        for (const int32_t id : history.subspan(row.history_begin, row.history_count)) {
            if (id < 0 || id >= n) {
                fail("sampler: history token ", id, " outside the vocabulary of ", n);
            }
            if (!seen[id]) {
                seen[id] = 1;
                float& l = logits[id];
                l = l > 0.0f ? l / row.repetition_penalty : l * row.repetition_penalty;
            }
        }
    }
    if (row.temperature == 0.0f) {
        return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    for (float& l : logits) {
        l /= row.temperature;
    }
    // The top-k set in rank order: keys are distinct, so the order is unique.
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const auto ranks_first = [&](int32_t a, int32_t b) {
        return rank_key(logits[a], a) > rank_key(logits[b], b);
    };
    int64_t n_keep = row.top_k > 0 ? std::min<int64_t>(n, row.top_k) : n;
    std::nth_element(order.begin(), order.begin() + (n_keep - 1), order.end(), ranks_first);
    std::sort(order.begin(), order.begin() + n_keep, ranks_first);
    const float max_logit = logits[order[0]];
    std::vector<float> weights(static_cast<size_t>(n));  // exp(l - max) of the kept tokens
    double total = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        weights[order[i]] = std::exp(logits[order[i]] - max_logit);
        total += weights[order[i]];
    }
    if (row.top_p < 1.0f) {
        const double mass = static_cast<double>(row.top_p) * total;
        double cumulative = 0.0;
        for (int64_t i = 0; i < n_keep; ++i) {
            cumulative += weights[order[i]];
            if (cumulative >= mass) {
                n_keep = i + 1;
                break;
            }
        }
    }
    std::sort(order.begin(), order.begin() + n_keep);
    double kept_total = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        kept_total += weights[order[i]];
    }
    const double target = static_cast<double>(row.uniform) * kept_total;
    double cumulative = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        cumulative += weights[order[i]];
        if (cumulative > target) {
            return order[i];
        }
    }
    return order[n_keep - 1];
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
    validate(params);
}

RowSampling Sampler::next_row() {
    RowSampling row;
    row.temperature = params_.temperature;
    row.top_k = params_.top_k;
    row.top_p = params_.top_p;
    row.repetition_penalty = params_.repetition_penalty;
    row.uniform = static_cast<float>(rng_() >> 40) * 0x1.0p-24f;
    return row;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
    RowSampling row = next_row();
    row.history_count = static_cast<int64_t>(history.size());
    return choose_token(logits, row, history);
}

}  // namespace folio
