// The sampler: greedy choice, each filter, the repetition penalty, the pick from one uniform number, seeding,
// parameter validation, and the CPU backend's sample_rows against the sampler.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/sampling.h"
#include "engine/common/error.h"

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

// The tokens choose_token picks from logits over n uniform numbers spread evenly over [0, 1).
std::map<int32_t, int> sweep(const std::vector<float>& logits, RowSampling row, int n,
                             const std::vector<int32_t>& history = {}) {
    std::map<int32_t, int> counts;
    row.history_count = static_cast<int64_t>(history.size());
    for (int i = 0; i < n; ++i) {
        row.uniform = (static_cast<float>(i) + 0.5f) / static_cast<float>(n);
        std::vector<float> l = logits;
        ++counts[choose_token(l, row, history)];
    }
    return counts;
}

RowSampling sampled_row(float temperature, int top_k = 0, float top_p = 1.0f, float penalty = 1.0f) {
    RowSampling row;
    row.temperature = temperature;
    row.top_k = top_k;
    row.top_p = top_p;
    row.repetition_penalty = penalty;
    return row;
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

TEST(Sampling, RepetitionPenaltyAppliesOnceToARepeatedTokenThenTemperatureDivides) {
    std::vector<float> logits{4.0f, -1.0f, 3.0f};
    const std::vector<int32_t> history{0, 1, 0, 0, 1};
    RowSampling row = sampled_row(0.5f, 1, 1.0f, 2.0f);
    row.history_count = static_cast<int64_t>(history.size());
    EXPECT_EQ(choose_token(logits, row, history), 2);  // 4 / 2 = 2 is below 3
    EXPECT_FLOAT_EQ(logits[0], 4.0f);
    EXPECT_FLOAT_EQ(logits[1], -4.0f);
    EXPECT_FLOAT_EQ(logits[2], 6.0f);
}

TEST(Sampling, TheUniformNumberWalksTheKeptTokensInTokenOrder) {
    // Probabilities 0.2, 0.5, 0.3: token 0 below u = 0.2, token 1 below 0.7, token 2 above.
    const std::vector<float> logits{std::log(0.2f), std::log(0.5f), std::log(0.3f)};
    const auto pick = [&](float u) {
        RowSampling row = sampled_row(1.0f);
        row.uniform = u;
        std::vector<float> l = logits;
        return choose_token(l, row, {});
    };
    EXPECT_EQ(pick(0.0f), 0);
    EXPECT_EQ(pick(0.19f), 0);
    EXPECT_EQ(pick(0.21f), 1);
    EXPECT_EQ(pick(0.69f), 1);
    EXPECT_EQ(pick(0.71f), 2);
    EXPECT_EQ(pick(std::nextafter(1.0f, 0.0f)), 2);
}

TEST(Sampling, TopKBreaksTiesByTheLowerToken) {
    const auto counts = sweep({1.0f, 0.0f, 1.0f, 1.0f, 1.0f}, sampled_row(1.0f, 2), 1000);
    EXPECT_EQ(counts, (std::map<int32_t, int>{{0, 500}, {2, 500}}));
}

TEST(Sampling, TopPKeepsTiedTokensInTokenOrder) {
    // Four equal tokens: half the mass is the first two in rank order, the lower tokens.
    const auto counts = sweep({0.5f, 0.5f, 0.5f, 0.5f}, sampled_row(1.0f, 0, 0.5f), 1000);
    EXPECT_EQ(counts, (std::map<int32_t, int>{{0, 500}, {1, 500}}));
}

TEST(Sampling, TopKThenTopPOverTheTopKMassFollowTheRenormalisedDistribution) {
    // top_k 4 keeps 0.4, 0.25, 0.15, 0.1 (mass 0.9); top_p 0.7 of that is 0.63, reached by 0.4 + 0.25.
    const std::vector<float> logits{std::log(0.06f), std::log(0.4f), std::log(0.04f),
                                    std::log(0.25f), std::log(0.1f), std::log(0.15f)};
    SamplingParams params;
    params.temperature = 1.0f;
    params.top_k = 4;
    params.top_p = 0.7f;
    params.seed = 5;
    const int n = 20000;
    const auto counts = histogram(params, logits, n);
    ASSERT_EQ(counts.size(), 2u);
    EXPECT_NEAR(counts.at(1) / static_cast<double>(n), 0.4 / 0.65, 0.02);
    EXPECT_NEAR(counts.at(3) / static_cast<double>(n), 0.25 / 0.65, 0.02);
    // One more percent of top_p needs the third token.
    EXPECT_EQ(sweep(logits, sampled_row(1.0f, 4, 0.73f), 1000).size(), 3u);
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

TEST(Sampling, UniformNumbersComeFromTheSeededGenerator) {
    SamplingParams params;
    params.temperature = 0.7f;
    params.top_k = 3;
    params.top_p = 0.9f;
    params.repetition_penalty = 1.1f;
    params.seed = 99;
    Sampler sampler(params);
    std::mt19937_64 rng(99);
    for (int i = 0; i < 100; ++i) {
        const RowSampling row = sampler.next_row();
        EXPECT_EQ(row.uniform, static_cast<float>(rng() >> 40) * 0x1.0p-24f);
        EXPECT_GE(row.uniform, 0.0f);
        EXPECT_LT(row.uniform, 1.0f);
        EXPECT_EQ(row.temperature, 0.7f);
        EXPECT_EQ(row.top_k, 3);
        EXPECT_EQ(row.top_p, 0.9f);
        EXPECT_EQ(row.repetition_penalty, 1.1f);
        EXPECT_EQ(row.history_count, 0);
    }
}

// The CPU backend makes the sampler's choice for the same uniform numbers and leaves the logits as they are.
TEST(Sampling, CpuBackendSampleRowsMatchesTheSampler) {
    const auto backend = make_cpu_backend(2);
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (const int64_t vocab : {1, 7, 1000}) {
        const int64_t n_rows = 40;
        std::vector<float> values(static_cast<size_t>(n_rows * vocab));
        for (float& v : values) {
            v = normal(rng);
        }
        const Tensor logits = backend->upload(values, {n_rows, vocab});
        std::vector<Sampler> samplers, replays;
        std::vector<RowSampling> rows;
        std::vector<int32_t> history;
        std::vector<std::vector<int32_t>> histories;
        for (int64_t r = 0; r < n_rows; ++r) {
            SamplingParams params;
            params.temperature = r % 5 == 0 ? 0.0f : 0.3f + 0.1f * static_cast<float>(r % 9);
            params.top_k = static_cast<int>(r % 4 == 0 ? 0 : rng() % (vocab + 2));
            params.top_p = r % 3 == 0 ? 1.0f : 0.2f + 0.02f * static_cast<float>(r % 40);
            params.repetition_penalty = r % 2 == 0 ? 1.0f : 1.3f;
            params.seed = rng();
            samplers.emplace_back(params);
            replays.emplace_back(params);
            std::vector<int32_t> h;
            for (uint32_t i = 0, n = rng() % 20; i < n; ++i) {
                h.push_back(static_cast<int32_t>(rng() % std::min<int64_t>(vocab, 5)));
            }
            RowSampling row = samplers.back().next_row();
            row.history_begin = static_cast<int64_t>(history.size());
            row.history_count = static_cast<int64_t>(h.size());
            history.insert(history.end(), h.begin(), h.end());
            histories.push_back(h);
            rows.push_back(row);
        }
        const std::vector<int32_t> tokens = backend->sample_rows(logits, rows, history);
        ASSERT_EQ(tokens.size(), static_cast<size_t>(n_rows));
        for (int64_t r = 0; r < n_rows; ++r) {
            std::vector<float> l(values.begin() + r * vocab, values.begin() + (r + 1) * vocab);
            EXPECT_EQ(tokens[r], replays[r].sample(l, histories[r])) << "vocab " << vocab << " row " << r;
        }
        EXPECT_EQ(backend->download(logits), values);
    }
}

TEST(Sampling, SampleRowsRejectsBadArguments) {
    const auto backend = make_cpu_backend(1);
    const Tensor logits = backend->upload(std::vector<float>(14, 0.5f), {2, 7});
    const std::vector<int32_t> history{1, 2, 3};
    std::vector<RowSampling> rows(2, sampled_row(1.0f));
    EXPECT_EQ(backend->sample_rows(logits, rows, history).size(), 2u);
    EXPECT_THROW(backend->sample_rows(logits, std::span(rows).first(1), history), Error);
    const auto rejects = [&](auto change) {
        std::vector<RowSampling> bad = rows;
        change(bad[1]);
        EXPECT_THROW(backend->sample_rows(logits, bad, history), Error);
    };
    rejects([](RowSampling& r) { r.history_count = 4; });
    rejects([](RowSampling& r) { r.history_begin = -1; });
    rejects([](RowSampling& r) {
        r.history_begin = 2;
        r.history_count = 2;
    });
    rejects([](RowSampling& r) { r.temperature = -0.5f; });
    rejects([](RowSampling& r) { r.top_k = -1; });
    rejects([](RowSampling& r) { r.top_p = 0.0f; });
    rejects([](RowSampling& r) { r.repetition_penalty = 0.0f; });
    rejects([](RowSampling& r) { r.uniform = 1.0f; });
    rejects([](RowSampling& r) { r.uniform = -0.1f; });
    const std::vector<int32_t> outside{7};
    rows[0].history_count = 1;
    EXPECT_THROW(backend->sample_rows(logits, rows, outside), Error);
    const Tensor no_columns = backend->alloc({2, 0});
    rows[0].history_count = 0;
    EXPECT_THROW(backend->sample_rows(no_columns, rows, history), Error);
}

// A step's tokens chosen into a tensor feed the next step's embeddings without coming to the host: a
// negative id -p - 1 stands for pending token p. Bad ids and outputs are refused with the value.
TEST(Sampling, PendingTokensFeedTheNextEmbeddings) {
    const auto backend = make_cpu_backend(1);
    const int64_t vocab = 6, d = 3;
    std::vector<float> table_values(static_cast<size_t>(vocab * d));
    for (size_t i = 0; i < table_values.size(); ++i) {
        table_values[i] = static_cast<float>(i);
    }
    const Tensor table = backend->upload(table_values, {vocab, d});
    const std::vector<float> logit_values{0.1f, 0.9f, 0.2f, 0.0f, 0.0f, 0.3f,
                                          0.7f, 0.1f, 0.5f, 0.2f, 0.4f, 0.1f};
    const Tensor logits = backend->upload(logit_values, {2, vocab});
    const auto upload_ids = [&](const std::vector<int32_t>& ids) {
        return backend->upload_i32(ids, {static_cast<int64_t>(ids.size())});
    };
    Tensor pending = upload_ids({0, 0});
    backend->argmax_rows_to(logits, pending);
    EXPECT_EQ(backend->read_back(pending)->wait(), (std::vector<int32_t>{1, 0}));
    const Tensor ids = upload_ids({4, -2, -1, 2});
    const std::vector<float> rows = backend->download(backend->gather_token_rows(table, ids, pending));
    EXPECT_EQ(rows, (std::vector<float>{12, 13, 14, 0, 1, 2, 3, 4, 5, 6, 7, 8}));

    const auto message = [&](const std::vector<int32_t>& bad) {
        try {
            backend->gather_token_rows(table, upload_ids(bad), pending);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(message({-3}).find("id 0 is -3, a pending token beyond the 2 pending"), std::string::npos);
    EXPECT_NE(message({1, 6}).find("token 6 of id 1 outside the table's 6 rows"), std::string::npos);
    Tensor short_out = upload_ids({0});
    EXPECT_THROW(backend->argmax_rows_to(logits, short_out), Error);
    EXPECT_THROW(backend->sample_rows_to(logits, std::vector<RowSampling>(2), {}, short_out), Error);
    EXPECT_THROW(backend->read_back(logits), Error) << "float32 values";
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
