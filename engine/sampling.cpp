#include "sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "error.h"

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

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
    validate(params);
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
    const int64_t n = static_cast<int64_t>(logits.size());
    if (n == 0) {
        fail("sampler: empty logits");
    }
    if (params_.repetition_penalty != 1.0f) {
        std::vector<int32_t> seen(history.begin(), history.end());
        std::sort(seen.begin(), seen.end());
        seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
        for (const int32_t id : seen) {
            if (id >= 0 && id < n) {
                float& l = logits[id];
                l = l > 0.0f ? l / params_.repetition_penalty : l * params_.repetition_penalty;
            }
        }
    }
    const auto argmax = [&] {
        return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    };
    if (params_.temperature == 0.0f) {
        return argmax();
    }
    for (float& l : logits) {
        l /= params_.temperature;
    }
    order_.resize(static_cast<size_t>(n));
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    int64_t n_keep = n;
    if (params_.top_k > 0) {
        n_keep = std::min<int64_t>(n_keep, params_.top_k);
    }
    std::vector<double> probs(static_cast<size_t>(n_keep));
    const double max_logit = logits[order_[0]];
    double sum = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        probs[i] = std::exp(static_cast<double>(logits[order_[i]]) - max_logit);
        sum += probs[i];
    }
    if (params_.top_p < 1.0f) {
        // Keep the smallest head of the sorted distribution whose mass reaches top_p (at least one token).
        double cumulative = 0.0;
        int64_t cut = n_keep;
        for (int64_t i = 0; i < n_keep; ++i) {
            cumulative += probs[i] / sum;
            if (cumulative >= params_.top_p) {
                cut = i + 1;
                break;
            }
        }
        n_keep = cut;
        probs.resize(static_cast<size_t>(n_keep));
    }
    std::discrete_distribution<int64_t> pick(probs.begin(), probs.end());
    return order_[static_cast<size_t>(pick(rng_))];
}

}  // namespace folio
