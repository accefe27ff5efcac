#include <gtest/gtest.h>

#include <algorithm>

#include "engine/common/error.h"
#include "engine/runtime/block-pool.h"

using namespace folio;

TEST(BlockPool, AllocatesUntilEmptyAndNeverPartially) {
    BlockPool pool(4);
    const auto a = pool.allocate(3);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->size(), 3u);
    EXPECT_EQ(pool.n_free(), 1);
    EXPECT_FALSE(pool.allocate(2));
    EXPECT_EQ(pool.n_free(), 1) << "a failed allocation takes nothing";
    const auto b = pool.allocate(1);
    ASSERT_TRUE(b);
    std::vector<int32_t> all = *a;
    all.push_back(b->front());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, (std::vector<int32_t>{0, 1, 2, 3}));
    for (const int32_t block : all) {
        EXPECT_EQ(pool.ref_count(block), 1);
    }
}

TEST(BlockPool, ReleaseCountsReferences) {
    BlockPool pool(2);
    const auto a = pool.allocate(1);
    pool.cache((*a)[0], 42);
    ASSERT_EQ(pool.acquire_cached(42), (*a)[0]);
    EXPECT_EQ(pool.ref_count((*a)[0]), 2);
    pool.release(*a);
    EXPECT_EQ(pool.ref_count((*a)[0]), 1);
    EXPECT_EQ(pool.n_free(), 1);
    pool.release(*a);
    EXPECT_EQ(pool.ref_count((*a)[0]), 0);
    EXPECT_EQ(pool.n_free(), 2);
    EXPECT_THROW(pool.release(*a), Error) << "a block no request holds";
    const std::vector<int32_t> outside{7};
    EXPECT_THROW(pool.release(outside), Error);
    EXPECT_THROW(BlockPool(0), Error);
}

TEST(BlockPool, FreedCachedBlocksStayFindableUntilEvictedLeastRecentlyUsedFirst) {
    BlockPool pool(3);
    const auto blocks = *pool.allocate(3);
    pool.cache(blocks[0], 100);
    pool.cache(blocks[1], 101);
    pool.cache(blocks[2], 102);
    // Freed in the order 1, 0, 2: block 1 is the least recently used.
    pool.release(std::vector<int32_t>{blocks[1]});
    pool.release(std::vector<int32_t>{blocks[0]});
    pool.release(std::vector<int32_t>{blocks[2]});
    EXPECT_EQ(pool.n_free(), 3);
    EXPECT_EQ(pool.n_cached(), 3);

    // Reusing block 0's content takes it off the free list.
    EXPECT_EQ(pool.acquire_cached(100), blocks[0]);
    EXPECT_EQ(pool.n_free(), 2);

    const auto fresh = pool.allocate(1);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->front(), blocks[1]) << "the least recently freed cached block goes first";
    EXPECT_FALSE(pool.is_cached(blocks[1]));
    EXPECT_FALSE(pool.acquire_cached(101));
    EXPECT_EQ(pool.n_evicted(), 1);
    EXPECT_EQ(pool.acquire_cached(102), blocks[2]);
}

TEST(BlockPool, FirstBlockWithAHashKeepsIt) {
    BlockPool pool(2);
    const auto blocks = *pool.allocate(2);
    pool.cache(blocks[0], 7);
    pool.cache(blocks[1], 7);
    EXPECT_TRUE(pool.is_cached(blocks[0]));
    EXPECT_FALSE(pool.is_cached(blocks[1]));
    pool.release(blocks);
    EXPECT_EQ(pool.acquire_cached(7), blocks[0]);
    EXPECT_THROW(pool.cache(blocks[1], 8), Error) << "caching a block nobody holds";
}
