// How attention_splits (kernels/attention) divides each row's keys between blocks: host logic only, so it
// runs without a GPU.
#include <algorithm>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "attention.h"

namespace folio::kernels {
namespace {

// Keys of one tile of the split-row kernel; a split gets one at least.
constexpr int64_t kTileKeys = 32;

struct Heads {
    int64_t n_head, n_kv_head, head_dim;
    int64_t group;      // query heads a block takes
    bool tensor_cores;  // groups of 8 heads of 128, which take the split-row kernel's tensor cores at
                        // bfloat16 precision over a float32 cache
};

// PaddleOCR-VL's language model (16 heads over 2 K/V heads of 128), and shapes that miss the tensor cores.
constexpr Heads kHeads[] = {{16, 2, 128, 8, true},
                            {16, 4, 128, 4, false},
                            {6, 3, 128, 2, false},
                            {16, 2, 64, 8, false},
                            {8, 8, 128, 1, false}};

TEST(AttentionSplits, EveryChoiceHasCountersTilesAndFillsTheDevice) {
    for (const Heads& h : kHeads) {
        for (const int n_sm : {1, 132, 170}) {
            for (const int64_t n_rows :
                 {int64_t{1}, int64_t{2}, int64_t{8}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{128},
                  int64_t{132}, int64_t{256}, int64_t{4096}, int64_t{40000}}) {
                for (const int64_t max_visible : {0, 31, 32, 95, 96, 544, 3000, 100000}) {
                    for (const bool split_row_tensor_cores : {false, true}) {
                        const int64_t splits = attention_splits(n_rows, h.n_head, h.n_kv_head, h.head_dim,
                                                                max_visible, n_sm, split_row_tensor_cores);
                        const int64_t n_blocks = n_rows * (h.n_head / h.group);
                        const std::string what =
                            std::to_string(n_rows) + " rows of " + std::to_string(h.n_head) + "/" +
                            std::to_string(h.n_kv_head) + " heads of " + std::to_string(h.head_dim) + ", " +
                            std::to_string(max_visible) + " keys, " + std::to_string(n_sm) +
                            " SMs, split-row tensor cores " + std::to_string(split_row_tensor_cores);
                        ASSERT_GE(splits, 1) << what;
                        ASSERT_LE(splits, kMaxAttentionSplits) << what;
                        if (splits > 1) {
                            EXPECT_LE(n_blocks, kAttentionSplitCounters) << what << ": a counter a block";
                            EXPECT_LE(splits * kTileKeys, max_visible) << what << ": a tile a split";
                        }
                        // Rows that do not fill the device split until they do, as far as their keys allow.
                        const int64_t most = std::min(kMaxAttentionSplits, max_visible / kTileKeys);
                        if (n_blocks < 2 * n_sm) {
                            EXPECT_GE(splits, std::min(most, (2 * n_sm + n_blocks - 1) / n_blocks)) << what;
                        }
                        if (split_row_tensor_cores && h.tensor_cores && n_blocks <= kAttentionSplitCounters) {
                            EXPECT_GE(splits, std::min<int64_t>(most, 3)) << what << ": on the tensor cores";
                        } else if (n_blocks >= 2 * n_sm) {
                            EXPECT_EQ(splits, 1) << what << ": the rows fill the device";
                        }
                    }
                }
            }
        }
    }
}

TEST(AttentionSplits, PartialsHoldEverySplitOfEveryHead) {
    EXPECT_EQ(attention_partials_floats(5, 16, 1, 128), 0);
    // Each (row, head, split) keeps its maximum and sum ahead of head_dim outputs rounded up to 4.
    EXPECT_GE(attention_partials_floats(5, 16, 3, 128), 5 * 16 * 3 * (2 + 128));
    EXPECT_GE(attention_partials_floats(1, 6, 2, 5), 6 * 2 * (2 + 8));
}

}  // namespace
}  // namespace folio::kernels
