#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/memory-planner.h"

using namespace folio;

TEST(MemoryPlanner, BlocksFromWhatIsLeftAfterWeightsAndActivations) {
    MemoryPlanParams p;
    p.total_bytes = 1000;
    p.utilization = 0.9;
    p.weight_bytes = 300;
    p.activation_peak_bytes = 100;
    p.block_bytes = 64;
    const MemoryPlan plan = plan_kv_cache(p);
    EXPECT_EQ(plan.budget_bytes, 900);
    EXPECT_EQ(plan.kv_bytes, 500);
    EXPECT_EQ(plan.n_blocks, 7);
    EXPECT_EQ(describe(plan, 16), "kv cache: 7 blocks, 112 tokens");
    p.max_useful_blocks = 3;
    EXPECT_EQ(plan_kv_cache(p).n_blocks, 3) << "never more than max_num_seqs sequences can use";
}

TEST(MemoryPlanner, RefusesWithTheNumbersWhenNothingFits) {
    MemoryPlanParams p;
    p.total_bytes = int64_t{8} << 30;
    p.utilization = 0.5;
    p.weight_bytes = int64_t{3} << 30;
    p.activation_peak_bytes = int64_t{1} << 30;
    p.block_bytes = 1 << 20;
    try {
        plan_kv_cache(p);
        FAIL() << "no room was left, yet a plan came back";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("(8192 MiB - 0 MiB used by other processes) x 0.5 = 4096 MiB"), std::string::npos)
            << m;
        EXPECT_NE(m.find("weights 3072 MiB, activations 1024 MiB and other models' 0 MiB"), std::string::npos)
            << m;
        // What would leave room.
        EXPECT_NE(m.find("fewer batched tokens a step"), std::string::npos) << m;
    }
    p.utilization = 1.5;
    EXPECT_THROW(plan_kv_cache(p), Error);
    p.utilization = 0.0;
    EXPECT_THROW(plan_kv_cache(p), Error);
}

// Models loaded together plan together, on what other processes (the display) leave of the card: the budget
// is (total - their use) x utilization, less every model's weights, the largest step's activations and what
// the other models keep for their own.
TEST(MemoryPlanner, LeavesWhatOtherProcessesAndOtherModelsUse) {
    MemoryPlanParams p;
    p.total_bytes = int64_t{8} << 30;
    p.utilization = 0.5;
    p.weight_bytes = int64_t{1} << 30;
    p.activation_peak_bytes = int64_t{1} << 30;
    p.block_bytes = 1 << 20;
    EXPECT_EQ(plan_kv_cache(p).n_blocks, 2048);
    p.other_bytes = int64_t{2} << 30;  // 6 GiB x 0.5 = 3 GiB
    EXPECT_EQ(plan_kv_cache(p).budget_bytes, int64_t{3} << 30);
    EXPECT_EQ(plan_kv_cache(p).n_blocks, 1024);
    p.reserved_bytes = int64_t{512} << 20;
    EXPECT_EQ(plan_kv_cache(p).n_blocks, 512);
    p.reserved_bytes = int64_t{1} << 30;
    EXPECT_THROW(plan_kv_cache(p), Error);
    p.other_bytes = p.total_bytes;
    EXPECT_THROW(plan_kv_cache(p), Error);
}

// A block holds K and V of every layer: 2 * layers * block_size * heads * head_dim elements, of 4 bytes in
// float32 and 2 in bfloat16, so a bfloat16 cache has twice the blocks in the same bytes.
// Two engines on one device: the caches share what is left after every model's weights and the largest
// activation peak, by their shares; one that cannot use its part leaves the rest to the other.
TEST(MemoryPlanner, SeveralEnginesShareTheCacheMemory) {
    MemoryPlanParams p;
    p.total_bytes = 10000;
    p.utilization = 1.0;
    p.weight_bytes = 3000;
    p.activation_peak_bytes = 1000;
    p.reserved_bytes = 1000;  // 5000 left for the caches
    const std::vector<CacheDemand> equal{{100, 0, 1.0}, {50, 0, 1.0}};
    std::vector<MemoryPlan> plans = plan_kv_caches(p, equal);
    ASSERT_EQ(plans.size(), 2u);
    EXPECT_EQ(plans[0].n_blocks, 25);
    EXPECT_EQ(plans[1].n_blocks, 50);
    EXPECT_EQ(plans[0].kv_bytes + plans[1].kv_bytes, 5000);
    EXPECT_EQ(plans[0].budget_bytes, 10000);

    const std::vector<CacheDemand> weighted{{100, 0, 3.0}, {100, 0, 1.0}};
    plans = plan_kv_caches(p, weighted);
    EXPECT_EQ(plans[0].n_blocks, 37);
    EXPECT_EQ(plans[1].n_blocks, 12);

    // The first can use 5 blocks (500 bytes): the second takes the other 4500.
    const std::vector<CacheDemand> capped{{100, 5, 1.0}, {100, 0, 1.0}};
    plans = plan_kv_caches(p, capped);
    EXPECT_EQ(plans[0].n_blocks, 5);
    EXPECT_EQ(plans[1].n_blocks, 45);

    // One engine alone plans as plan_kv_cache does.
    const std::vector<CacheDemand> one{{64, 0, 1.0}};
    MemoryPlanParams alone = p;
    alone.block_bytes = 64;
    EXPECT_EQ(plan_kv_caches(p, one).at(0).n_blocks, plan_kv_cache(alone).n_blocks);

    // An engine whose share holds no block is refused by its number.
    const std::vector<CacheDemand> starved{{100, 0, 1000.0}, {4000, 0, 1.0}};
    try {
        plan_kv_caches(p, starved);
        ADD_FAILURE() << "a cache without a block was planned";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("engine 1 of 2"), std::string::npos) << e.what();
    }
    EXPECT_THROW(plan_kv_caches(p, std::vector<CacheDemand>{}), Error);
    EXPECT_THROW(plan_kv_caches(p, std::vector<CacheDemand>{{100, 0, 0.0}}), Error) << "share 0";
    p.weight_bytes = 9000;
    EXPECT_THROW(plan_kv_caches(p, equal), Error) << "nothing left for any cache";
}

TEST(MemoryPlanner, PeaksExtrapolateTheirLinearPartOnly) {
    // 1 MB of workspace plus 1000 bytes a patch, sampled at 16 and 256 patches.
    const PeakSample small{16, 1'000'000 + 16'000}, large{256, 1'000'000 + 256'000};
    EXPECT_EQ(extrapolate_peak(small, large, 24'576), 1'000'000 + 24'576'000);
    EXPECT_EQ(extrapolate_peak(small, large, 256), large.bytes);
    EXPECT_GT(small.bytes * 24'576 / small.n, 1'500'000'000)
        << "in proportion, the workspace counts 1536 times";
    // A peak that does not grow keeps its size; the fixed part is never negative.
    EXPECT_EQ(extrapolate_peak({16, 500}, {256, 500}, 100'000), 500);
    EXPECT_GE(extrapolate_peak({16, 100}, {256, 5000}, 256), 5000) << "never below what was measured";
    EXPECT_EQ(extrapolate_peak({16, 0}, {32, 3200}, 64), 12'800)
        << "no negative fixed part: the slope from 0";
    EXPECT_THROW(extrapolate_peak({16, 1}, {16, 2}, 1), Error);
    EXPECT_THROW(extrapolate_peak({0, 1}, {16, 2}, 1), Error);
    EXPECT_THROW(extrapolate_peak({1, -1}, {16, 2}, 1), Error);
}

TEST(MemoryPlanner, ChunkedWorkGrowsSlowerPastItsChunk) {
    // 1 MB fixed, 1000 bytes a row of which 600 are an MLP's hidden values that chunks of 100 rows bound.
    const PeakSample whole_small{16, 1'016'000}, whole_large{256, 1'256'000};
    const PeakSample chunked_small{128, 1'000'000 + 60'000 + 128 * 400},
        chunked_large{256, 1'000'000 + 60'000 + 256 * 400};
    EXPECT_EQ(extrapolate_chunked_peak(whole_small, whole_large, chunked_small, chunked_large, 1000, 800),
              extrapolate_peak(whole_small, whole_large, 800))
        << "within one chunk nothing changes";
    EXPECT_EQ(extrapolate_chunked_peak(whole_small, whole_large, chunked_small, chunked_large, 1000, 11'000),
              1'000'000 + 1000 * 1000 + 10'000 * 400);
    EXPECT_THROW(extrapolate_chunked_peak(whole_small, whole_large, chunked_small, chunked_large, 0, 5),
                 Error);
}

TEST(KvCache, BlockBytesFollowTheElementType) {
    KvCacheParams params{18, 2, 128, 0, 16};
    EXPECT_EQ(kv_block_bytes(params), int64_t{2} * 18 * 16 * 2 * 128 * 4);
    params.dtype = ScalarType::BF16;
    EXPECT_EQ(kv_block_bytes(params), int64_t{2} * 18 * 16 * 2 * 128 * 2);
}

// The CPU backend keeps float32 caches only, whatever the precision, and says so for any other type.
TEST(KvCache, CpuCachesAreFloat32) {
    const auto cpu = make_cpu_backend(1);
    EXPECT_EQ(cpu->kv_dtype(AttentionPrecision::Bf16), ScalarType::F32);
    PagedKvCache cache(*cpu, {2, 1, 4, 3, 2});
    EXPECT_EQ(cache.keys(1).dtype, ScalarType::F32);
    EXPECT_EQ(cache.keys(1).shape, (std::vector<int64_t>{6, 1, 4}));
    EXPECT_EQ(cache.n_bytes(), int64_t{2} * 2 * 6 * 4 * 4);
    try {
        PagedKvCache bf16(*cpu, {2, 1, 4, 3, 2, ScalarType::BF16});
        FAIL() << "a bfloat16 cache on the CPU";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
    }
    EXPECT_THROW(cpu->upload_kv(std::vector<float>(4), {4}, ScalarType::I32), Error);
}

// A tensor's bytes follow its element type: a bfloat16 view fits a buffer half the size a float32 one needs.
TEST(Tensor, BytesFollowTheElementType) {
    struct Bytes final : Buffer {
        std::vector<std::byte> bytes = std::vector<std::byte>(64);
        void* data() override { return bytes.data(); }
        size_t n_bytes() const override { return bytes.size(); }
    };
    Tensor t;
    t.buffer = std::make_shared<Bytes>();
    t.shape = {32};
    EXPECT_FALSE(t.fits_buffer()) << "32 float32 in 64 bytes";
    t.dtype = ScalarType::BF16;
    EXPECT_TRUE(t.fits_buffer());
    EXPECT_EQ(t.n_bytes(), 64);
    t.offset = 1;
    EXPECT_FALSE(t.fits_buffer()) << "one element past the end";
    EXPECT_EQ(element_size(ScalarType::BF16), 2);
    EXPECT_STREQ(dtype_name(ScalarType::BF16), "bfloat16");
    EXPECT_EQ(from_bf16(to_bf16(1.0f + 0x1p-8f)), 1.0f) << "ties to even";
}
