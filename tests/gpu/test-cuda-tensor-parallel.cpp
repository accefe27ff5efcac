// Tensor parallelism on CUDA backends, each rank a backend of its own on a thread of its own: the Llama and
// ERNIE-4.5-VL fixtures split over two ranks on one card with the sums on the host, and over two cards
// through NCCL where the machine has two (skipped otherwise); NCCL's group of one rank summing on a backend's
// stream; decode steps recorded through an NCCL group (of two cards where the machine has them, of one
// otherwise). Greedy tokens equal the reference's. Skipped where no CUDA device is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "engine/backend/collectives.h"
#include "engine/backend/cuda/make-cuda-backend.h"
#include "engine/backend/nccl-group.h"
#include "engine/backend/nccl-library.h"
#include "engine/common/error.h"
#include "engine/models/ernie45-vl/ernie45-vl.h"
#include "engine/models/ernie45-vl/weights.h"
#include "engine/models/llama/llama.h"
#include "engine/runtime/engine-core.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/tensor-parallel-model.h"
#include "ernie45-vl-fixture.h"
#include "kernels/elementwise.h"
#include "llama-fixture.h"
#include "split-ranks.h"

namespace folio {
namespace {

std::vector<int64_t> greedy(GenerativeModel& model, const PromptTokens& prompt,
                            const PreprocessedImages& images, size_t n) {
    GenerateParams params;
    params.max_tokens = static_cast<int>(n);
    const GenerateResult result = generate(model, prompt, images, params, [](int32_t) { return true; });
    return {result.tokens.begin(), result.tokens.end()};
}

// NCCL where the machine has it; the reason it is missing otherwise.
const NcclLibrary* system_nccl(std::string& why) {
    try {
        return &NcclLibrary::system();
    } catch (const Error& e) {
        why = e.what();
        return nullptr;
    }
}

class CudaTensorParallel : public ::testing::Test {
protected:
    void SetUp() override {
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
    }

    static testing::LlamaFixture& llama() {
        static testing::LlamaFixture f(make_cuda_backend(0));
        return f;
    }
    static testing::ErnieFixture& ernie() {
        static testing::ErnieFixture f(make_cuda_backend(0));
        return f;
    }

    // The model split over the group's ranks, rank r on devices[r], served as one model to check.
    template <typename M>
    static void on_split(std::shared_ptr<CollectiveGroup> group, const std::vector<int>& devices,
                         const typename testing::SplitRanks<M>::Load& load,
                         const std::function<void(GenerativeModel&)>& check) {
        testing::SplitRanks<M> split(
            std::move(group),
            [&](int r) {
                return make_cuda_backend(CudaBackendOptions{devices[static_cast<size_t>(r)], true});
            },
            load);
        TensorParallelModel model(split.ranks(), *split.group, split.threads);
        check(model);
    }

    // The Llama fixture's every prompt, and ERNIE-4.5-VL's with its images and video: greedy tokens.
    static void expect_llama_reference(std::shared_ptr<CollectiveGroup> group,
                                       const std::vector<int>& devices) {
        testing::LlamaFixture& f = llama();
        on_split<Llama>(
            std::move(group), devices,
            [&](Backend& b, const ModelLoadParams& load) {
                return std::make_unique<Llama>(b, f.config, *make_store_weight_source(*f.store), load);
            },
            [&](GenerativeModel& model) {
                for (const std::string& key : testing::llama_prompt_keys()) {
                    const std::vector<int64_t> expected = f.reference.i64(key + ".greedy_tokens");
                    EXPECT_EQ(greedy(model, f.prompt(key), {}, expected.size()), expected) << key;
                }
            });
    }

    static void expect_ernie_reference(std::shared_ptr<CollectiveGroup> group,
                                       const std::vector<int>& devices) {
        testing::ErnieFixture& f = ernie();
        on_split<Ernie45Vl>(
            std::move(group), devices,
            [&](Backend& b, const ModelLoadParams& load) {
                return std::make_unique<Ernie45Vl>(b, f.config,
                                                   *make_ernie45_vl_weight_source(*f.store, f.config), load);
            },
            [&](GenerativeModel& model) {
                for (const std::string& key : testing::ernie_prompt_keys()) {
                    const std::vector<int64_t> expected = f.reference.i64(key + ".greedy_tokens");
                    EXPECT_EQ(greedy(model, f.prompt(key), f.images(key), expected.size()), expected) << key;
                }
            });
    }
};

TEST_F(CudaTensorParallel, TwoRanksOnOneCardSumOnTheHost) {
    expect_llama_reference(ThreadGroup::create(2), {0, 0});
    expect_ernie_reference(ThreadGroup::create(2), {0, 0});
}

TEST_F(CudaTensorParallel, NcclGroupOfOneSumsOnTheBackendsStream) {
    std::string why;
    const NcclLibrary* nccl = system_nccl(why);
    if (nccl == nullptr) {
        GTEST_SKIP() << "skipped: " << why;
    }
    const auto backend = make_cuda_backend(0);
    const auto group = NcclGroup::create(*nccl, 1, cuda_backend_stream);
    const std::unique_ptr<Collectives> rank = group->join(0, *backend);
    const std::vector<float> values = {1.5f, -2.0f, 3.25f, 8.0f, 0.125f};
    Tensor x = backend->upload(values, {5});
    Tensor tail = x.view(2, {3});
    rank->all_reduce_sum(*backend, tail);
    EXPECT_EQ(backend->download(x), values);
    std::cout << "NCCL " << nccl->version() << " from " << nccl->path() << "\n";
}

// A decode step recorded through the group: NCCL's sums captured on the rank's stream with the model's work,
// every step after the prompt replayed, and the greedy tokens still the reference's.
TEST_F(CudaTensorParallel, NcclGroupRecordsDecodeSteps) {
    std::string why;
    const NcclLibrary* nccl = system_nccl(why);
    if (nccl == nullptr) {
        GTEST_SKIP() << "skipped: " << why;
    }
    testing::LlamaFixture& f = llama();
    const int n_ranks = std::min(kernels::device_count(), 2);
    std::vector<int> devices(static_cast<size_t>(n_ranks));
    std::iota(devices.begin(), devices.end(), 0);
    on_split<Llama>(
        NcclGroup::create(*nccl, n_ranks, cuda_backend_stream), devices,
        [&](Backend& b, const ModelLoadParams& load) {
            return std::make_unique<Llama>(b, f.config, *make_store_weight_source(*f.store), load);
        },
        [&](GenerativeModel& model) {
            ASSERT_TRUE(model.can_record());
            for (const std::string& key : testing::llama_prompt_keys()) {
                const std::vector<int64_t> expected = f.reference.i64(key + ".greedy_tokens");
                Request request;
                request.prompt = f.prompt(key);
                EngineConfig config;
                config.max_model_len = static_cast<int64_t>(request.prompt.ids.size() + expected.size());
                config.max_num_seqs = 1;
                config.num_gpu_blocks_override =
                    (config.max_model_len + config.block_size - 1) / config.block_size;
                EngineCore engine(model, config);
                request.max_tokens = static_cast<int>(expected.size());
                const int64_t id = engine.submit(std::move(request));
                std::vector<int64_t> tokens;
                while (engine.has_unfinished()) {
                    for (const RequestOutput& out : engine.step()) {
                        if (out.id == id) {
                            tokens.insert(tokens.end(), out.tokens.begin(), out.tokens.end());
                        }
                    }
                }
                EXPECT_EQ(tokens, expected) << key << " on " << n_ranks << " ranks";
                const RunnerStats& runner = engine.stats().runner;
                EXPECT_GT(runner.n_decode_steps, 0) << key;
                EXPECT_EQ(runner.n_replays, runner.n_decode_steps) << key;
            }
        });
}

TEST_F(CudaTensorParallel, TwoCardsSumThroughNccl) {
    if (kernels::device_count() < 2) {
        GTEST_SKIP() << "skipped: one CUDA device; two ranks through NCCL need two";
    }
    std::string why;
    const NcclLibrary* nccl = system_nccl(why);
    if (nccl == nullptr) {
        GTEST_SKIP() << "skipped: " << why;
    }
    expect_llama_reference(NcclGroup::create(*nccl, 2, cuda_backend_stream), {0, 1});
    expect_ernie_reference(NcclGroup::create(*nccl, 2, cuda_backend_stream), {0, 1});
}

}  // namespace
}  // namespace folio
