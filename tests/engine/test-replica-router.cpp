// Routing among replicas of the models (data parallelism), without a device: the least loaded replica for a
// new prompt, a conversation's next turn to the replica that holds its prefix, failed replicas skipped, and
// the prompt's block hashes keyed by text and by each image's content.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "engine/common/error.h"
#include "engine/service/replica-router.h"

using namespace folio;

namespace {

Request text(std::vector<int32_t> ids) {
    Request r;
    r.prompt.ids = std::move(ids);
    r.prompt.modality.assign(r.prompt.ids.size(), TokenModality::Text);
    return r;
}

std::vector<int32_t> run(int32_t first, int n) {
    std::vector<int32_t> ids;
    for (int i = 0; i < n; ++i) {
        ids.push_back(first + i);
    }
    return ids;
}

// A prompt of text, then an image of n_image tokens with this content hash, then text.
Request with_image(uint64_t content, int64_t n_image) {
    Request r = text(run(1, 4));
    for (int64_t i = 0; i < n_image; ++i) {
        r.prompt.ids.push_back(99);
        r.prompt.modality.push_back(TokenModality::Image);
    }
    for (const int32_t t : run(5, 4)) {
        r.prompt.ids.push_back(t);
        r.prompt.modality.push_back(TokenModality::Text);
    }
    r.image_hashes = {content};
    return r;
}

std::optional<ReplicaRouter::Route> route(ReplicaRouter& router, const Request& r, int64_t weight) {
    const std::vector<BlockHash> hashes = prompt_block_hashes(r, 4);
    return router.route(hashes, static_cast<int64_t>(r.prompt.ids.size()), weight);
}

TEST(PromptBlockHashes, ChainFullBlocksOfTextAndImages) {
    EXPECT_EQ(prompt_block_hashes(text(run(1, 11)), 4).size(), 2u) << "only full blocks";
    const std::vector<BlockHash> a = prompt_block_hashes(text(run(1, 12)), 4);
    std::vector<int32_t> changed = run(1, 12);
    changed[9] = 70;
    const std::vector<BlockHash> b = prompt_block_hashes(text(changed), 4);
    ASSERT_EQ(a.size(), 3u);
    EXPECT_EQ(a[0], b[0]);
    EXPECT_EQ(a[1], b[1]);
    EXPECT_NE(a[2], b[2]) << "a changed token changes its block";
    changed = run(1, 12);
    changed[0] = 70;
    const std::vector<BlockHash> c = prompt_block_hashes(text(changed), 4);
    EXPECT_NE(a[2], c[2]) << "blocks are chained to the ones before";
    // Images with the same placeholder tokens differ by their content.
    const std::vector<BlockHash> page1 = prompt_block_hashes(with_image(111, 8), 4);
    const std::vector<BlockHash> page2 = prompt_block_hashes(with_image(222, 8), 4);
    ASSERT_EQ(page1.size(), 4u);
    EXPECT_EQ(page1[0], page2[0]) << "the text before the image";
    EXPECT_NE(page1[1], page2[1]);
    EXPECT_EQ(page1, prompt_block_hashes(with_image(111, 8), 4));
    EXPECT_THROW(prompt_block_hashes(text(run(1, 4)), 0), Error);
}

TEST(ReplicaRouter, NewPromptsGoToTheLeastLoadedReplica) {
    ReplicaRouter router(3, RouterParams{4});
    std::vector<size_t> chosen;
    for (int i = 0; i < 6; ++i) {
        chosen.push_back(route(router, text(run(10 * i, 8)), 100)->replica);
    }
    EXPECT_EQ(chosen, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
    EXPECT_EQ(router.n_routed(2), 2);
    EXPECT_EQ(router.load(0), 200);
    router.finished(1, 100);
    router.finished(1, 100);
    EXPECT_EQ(router.load(1), 0);
    EXPECT_EQ(route(router, text(run(500, 8)), 10)->replica, 1u) << "the replica whose requests ended";
    // A heavy request counts more than a light one.
    ReplicaRouter weighted(2, RouterParams{4});
    EXPECT_EQ(route(weighted, text(run(1, 4)), 5000)->replica, 0u);
    EXPECT_EQ(route(weighted, text(run(100, 4)), 10)->replica, 1u);
    EXPECT_EQ(route(weighted, text(run(200, 4)), 10)->replica, 1u);
    EXPECT_EQ(route(weighted, text(run(300, 4)), 10)->replica, 1u);
}

TEST(ReplicaRouter, AConversationStaysWithTheReplicaHoldingItsPrefix) {
    ReplicaRouter router(2, RouterParams{4});
    std::vector<int32_t> conversation = run(1, 16);
    const auto first = route(router, text(conversation), 1000);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->n_matched_tokens, 0);
    // Much more work lands elsewhere, yet every later turn (the earlier turns, then a new one) stays.
    for (int turn = 1; turn <= 5; ++turn) {
        route(router, text(run(1000 * turn, 8)), 50);
        conversation.insert(conversation.end(), {40 + turn, 41 + turn, 42 + turn, 43 + turn, 44 + turn});
        const auto next = route(router, text(conversation), 100);
        ASSERT_TRUE(next);
        EXPECT_EQ(next->replica, first->replica) << "turn " << turn;
        EXPECT_GE(next->n_matched_tokens, 16) << "turn " << turn;
    }
    // A prompt that shares only a short start with it (a common system prompt) goes by load.
    std::vector<int32_t> other = run(1, 4);
    const std::vector<int32_t> rest = run(300, 20);
    other.insert(other.end(), rest.begin(), rest.end());
    const auto elsewhere = route(router, text(other), 10);
    EXPECT_NE(elsewhere->replica, first->replica);
    EXPECT_EQ(elsewhere->n_matched_tokens, 0);
}

TEST(ReplicaRouter, PagesOfADocumentSpreadAndTheSamePageReturns) {
    ReplicaRouter router(2, RouterParams{4});
    std::set<size_t> used;
    for (uint64_t page = 1; page <= 4; ++page) {
        used.insert(route(router, with_image(page, 8), 10)->replica);
    }
    EXPECT_EQ(used.size(), 2u) << "pages whose prompts differ only by the image spread out";
    const auto again = route(router, with_image(3, 8), 10);
    EXPECT_EQ(again->replica, 0u) << "page 3 went to replica 0 (least loaded order 0, 1, 0, 1)";
    EXPECT_EQ(again->n_matched_tokens, 16);
}

TEST(ReplicaRouter, FailedReplicasTakeNothingAndTheirPrefixesAreForgotten) {
    ReplicaRouter router(2, RouterParams{4});
    const std::vector<int32_t> conversation = run(1, 16);
    const auto first = route(router, text(conversation), 100);
    router.set_failed(first->replica);
    EXPECT_TRUE(router.failed(first->replica));
    EXPECT_EQ(router.load(first->replica), 0);
    const auto moved = route(router, text(conversation), 100);
    ASSERT_TRUE(moved);
    EXPECT_NE(moved->replica, first->replica);
    EXPECT_EQ(moved->n_matched_tokens, 0);
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(route(router, text(run(100 * i, 8)), 1)->replica, moved->replica);
    }
    router.set_failed(moved->replica);
    EXPECT_FALSE(route(router, text(conversation), 1)) << "no replica left";
}

TEST(ReplicaRouter, RemembersABoundedNumberOfBlocks) {
    ReplicaRouter router(2, RouterParams{4, 64});
    for (int i = 0; i < 100; ++i) {
        route(router, text(run(1000 * i, 16)), 1);
    }
    EXPECT_EQ(router.n_remembered_blocks(), 64u);
    EXPECT_THROW(ReplicaRouter(0), Error);
    EXPECT_THROW(ReplicaRouter(2, RouterParams{0}), Error);
}

}  // namespace
