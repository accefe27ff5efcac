// How attention_splits (kernels/attention) divides each row's keys between blocks, and which calls
// decode_attention_bf16 (kernels/decode-attention) takes: host logic only, so it runs without a GPU.
#include <algorithm>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "kernels/attention.h"
#include "kernels/decode-attention.h"

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
                        const int64_t fill = kAttentionSplitBlocksPerSm * n_sm;
                        if (n_blocks < fill) {
                            EXPECT_GE(splits, std::min(most, (fill + n_blocks - 1) / n_blocks)) << what;
                        }
                        if (split_row_tensor_cores && h.tensor_cores && n_blocks <= kAttentionSplitCounters) {
                            EXPECT_GE(splits, std::min<int64_t>(most, 3)) << what << ": on the tensor cores";
                        } else if (n_blocks >= fill) {
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

// The decode kernel's loads assume groups of 8 heads of 128, 16-byte aligned rows and 32-bit cache rows and
// key positions; any other call goes to the split-row kernel.
TEST(DecodeAttentionBf16, TakesOnlyCallsItsLoadsFit) {
    alignas(16) static float q[8], out[8];
    alignas(16) static uint16_t kv[16];
    const PagedCache cache{kv, kv, KvElement::Bf16, nullptr, 64, 1000};
    EXPECT_TRUE(decode_attention_bf16_takes(q, out, cache, 3200, 16, 2, 128));
    EXPECT_TRUE(decode_attention_bf16_takes(q, out, cache, 3200, 8, 1, 128));
    EXPECT_FALSE(decode_attention_bf16_takes(q, out, cache, 3200, 16, 2, 64)) << "head_dim 64";
    EXPECT_FALSE(decode_attention_bf16_takes(q, out, cache, 3200, 16, 4, 128)) << "groups of 4 heads";
    EXPECT_FALSE(decode_attention_bf16_takes(q, out, cache, 3200, 16, 0, 128)) << "no K/V head";
    PagedCache f32 = cache;
    f32.element = KvElement::F32;
    EXPECT_FALSE(decode_attention_bf16_takes(q, out, f32, 3200, 16, 2, 128)) << "a float32 cache";
    EXPECT_FALSE(decode_attention_bf16_takes(q + 1, out, cache, 3200, 16, 2, 128)) << "queries off 16 bytes";
    EXPECT_FALSE(decode_attention_bf16_takes(q, out + 2, cache, 3200, 16, 2, 128)) << "outputs off 16 bytes";
    PagedCache shifted = cache;
    shifted.v = kv + 4;
    EXPECT_FALSE(decode_attention_bf16_takes(q, out, shifted, 3200, 16, 2, 128)) << "values off 16 bytes";
    PagedCache huge = cache;
    huge.n_blocks = int64_t{1} << 25;  // 2^31 rows of 64
    EXPECT_FALSE(decode_attention_bf16_takes(q, out, huge, 3200, 16, 2, 128)) << "2^31 cache rows";
    huge.n_blocks = (int64_t{1} << 25) - 1;
    EXPECT_TRUE(decode_attention_bf16_takes(q, out, huge, 3200, 16, 2, 128)) << "2^31 - 64 cache rows";
    EXPECT_FALSE(decode_attention_bf16_takes(q, out, cache, int64_t{1} << 31, 16, 2, 128))
        << "2^31 keys a row";
    EXPECT_TRUE(decode_attention_bf16_takes(q, out, cache, (int64_t{1} << 31) - 1, 16, 2, 128))
        << "2^31 - 1 keys a row";
}

}  // namespace
}  // namespace folio::kernels
