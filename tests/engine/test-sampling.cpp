// The sampler: greedy choice, each filter, the repetition penalty, seeding and parameter validation.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "error.h"
#include "sampling.h"

namespace folio {
namespace {

std::map<int32_t, int> histogram(const SamplingParams& params, const std::vector<float>& logits,
                                 int n_draws) {
    Sampler sampler(params);
    std::map<int32_t, int> counts;
    for (int i = 0; i < n_draws; ++i) {
        std::vector<float> l = logits;
        ++counts[sampler.sample(l, {})];
    }
    return counts;
}

TEST(Sampling, GreedyPicksTheLargestLogit) {
    Sampler sampler(SamplingParams{});
    std::vector<float> logits{0.1f, 2.5f, -1.0f, 2.4f};
    EXPECT_EQ(sampler.sample(logits, {}), 1);
}

TEST(Sampling, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
    SamplingParams params;
    params.repetition_penalty = 2.0f;
    Sampler sampler(params);
    std::vector<float> logits{3.0f, 2.0f, -1.0f, 0.5f};
    const std::vector<int32_t> history{0, 2, 0};
    EXPECT_EQ(sampler.sample(logits, history), 1);  // 3.0 becomes 1.5, below 2.0
    EXPECT_FLOAT_EQ(logits[0], 1.5f);
    EXPECT_FLOAT_EQ(logits[2], -2.0f);
    EXPECT_FLOAT_EQ(logits[3], 0.5f);
}

TEST(Sampling, TopKOneIsGreedy) {
    SamplingParams params;
    params.temperature = 5.0f;
    params.top_k = 1;
    const auto counts = histogram(params, {0.0f, 1.0f, 0.9f, 0.8f}, 200);
    ASSERT_EQ(counts.size(), 1u);
    EXPECT_EQ(counts.begin()->first, 1);
}

TEST(Sampling, TopKLimitsTheCandidates) {
    SamplingParams params;
    params.temperature = 1.0f;
    params.top_k = 2;
    params.seed = 7;
    const auto counts = histogram(params, {0.0f, 1.0f, 0.9f, 0.8f, 0.7f}, 2000);
    EXPECT_EQ(counts.size(), 2u);
    EXPECT_TRUE(counts.contains(1) && counts.contains(2));
}

TEST(Sampling, TopPKeepsTheSmallestHeadReachingTheMass) {
    // Probabilities 0.5, 0.3, 0.15, 0.05: top_p 0.75 needs the first two tokens, 0.85 the first three.
    const std::vector<float> logits{std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
    SamplingParams params;
    params.temperature = 1.0f;
    params.seed = 3;
    params.top_p = 0.75f;
    EXPECT_EQ(histogram(params, logits, 3000).size(), 2u);
    params.top_p = 0.85f;
    EXPECT_EQ(histogram(params, logits, 3000).size(), 3u);
}

TEST(Sampling, TemperatureSamplingFollowsTheDistribution) {
    const std::vector<float> logits{std::log(0.7f), std::log(0.2f), std::log(0.1f)};
    SamplingParams params;
    params.temperature = 1.0f;
    params.seed = 11;
    const int n = 20000;
    const auto counts = histogram(params, logits, n);
    EXPECT_NEAR(counts.at(0) / static_cast<double>(n), 0.7, 0.02);
    EXPECT_NEAR(counts.at(1) / static_cast<double>(n), 0.2, 0.02);
    EXPECT_NEAR(counts.at(2) / static_cast<double>(n), 0.1, 0.02);
}

TEST(Sampling, SameSeedSameTokensOtherSeedOtherTokens) {
    std::vector<float> logits(50);
    for (size_t i = 0; i < logits.size(); ++i) {
        logits[i] = static_cast<float>(i % 7) * 0.1f;
    }
    auto draw = [&](uint64_t seed) {
        SamplingParams params;
        params.temperature = 1.0f;
        params.seed = seed;
        Sampler sampler(params);
        std::vector<int32_t> out;
        for (int i = 0; i < 64; ++i) {
            std::vector<float> l = logits;
            out.push_back(sampler.sample(l, {}));
        }
        return out;
    };
    EXPECT_EQ(draw(42), draw(42));
    EXPECT_NE(draw(42), draw(43));
}

TEST(Sampling, RejectsInvalidParameters) {
    const auto make = [](float temperature, int top_k, float top_p, float penalty) {
        SamplingParams p;
        p.temperature = temperature;
        p.top_k = top_k;
        p.top_p = top_p;
        p.repetition_penalty = penalty;
        return p;
    };
    EXPECT_THROW(Sampler(make(-1.0f, 0, 1.0f, 1.0f)), Error);
    EXPECT_THROW(Sampler(make(1.0f, -3, 1.0f, 1.0f)), Error);
    EXPECT_THROW(Sampler(make(1.0f, 0, 0.0f, 1.0f)), Error);
    EXPECT_THROW(Sampler(make(1.0f, 0, 1.5f, 1.0f)), Error);
    EXPECT_THROW(Sampler(make(1.0f, 0, 1.0f, 0.0f)), Error);
    EXPECT_THROW(Sampler(make(std::nanf(""), 0, 1.0f, 1.0f)), Error);
    Sampler ok(SamplingParams{});
    std::vector<float> empty;
    EXPECT_THROW(ok.sample(empty, {}), Error);
}

}  // namespace
}  // namespace folio
