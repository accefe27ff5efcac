// Tensor parallelism on the CPU backend: ranks as threads, each with a backend of its own and its part of
// the heads, MLP columns and experts' columns, the row-parallel outputs summed in process. The split models
// served as one (TensorParallelModel): logits and greedy tokens against the whole models' on the Llama,
// ERNIE-4.5-VL and PaddleOCR-VL golden fixtures, and what the ranks other than 0 hold; the group's
// collectives and rank threads; a failing rank; the split models through the engine service.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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
#include "engine/models/tensor-parallel-ranks.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/rank-threads.h"
#include "engine/runtime/tensor-parallel-model.h"
#include "engine/service/engine-service.h"
#include "ernie45-vl-fixture.h"
#include "fixture-model.h"
#include "fixture-reference.h"
#include "llama-fixture.h"
#include "reversed-blocks.h"
#include "split-ranks.h"

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

TEST(ThreadGroup, SumsIntegersExactly) {
    // Beyond 2^24, where a float32 sum would round: a decode step's cache rows go to the ranks this way.
    const auto group = ThreadGroup::create(3);
    const std::vector<int32_t> rank0 = {16'777'217, -5, 2'000'000'000, 7};
    std::vector<std::vector<int32_t>> results(3);
    auto errors = run_ranks(*group, [&](int r) {
        const auto backend = make_cpu_backend(1);
        Tensor x = backend->upload_i32(r == 0 ? rank0 : std::vector<int32_t>{0, 0, 0, r}, {4});
        group->rank(r)->all_reduce_sum(*backend, x);
        results[static_cast<size_t>(r)] = backend->download_i32(x);
    });
    EXPECT_EQ(errors, std::vector<std::string>(3));
    EXPECT_EQ(results, std::vector<std::vector<int32_t>>(3, {16'777'217, -5, 2'000'000'000, 10}));

    // Ranks that disagree on the type end the group, naming both.
    const auto mixed = ThreadGroup::create(2);
    errors = run_ranks(*mixed, [&](int r) {
        const auto backend = make_cpu_backend(1);
        Tensor x = r == 0 ? backend->upload_i32(std::vector<int32_t>{1, 2}, {2})
                          : backend->upload(std::vector<float>{1.0f, 2.0f}, {2});
        mixed->rank(r)->all_reduce_sum(*backend, x);
    });
    for (const std::string& error : errors) {
        EXPECT_NE(error.find("int32"), std::string::npos) << error;
        EXPECT_NE(error.find("float32"), std::string::npos) << error;
    }
    EXPECT_FALSE(group->can_record());
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
        const bool named =
            error.find("rank 0 summed 2 float32 values where rank 1 summed 3 float32") != std::string::npos ||
            error.find("rank 1 summed 3 float32 values where rank 0 summed 2 float32") != std::string::npos;
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

std::unique_ptr<Backend> cpu_rank(int /*rank*/) {
    return make_cpu_backend(1);
}

// The Llama fixture split over the group's ranks, each rank's part loaded with `load` as the service loads
// it.
std::unique_ptr<testing::SplitRanks<Llama>> split_llama(testing::LlamaFixture& f,
                                                        std::shared_ptr<CollectiveGroup> group,
                                                        const ModelLoadParams& load = {}) {
    return std::make_unique<testing::SplitRanks<Llama>>(
        std::move(group), cpu_rank, [&f, load](Backend& b, const ModelLoadParams& part) {
            ModelLoadParams own = load;
            own.split = part.split;
            const auto weights = make_store_weight_source(*f.store);
            return std::make_unique<Llama>(b, f.config, *weights, own);
        });
}

// Logits at every prompt position, the cache's blocks in reverse order.  ->  [n_prompt, vocab]
std::vector<float> prompt_logits(GenerativeModel& model, const PromptTokens& p) {
    const auto n = static_cast<int64_t>(p.ids.size());
    const int64_t block_size = 8, n_blocks = (n + block_size - 1) / block_size;
    PagedKvCache cache(model.backend(), model.kv_cache_params(n_blocks, block_size));
    const KvBatch batch = testing::reversed_block_batch(n, block_size);
    std::vector<int32_t> positions(static_cast<size_t>(n));
    std::iota(positions.begin(), positions.end(), 0);
    return model.backend().download(
        model.logits(model.forward_text(model.embed(p.ids), positions, {}, cache, batch)));
}

std::vector<int32_t> greedy(GenerativeModel& model, const PromptTokens& prompt, int n) {
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
// held by two ranks); the MLP's 160 columns in 80 or 40. Served as one model (TensorParallelModel: rank 0
// embeds and runs the head, every rank's decoder steps in lockstep on its thread), the logits are the whole
// model's to float32 rounding and the greedy tokens the reference's. Only rank 0 holds the embedding table
// and the head.
TEST_P(LlamaTensorParallel, LogitsAndGreedyTokensEqualTheWholeModel) {
    testing::LlamaFixture& f = fixture();
    const int n_ranks = GetParam();
    const auto split = split_llama(f, ThreadGroup::create(n_ranks));
    const KvCacheParams whole = f.model->kv_cache_params(4, 8);
    const LlamaConfig& c = f.config;
    const int64_t table_bytes = c.vocab_size * c.hidden_size * static_cast<int64_t>(sizeof(float));
    for (int r = 0; r < n_ranks; ++r) {
        const Llama& rank = *split->models[static_cast<size_t>(r)];
        const KvCacheParams part = rank.kv_cache_params(4, 8);
        EXPECT_EQ(part.n_kv_head, 1) << "2 K/V heads over " << n_ranks << " ranks";
        EXPECT_EQ(part.head_dim, whole.head_dim);
        EXPECT_LT(rank.n_weight_bytes(), f.model->n_weight_bytes());
        if (r > 0) {
            EXPECT_LE(rank.n_weight_bytes() + table_bytes, split->models[0]->n_weight_bytes())
                << "rank " << r << " holds an embedding table";
        }
    }
    TensorParallelModel model(split->ranks(), *split->group, split->threads);
    EXPECT_EQ(model.n_ranks(), n_ranks);
    EXPECT_EQ(&model.backend(), split->backends[0].get()) << "the engine works on rank 0";
    EXPECT_EQ(model.kv_cache_params(4, 8).n_kv_head, 1);
    for (const std::string& key : llama_prompt_keys()) {
        const PromptTokens prompt = f.prompt(key);
        const std::vector<int64_t> expected_tokens = f.reference.i64(key + ".greedy_tokens");
        const std::vector<float> logits = prompt_logits(model, prompt);
        const std::vector<int32_t> tokens = greedy(model, prompt, static_cast<int>(expected_tokens.size()));
        const std::vector<float> unsplit = f.backend->download(f.prompt_logits(key));
        const double err = relative_error(logits, unsplit);
        std::cout << key << ", " << n_ranks << " ranks: logits relative error to the whole model " << err
                  << "\n";
        EXPECT_LT(err, 1e-5) << key;
        EXPECT_GT(err, 0.0) << key << ": the ranks' sums round differently from the whole product";
        EXPECT_LT(relative_error(logits, f.reference.f32(key + ".logits")), 1e-4) << key;
        EXPECT_EQ(std::vector<int64_t>(tokens.begin(), tokens.end()), expected_tokens) << key;
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, LlamaTensorParallel, ::testing::Values(2, 4));

// A rank other than 0 holds its part of the layers only: asked to embed or to run the head, it says that rank
// 0 does.
TEST(LlamaTensorParallel, OnlyRankZeroEmbedsAndRunsTheHead) {
    testing::LlamaFixture& f = fixture();
    const auto split = split_llama(f, ThreadGroup::create(2));
    Llama& second = *split->models[1];
    try {
        (void)second.embed(std::vector<int32_t>{1, 2});
        FAIL() << "rank 1 embedded tokens";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1 holds no embedding table"), std::string::npos)
            << e.what();
    }
    const Tensor hidden = split->backends[1]->upload(
        std::vector<float>(static_cast<size_t>(f.config.hidden_size)), {1, f.config.hidden_size});
    try {
        (void)second.logits(hidden);
        FAIL() << "rank 1 ran the head";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1 holds no head"), std::string::npos) << e.what();
    }
}

// WINT8 layers split: each rank quantizes its own block of the weights (a row-parallel layer's scales then
// cover its columns only), and the logits stay within quantization's distance of the whole WINT8 model's.
TEST(LlamaTensorParallelQuantized, Wint8RanksStayNearTheWholeModel) {
    testing::LlamaFixture& f = fixture();
    ModelLoadParams load;
    load.quantization = Quantization::Wint8;
    const auto weights = make_store_weight_source(*f.store);
    Llama whole(*f.backend, f.config, *weights, load);
    const auto split = split_llama(f, ThreadGroup::create(2), load);
    TensorParallelModel model(split->ranks(), *split->group, split->threads);
    const PromptTokens prompt = f.prompt("hello");
    const std::vector<float> logits = prompt_logits(model, prompt);
    // Against the float32 model: the split layers' own scales quantize no worse than the whole layers'.
    const std::vector<float> exact = f.backend->download(f.prompt_logits("hello"));
    const double split_err = relative_error(logits, exact);
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
// each expert's columns in both pools (64 and 48) and the shared expert's, with routing replicated. Served
// as one model, rank 0 alone encodes images and video (the other ranks hold no vision side, embedding table
// or head) and its embeddings with the features in place reach the others through the group. Text, images,
// video and a second turn: logits the whole model's to float32 rounding, greedy tokens the reference's.
TEST_P(ErnieTensorParallel, LogitsAndGreedyTokensEqualTheWholeModel) {
    testing::ErnieFixture& f = ernie_fixture();
    const int n_ranks = GetParam();
    testing::SplitRanks<Ernie45Vl> split(
        ThreadGroup::create(n_ranks), cpu_rank, [&](Backend& b, const ModelLoadParams& load) {
            const auto weights = make_ernie45_vl_weight_source(*f.store, f.config);
            return std::make_unique<Ernie45Vl>(b, f.config, *weights, load);
        });
    for (int r = 0; r < n_ranks; ++r) {
        const Ernie45Vl& rank = *split.models[static_cast<size_t>(r)];
        EXPECT_EQ(rank.kv_cache_params(1, 8).n_kv_head, 1);
        EXPECT_LT(rank.n_weight_bytes(), f.model->n_weight_bytes());
        if (r > 0) {
            EXPECT_LT(rank.n_weight_bytes(), split.models[0]->n_weight_bytes())
                << "rank " << r << " holds the vision side";
        }
    }
    try {
        (void)split.models[1]->embed(std::vector<int32_t>{1});
        FAIL() << "rank 1 embedded tokens";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1 holds no embedding table"), std::string::npos)
            << e.what();
    }
    TensorParallelModel model(split.ranks(), *split.group, split.threads);
    for (const std::string& key : testing::ernie_prompt_keys()) {
        const PromptTokens prompt = f.prompt(key);
        const PreprocessedImages images = f.images(key);
        const std::vector<int64_t> expected_tokens = f.reference.i64(key + ".greedy_tokens");
        const std::vector<float> logits =
            model.backend().download(testing::ernie_prompt_logits(model.backend(), model, prompt, images));
        GenerateParams params;
        params.max_tokens = static_cast<int>(expected_tokens.size());
        const std::vector<int32_t> tokens =
            generate(model, prompt, images, params, [](int32_t) { return true; }).tokens;
        const double err = relative_error(logits, f.backend->download(f.prompt_logits(key)));
        std::cout << key << ", " << n_ranks << " ranks: logits relative error to the whole model " << err
                  << "\n";
        EXPECT_LT(err, 1e-5) << key;
        EXPECT_LT(relative_error(logits, f.reference.f32(key + ".logits")), 1e-4) << key;
        EXPECT_EQ(std::vector<int64_t>(tokens.begin(), tokens.end()), expected_tokens) << key;
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ErnieTensorParallel, ::testing::Values(2, 4));

// PaddleOCR-VL's decoder (the Llama-style decoder it shares) split over 2 ranks and served as one model, rank
// 0 alone with the vision encoder and projector: every prompt case's logits and greedy tokens.
TEST(PaddleOcrVlTensorParallel, LogitsAndGreedyTokensEqualTheWholeModel) {
    const auto files = ModelFiles::open(testing::tiny_model_dir());
    const testing::Reference reference;
    const auto whole_backend = make_cpu_backend(2);
    PaddleOcrVl whole(*whole_backend, files->config(), *make_file_weight_source(*files));
    testing::SplitRanks<PaddleOcrVl> split(
        ThreadGroup::create(2), cpu_rank, [&](Backend& b, const ModelLoadParams& load) {
            return std::make_unique<PaddleOcrVl>(b, files->config(), *make_file_weight_source(*files), load);
        });
    EXPECT_EQ(split.models[1]->kv_cache_params(1, 8).n_kv_head, 1);
    EXPECT_LT(split.models[1]->n_weight_bytes(), split.models[0]->n_weight_bytes());
    try {
        const std::vector<float> pixels(static_cast<size_t>(4 * files->config().vision.patch_dim()));
        const ImageGrid grid{1, 2, 2};
        (void)split.models[1]->encode_vision(pixels, std::span(&grid, 1));
        FAIL() << "rank 1 encoded an image";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("holds no vision encoder"), std::string::npos) << e.what();
    }
    TensorParallelModel model(split.ranks(), *split.group, split.threads);
    for (const testing::PromptCase& c : testing::prompt_cases()) {
        const ChatPromptTokens prompt =
            testing::reference_prompt(reference, c, files->config().image_token_id);
        const PreprocessedImages images = testing::reference_images(reference, c);
        const std::vector<int64_t> expected_tokens = reference.i64(c.key + ".greedy_tokens");
        const std::vector<float> logits =
            model.backend().download(testing::prompt_logits(model, prompt, images));
        GenerateParams params;
        params.max_tokens = static_cast<int>(expected_tokens.size());
        const std::vector<int32_t> tokens =
            generate(model, prompt, images, params, [](int32_t) { return true; }).tokens;
        const double err =
            relative_error(logits, whole_backend->download(testing::prompt_logits(whole, prompt, images)));
        std::cout << c.key << ", 2 ranks: logits relative error to the whole model " << err << "\n";
        EXPECT_LT(err, 1e-5) << c.key;
        EXPECT_EQ(std::vector<int64_t>(tokens.begin(), tokens.end()), expected_tokens) << c.key;
    }
}

TEST(LlamaTensorParallelErrors, HeadsThatDoNotSplitAreNamed) {
    testing::LlamaFixture& f = fixture();
    try {
        (void)split_llama(f, ThreadGroup::create(3));
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

TEST(RankThreads, EachRankKeepsItsThreadAndTheFirstFailureComesBack) {
    RankThreads threads(3);
    std::vector<std::thread::id> first(3), second(3);
    threads.run([&](int r) { first[static_cast<size_t>(r)] = std::this_thread::get_id(); });
    threads.run([&](int r) { second[static_cast<size_t>(r)] = std::this_thread::get_id(); });
    EXPECT_EQ(first, second) << "a rank's backend is always used from the thread that made it";
    EXPECT_EQ(first[0], std::this_thread::get_id()) << "rank 0 on the caller's thread";
    EXPECT_NE(first[1], first[0]);
    EXPECT_NE(first[2], first[1]);

    // Rank 2 fails while ranks 0 and 1 wait for it in a collective: on_failure ends the group, they stop,
    // and the error that comes back is rank 2's, not theirs.
    const auto group = ThreadGroup::create(3);
    std::string heard;
    std::vector<std::string> seen(3);
    try {
        threads.run(
            [&](int r) {
                if (r == 2) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    fail("rank 2 ran out of memory");
                }
                const auto backend = make_cpu_backend(1);
                Tensor x = backend->upload(std::vector<float>{1.0f}, {1});
                try {
                    group->rank(r)->all_reduce_sum(*backend, x);
                } catch (const Error& e) {
                    seen[static_cast<size_t>(r)] = e.what();
                    throw;
                }
            },
            [&](const std::string& why) {
                heard = why;
                group->abort(why);
            });
        FAIL() << "a rank's failure was lost";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "rank 2 ran out of memory");
    }
    EXPECT_EQ(heard, "rank 2 ran out of memory");
    EXPECT_NE(seen[0].find("rank 2 ran out of memory"), std::string::npos) << seen[0];
    EXPECT_NE(seen[1].find("rank 2 ran out of memory"), std::string::npos) << seen[1];

    std::atomic<int> n_ran{0};
    threads.run([&](int) { ++n_ran; });
    EXPECT_EQ(n_ran.load(), 3) << "the threads go on after a failed run";
    EXPECT_THROW(RankThreads(0), Error);
}

// A rank that fails in a step (here: a cache row past its cache) ends the group, and the step's error is
// the rank's; the model refuses every later step instead of waiting for a rank that has gone.
TEST(TensorParallelModel, ARankThatFailsEndsTheStepWithItsError) {
    testing::LlamaFixture& f = fixture();
    testing::SplitRanks<Llama> split(ThreadGroup::create(2), cpu_rank,
                                     [&](Backend& b, const ModelLoadParams& load) {
                                         const auto weights = make_store_weight_source(*f.store);
                                         return std::make_unique<Llama>(b, f.config, *weights, load);
                                     });
    TensorParallelModel model(split.ranks(), *split.group, split.threads);
    PagedKvCache cache(model.backend(), model.kv_cache_params(1, 8));
    KvBatch batch;
    batch.seqs.push_back({0, 2, 2, 0});
    batch.block_tables = {0};
    batch.slots = {0, 1};
    const std::vector<int32_t> positions = {0, 1};
    (void)model.forward_text(model.embed(std::vector<int32_t>{1, 2}), positions, {}, cache, batch);
    batch.slots = {0, 99};  // past the cache's 8 rows
    EXPECT_THROW(
        (void)model.forward_text(model.embed(std::vector<int32_t>{1, 2}), positions, {}, cache, batch),
        Error);
    batch.slots = {0, 1};
    try {
        (void)model.forward_text(model.embed(std::vector<int32_t>{1, 2}), positions, {}, cache, batch);
        FAIL() << "a step ran on a group that had ended";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("tensor-parallel rank"), std::string::npos) << e.what();
    }
}

// The service with tensor-parallel ranks: the Llama fixture loaded from its folder split over two CPU ranks,
// several requests at once through chunked prefill and batched decoding, each given the reference's tokens.
// A rank whose device fails, and a split the model cannot take, fail the load with the reason.
class TensorParallelService : public ::testing::Test {
protected:
    static ServiceParams params(int n_ranks) {
        ServiceParams p;
        p.device.name = "cpu";
        p.device.make_backend = [] { return make_cpu_backend(1); };
        for (int r = 1; r < n_ranks; ++r) {
            DeviceSpec rank;
            rank.name = "cpu";
            rank.make_backend = [] { return make_cpu_backend(1); };
            p.device.more_ranks.push_back(rank);
        }
        p.models.emplace_back(ModelRole::Chat, testing::llama_model_dir());
        p.engine.max_model_len = 256;
        p.engine.max_num_seqs = 4;
        p.engine.max_num_batched_tokens = 16;  // the prompts prefill in chunks beside the others' decoding
        p.engine.block_size = 8;
        p.engine.num_gpu_blocks_override = 64;
        return p;
    }
};

TEST_F(TensorParallelService, RequestsAtOnceGetTheReferenceTokens) {
    testing::LlamaFixture& f = fixture();
    EngineService service;
    service.load(params(2));
    ASSERT_EQ(service.wait_loaded(std::chrono::seconds(60)), ServiceState::Ready) << service.status().error;
    std::vector<RequestHandle> handles;
    for (const std::string& key : llama_prompt_keys()) {
        Request r;
        r.prompt = f.prompt(key);
        r.max_tokens = static_cast<int64_t>(f.reference.i64(key + ".greedy_tokens").size());
        r.ignore_eos = true;
        handles.push_back(service.submit(RequestSpec{std::move(r), {}}));
    }
    for (size_t i = 0; i < handles.size(); ++i) {
        const std::string& key = llama_prompt_keys()[i];
        std::vector<int64_t> tokens;
        std::optional<RequestOutput> last;
        while (std::optional<RequestOutput> out = handles[i].next()) {
            tokens.insert(tokens.end(), out->tokens.begin(), out->tokens.end());
            last = std::move(out);
        }
        ASSERT_TRUE(last && last->finish) << key;
        EXPECT_EQ(*last->finish, FinishReason::Length) << key << ": " << last->error;
        EXPECT_EQ(tokens, f.reference.i64(key + ".greedy_tokens")) << key;
    }
}

TEST_F(TensorParallelService, ALoadThatCannotSplitNamesTheReason) {
    {
        ServiceParams p = params(2);
        p.device.more_ranks[0].make_backend = []() -> std::unique_ptr<Backend> { fail("no such card"); };
        EngineService service;
        service.load(p);
        ASSERT_EQ(service.wait_loaded(std::chrono::seconds(60)), ServiceState::Failed);
        EXPECT_NE(service.status().error.find("tensor-parallel rank 1: no such card"), std::string::npos)
            << service.status().error;
    }
    {
        EngineService service;
        service.load(params(3));  // 4 heads over 3 ranks
        ASSERT_EQ(service.wait_loaded(std::chrono::seconds(60)), ServiceState::Failed);
        EXPECT_NE(service.status().error.find("do not split over 3 tensor-parallel ranks"), std::string::npos)
            << service.status().error;
    }
}

}  // namespace
}  // namespace folio
