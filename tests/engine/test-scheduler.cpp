#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "engine/common/error.h"
#include "engine/runtime/chunking-policy.h"
#include "engine/runtime/preemption-policy.h"
#include "engine/runtime/scheduler.h"

using namespace folio;

namespace {

// KV slots counted in blocks, with an optional number of cached prefix tokens per request.
class FakeKvSlots final : public KvSlots {
public:
    FakeKvSlots(int64_t n_blocks, int64_t block_size) : n_blocks_(n_blocks), block_size_(block_size) {}

    int64_t block_size() const override { return block_size_; }
    int64_t n_blocks() const override { return n_blocks_; }
    int64_t n_free_blocks() const override { return n_blocks_ - n_used(); }
    int64_t claim_cached_prefix(int64_t request, std::span<const BlockHash> hashes) override {
        claimed_hashes[request] = static_cast<int64_t>(hashes.size());
        const auto it = cached_tokens.find(request);
        const int64_t n = it == cached_tokens.end() ? 0 : it->second;
        tables[request] = n / block_size_;
        return n;
    }
    bool allocate_slots(int64_t request, int64_t n_tokens) override {
        const int64_t needed = (n_tokens + block_size_ - 1) / block_size_;
        const int64_t extra = needed - tables[request];
        if (extra > n_free_blocks()) {
            return false;
        }
        tables[request] = std::max(tables[request], needed);
        return true;
    }
    void cache_blocks(int64_t request, std::span<const BlockHash> hashes) override {
        n_cached_blocks[request] = static_cast<int64_t>(hashes.size());
    }
    void free(int64_t request) override {
        tables.erase(request);
        freed.push_back(request);
    }
    std::span<const int32_t> block_table(int64_t) const override { return {}; }

    int64_t n_used() const {
        int64_t n = 0;
        for (const auto& [id, blocks] : tables) {
            n += blocks;
        }
        return n;
    }

    std::map<int64_t, int64_t> tables;  // request -> blocks held
    std::map<int64_t, int64_t> cached_tokens;
    std::map<int64_t, int64_t> claimed_hashes;
    std::map<int64_t, int64_t> n_cached_blocks;
    std::vector<int64_t> freed;

private:
    int64_t n_blocks_;
    int64_t block_size_;
};

std::unique_ptr<Sequence> text_sequence(int64_t id, int64_t n_prompt, int64_t max_tokens) {
    auto seq = std::make_unique<Sequence>();
    seq->id = id;
    seq->tokens.assign(static_cast<size_t>(n_prompt), 7);
    seq->n_prompt = n_prompt;
    seq->max_tokens = max_tokens;
    seq->stop_ids = {2};
    return seq;
}

SchedulerConfig config(int64_t budget, int64_t max_seqs = 8, bool prefix = false) {
    SchedulerConfig c;
    c.max_num_batched_tokens = budget;
    c.max_num_seqs = max_seqs;
    c.max_model_len = 256;
    c.enable_prefix_caching = prefix;
    return c;
}

// A token for every chunk that samples.
std::vector<int32_t> tokens_for(const SchedulerOutput& out, int32_t token = 9) {
    std::vector<int32_t> sampled;
    for (const ScheduledChunk& c : out.chunks) {
        sampled.push_back(c.samples ? token : -1);
    }
    return sampled;
}

std::map<int64_t, int64_t> chunk_sizes(const SchedulerOutput& out) {
    std::map<int64_t, int64_t> sizes;
    for (const ScheduledChunk& c : out.chunks) {
        sizes[c.id] = c.n_new;
    }
    return sizes;
}

}  // namespace

TEST(ChunkingPolicy, TakesEverythingThatFits) {
    EXPECT_EQ(prefill_chunk(0, 10, {}, 16, true), 10);
    EXPECT_EQ(prefill_chunk(10, 11, {}, 1, true), 1);
    EXPECT_EQ(prefill_chunk(0, 20, {}, 16, true), 16);
    EXPECT_EQ(prefill_chunk(0, 20, {}, 16, false), 0) << "without chunking a prompt goes whole or waits";
    EXPECT_EQ(prefill_chunk(0, 20, {}, 0, true), 0);
}

TEST(ChunkingPolicy, NeverEndsInsideAnImage) {
    const std::vector<ImageSpan> images{{5, 12, 1}};  // tokens [5, 17)
    EXPECT_EQ(prefill_chunk(0, 30, images, 10, true), 17) << "grows to take the image whole, past the budget";
    EXPECT_EQ(prefill_chunk(5, 30, images, 10, true), 12) << "grows to keep the image whole";
    EXPECT_EQ(prefill_chunk(8, 30, images, 4, true), 9) << "a cached prefix ending inside the image";
    EXPECT_EQ(prefill_chunk(0, 30, images, 17, true), 17) << "ends right after the image";
    EXPECT_EQ(prefill_chunk(0, 30, images, 5, true), 5) << "ends right before it";
}

TEST(PreemptionPolicy, PicksTheLowestClassThenTheMostRecentlyStarted) {
    Sequence chat, block_a, block_b;
    chat.priority = Priority::Interactive;
    chat.start_order = 9;
    block_a.start_order = 2;
    block_b.start_order = 5;
    std::vector<Sequence*> running{&chat, &block_a, &block_b};
    EXPECT_EQ(choose_preemption_victim(running), &block_b);
    EXPECT_EQ(choose_preemption_victim(std::vector<Sequence*>{&chat}), &chat);
    EXPECT_EQ(choose_preemption_victim(std::vector<Sequence*>{&chat}, Priority::Batch), nullptr)
        << "only batch sequences may make room";
}

TEST(PreemptionPolicy, PicksTheMostRecentlyStarted) {
    Sequence a, b, c;
    a.start_order = 4;
    b.start_order = 9;
    c.start_order = 1;
    std::vector<Sequence*> running{&a, &b, &c};
    EXPECT_EQ(choose_preemption_victim(running), &b);
    EXPECT_EQ(choose_preemption_victim({}), nullptr);
}

TEST(Scheduler, MixesDecodeTokensWithPrefillChunksUnderTheBudget) {
    FakeKvSlots kv(100, 4);
    Scheduler s(config(10), kv);
    s.add(text_sequence(1, 3, 5));
    s.add(text_sequence(2, 3, 5));
    SchedulerOutput out = s.schedule();
    EXPECT_EQ(chunk_sizes(out), (std::map<int64_t, int64_t>{{1, 3}, {2, 3}}));
    s.update_from_output(out, tokens_for(out));

    s.add(text_sequence(3, 30, 5));
    out = s.schedule();
    // Two decode tokens first, then what is left of the budget for the new prompt.
    EXPECT_EQ(chunk_sizes(out), (std::map<int64_t, int64_t>{{1, 1}, {2, 1}, {3, 8}}));
    EXPECT_EQ(out.n_tokens, 10);
    EXPECT_FALSE(out.chunks[2].samples);
    const auto updates = s.update_from_output(out, tokens_for(out));
    EXPECT_EQ(updates.size(), 2u) << "the unfinished prefill yields no token";
    EXPECT_EQ(s.find(3)->n_computed, 8);
}

TEST(Scheduler, ChunksNeverSplitAnImage) {
    FakeKvSlots kv(100, 4);
    Scheduler s(config(8), kv);
    auto seq = text_sequence(1, 20, 2);
    seq->images.push_back({3, 8, 77});  // tokens [3, 11)
    s.add(std::move(seq));
    std::vector<int64_t> chunks;
    while (s.find(1) && s.find(1)->prefilling()) {
        const SchedulerOutput out = s.schedule();
        ASSERT_EQ(out.chunks.size(), 1u);
        chunks.push_back(out.chunks[0].n_new);
        s.update_from_output(out, tokens_for(out));
    }
    EXPECT_EQ(chunks, (std::vector<int64_t>{11, 8, 1}))
        << "the first chunk reaches the image and takes it whole";
}

TEST(Scheduler, RespectsMaxNumSeqs) {
    FakeKvSlots kv(100, 4);
    Scheduler s(config(100, 2), kv);
    for (int64_t id = 0; id < 4; ++id) {
        s.add(text_sequence(id, 4, 3));
    }
    const SchedulerOutput out = s.schedule();
    EXPECT_EQ(out.chunks.size(), 2u);
    EXPECT_EQ(s.n_running(), 2);
    EXPECT_EQ(s.n_waiting(), 2);
}

TEST(Scheduler, PreemptsTheMostRecentlyStartedWhenBlocksRunOut) {
    FakeKvSlots kv(6, 4);  // 24 token slots
    Scheduler s(config(64), kv);
    s.add(text_sequence(1, 4, 20));
    s.add(text_sequence(2, 4, 20));
    SchedulerOutput out = s.schedule();
    ASSERT_EQ(out.chunks.size(), 2u);
    s.update_from_output(out, tokens_for(out));
    // Six blocks hold both sequences up to 12 tokens each; the 13th needs a fourth block each.
    for (int step = 0; step < 8; ++step) {
        out = s.schedule();
        EXPECT_TRUE(out.preempted.empty());
        s.update_from_output(out, tokens_for(out));
    }
    out = s.schedule();
    ASSERT_EQ(out.preempted, (std::vector<int64_t>{2}));
    EXPECT_EQ(chunk_sizes(out), (std::map<int64_t, int64_t>{{1, 1}}));
    const Sequence* victim = s.find(2);
    EXPECT_EQ(victim->status, SequenceStatus::Waiting);
    EXPECT_EQ(victim->n_computed, 0);
    EXPECT_EQ(victim->n_output(), 9) << "its output is kept and recomputed later";
    EXPECT_EQ(kv.tables.count(2), 0u);
    s.update_from_output(out, tokens_for(out));
    EXPECT_EQ(s.n_preemptions(), 1);
}

TEST(Scheduler, FinishesOnStopTokenMaxTokensAndMaxModelLen) {
    FakeKvSlots kv(100, 4);
    SchedulerConfig c = config(100);
    c.max_model_len = 12;
    Scheduler s(c, kv);
    s.add(text_sequence(1, 4, 10));
    s.add(text_sequence(2, 4, 2));
    s.add(text_sequence(3, 10, 50));
    SchedulerOutput out = s.schedule();
    std::vector<int32_t> sampled = tokens_for(out);
    sampled[0] = 2;  // request 1 samples its stop token
    std::map<int64_t, std::optional<FinishReason>> finish;
    for (const auto& u : s.update_from_output(out, sampled)) {
        finish[u.id] = u.finish;
    }
    EXPECT_EQ(finish[1], FinishReason::Stop);
    EXPECT_EQ(finish[2], std::nullopt);
    EXPECT_EQ(s.find(1), nullptr);
    EXPECT_EQ(kv.tables.count(1), 0u);
    out = s.schedule();
    for (const auto& u : s.update_from_output(out, tokens_for(out))) {
        finish[u.id] = u.finish;
    }
    EXPECT_EQ(finish[2], FinishReason::Length) << "max_tokens";
    EXPECT_EQ(finish[3], FinishReason::Length) << "max_model_len";
    EXPECT_FALSE(s.has_unfinished());
}

TEST(Scheduler, CancelsWaitingAndRunningSequences) {
    FakeKvSlots kv(100, 4);
    Scheduler s(config(100, 1), kv);
    s.add(text_sequence(1, 4, 10));
    s.add(text_sequence(2, 4, 10));
    const SchedulerOutput out = s.schedule();
    EXPECT_TRUE(s.finish(1, FinishReason::Cancelled));
    EXPECT_TRUE(s.finish(2, FinishReason::Cancelled));
    EXPECT_FALSE(s.finish(2, FinishReason::Cancelled));
    EXPECT_TRUE(s.update_from_output(out, tokens_for(out)).empty()) << "a cancelled sequence takes no token";
    EXPECT_FALSE(s.has_unfinished());
    EXPECT_TRUE(kv.tables.empty());
}

TEST(Scheduler, StartsFromTheCachedPrefixAndLeavesOneTokenToCompute) {
    FakeKvSlots kv(100, 4);
    Scheduler s(config(100, 8, true), kv);
    kv.cached_tokens[1] = 8;
    s.add(text_sequence(1, 12, 3));
    SchedulerOutput out = s.schedule();
    ASSERT_EQ(out.chunks.size(), 1u);
    EXPECT_EQ(out.chunks[0].n_past, 8);
    EXPECT_EQ(out.chunks[0].n_new, 4);
    EXPECT_EQ(kv.claimed_hashes[1], 2) << "(12 - 1) / 4 full blocks may be looked up";
    s.update_from_output(out, tokens_for(out));
    EXPECT_EQ(kv.n_cached_blocks[1], 3);
}

// The next step scheduled before the last one's tokens are in: its decode chunks take the pending tokens,
// which the updates, in step order, put in place; a sequence whose pending token is its last is left out,
// and one the earlier step stops loses the later step's token.
TEST(Scheduler, SchedulesTheNextStepBeforeTheTokensAreIn) {
    FakeKvSlots kv(100, 4);
    Scheduler s(config(64), kv);
    s.add(text_sequence(1, 3, 5));
    s.add(text_sequence(2, 4, 1));
    s.add(text_sequence(3, 2, 5));
    const SchedulerOutput first = s.schedule();
    ASSERT_EQ(first.chunks.size(), 3u);
    EXPECT_EQ(s.find(1)->n_computed, 3) << "a scheduled chunk counts as computed";
    EXPECT_EQ(s.find(1)->tokens.back(), kPendingToken);
    EXPECT_TRUE(s.find(2)->last_pending) << "max_tokens 1";
    EXPECT_TRUE(s.can_schedule_ahead());

    const SchedulerOutput second = s.schedule();
    EXPECT_EQ(chunk_sizes(second), (std::map<int64_t, int64_t>{{1, 1}, {3, 1}})) << "2 ends with its token";
    EXPECT_EQ(second.chunks[0].n_past, 3) << "the pending token is the input";
    EXPECT_TRUE(second.chunks[0].samples);
    EXPECT_EQ(s.find(1)->n_pending, 2);

    std::vector<int32_t> sampled = tokens_for(first, 11);
    sampled[2] = 2;  // request 3 samples its stop token
    std::map<int64_t, std::optional<FinishReason>> finish;
    for (const SequenceUpdate& u : s.update_from_output(first, sampled)) {
        EXPECT_EQ(*u.token, u.id == 3 ? 2 : 11);
        finish[u.id] = u.finish;
    }
    EXPECT_EQ(finish[2], FinishReason::Length);
    EXPECT_EQ(finish[3], FinishReason::Stop);
    EXPECT_EQ(s.find(1)->tokens, (std::vector<int32_t>{7, 7, 7, 11, kPendingToken}));

    const auto updates = s.update_from_output(second, tokens_for(second, 12));
    ASSERT_EQ(updates.size(), 1u) << "request 3 stopped: its second token is dropped";
    EXPECT_EQ(updates[0].id, 1);
    EXPECT_EQ(s.find(1)->tokens, (std::vector<int32_t>{7, 7, 7, 11, 12}));
    EXPECT_EQ(s.find(1)->n_pending, 0);
    EXPECT_EQ(kv.tables.count(3), 0u);
    EXPECT_THROW(s.update_from_output(second, tokens_for(second, 12)), Error) << "no token pending any more";
}

// Scheduling ahead is only offered where the step comes out as it would after the tokens: the free blocks
// cover what the running sequences take next and every waiting prompt, so nobody is preempted for a
// sequence the tokens end.
TEST(Scheduler, SchedulesAheadOnlyWhereTheFreeBlocksCoverWhatComesNext) {
    FakeKvSlots kv(8, 4);
    Scheduler s(config(64, 2), kv);
    s.add(text_sequence(1, 4, 9));
    s.add(text_sequence(2, 6, 9));
    s.add(text_sequence(3, 4, 9));
    SchedulerOutput out = s.schedule();
    ASSERT_EQ(s.n_waiting(), 1);
    // Request 1's pending fifth token needs a second block, request 2's seventh fits its second, and waiting
    // request 3 needs one.
    kv.tables[99] = 3;  // another holder leaves two blocks free
    EXPECT_TRUE(s.can_schedule_ahead());
    kv.tables[99] = 4;
    EXPECT_FALSE(s.can_schedule_ahead());
    s.update_from_output(out, tokens_for(out));
    ASSERT_TRUE(s.finish(3, FinishReason::Cancelled));
    EXPECT_TRUE(s.can_schedule_ahead());
    kv.tables[99] = 5;
    EXPECT_FALSE(s.can_schedule_ahead());
    out = s.schedule();
    EXPECT_EQ(out.preempted, (std::vector<int64_t>{2})) << "as scheduling ahead would have risked";
}

// A sequence preempted while its token is pending keeps the token once it is in, and is not admitted again
// before then.
TEST(Scheduler, APreemptedSequenceKeepsItsPendingToken) {
    FakeKvSlots kv(2, 4);  // 8 token slots
    Scheduler s(config(64), kv);
    s.add(text_sequence(1, 4, 4));
    s.add(text_sequence(2, 3, 5));
    const SchedulerOutput first = s.schedule();
    ASSERT_EQ(first.chunks.size(), 2u);
    // Request 1's fifth token needs a block that request 2 holds: 2 is preempted with its token pending.
    const SchedulerOutput second = s.schedule();
    EXPECT_EQ(second.preempted, (std::vector<int64_t>{2}));
    EXPECT_EQ(s.find(2)->n_computed, 0);
    EXPECT_EQ(s.find(2)->n_pending, 1);
    EXPECT_FALSE(s.can_schedule_ahead()) << "request 2 waits for its token";
    s.update_from_output(first, tokens_for(first, 5));
    EXPECT_EQ(s.find(2)->tokens, (std::vector<int32_t>{7, 7, 7, 5}));
    EXPECT_EQ(s.find(2)->n_output(), 1);
    s.update_from_output(second, tokens_for(second, 6));
    EXPECT_EQ(s.find(1)->tokens, (std::vector<int32_t>{7, 7, 7, 7, 5, 6}));
}

TEST(Scheduler, RejectsRequestsThatCanNeverRun) {
    FakeKvSlots kv(10, 4);
    Scheduler s(config(16), kv);
    const auto message = [&](std::unique_ptr<Sequence> seq) {
        try {
            s.add(std::move(seq));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(message(text_sequence(1, 0, 4)).find("empty prompt"), std::string::npos);
    EXPECT_NE(message(text_sequence(2, 4, 0)).find("max_tokens must be at least 1"), std::string::npos);
    EXPECT_NE(message(text_sequence(3, 256, 4)).find("max_model_len"), std::string::npos);
    auto big_image = text_sequence(4, 30, 4);
    big_image->images.push_back({2, 20, 1});
    EXPECT_EQ(message(std::move(big_image)), "accepted") << "an image over the token budget is taken whole";
    SchedulerConfig bounded = config(16);
    bounded.max_image_tokens = 12;
    Scheduler with_bound(bounded, kv);
    auto over_bound = text_sequence(7, 30, 4);
    over_bound->images.push_back({2, 20, 1});
    try {
        with_bound.add(std::move(over_bound));
        ADD_FAILURE() << "an image over max_image_tokens was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("more than the 12 of the largest image"), std::string::npos);
    }
    EXPECT_NE(message(text_sequence(5, 30, 30)).find("KV blocks"), std::string::npos);
    EXPECT_EQ(message(text_sequence(6, 4, 4)), "accepted");
    EXPECT_NE(message(text_sequence(6, 4, 4)).find("already added"), std::string::npos);
    EXPECT_THROW(Scheduler(config(0), kv), Error);
}

namespace {

std::unique_ptr<Sequence> chat_sequence(int64_t id, int64_t n_prompt, int64_t max_tokens) {
    auto seq = text_sequence(id, n_prompt, max_tokens);
    seq->priority = Priority::Interactive;
    return seq;
}

}  // namespace

// Behind a thousand queued blocks, a chat turn starts in the very next step, taking the place of the most
// recently started block where max_num_seqs is reached.
TEST(Scheduler, AnInteractiveSequenceStartsAheadOfQueuedBatchOnes) {
    FakeKvSlots kv(10000, 4);
    Scheduler s(config(64, 4), kv);
    for (int64_t id = 0; id < 1000; ++id) {
        s.add(text_sequence(id, 8, 4));
    }
    SchedulerOutput out = s.schedule();
    EXPECT_EQ(out.chunks.size(), 4u);
    s.update_from_output(out, tokens_for(out));
    s.add(chat_sequence(5000, 8, 4));
    out = s.schedule();
    EXPECT_EQ(chunk_sizes(out).count(5000), 1u) << "the chat turn runs in the next step";
    EXPECT_EQ(out.preempted, (std::vector<int64_t>{3})) << "the newest block gave its place";
    EXPECT_EQ(s.n_running(Priority::Interactive), 1);
    EXPECT_EQ(s.n_running(Priority::Batch), 3);
    EXPECT_EQ(s.n_waiting(Priority::Batch), 997);
    EXPECT_EQ(s.find(3)->status, SequenceStatus::Waiting);
}

// Interactive sequences take the token budget first, running or waiting, before any batch chunk.
TEST(Scheduler, InteractiveChunksComeBeforeBatchChunksInTheBudget) {
    FakeKvSlots kv(1000, 4);
    Scheduler s(config(16, 8), kv);
    s.add(text_sequence(1, 40, 4));
    SchedulerOutput out = s.schedule();
    EXPECT_EQ(chunk_sizes(out), (std::map<int64_t, int64_t>{{1, 16}}));
    s.update_from_output(out, tokens_for(out));
    s.add(chat_sequence(2, 12, 4));
    out = s.schedule();
    EXPECT_EQ(chunk_sizes(out), (std::map<int64_t, int64_t>{{2, 12}, {1, 4}}));
}

// After a failed step, every running sequence starts over, and each suspect runs alone until it is past where
// the step failed; then they batch again.
TEST(Scheduler, ResetIsolatesTheSuspectsOfAFailedStep) {
    FakeKvSlots kv(1000, 4);
    Scheduler s(config(64, 8), kv);
    for (int64_t id = 1; id <= 3; ++id) {
        s.add(text_sequence(id, 6, 4));
    }
    SchedulerOutput out = s.schedule();
    ASSERT_EQ(out.chunks.size(), 3u);
    // The step failed: its tokens never came.
    const std::vector<int64_t> suspects{1, 2};
    const std::vector<int64_t> reset = s.reset(suspects);
    EXPECT_EQ(reset.size(), 3u);
    EXPECT_EQ(s.n_running(), 0);
    EXPECT_EQ(s.n_isolated(), 2);
    for (int64_t id = 1; id <= 3; ++id) {
        EXPECT_EQ(s.find(id)->n_tokens(), 6) << "pending token dropped";
        EXPECT_EQ(s.find(id)->n_computed, 0);
    }
    EXPECT_FALSE(s.can_schedule_ahead());
    out = s.schedule();
    EXPECT_EQ(chunk_sizes(out), (std::map<int64_t, int64_t>{{1, 6}})) << "a suspect alone";
    s.update_from_output(out, tokens_for(out, 20));
    EXPECT_EQ(s.n_isolated(), 1);
    out = s.schedule();
    EXPECT_EQ(chunk_sizes(out), (std::map<int64_t, int64_t>{{2, 6}})) << "the next suspect alone";
    s.update_from_output(out, tokens_for(out, 20));
    EXPECT_EQ(s.n_isolated(), 0);
    out = s.schedule();
    EXPECT_EQ(chunk_sizes(out), (std::map<int64_t, int64_t>{{1, 1}, {2, 1}, {3, 6}})) << "batched again";
}

TEST(Sequence, BlockHashesChainAndKeyImagesByContent) {
    Sequence base;
    base.tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    base.n_prompt = 8;
    Sequence a = base;
    Sequence b = base;
    b.tokens[1] = 99;
    const auto ha = std::vector<BlockHash>(a.block_hashes(2, 4).begin(), a.block_hashes(2, 4).end());
    const auto hb = std::vector<BlockHash>(b.block_hashes(2, 4).begin(), b.block_hashes(2, 4).end());
    EXPECT_NE(ha[0], hb[0]);
    EXPECT_NE(ha[1], hb[1]) << "a block's hash depends on every block before it";

    Sequence img1 = base, img2 = base, img3 = base;
    img1.images = {{0, 4, 111}};
    img2.images = {{0, 4, 111}};
    img3.images = {{0, 4, 222}};
    img2.tokens[0] = 55;  // placeholder ids do not matter, the image's content does
    EXPECT_EQ(img1.block_hashes(1, 4)[0], img2.block_hashes(1, 4)[0]);
    EXPECT_NE(img1.block_hashes(1, 4)[0], img3.block_hashes(1, 4)[0]);
    EXPECT_THROW(a.block_hashes(3, 4), Error);
}
