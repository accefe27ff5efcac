// The paged key/value cache's tensors on the CPU backend: their bytes a block, and caches of 8-bit levels
// with a scale a token and K/V head (ScalarType::Q8), which the CPU backend writes and reads as the reference
// for the GPU's (tests/gpu/test-backend-ops-attention.cpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/rope.h"

namespace folio {
namespace {

std::vector<float> random_values(int64_t n, unsigned seed, float spread = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, spread);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) {
        x = dist(rng);
    }
    return v;
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
        norm += b[i] * static_cast<double>(b[i]);
    }
    return std::sqrt(diff / norm);
}

TEST(KvCache, BlockBytesCountEachRowsScale) {
    KvCacheParams p{2, 4, 128, 10, 16};
    p.dtype = ScalarType::F32;
    EXPECT_EQ(kv_block_bytes(p), 2 * 2 * 16 * 4 * 128 * 4);
    p.dtype = ScalarType::BF16;
    EXPECT_EQ(kv_block_bytes(p), 2 * 2 * 16 * 4 * 128 * 2);
    p.dtype = ScalarType::Q8;
    EXPECT_EQ(kv_block_bytes(p), 2 * 2 * 16 * 4 * (128 + 4));
    std::unique_ptr<Backend> backend = make_cpu_backend(1);
    PagedKvCache cache(*backend, p);
    EXPECT_EQ(cache.n_bytes(), 10 * kv_block_bytes(p));
    EXPECT_EQ(cache.keys(1).dtype, ScalarType::Q8);
    EXPECT_GE(static_cast<int64_t>(cache.keys(1).buffer->n_bytes()), cache.keys(1).n_bytes());
    EXPECT_EQ(backend->download(cache.values(0)), std::vector<float>(160 * 4 * 128, 0.0f)) << "zeros";
}

// Each row keeps its largest magnitude exactly and every value within half a level; rows of zeros stay zero;
// halves round to the even level.
TEST(KvCache, LevelsRoundEachRowToItsScale) {
    const std::vector<float> rows = {2.0f, -1.0f, 0.5f, 0.25f, 0.0f,    0.0f,
                                     0.0f, 0.0f,  3.0f, 1.0f,  -127.0f, 0.5f};
    std::vector<int8_t> levels(rows.size());
    std::vector<float> scales(3);
    quantize_q8_rows(rows.data(), 3, 4, levels.data(), scales.data());
    EXPECT_EQ(scales, (std::vector<float>{2.0f / 127.0f, 0.0f, 1.0f}));
    EXPECT_EQ(levels, (std::vector<int8_t>{127, -64, 32, 16, 0, 0, 0, 0, 3, 1, -127, 0}))
        << "-63.5 and 0.5 go to the even levels";
    const std::vector<float> values = random_values(64 * 128, 3);
    std::vector<int8_t> q(values.size());
    std::vector<float> s(64);
    quantize_q8_rows(values.data(), 64, 128, q.data(), s.data());
    const std::vector<float> back = dequantize_q8_rows(q.data(), s.data(), 64, 128);
    for (int64_t r = 0; r < 64; ++r) {
        for (int64_t i = 0; i < 128; ++i) {
            ASSERT_LE(std::fabs(back[r * 128 + i] - values[r * 128 + i]), 0.5f * s[r] * 1.0001f)
                << r << " " << i;
        }
    }
    Tensor t;
    t.shape = {64, 128};
    t.dtype = ScalarType::Q8;
    EXPECT_EQ(t.n_bytes(), 64 * 128 + 64 * 4);
    EXPECT_THROW(t.view(0, {1, 128}), Error) << "no views of levels and scales";
}

// A decoder step's keys and values go to a Q8 cache as the float32 cache's values quantized, q unchanged;
// padding rows (slot -1) store nothing.
TEST(KvCache, RopeToAnInt8CacheStoresTheLevelsOfTheFloatCache) {
    std::unique_ptr<Backend> backend = make_cpu_backend(2);
    const int64_t n = 5, n_head = 4, n_kv_head = 2, hd = 16, n_slots = 8;
    const std::vector<float> qkv = random_values(n * (n_head + 2 * n_kv_head) * hd, 11, 2.0f);
    std::vector<int32_t> positions(static_cast<size_t>(n));
    std::iota(positions.begin(), positions.end(), 40);
    const std::vector<int32_t> slots = {3, -1, 0, 7, 5};
    const RopeParams rope =
        RotaryLayout(1).section(0, static_cast<int>(hd / 2)).upload(*backend, hd, 10000.0f);
    Tensor k32 = backend->alloc_kv({n_slots, n_kv_head, hd}, ScalarType::F32);
    Tensor v32 = backend->alloc_kv({n_slots, n_kv_head, hd}, ScalarType::F32);
    Tensor k8 = backend->alloc_kv({n_slots, n_kv_head, hd}, ScalarType::Q8);
    Tensor v8 = backend->alloc_kv({n_slots, n_kv_head, hd}, ScalarType::Q8);
    const Tensor x = backend->upload(qkv, {n, (n_head + 2 * n_kv_head) * hd});
    const Tensor pos = backend->upload_i32(positions, {n, 1}), slot = backend->upload_i32(slots, {n});
    const Tensor q32 = backend->rope_qkv_to_cache(x, pos, slot, rope, k32, v32);
    const Tensor q8 = backend->rope_qkv_to_cache(x, pos, slot, rope, k8, v8);
    EXPECT_EQ(backend->download(q8), backend->download(q32));
    for (const auto& [quantized, exact] : {std::pair{&k8, &k32}, std::pair{&v8, &v32}}) {
        const std::vector<float> f = backend->download(*exact);
        std::vector<int8_t> levels(f.size());
        std::vector<float> scales(f.size() / hd);
        quantize_q8_rows(f.data(), n_slots * n_kv_head, hd, levels.data(), scales.data());
        EXPECT_EQ(std::vector<int8_t>(quantized->q8_levels(), quantized->q8_levels() + f.size()), levels);
        EXPECT_EQ(std::vector<float>(quantized->q8_scales(), quantized->q8_scales() + scales.size()), scales);
        EXPECT_EQ(scales[1 * n_kv_head], 0.0f) << "slot 1: no token";
    }
}

// Attention over a Q8 cache is attention over the values its levels stand for, and stays within a percent of
// attention over the unquantized values; prompts and decoding alike, over a shuffled block table.
TEST(KvCache, AttentionReadsAnInt8CacheAsItsValues) {
    std::unique_ptr<Backend> backend = make_cpu_backend(2);
    const int64_t n_head = 8, n_kv_head = 2, hd = 64, block = 4, n_blocks = 12;
    const std::vector<float> k = random_values(n_blocks * block * n_kv_head * hd, 5),
                             v = random_values(n_blocks * block * n_kv_head * hd, 6);
    const std::vector<int64_t> shape = {n_blocks * block, n_kv_head, hd};
    const Tensor k32 = backend->upload(k, shape), v32 = backend->upload(v, shape);
    const Tensor k8 = backend->upload_kv(k, shape, ScalarType::Q8),
                 v8 = backend->upload_kv(v, shape, ScalarType::Q8);
    const Tensor k_dq = backend->upload(backend->download(k8), shape),
                 v_dq = backend->upload(backend->download(v8), shape);
    std::vector<int32_t> tables(n_blocks);
    std::iota(tables.begin(), tables.end(), 0);
    std::shuffle(tables.begin(), tables.end(), std::mt19937(9));
    // A prompt chunk of 6 after 20 cached tokens, and a decode over 17 keys.
    const std::vector<PagedSequence> seqs = {{0, 6, 26, 0}, {6, 1, 17, 7}};
    const Tensor q = backend->upload(random_values(7 * n_head * hd, 8), {7, n_head, hd});
    const float scale = 0.125f;
    const auto attend = [&](const Tensor& kc, const Tensor& vc) {
        return backend->download(
            backend->paged_attention(q, kc, vc, seqs, tables, block, scale, AttentionPrecision::F32));
    };
    const std::vector<float> quantized = attend(k8, v8), dequantized = attend(k_dq, v_dq),
                             exact = attend(k32, v32);
    EXPECT_LT(relative_error(quantized, dequantized), 1e-6);
    const double err = relative_error(quantized, exact);
    EXPECT_LT(err, 1e-2);
    EXPECT_GT(err, 1e-5) << "the levels round";
    const Tensor lens = backend->upload_i32(std::vector<int32_t>{26, 17}, {2});
    const Tensor table = backend->upload_i32(
        std::vector<int32_t>{tables[0], tables[1], tables[2], tables[3], tables[4], tables[5], tables[6],
                             tables[7], tables[8], tables[9], tables[10], tables[11], tables[7], tables[8]},
        {2, 7});
    const Tensor q_rows = backend->upload(random_values(2 * n_head * hd, 10), {2, n_head, hd});
    EXPECT_LT(relative_error(backend->download(backend->paged_decode_attention(
                                 q_rows, k8, v8, lens, table, block, scale, AttentionPrecision::F32)),
                             backend->download(backend->paged_decode_attention(
                                 q_rows, k_dq, v_dq, lens, table, block, scale, AttentionPrecision::F32))),
              1e-6);
    EXPECT_THROW(backend->paged_attention(q, k8, v32, seqs, tables, block, scale, AttentionPrecision::F32),
                 Error)
        << "levels for keys, float32 for values";
}

}  // namespace
}  // namespace folio
