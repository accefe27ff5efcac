// Tensor parallelism on the CPU backend: ranks as threads, each with a backend of its own and its part of
// the heads, MLP columns and experts' columns, the row-parallel outputs summed in process. The split models'
// logits and greedy tokens against the whole models' on the Llama, ERNIE-4.5-VL and PaddleOCR-VL golden
// fixtures, and the
// group's collectives themselves.
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/collectives.h"
#include "engine/common/error.h"
#include "engine/models/ernie45-vl/ernie45-vl.h"
#include "engine/models/ernie45-vl/weights.h"
#include "engine/models/llama/llama.h"
#include "engine/models/paddleocr-vl/model-files.h"
#include "engine/models/paddleocr-vl/paddleocr-vl.h"
#include "engine/runtime/generator.h"
#include "ernie45-vl-fixture.h"
#include "fixture-model.h"
#include "fixture-reference.h"
#include "llama-fixture.h"
#include "reversed-blocks.h"

namespace folio {
namespace {

using testing::llama_prompt_keys;
using testing::relative_error;

// Runs body(r) for every rank on a thread of its own; a rank that throws ends the group, so that the others
// stop waiting, and its message comes back (empty where every rank finished).
std::vector<std::string> run_ranks(ThreadGroup& group, const std::function<void(int)>& body) {
    std::vector<std::string> errors(static_cast<size_t>(group.n_ranks()));
    std::vector<std::thread> threads;
    for (int r = 0; r < group.n_ranks(); ++r) {
        threads.emplace_back([&, r] {
            try {
                body(r);
            } catch (const std::exception& e) {
                errors[static_cast<size_t>(r)] = e.what();
                group.abort(e.what());
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    return errors;
}

TEST(ThreadGroup, EveryRankGetsTheSameSum) {
    const auto group = ThreadGroup::create(3);
    std::vector<std::vector<float>> results(3);
    const auto errors = run_ranks(*group, [&](int r) {
        const auto backend = make_cpu_backend(1);
        const std::unique_ptr<Collectives> c = group->rank(r);
        EXPECT_EQ(c->rank(), r);
        EXPECT_EQ(c->n_ranks(), 3);
        for (int round = 0; round < 50; ++round) {  // rounds back to back: no rank may overtake a sum
            const std::vector<float> values = {1.0f * static_cast<float>(r),
                                               10.0f * static_cast<float>(round)};
            Tensor x = backend->upload(values, {2});
            c->all_reduce_sum(*backend, x);
            const std::vector<float> v = backend->download(x);
            ASSERT_EQ(v, (std::vector<float>{3.0f, 30.0f * static_cast<float>(round)})) << "round " << round;
        }
        results[static_cast<size_t>(r)] = {1.0f};
    });
    EXPECT_EQ(errors, std::vector<std::string>(3));
    EXPECT_EQ(results, std::vector<std::vector<float>>(3, {1.0f}));
}

TEST(ThreadGroup, MismatchedSizesAndAFailedRankEndTheGroup) {
    const auto group = ThreadGroup::create(2);
    auto errors = run_ranks(*group, [&](int r) {
        const auto backend = make_cpu_backend(1);
        Tensor x = backend->upload(std::vector<float>(static_cast<size_t>(2 + r), 1.0f), {2 + r});
        group->rank(r)->all_reduce_sum(*backend, x);
    });
    // Whichever rank came last names both sizes.
    for (const std::string& error : errors) {
        const bool named = error.find("rank 0 summed 2 values where rank 1 summed 3") != std::string::npos ||
                           error.find("rank 1 summed 3 values where rank 0 summed 2") != std::string::npos;
        EXPECT_TRUE(named) << error;
    }

    // A rank that fails before its collective: the rank waiting in it hears why instead of waiting forever.
    const auto second = ThreadGroup::create(2);
    errors = run_ranks(*second, [&](int r) {
        if (r == 1) {
            fail("rank 1 could not load its weights");
        }
        const auto backend = make_cpu_backend(1);
        Tensor x = backend->upload(std::vector<float>{1.0f}, {1});
        second->rank(r)->all_reduce_sum(*backend, x);
    });
    EXPECT_NE(errors[0].find("rank 1 could not load its weights"), std::string::npos) << errors[0];
    EXPECT_THROW((void)ThreadGroup::create(0), Error);
    EXPECT_THROW((void)second->rank(2), Error);
}

// One rank's model of the fixture, on a backend of its own.
struct RankModel {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Collectives> collectives;
    std::unique_ptr<Llama> model;
};

std::vector<RankModel> load_ranks(testing::LlamaFixture& f, ThreadGroup& group, ModelLoadParams load) {
    std::vector<RankModel> ranks;
    for (int r = 0; r < group.n_ranks(); ++r) {
        RankModel& rank = ranks.emplace_back();
        rank.backend = make_cpu_backend(1);
        rank.collectives = group.rank(r);
        load.split = {r, group.n_ranks(), rank.collectives.get()};
        const auto weights = make_store_weight_source(*f.store);
        rank.model = std::make_unique<Llama>(*rank.backend, f.config, *weights, load);
    }
    return ranks;
}

// Logits at every prompt position, the cache's blocks in reverse order.  ->  [n_prompt, vocab]
std::vector<float> prompt_logits(Llama& model, const PromptTokens& p) {
    const auto n = static_cast<int64_t>(p.ids.size());
    const int64_t block_size = 8, n_blocks = (n + block_size - 1) / block_size;
    PagedKvCache cache(model.backend(), model.kv_cache_params(n_blocks, block_size));
    const KvBatch batch = testing::reversed_block_batch(n, block_size);
    std::vector<int32_t> positions(static_cast<size_t>(n));
    std::iota(positions.begin(), positions.end(), 0);
    return model.backend().download(
        model.logits(model.forward_text(model.embed(p.ids), positions, {}, cache, batch)));
}

std::vector<int32_t> greedy(Llama& model, const PromptTokens& prompt, int n) {
    GenerateParams params;
    params.max_tokens = n;
    return generate(model, prompt, {}, params, [](int32_t) { return true; }).tokens;
}

testing::LlamaFixture& fixture() {
    static testing::LlamaFixture f(make_cpu_backend(2));
    return f;
}

class LlamaTensorParallel : public ::testing::TestWithParam<int> {};

// Heads split over 2 ranks (2 query heads and 1 K/V head each) and over 4 (1 query head each, each K/V head
// held by two ranks); the MLP's 160 columns in 80 or 40. Every rank's logits are the same bits, and they are
// the whole model's to float32 rounding; greedy tokens are the reference's.
TEST_P(LlamaTensorParallel, LogitsAndGreedyTokensEqualTheWholeModel) {
    testing::LlamaFixture& f = fixture();
    const int n_ranks = GetParam();
    const auto group = ThreadGroup::create(n_ranks);
    std::vector<RankModel> ranks = load_ranks(f, *group, {});
    const KvCacheParams whole = f.model->kv_cache_params(4, 8);
    for (const RankModel& rank : ranks) {
        const KvCacheParams part = rank.model->kv_cache_params(4, 8);
        EXPECT_EQ(part.n_kv_head, 1) << "2 K/V heads over " << n_ranks << " ranks";
        EXPECT_EQ(part.head_dim, whole.head_dim);
        EXPECT_LT(rank.model->n_weight_bytes(), f.model->n_weight_bytes());
    }
    for (const std::string& key : llama_prompt_keys()) {
        const PromptTokens prompt = f.prompt(key);
        const std::vector<int64_t> expected_tokens = f.reference.i64(key + ".greedy_tokens");
        std::vector<std::vector<float>> logits(static_cast<size_t>(n_ranks));
        std::vector<std::vector<int32_t>> tokens(static_cast<size_t>(n_ranks));
        const auto errors = run_ranks(*group, [&](int r) {
            Llama& model = *ranks[static_cast<size_t>(r)].model;
            logits[static_cast<size_t>(r)] = prompt_logits(model, prompt);
            tokens[static_cast<size_t>(r)] = greedy(model, prompt, static_cast<int>(expected_tokens.size()));
        });
        ASSERT_EQ(errors, std::vector<std::string>(static_cast<size_t>(n_ranks))) << key;
        for (int r = 1; r < n_ranks; ++r) {
            EXPECT_EQ(logits[static_cast<size_t>(r)], logits[0]) << key << ": rank " << r;
            EXPECT_EQ(tokens[static_cast<size_t>(r)], tokens[0]) << key << ": rank " << r;
        }
        const std::vector<float> unsplit = f.backend->download(f.prompt_logits(key));
        const double err = relative_error(logits[0], unsplit);
        std::cout << key << ", " << n_ranks << " ranks: logits relative error to the whole model " << err
                  << "\n";
        EXPECT_LT(err, 1e-5) << key;
        EXPECT_GT(err, 0.0) << key << ": the ranks' sums round differently from the whole product";
        EXPECT_LT(relative_error(logits[0], f.reference.f32(key + ".logits")), 1e-4) << key;
        EXPECT_EQ(std::vector<int64_t>(tokens[0].begin(), tokens[0].end()), expected_tokens) << key;
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, LlamaTensorParallel, ::testing::Values(2, 4));

// WINT8 layers split: each rank quantizes its own block of the weights (a row-parallel layer's scales then
// cover its columns only), and the logits stay within quantization's distance of the whole WINT8 model's.
TEST(LlamaTensorParallelQuantized, Wint8RanksStayNearTheWholeModel) {
    testing::LlamaFixture& f = fixture();
    ModelLoadParams load;
    load.quantization = Quantization::Wint8;
    const auto weights = make_store_weight_source(*f.store);
    Llama whole(*f.backend, f.config, *weights, load);
    const auto group = ThreadGroup::create(2);
    std::vector<RankModel> ranks = load_ranks(f, *group, load);
    const PromptTokens prompt = f.prompt("hello");
    std::vector<std::vector<float>> logits(2);
    const auto errors = run_ranks(
        *group, [&](int r) { logits[static_cast<size_t>(r)] = prompt_logits(*ranks[r].model, prompt); });
    ASSERT_EQ(errors, std::vector<std::string>(2));
    EXPECT_EQ(logits[1], logits[0]);
    // Against the float32 model: the split layers' own scales quantize no worse than the whole layers'.
    const std::vector<float> exact = f.backend->download(f.prompt_logits("hello"));
    const double split_err = relative_error(logits[0], exact);
    const double whole_err = relative_error(prompt_logits(whole, prompt), exact);
    std::cout << "WINT8 logits relative error to float32: 2 ranks " << split_err << ", whole " << whole_err
              << "\n";
    EXPECT_GT(whole_err, 0.0);
    EXPECT_LT(split_err, 1.5 * whole_err);
}

testing::ErnieFixture& ernie_fixture() {
    static testing::ErnieFixture f(make_cpu_backend(2));
    return f;
}

class ErnieTensorParallel : public ::testing::TestWithParam<int> {};

// ERNIE-4.5-VL split over 2 and 4 ranks: its 4 heads and 2 K/V heads, the dense layer's 192 columns, and
// each expert's columns in both pools (64 and 48) and the shared expert's, with routing replicated; every
// rank encodes images and video with a whole vision encoder of its own. Text, images, video and a second
// turn: logits the same bits on every rank and the whole model's to float32 rounding, greedy tokens the
// reference's.
TEST_P(ErnieTensorParallel, LogitsAndGreedyTokensEqualTheWholeModel) {
    testing::ErnieFixture& f = ernie_fixture();
    const int n_ranks = GetParam();
    const auto group = ThreadGroup::create(n_ranks);
    struct ErnieRank {
        std::unique_ptr<Backend> backend;
        std::unique_ptr<Collectives> collectives;
        std::unique_ptr<Ernie45Vl> model;
    };
    std::vector<ErnieRank> ranks;
    for (int r = 0; r < n_ranks; ++r) {
        ErnieRank& rank = ranks.emplace_back();
        rank.backend = make_cpu_backend(1);
        rank.collectives = group->rank(r);
        ModelLoadParams load;
        load.split = {r, n_ranks, rank.collectives.get()};
        const auto weights = make_ernie45_vl_weight_source(*f.store, f.config);
        rank.model = std::make_unique<Ernie45Vl>(*rank.backend, f.config, *weights, load);
        EXPECT_EQ(rank.model->kv_cache_params(1, 8).n_kv_head, 1);
        EXPECT_LT(rank.model->n_weight_bytes(), f.model->n_weight_bytes());
    }
    for (const std::string& key : testing::ernie_prompt_keys()) {
        const PromptTokens prompt = f.prompt(key);
        const PreprocessedImages images = f.images(key);
        const std::vector<int64_t> expected_tokens = f.reference.i64(key + ".greedy_tokens");
        std::vector<std::vector<float>> logits(static_cast<size_t>(n_ranks));
        std::vector<std::vector<int32_t>> tokens(static_cast<size_t>(n_ranks));
        const auto errors = run_ranks(*group, [&](int r) {
            ErnieRank& rank = ranks[static_cast<size_t>(r)];
            logits[static_cast<size_t>(r)] = rank.backend->download(
                testing::ernie_prompt_logits(*rank.backend, *rank.model, prompt, images));
            GenerateParams params;
            params.max_tokens = static_cast<int>(expected_tokens.size());
            tokens[static_cast<size_t>(r)] =
                generate(*rank.model, prompt, images, params, [](int32_t) { return true; }).tokens;
        });
        ASSERT_EQ(errors, std::vector<std::string>(static_cast<size_t>(n_ranks))) << key;
        for (int r = 1; r < n_ranks; ++r) {
            EXPECT_EQ(logits[static_cast<size_t>(r)], logits[0]) << key << ": rank " << r;
            EXPECT_EQ(tokens[static_cast<size_t>(r)], tokens[0]) << key << ": rank " << r;
        }
        const double err = relative_error(logits[0], f.backend->download(f.prompt_logits(key)));
        std::cout << key << ", " << n_ranks << " ranks: logits relative error to the whole model " << err
                  << "\n";
        EXPECT_LT(err, 1e-5) << key;
        EXPECT_LT(relative_error(logits[0], f.reference.f32(key + ".logits")), 1e-4) << key;
        EXPECT_EQ(std::vector<int64_t>(tokens[0].begin(), tokens[0].end()), expected_tokens) << key;
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ErnieTensorParallel, ::testing::Values(2, 4));

// PaddleOCR-VL's decoder (the Llama-style decoder it shares) split over 2 ranks, each rank with a whole
// vision encoder and projector: every prompt case's logits and greedy tokens.
TEST(PaddleOcrVlTensorParallel, LogitsAndGreedyTokensEqualTheWholeModel) {
    const auto files = ModelFiles::open(testing::tiny_model_dir());
    const testing::Reference reference;
    const auto whole_backend = make_cpu_backend(2);
    PaddleOcrVl whole(*whole_backend, files->config(), *make_file_weight_source(*files));
    const int n_ranks = 2;
    const auto group = ThreadGroup::create(n_ranks);
    std::vector<std::unique_ptr<Backend>> backends;
    std::vector<std::unique_ptr<Collectives>> collectives;
    std::vector<std::unique_ptr<PaddleOcrVl>> models;
    for (int r = 0; r < n_ranks; ++r) {
        backends.push_back(make_cpu_backend(1));
        collectives.push_back(group->rank(r));
        ModelLoadParams load;
        load.split = {r, n_ranks, collectives.back().get()};
        models.push_back(std::make_unique<PaddleOcrVl>(*backends.back(), files->config(),
                                                       *make_file_weight_source(*files), load));
        EXPECT_EQ(models.back()->kv_cache_params(1, 8).n_kv_head, 1);
    }
    for (const testing::PromptCase& c : testing::prompt_cases()) {
        const ChatPromptTokens prompt =
            testing::reference_prompt(reference, c, files->config().image_token_id);
        const PreprocessedImages images = testing::reference_images(reference, c);
        const std::vector<int64_t> expected_tokens = reference.i64(c.key + ".greedy_tokens");
        std::vector<std::vector<float>> logits(n_ranks);
        std::vector<std::vector<int32_t>> tokens(n_ranks);
        const auto errors = run_ranks(*group, [&](int r) {
            PaddleOcrVl& model = *models[static_cast<size_t>(r)];
            logits[static_cast<size_t>(r)] =
                model.backend().download(testing::prompt_logits(model, prompt, images));
            GenerateParams params;
            params.max_tokens = static_cast<int>(expected_tokens.size());
            tokens[static_cast<size_t>(r)] =
                generate(model, prompt, images, params, [](int32_t) { return true; }).tokens;
        });
        ASSERT_EQ(errors, std::vector<std::string>(n_ranks)) << c.key;
        EXPECT_EQ(logits[1], logits[0]) << c.key;
        EXPECT_EQ(tokens[1], tokens[0]) << c.key;
        const double err =
            relative_error(logits[0], whole_backend->download(testing::prompt_logits(whole, prompt, images)));
        std::cout << c.key << ", 2 ranks: logits relative error to the whole model " << err << "\n";
        EXPECT_LT(err, 1e-5) << c.key;
        EXPECT_EQ(std::vector<int64_t>(tokens[0].begin(), tokens[0].end()), expected_tokens) << c.key;
    }
}

TEST(LlamaTensorParallelErrors, HeadsThatDoNotSplitAreNamed) {
    testing::LlamaFixture& f = fixture();
    const auto group = ThreadGroup::create(3);
    try {
        (void)load_ranks(f, *group, {});
        FAIL() << "4 heads loaded over 3 ranks";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("4 attention heads do not split over 3 tensor-parallel ranks"),
                  std::string::npos)
            << e.what();
    }
    ModelLoadParams load;
    load.split = {1, 2, nullptr};
    const auto weights = make_store_weight_source(*f.store);
    try {
        Llama model(*f.backend, f.config, *weights, load);
        FAIL() << "a split model without collectives";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("without collectives"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace folio
