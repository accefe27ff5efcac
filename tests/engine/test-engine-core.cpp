// The serving runtime (EngineCore, ModelRunner, DecodeGraphs, Engine, generate) driven by a small fake model
// through the GenerativeModel interface alone, on the CPU backend: what each step produces, stop ids,
// cancellation, preemption, the request limits and the positions and image features the model gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <vector>

#include "backend.h"
#include "engine-core.h"
#include "engine.h"
#include "error.h"
#include "generator.h"
#include "model.h"

using namespace folio;

namespace {

constexpr int64_t kVocab = 64;
constexpr int32_t kEos = 9;
constexpr int32_t kImageToken = 63;    // the image placeholder's id
constexpr int32_t kImageFeature = 50;  // image i's feature rows stand for token kImageFeature + i
constexpr int64_t kPatchDim = 3;       // values of one patch
constexpr int64_t kPositionDelta = 1000;

// A token the fake model's decoder saw: its id (image features as kImageFeature + i), rotary position and
// cache row.
struct Fed {
    int32_t token = 0;
    std::array<int32_t, 3> pos{};
    int32_t slot = 0;
};

// A model whose next token is always the last one plus one (mod kVocab): embeddings are one-hot rows, the
// decoder passes them through, and the head maps row t to t + 1. Prompt token i sits at (i, 2i, 3i) and the
// tokens after the prompt at index + kPositionDelta, so that the runtime must take positions from the model.
// An image of grid (t, h, w) takes t * h * w tokens.
class FakeModel final : public GenerativeModel {
public:
    explicit FakeModel(Backend& backend, bool takes_images = true)
        : backend_(backend), takes_images_(takes_images) {
        std::vector<float> embed(kVocab * kVocab, 0.0f), head(kVocab * kVocab, 0.0f);  // [vocab, vocab] each
        for (int64_t t = 0; t < kVocab; ++t) {
            embed[t * kVocab + t] = 1.0f;
            head[((t + 1) % kVocab) * kVocab + t] = 1.0f;  // logit of token t + 1 is the input's weight on t
        }
        embed_ = backend.upload(embed, {kVocab, kVocab});
        head_ = backend.upload(head, {kVocab, kVocab});
    }

    Backend& backend() const override { return backend_; }
    ModelLimits limits() const override { return {kVocab, max_context, {kEos}}; }
    int64_t n_weight_bytes() const override { return 2 * kVocab * kVocab * int64_t{sizeof(float)}; }

    void check_images(const PreprocessedImages& images) const override {
        if (!takes_images_ && !images.grids.empty()) {
            fail("the model takes no images");
        }
        const auto n =
            static_cast<int64_t>(images.levels.empty() ? images.pixel_values.size() : images.levels.size());
        if (n != images.n_patches() * kPatchDim) {
            fail(n, " image values for ", images.n_patches(), " patches");
        }
    }
    int64_t n_image_tokens(const ImageGrid& grid) const override { return grid.n_patches(); }
    Tensor encode_images(std::span<const std::span<const uint8_t>>, const ChannelLevels&,
                         std::span<const ImageGrid> grids) override {
        return features(grids);
    }
    Tensor encode_images(std::span<const std::span<const float>>, std::span<const ImageGrid> grids) override {
        return features(grids);
    }
    int64_t image_activation_bytes(int64_t n_image_tokens) override {
        profiled_image_tokens = n_image_tokens;
        return image_activation;
    }

    PromptPositions prompt_positions(std::span<const uint8_t> is_image,
                                     std::span<const ImageGrid> grids) const override {
        ++n_position_calls;
        PromptPositions p;
        for (int64_t i = 0; i < static_cast<int64_t>(is_image.size()); ++i) {
            p.pos.push_back({i, 2 * i, 3 * i});
        }
        p.delta = kPositionDelta;
        n_position_grids += static_cast<int64_t>(grids.size());
        return p;
    }

    Tensor embed(std::span<const int32_t> ids) override {
        return backend_.gather_rows(embed_, std::vector<int64_t>(ids.begin(), ids.end()));  // [n, vocab]
    }
    Tensor embed(const Tensor& ids, const Tensor& pending) override {
        ++n_pending_embeds;
        return backend_.gather_token_rows(embed_, ids, pending);  // [n, vocab]
    }
    Tensor forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache&) override {
        const int64_t n = embeds.rows();
        const std::vector<float> rows = backend_.download(embeds);  // [n, vocab]
        const std::vector<int32_t> pos = read(step.positions), slots = read(step.slots);
        for (int64_t r = 0; r < n; ++r) {
            const auto row = rows.begin() + r * kVocab;
            fed.push_back({static_cast<int32_t>(std::max_element(row, row + kVocab) - row),
                           {pos[3 * r], pos[3 * r + 1], pos[3 * r + 2]},
                           slots[r]});
        }
        n_decode_steps += step.batch == nullptr ? 1 : 0;
        return embeds;
    }
    Tensor logits(const Tensor& hidden) override { return backend_.linear(hidden, head_, nullptr); }
    KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const override {
        return {1, 1, 2, n_blocks, block_size};
    }

    int64_t max_context = 4096;
    int64_t image_activation = 0;
    std::vector<Fed> fed;
    std::vector<ImageGrid> encoded;  // the grids of every encode_images call, in order
    int64_t n_encode_calls = 0;
    int64_t n_pending_embeds = 0;
    int64_t n_decode_steps = 0;
    int64_t profiled_image_tokens = -1;
    mutable int64_t n_position_calls = 0;
    mutable int64_t n_position_grids = 0;

private:
    // Image i of the call: rows one-hot at kImageFeature + i.  ->  [sum of n_image_tokens, vocab]
    Tensor features(std::span<const ImageGrid> grids) {
        ++n_encode_calls;
        std::vector<float> values;
        for (size_t i = 0; i < grids.size(); ++i) {
            encoded.push_back(grids[i]);
            for (int64_t r = 0; r < n_image_tokens(grids[i]); ++r) {
                std::vector<float> row(kVocab, 0.0f);
                row[kImageFeature + i] = 1.0f;
                values.insert(values.end(), row.begin(), row.end());
            }
        }
        return backend_.upload(values, {static_cast<int64_t>(values.size()) / kVocab, kVocab});
    }
    std::vector<int32_t> read(const Tensor& t) {
        return backend_.read_back(t.view(0, {t.n_elements()}))->wait();
    }

    Backend& backend_;
    bool takes_images_;
    Tensor embed_;  // [vocab, vocab] one-hot rows
    Tensor head_;   // [vocab, vocab]: row t + 1 picks input t
};

EngineConfig small_config() {
    EngineConfig c;
    c.max_model_len = 64;
    c.max_num_seqs = 4;
    c.max_num_batched_tokens = 64;
    c.block_size = 4;
    c.num_gpu_blocks_override = 64;
    c.limit_mm_per_prompt = 2;
    return c;
}

Request text_request(std::vector<int32_t> ids, int64_t max_tokens) {
    Request r;
    r.prompt.ids = std::move(ids);
    r.prompt.is_image.assign(r.prompt.ids.size(), 0);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
}

struct Finished {
    std::vector<int32_t> tokens;
    std::optional<FinishReason> finish;
};

std::map<int64_t, Finished> run_to_end(EngineCore& core) {
    std::map<int64_t, Finished> out;
    for (int guard = 0; core.has_unfinished(); ++guard) {
        if (guard > 1000) {
            ADD_FAILURE() << "the engine does not finish";
            break;
        }
        for (const RequestOutput& o : core.step()) {
            Finished& f = out[o.id];
            EXPECT_FALSE(f.finish) << "output after the final one for request " << o.id;
            f.tokens.insert(f.tokens.end(), o.tokens.begin(), o.tokens.end());
            f.finish = o.finish;
        }
    }
    return out;
}

// first + 1, first + 2, ..., n tokens.
std::vector<int32_t> chain(int32_t first, int n) {
    std::vector<int32_t> t;
    for (int i = 1; i <= n; ++i) {
        t.push_back(static_cast<int32_t>((first + i) % kVocab));
    }
    return t;
}

class EngineCoreTest : public ::testing::Test {
protected:
    std::unique_ptr<Backend> backend_ = make_cpu_backend(1);
    FakeModel model_{*backend_};
};

TEST_F(EngineCoreTest, GreedyTokensFollowTheModel) {
    EngineCore core(model_, small_config());
    const int64_t a = core.submit(text_request({3, 4, 5}, 6));
    const int64_t b = core.submit(text_request({20, 21}, 3));
    const auto out = run_to_end(core);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out.at(a).tokens, chain(5, 6));
    EXPECT_EQ(out.at(a).finish, FinishReason::Length);
    EXPECT_EQ(out.at(b).tokens, chain(21, 3));
    EXPECT_EQ(out.at(b).finish, FinishReason::Length);
    EXPECT_EQ(model_.n_position_calls, 2);
    EXPECT_GT(model_.n_decode_steps, 0);
    EXPECT_EQ(core.block_pool().n_free(), core.block_pool().n_blocks());
}

TEST_F(EngineCoreTest, PositionsComeFromTheModel) {
    EngineCore core(model_, small_config());
    const int64_t id = core.submit(text_request({3, 4, 5}, 4));
    EXPECT_EQ(run_to_end(core).at(id).tokens, chain(5, 4));
    // The prompt at (i, 2i, 3i), then the three fed-back tokens at their index plus the model's delta.
    ASSERT_GE(model_.fed.size(), 6u);  // a step queued ahead may feed one more
    for (int32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(model_.fed[i].token, 3 + i);
        EXPECT_EQ(model_.fed[i].pos, (std::array<int32_t, 3>{i, 2 * i, 3 * i}));
    }
    for (int32_t i = 3; i < 6; ++i) {
        EXPECT_EQ(model_.fed[i].token, 3 + i);
        const int32_t p = i + static_cast<int32_t>(kPositionDelta);
        EXPECT_EQ(model_.fed[i].pos, (std::array<int32_t, 3>{p, p, p}));
    }
    // Each token has its own cache row.
    std::vector<int32_t> slots;
    for (size_t i = 0; i < 6; ++i) {
        slots.push_back(model_.fed[i].slot);
    }
    std::sort(slots.begin(), slots.end());
    EXPECT_EQ(std::adjacent_find(slots.begin(), slots.end()), slots.end());
}

TEST_F(EngineCoreTest, AsyncStepsReadPendingTokensThroughTheModel) {
    EngineConfig c = small_config();
    c.async_scheduling = true;
    EngineCore core(model_, c);
    const int64_t id = core.submit(text_request({1}, 12));
    EXPECT_EQ(run_to_end(core).at(id).tokens, chain(1, 12));
    EXPECT_GT(core.stats().n_steps_ahead, 0);
    EXPECT_GT(model_.n_pending_embeds, 0);
}

TEST_F(EngineCoreTest, StopIdsAndTheModelsEos) {
    EngineCore core(model_, small_config());
    Request own = text_request({3}, 20);
    own.stop_ids = {6};
    own.ignore_eos = false;
    const int64_t stopped = core.submit(std::move(own));
    Request eos = text_request({5}, 20);
    eos.ignore_eos = false;  // stops at the model's eos, kEos
    const int64_t at_eos = core.submit(std::move(eos));
    const int64_t ignoring = core.submit(text_request({5}, 6));  // runs through kEos to max_tokens
    const auto out = run_to_end(core);
    EXPECT_EQ(out.at(stopped).tokens, (std::vector<int32_t>{4, 5, 6}));
    EXPECT_EQ(out.at(stopped).finish, FinishReason::Stop);
    EXPECT_EQ(out.at(at_eos).tokens, (std::vector<int32_t>{6, 7, 8, kEos}));
    EXPECT_EQ(out.at(at_eos).finish, FinishReason::Stop);
    EXPECT_EQ(out.at(ignoring).tokens, chain(5, 6));
    EXPECT_EQ(out.at(ignoring).finish, FinishReason::Length);
}

TEST_F(EngineCoreTest, CancelEndsOneRequestAndLeavesTheOthers) {
    EngineCore core(model_, small_config());
    const int64_t cancelled = core.submit(text_request({10}, 30));
    const int64_t kept = core.submit(text_request({30}, 8));
    std::map<int64_t, Finished> out;
    for (int i = 0; i < 2; ++i) {
        for (const RequestOutput& o : core.step()) {
            out[o.id].tokens.insert(out[o.id].tokens.end(), o.tokens.begin(), o.tokens.end());
        }
    }
    EXPECT_TRUE(core.cancel(cancelled));
    EXPECT_FALSE(core.cancel(cancelled));  // already being cancelled
    EXPECT_FALSE(core.cancel(12345));      // unknown
    for (const auto& [id, f] : run_to_end(core)) {
        out[id].tokens.insert(out[id].tokens.end(), f.tokens.begin(), f.tokens.end());
        out[id].finish = f.finish;
    }
    EXPECT_EQ(out.at(cancelled).finish, FinishReason::Cancelled);
    EXPECT_LT(out.at(cancelled).tokens.size(), 30u);
    const std::vector<int32_t> expected = chain(10, 30);
    EXPECT_TRUE(
        std::equal(out.at(cancelled).tokens.begin(), out.at(cancelled).tokens.end(), expected.begin()));
    EXPECT_EQ(out.at(kept).tokens, chain(30, 8));
    EXPECT_EQ(out.at(kept).finish, FinishReason::Length);
    EXPECT_FALSE(core.has_unfinished());
    EXPECT_EQ(core.block_pool().n_free(), core.block_pool().n_blocks());
}

TEST_F(EngineCoreTest, PreemptedRequestsGiveTheSameTokens) {
    EngineConfig c = small_config();
    c.num_gpu_blocks_override = 8;  // three requests of 20 tokens need 15 blocks of 4
    c.enable_prefix_caching = false;
    EngineCore core(model_, c);
    std::vector<int64_t> ids;
    for (const int32_t first : {2, 22, 42}) {
        ids.push_back(core.submit(text_request({first, first + 1, first + 2, first + 3}, 16)));
    }
    const auto out = run_to_end(core);
    EXPECT_GT(core.stats().n_preemptions, 0);
    for (size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(out.at(ids[i]).tokens, chain(static_cast<int32_t>(2 + 20 * i + 3), 16)) << "request " << i;
        EXPECT_EQ(out.at(ids[i]).finish, FinishReason::Length);
    }
}

TEST_F(EngineCoreTest, ImageFeaturesTakeThePlaceholdersRows) {
    EngineCore core(model_, small_config());
    Request r = text_request({7, kImageToken, kImageToken, kImageToken, kImageToken, 8}, 2);
    r.prompt.is_image = {0, 1, 1, 1, 1, 0};
    r.images.grids = {{1, 2, 2}};
    r.images.pixel_values.assign(4 * kPatchDim, 0.5f);
    const int64_t id = core.submit(std::move(r));
    EXPECT_EQ(run_to_end(core).at(id).tokens, chain(8, 2));
    ASSERT_EQ(model_.encoded.size(), 1u);
    EXPECT_EQ(model_.encoded[0], (ImageGrid{1, 2, 2}));
    EXPECT_EQ(model_.n_position_grids, 1);
    ASSERT_GE(model_.fed.size(), 6u);
    EXPECT_EQ(model_.fed[0].token, 7);
    for (size_t i = 1; i < 5; ++i) {
        EXPECT_EQ(model_.fed[i].token, kImageFeature) << "row " << i;
    }
    EXPECT_EQ(model_.fed[5].token, 8);
}

TEST_F(EngineCoreTest, ValidationAsksTheModel) {
    EngineCore core(model_, small_config());
    EXPECT_THROW(core.validate(text_request({1, static_cast<int32_t>(kVocab)}, 4)), Error);  // outside vocab
    EXPECT_THROW(core.validate(text_request({}, 4)), Error);
    EXPECT_THROW(core.validate(text_request({1}, 0)), Error);

    Request image = text_request({1, kImageToken, kImageToken, 2}, 4);
    image.prompt.is_image = {0, 1, 1, 0};
    image.images.grids = {{1, 1, 2}};
    image.images.pixel_values.assign(2 * kPatchDim, 0.0f);
    EXPECT_NO_THROW(core.validate(image));
    Request short_run = image;
    short_run.images.grids = {{1, 2, 2}};  // 4 tokens an image, the prompt has 2
    short_run.images.pixel_values.assign(4 * kPatchDim, 0.0f);
    EXPECT_THROW(core.validate(short_run), Error);
    Request short_values = image;
    short_values.images.pixel_values.pop_back();
    EXPECT_THROW(core.validate(short_values), Error);
    Request too_many = text_request({1, kImageToken, kImageToken, kImageToken, 2}, 4);
    too_many.prompt.is_image = {0, 1, 1, 1, 0};
    too_many.images.grids = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};  // limit_mm_per_prompt is 2
    too_many.images.pixel_values.assign(3 * kPatchDim, 0.0f);
    EXPECT_THROW(core.validate(too_many), Error);

    FakeModel text_only(*backend_, false);
    EngineCore text_core(text_only, small_config());
    EXPECT_NO_THROW(text_core.validate(text_request({1, 2}, 4)));
    EXPECT_THROW(text_core.validate(image), Error);
}

TEST_F(EngineCoreTest, LimitsAndMemoryPlanComeFromTheModel) {
    model_.max_context = 32;
    EXPECT_THROW(EngineCore core(model_, small_config()), Error);  // max_model_len 64 over the model's 32
    model_.max_context = 4096;

    EngineConfig planned = small_config();
    planned.num_gpu_blocks_override = 0;
    planned.max_num_batched_tokens = 48;
    {
        EngineCore core(model_, planned);
        EXPECT_EQ(model_.profiled_image_tokens, 48);
        EXPECT_GT(core.memory_plan().n_blocks, 0);
    }
    // An image encoder that would take all the memory leaves none for the cache.
    model_.image_activation = backend_->total_memory();
    EXPECT_THROW(EngineCore core(model_, planned), Error);
}

TEST_F(EngineCoreTest, GenerateRunsOneRequestThroughTheInterface) {
    PromptTokens prompt{{11, 12}, {0, 0}};
    GenerateParams params;
    params.max_tokens = 5;
    params.stop_ids = {60};
    const GenerateResult all = generate(model_, prompt, {}, params, [](int32_t) { return true; });
    EXPECT_EQ(all.tokens, chain(12, 5));
    EXPECT_EQ(all.finish, FinishReason::Length);

    int n_seen = 0;
    const GenerateResult cancelled =
        generate(model_, prompt, {}, params, [&](int32_t) { return ++n_seen < 2; });
    EXPECT_EQ(cancelled.finish, FinishReason::Cancelled);
    EXPECT_GE(cancelled.tokens.size(), 2u);
    EXPECT_LT(cancelled.tokens.size(), 5u);

    params.max_tokens = 5000;  // with the prompt, over the model's context of 4096
    EXPECT_THROW(generate(model_, prompt, {}, params, [](int32_t) { return true; }), Error);
}

TEST_F(EngineCoreTest, EngineThreadDeliversToHandles) {
    Engine engine(model_, small_config());
    RequestHandle a = engine.submit(text_request({40}, 5));
    std::vector<int32_t> tokens;
    std::optional<FinishReason> finish;
    while (const std::optional<RequestOutput> out = a.next()) {
        tokens.insert(tokens.end(), out->tokens.begin(), out->tokens.end());
        finish = out->finish;
    }
    EXPECT_EQ(tokens, chain(40, 5));
    EXPECT_EQ(finish, FinishReason::Length);
    EXPECT_THROW(engine.submit(text_request({1}, 0)), Error);
}

}  // namespace
