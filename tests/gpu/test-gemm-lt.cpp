// The row buckets whose shapes share a cuBLASLt algorithm (kernels/gemm-lt): host logic only, so it runs
// without a GPU.
#include <cstdint>

#include <gtest/gtest.h>

#include "kernels/gemm-lt.h"

namespace folio::kernels {
namespace {

TEST(RowBucket, KeepsThreeSignificantBitsRoundingUp) {
    for (int64_t n = 0; n <= 8; ++n) {
        EXPECT_EQ(row_bucket(n), n);
    }
    EXPECT_EQ(row_bucket(9), 10);
    EXPECT_EQ(row_bucket(16), 16);
    EXPECT_EQ(row_bucket(17), 20);
    EXPECT_EQ(row_bucket(4097), 5120);
    EXPECT_EQ(row_bucket(5120), 5120);
    EXPECT_EQ(row_bucket(28000), 28672);
}

TEST(RowBucket, EveryRowCountIsWithinAQuarterOfItsBucket) {
    for (int64_t n = 1; n <= 70000; ++n) {
        const int64_t b = row_bucket(n);
        ASSERT_GE(b, n);
        ASSERT_LT(4 * (b - n), b) << n;
        ASSERT_LE(row_bucket(n - 1), b) << n;
        ASSERT_EQ(row_bucket(b), b) << n;
    }
}

}  // namespace
}  // namespace folio::kernels
