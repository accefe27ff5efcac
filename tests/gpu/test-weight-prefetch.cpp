// The choice of weights to prefetch into L2 ahead of each product (kernels/weight-prefetch): host logic only,
// so it runs without a GPU.
#include <array>
#include <cstdint>
#include <cstdlib>

#include <gtest/gtest.h>

#include "weight-prefetch.h"

namespace folio::kernels {
namespace {

constexpr int64_t kL2Bytes = int64_t{50} << 20;

class WeightPrefetchTest : public ::testing::Test {
protected:
    void SetUp() override { unsetenv("FOLIO_CUDA_L2_PREFETCH"); }
    void TearDown() override { unsetenv("FOLIO_CUDA_L2_PREFETCH"); }

    // Stand-ins for device weight buffers: only their addresses matter.
    std::array<char, 4> weights_{};
    const void* w(int i) const { return &weights_[static_cast<size_t>(i)]; }
};

TEST_F(WeightPrefetchTest, FirstPassLearnsTheOrderLaterPassesPrefetchTheNextProduct) {
    WeightPrefetch prefetch(kL2Bytes);
    const std::array<int64_t, 3> bytes = {4096, 1 << 20, 6000};
    for (int i = 0; i < 3; ++i) {
        const WeightPrefetch::Range r = prefetch.use(w(i), bytes[static_cast<size_t>(i)]);
        EXPECT_EQ(r.data, nullptr) << "product " << i << " has never been followed";
        EXPECT_EQ(r.n_bytes, 0);
    }
    for (int step = 0; step < 3; ++step) {
        for (int i = 0; i < 3; ++i) {
            const int next = (i + 1) % 3;
            const WeightPrefetch::Range r = prefetch.use(w(i), bytes[static_cast<size_t>(i)]);
            EXPECT_EQ(r.data, w(next)) << "step " << step << ", product " << i;
            EXPECT_EQ(r.n_bytes, bytes[static_cast<size_t>(next)] / 16 * 16) << "whole 16-byte units";
        }
    }
}

TEST_F(WeightPrefetchTest, TheLatestSuccessorWinsAndRepeatsAreNotTheirOwnSuccessor) {
    WeightPrefetch prefetch(kL2Bytes);
    prefetch.use(w(0), 64);
    prefetch.use(w(1), 64);
    prefetch.use(w(0), 64);
    prefetch.use(w(2), 128);
    prefetch.use(w(2), 128);  // the same weights twice in a row (chunked products)
    EXPECT_EQ(prefetch.use(w(0), 64).data, w(2)) << "0 was last followed by 2";
    EXPECT_EQ(prefetch.use(w(2), 128).data, w(0)) << "2 was last followed by 0, not by itself";
}

TEST_F(WeightPrefetchTest, PrefetchesAtMostHalfTheCache) {
    WeightPrefetch prefetch(kL2Bytes);
    const int64_t lm_head = int64_t{212} << 20;
    prefetch.use(w(0), 4096);
    prefetch.use(w(1), lm_head);
    EXPECT_EQ(prefetch.use(w(0), 4096).n_bytes, kL2Bytes / 2);
}

TEST_F(WeightPrefetchTest, SwitchedOffByTheEnvironmentOrWithoutACache) {
    setenv("FOLIO_CUDA_L2_PREFETCH", "0", 1);
    WeightPrefetch off(kL2Bytes);
    unsetenv("FOLIO_CUDA_L2_PREFETCH");
    WeightPrefetch no_cache(0);
    for (WeightPrefetch* p : {&off, &no_cache}) {
        for (int step = 0; step < 2; ++step) {
            for (int i = 0; i < 3; ++i) {
                EXPECT_EQ(p->use(w(i), 4096).n_bytes, 0);
            }
        }
    }
}

}  // namespace
}  // namespace folio::kernels
