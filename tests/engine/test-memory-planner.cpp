#include <gtest/gtest.h>

#include <string>

#include "error.h"
#include "memory-planner.h"

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
        EXPECT_NE(m.find("8192 MiB x 0.5 = 4096 MiB"), std::string::npos) << m;
        EXPECT_NE(m.find("weights 3072 MiB and activations 1024 MiB"), std::string::npos) << m;
    }
    p.utilization = 1.5;
    EXPECT_THROW(plan_kv_cache(p), Error);
    p.utilization = 0.0;
    EXPECT_THROW(plan_kv_cache(p), Error);
}
