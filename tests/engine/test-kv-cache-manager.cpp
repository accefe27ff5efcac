#include <gtest/gtest.h>

#include <map>

#include "engine/common/error.h"
#include "engine/runtime/kv-cache-manager.h"

using namespace folio;

namespace {

// A pool that records what the manager asks of it.
class FakeAllocator final : public BlockAllocator {
public:
    explicit FakeAllocator(int32_t n) : n_(n) {}

    int32_t n_blocks() const override { return n_; }
    int32_t n_free() const override { return n_ - n_used; }
    std::optional<std::vector<int32_t>> allocate(int32_t n) override {
        ++n_allocate_calls;
        if (n > n_free()) {
            return std::nullopt;
        }
        std::vector<int32_t> out;
        for (int32_t i = 0; i < n; ++i) {
            out.push_back(next_++);
        }
        n_used += n;
        return out;
    }
    void release(std::span<const int32_t> blocks) override {
        released.insert(released.end(), blocks.begin(), blocks.end());
        n_used -= static_cast<int32_t>(blocks.size());
    }
    std::optional<int32_t> acquire_cached(BlockHash hash) override {
        const auto it = cached.find(hash);
        if (it == cached.end()) {
            return std::nullopt;
        }
        ++n_used;
        return it->second;
    }
    void cache(int32_t block, BlockHash hash) override { cache_calls.emplace_back(block, hash); }

    std::map<BlockHash, int32_t> cached;
    std::vector<std::pair<int32_t, BlockHash>> cache_calls;
    std::vector<int32_t> released;
    int32_t n_used = 0;
    int n_allocate_calls = 0;

private:
    int32_t n_;
    int32_t next_ = 100;
};

}  // namespace

TEST(KvCacheManager, GrowsBlockTablesByWholeBlocks) {
    FakeAllocator pool(8);
    KvCacheManager kv(pool, 16, true);
    ASSERT_TRUE(kv.allocate_slots(1, 1));
    EXPECT_EQ(kv.block_table(1).size(), 1u);
    ASSERT_TRUE(kv.allocate_slots(1, 16));
    EXPECT_EQ(kv.block_table(1).size(), 1u) << "16 tokens fit the first block";
    ASSERT_TRUE(kv.allocate_slots(1, 17));
    EXPECT_EQ(kv.block_table(1).size(), 2u);
    ASSERT_TRUE(kv.allocate_slots(1, 50));
    EXPECT_EQ(std::vector<int32_t>(kv.block_table(1).begin(), kv.block_table(1).end()),
              (std::vector<int32_t>{100, 101, 102, 103}));
}

TEST(KvCacheManager, AllocateSlotsReturnsFalseAndTakesNothingWhenOutOfBlocks) {
    FakeAllocator pool(3);
    KvCacheManager kv(pool, 4, false);
    ASSERT_TRUE(kv.allocate_slots(1, 8));
    EXPECT_FALSE(kv.allocate_slots(2, 8));
    EXPECT_EQ(pool.n_used, 2);
    EXPECT_TRUE(kv.block_table(2).empty());
    EXPECT_EQ(kv.n_requests(), 1);
    EXPECT_THROW(kv.allocate_slots(1, -1), Error);
}

TEST(KvCacheManager, ClaimsLeadingCachedBlocksUpToTheFirstMiss) {
    FakeAllocator pool(8);
    pool.cached = {{11, 5}, {12, 6}, {14, 7}};
    KvCacheManager kv(pool, 16, true);
    const std::vector<BlockHash> hashes{11, 12, 13, 14};
    EXPECT_EQ(kv.claim_cached_prefix(1, hashes), 32);
    EXPECT_EQ(std::vector<int32_t>(kv.block_table(1).begin(), kv.block_table(1).end()),
              (std::vector<int32_t>{5, 6}));
    EXPECT_EQ(kv.n_lookup_blocks(), 4);
    EXPECT_EQ(kv.n_hit_blocks(), 2);
    EXPECT_THROW(kv.claim_cached_prefix(1, hashes), Error) << "a request that already holds blocks";
}

TEST(KvCacheManager, CachesEachFullBlockOnceAndFreesTailFirst) {
    FakeAllocator pool(8);
    KvCacheManager kv(pool, 4, true);
    ASSERT_TRUE(kv.allocate_slots(1, 12));
    kv.cache_blocks(1, std::vector<BlockHash>{1});
    kv.cache_blocks(1, std::vector<BlockHash>{1, 2});
    ASSERT_EQ(pool.cache_calls.size(), 2u);
    EXPECT_EQ(pool.cache_calls[0], (std::pair<int32_t, BlockHash>{100, 1}));
    EXPECT_EQ(pool.cache_calls[1], (std::pair<int32_t, BlockHash>{101, 2}));
    EXPECT_THROW(kv.cache_blocks(1, std::vector<BlockHash>{1, 2, 3, 4}), Error);
    kv.free(1);
    EXPECT_EQ(pool.released, (std::vector<int32_t>{102, 101, 100}));
    EXPECT_EQ(pool.n_used, 0);
    kv.free(1);
    EXPECT_EQ(pool.released.size(), 3u) << "freeing twice gives nothing back twice";
}

TEST(KvCacheManager, WithoutPrefixCachingNothingIsLookedUpOrCached) {
    FakeAllocator pool(8);
    pool.cached = {{11, 5}};
    KvCacheManager kv(pool, 4, false);
    EXPECT_EQ(kv.claim_cached_prefix(1, std::vector<BlockHash>{11}), 0);
    ASSERT_TRUE(kv.allocate_slots(1, 4));
    kv.cache_blocks(1, std::vector<BlockHash>{11});
    EXPECT_TRUE(pool.cache_calls.empty());
    EXPECT_THROW(KvCacheManager(pool, 0, false), Error);
}
