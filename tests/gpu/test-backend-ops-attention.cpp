// The CUDA backend's rotary embeddings and attention (plain, fused, paged, decode, with the cache written
// from q/k/v) against the CPU reference backend; skipped where no CUDA device is present.
#include "backend-ops-fixture.h"

namespace folio::backend_ops_test {
namespace {

TEST_F(BackendOpsTest, Rope) {
    for (const int64_t n : {1, 3, 17, 130}) {
        for (const int64_t n_head : {1, 3, 16}) {
            for (const int64_t hd : {2, 8, 72, 128}) {
                Pair x = random({n, n_head, hd});
                const Pair cos = random({n, hd}), sin = random({n, hd});
                cpu_->rope(x.cpu, cos.cpu, sin.cpu);
                gpu_->rope(x.gpu, cos.gpu, sin.gpu);
                expect_close("rope", x.gpu, x.cpu, kF32Bound, dims({n, n_head, hd}));
            }
        }
    }
    Pair x = random({3, 2, 7});
    const Pair cs = random({3, 7});
    EXPECT_THROW(gpu_->rope(x.gpu, cs.gpu, cs.gpu), Error);
    Pair y = random({3, 2, 8});
    const Pair cs4 = random({4, 8});
    EXPECT_THROW(gpu_->rope(y.gpu, cs4.gpu, cs4.gpu), Error);
}

// Both precisions: float32 within the float32 bound, bfloat16 (the tensor cores for tiles of rows, head_dim
// up to 128) within the bfloat16 bound. A head_dim of 1 is float32 only: a score of one product has no sum
// to average the rounding of q and k out, and bfloat16 keeps it only to about 1e-2.
const std::vector<std::pair<AttentionPrecision, double>> kAttentionPrecisions = {
    {AttentionPrecision::F32, kF32Bound}, {AttentionPrecision::Bf16, kBf16TensorCoreBound}};

std::string precision_name(AttentionPrecision precision) {
    return precision == AttentionPrecision::Bf16 ? "bf16" : "f32";
}

TEST_F(BackendOpsTest, Attention) {
    struct Case {
        std::string name;
        int64_t n_q_total, n_kv_total, n_head, n_kv_head;
        std::vector<AttentionSegment> segments;
    };
    const std::vector<Case> cases = {
        // Vision: several images packed in one sequence, each attending within itself.
        {"vision", 234, 234, 4, 4, {{0, 1, 0, 1}, {1, 7, 1, 7}, {8, 96, 8, 96}, {104, 130, 104, 130}}},
        // Text prefill, causal, grouped heads.
        {"prefill", 17, 17, 8, 2, {{0, 17, 0, 17, true, 0}}},
        // A longer prompt: several tiles of rows and blocks of keys.
        {"long prefill", 200, 200, 16, 2, {{0, 200, 0, 200, true, 0}}},
        // Five query heads a K/V head after a prefix of keys: at head_dim 128 the tensor-core kernel takes
        // the span in parts of 25 rows, five heads each.
        {"prefix", 150, 190, 10, 2, {{0, 150, 0, 190, true, 40}}},
        // Decode against a longer cache.
        {"decode", 1, 130, 16, 2, {{0, 1, 0, 130, true, 129}}},
        // Decode against a long cache, whose keys are split over several blocks, beside a short one.
        {"long decode", 2, 3005, 16, 2, {{0, 1, 0, 3000, true, 2999}, {1, 1, 3000, 5}}},
        // A chunk of a prompt after 133 cached tokens, and a second sequence decoding, some q rows uncovered.
        {"chunked", 24, 300, 6, 3, {{0, 17, 0, 150, true, 133}, {20, 1, 150, 150, true, 149}}},
        // Segments with no keys and a causal window cut by n_kv; short segments go row by row through the
        // kernels, longer ones in tiles.
        {"edge", 23, 9, 2, 1, {{0, 2, 0, 0}, {2, 3, 0, 4, true, 3}, {5, 9, 0, 0}, {14, 9, 0, 6, true, 0}}},
    };
    for (const auto& [precision, bound] : kAttentionPrecisions) {
        for (const Case& c : cases) {
            for (const int64_t hd : {1, 7, 32, 72, 128, 256}) {
                if (precision == AttentionPrecision::Bf16 && hd == 1) {
                    continue;
                }
                const Pair q = random({c.n_q_total, c.n_head, hd}),
                           k = random({c.n_kv_total, c.n_kv_head, hd}),
                           v = random({c.n_kv_total, c.n_kv_head, hd});
                const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
                expect_close("attention " + precision_name(precision),
                             gpu_->attention(q.gpu, k.gpu, v.gpu, c.segments, scale, precision),
                             cpu_->attention(q.cpu, k.cpu, v.cpu, c.segments, scale, AttentionPrecision::F32),
                             bound, label(c.name, " hd ", hd));
            }
        }
    }
    // The tensor-core kernels take a positive scale only; others go through the float32 kernels.
    const std::vector<AttentionSegment> image = {{0, 40, 0, 40}};
    for (const float scale : {-0.3f, 0.0f}) {
        const Pair qi = random({40, 2, 72}), ki = random({40, 2, 72}), vi = random({40, 2, 72});
        expect_close("attention bf16, scale not positive",
                     gpu_->attention(qi.gpu, ki.gpu, vi.gpu, image, scale, AttentionPrecision::Bf16),
                     cpu_->attention(qi.cpu, ki.cpu, vi.cpu, image, scale, AttentionPrecision::F32),
                     kF32Bound, label("scale ", scale));
        const Pair qkv = random({40, 3, 2, 72}), cs = random({40, 72});
        expect_close("rope_attention bf16, scale not positive",
                     gpu_->rope_attention(qkv.gpu, cs.gpu, cs.gpu, image, scale, AttentionPrecision::Bf16),
                     cpu_->rope_attention(qkv.cpu, cs.cpu, cs.cpu, image, scale, AttentionPrecision::F32),
                     kF32Bound, label("scale ", scale));
    }
    const Pair q = random({4, 4, 8}), k = random({6, 3, 8});
    const std::vector<AttentionSegment> segment = {{0, 4, 0, 6}};
    EXPECT_THROW(gpu_->attention(q.gpu, k.gpu, k.gpu, segment, 1.0f, AttentionPrecision::Bf16), Error)
        << "4 heads over 3 K/V heads";
    const Pair k2 = random({6, 2, 8});
    const std::vector<AttentionSegment> outside = {{0, 4, 3, 4}};
    EXPECT_THROW(gpu_->attention(q.gpu, k2.gpu, k2.gpu, outside, 1.0f, AttentionPrecision::Bf16), Error);
}

// Stacked q, k and v turned and attended in one call, against the CPU's split, rope() and attention(): images
// long enough for tiles on the tensor cores, and segments too short for them or causal, which take the
// default path.
TEST_F(BackendOpsTest, RopeAttention) {
    const std::vector<std::pair<std::string, std::vector<AttentionSegment>>> cases = {
        {"images", {{0, 8, 0, 8}, {8, 96, 8, 96}, {104, 130, 104, 130}}},
        {"short image", {{0, 7, 0, 7}, {7, 227, 7, 227}}},
        {"causal", {{0, 234, 0, 234, true, 0}}},
        {"rows uncovered", {{10, 100, 10, 100}}},
    };
    for (const auto& [precision, bound] : kAttentionPrecisions) {
        for (const auto& [name, segments] : cases) {
            for (const int64_t n_head : {1, 16}) {
                for (const int64_t hd : {8, 72, 128}) {
                    const int64_t n = 234;
                    // Turns by angles, as rotary tables hold them.
                    const std::vector<float> angles = random_values(n * hd, seed_++, 0.0f, 3.0f);
                    std::vector<float> cos_values(angles.size()), sin_values(angles.size());
                    std::transform(angles.begin(), angles.end(), cos_values.begin(),
                                   [](float a) { return std::cos(a); });
                    std::transform(angles.begin(), angles.end(), sin_values.begin(),
                                   [](float a) { return std::sin(a); });
                    const Pair qkv = random({n, 3, n_head, hd}), cos = upload(cos_values, {n, hd}),
                               sin = upload(sin_values, {n, hd});
                    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
                    expect_close("rope_attention " + precision_name(precision),
                                 gpu_->rope_attention(qkv.gpu, cos.gpu, sin.gpu, segments, scale, precision),
                                 cpu_->rope_attention(qkv.cpu, cos.cpu, sin.cpu, segments, scale,
                                                      AttentionPrecision::F32),
                                 bound, label(name, " heads ", n_head, " hd ", hd));
                }
            }
        }
    }
    const Pair qkv = random({4, 3, 2, 8}), cs = random({4, 8});
    const std::vector<AttentionSegment> segment = {{0, 4, 0, 4}};
    EXPECT_THROW(gpu_->rope_attention(random({4, 2, 2, 8}).gpu, cs.gpu, cs.gpu, segment, 1.0f,
                                      AttentionPrecision::Bf16),
                 Error)
        << "two parts";
    EXPECT_THROW(gpu_->rope_attention(random({4, 3, 2, 7}).gpu, random({4, 7}).gpu, random({4, 7}).gpu,
                                      segment, 1.0f, AttentionPrecision::Bf16),
                 Error)
        << "odd head_dim";
    EXPECT_THROW(gpu_->rope_attention(qkv.gpu, random({5, 8}).gpu, random({5, 8}).gpu, segment, 1.0f,
                                      AttentionPrecision::Bf16),
                 Error)
        << "cos rows";
    const std::vector<AttentionSegment> outside = {{0, 4, 1, 4}};
    EXPECT_THROW(gpu_->rope_attention(qkv.gpu, cs.gpu, cs.gpu, outside, 1.0f, AttentionPrecision::Bf16),
                 Error);
}

// A vision layer's attention half against the CPU's norm, product, RoPE, attention and product: on the tensor
// cores with bfloat16 between the steps where every segment goes in tiles, the default path for few rows,
// short segments and WINT8 weights; rows outside every segment add only the output bias.
TEST_F(BackendOpsTest, LayerNormAttentionAdd) {
    struct Case {
        std::string name;
        Quantization type;
        int64_t n, n_head, head_dim;
        std::vector<AttentionSegment> segments;
    };
    const std::vector<Case> cases = {
        {"images", Quantization::Bf16, 234, 4, 16, {{0, 8, 0, 8}, {8, 96, 8, 96}, {104, 130, 104, 130}}},
        {"vision size", Quantization::Bf16, 300, 16, 72, {{0, 100, 0, 100}, {100, 200, 100, 200}}},
        {"rows uncovered", Quantization::Bf16, 130, 2, 36, {{10, 100, 10, 100}}},
        {"short image", Quantization::Bf16, 40, 4, 16, {{0, 7, 0, 7}, {7, 33, 7, 33}}},
        {"few rows", Quantization::Bf16, 5, 4, 16, {{0, 5, 0, 5}}},
        {"wint8", Quantization::Wint8, 130, 2, 32, {{0, 130, 0, 130}}},
    };
    for (const auto& [precision, unused_bound] : kAttentionPrecisions) {
        for (const Case& c : cases) {
            for (const bool with_bias : {false, true}) {
                const int64_t d = c.n_head * c.head_dim;
                const float w_scale = 1.0f / std::sqrt(static_cast<float>(d));  // q and k rows of unit scale
                const auto w_qkv =
                    quantize(random_values(3 * d * d, seed_++, 0.0f, w_scale), 3 * d, d, c.type, 0);
                const auto w_out = quantize(random_values(d * d, seed_++, 0.0f, w_scale), d, d, c.type, 0);
                const Weight qkv_cpu = cpu_->upload(w_qkv), qkv_gpu = gpu_->upload(w_qkv);
                const Weight out_cpu = cpu_->upload(w_out), out_gpu = gpu_->upload(w_out);
                const Pair qkv_b = random({3 * d}), out_b = random({d});
                const Pair norm_w = random({d}, 1.0f, 0.1f), norm_b = random({d});
                const std::vector<float> angles = random_values(c.n * c.head_dim, seed_++, 0.0f, 3.0f);
                std::vector<float> cos_values(angles.size()), sin_values(angles.size());
                std::transform(angles.begin(), angles.end(), cos_values.begin(),
                               [](float a) { return std::cos(a); });
                std::transform(angles.begin(), angles.end(), sin_values.begin(),
                               [](float a) { return std::sin(a); });
                const Pair cos = upload(cos_values, {c.n, c.head_dim}),
                           sin = upload(sin_values, {c.n, c.head_dim});
                const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
                Pair x = random({c.n, d});
                const Linear qkv_l_cpu{qkv_cpu, with_bias ? qkv_b.cpu : Tensor{}};
                const Linear out_l_cpu{out_cpu, with_bias ? out_b.cpu : Tensor{}};
                const Linear qkv_l_gpu{qkv_gpu, with_bias ? qkv_b.gpu : Tensor{}};
                const Linear out_l_gpu{out_gpu, with_bias ? out_b.gpu : Tensor{}};
                layer_norm_attention_add(*cpu_, x.cpu,
                                         {norm_w.cpu, norm_b.cpu, 1e-6f, qkv_l_cpu, out_l_cpu, c.n_head},
                                         cos.cpu, sin.cpu, c.segments, scale, AttentionPrecision::F32);
                layer_norm_attention_add(*gpu_, x.gpu,
                                         {norm_w.gpu, norm_b.gpu, 1e-6f, qkv_l_gpu, out_l_gpu, c.n_head},
                                         cos.gpu, sin.gpu, c.segments, scale, precision);
                const double bound = linear_bound(c.n, d, c.type);
                expect_close(label("layer_norm_attention_add ", quantization_name(c.type), " ",
                                   precision_name(precision)),
                             x.gpu, x.cpu, bound, label(c.name, with_bias ? " bias" : ""));
            }
        }
    }
    const Weight w = gpu_->upload(quantize(random_values(48 * 16, 3), 48, 16, Quantization::Bf16, 0));
    const Pair norm = random({16}), cs = random({9, 4});
    const std::vector<AttentionSegment> segment = {{0, 9, 0, 9}};
    Pair x = random({9, 16});
    const Linear w_l{w, {}};
    EXPECT_THROW(layer_norm_attention_add(*gpu_, x.gpu, {norm.gpu, norm.gpu, 1e-6f, w_l, w_l, 4}, cs.gpu,
                                          cs.gpu, segment, 0.5f, AttentionPrecision::Bf16),
                 Error)
        << "out takes 16 values to 16, not 16 to 48";
    const Linear out{gpu_->upload(quantize(random_values(16 * 16, 4), 16, 16, Quantization::Bf16, 0)), {}};
    EXPECT_THROW(layer_norm_attention_add(*gpu_, x.gpu, {norm.gpu, norm.gpu, 1e-6f, w_l, out, 3}, cs.gpu,
                                          cs.gpu, segment, 0.5f, AttentionPrecision::Bf16),
                 Error)
        << "16 values are not 3 heads";
    EXPECT_THROW(
        layer_norm_attention_add(*gpu_, x.gpu, {norm.gpu, norm.gpu, 1e-6f, w_l, out, 4}, random({9, 6}).gpu,
                                 random({9, 6}).gpu, segment, 0.5f, AttentionPrecision::Bf16),
        Error)
        << "cos of head_dim 6, not 4";
    const std::vector<AttentionSegment> outside = {{0, 10, 0, 10}};
    EXPECT_THROW(layer_norm_attention_add(*gpu_, x.gpu, {norm.gpu, norm.gpu, 1e-6f, w_l, out, 4}, cs.gpu,
                                          cs.gpu, outside, 0.5f, AttentionPrecision::Bf16),
                 Error)
        << "a segment past the rows";
}

TEST_F(BackendOpsTest, PagedAttention) {
    for (const auto& [precision, bound] : kAttentionPrecisions) {
        for (const auto& [cache_type, block_size] : {std::pair{ScalarType::F32, int64_t{1}},
                                                     {ScalarType::F32, 5},
                                                     {ScalarType::F32, 16},
                                                     {ScalarType::BF16, 1},
                                                     {ScalarType::BF16, 5},
                                                     {ScalarType::BF16, 16},
                                                     {ScalarType::Q8, 1},
                                                     {ScalarType::Q8, 16}}) {
            // 16 heads of 128 over 2 K/V heads: at bfloat16 precision over a bfloat16 cache, the rows of the
            // short sequences go to decode_attention_bf16. 10 heads over 2 share a tensor-core block five
            // heads at a time, its parts of a span not a divisor of the span's rows.
            for (const auto& [hd, n_head] :
                 {std::pair<int64_t, int64_t>{7, 8}, {32, 8}, {128, 8}, {128, 16}, {128, 10}}) {
                const int64_t n_kv_head = 2;
                // Sequences: (n_q, n_kv) — decodes, a prefill, a chunk after cached tokens, a decode whose
                // keys are split over several blocks, and two long chunks whose keys with the others' exceed
                // what the tensor-core path gathers at once (8,192 keys here), so that it gathers twice.
                const std::vector<std::pair<int64_t, int64_t>> shapes = {
                    {1, 1}, {1, 3}, {17, 17}, {5, 130}, {1, 2000}, {70, 300}, {150, 4500}, {9, 4200}};
                std::vector<PagedSequence> seqs;
                std::vector<int32_t> tables;
                int64_t n_tokens = 0, n_blocks_used = 0;
                for (const auto& [n_q, n_kv] : shapes) {
                    const int64_t n_table = (n_kv + block_size - 1) / block_size;
                    seqs.push_back({n_tokens, n_q, n_kv, static_cast<int64_t>(tables.size())});
                    for (int64_t i = 0; i < n_table; ++i) {
                        tables.push_back(static_cast<int32_t>(n_blocks_used++));
                    }
                    n_tokens += n_q;
                }
                // Blocks scattered over a larger cache, in a shuffled order.
                const int64_t n_blocks = n_blocks_used + 7;
                std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
                std::iota(perm.begin(), perm.end(), 0);
                std::shuffle(perm.begin(), perm.end(), std::mt19937(seed_++));
                for (int32_t& b : tables) {
                    b = perm[static_cast<size_t>(b)];
                }
                const Pair q = random({n_tokens + 2, n_head, hd}),
                           k = random_kv({n_blocks * block_size, n_kv_head, hd}, cache_type),
                           v = random_kv({n_blocks * block_size, n_kv_head, hd}, cache_type);
                const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
                expect_close(
                    label("paged_attention ", precision_name(precision), ", ", dtype_name(cache_type),
                          " cache"),
                    gpu_->paged_attention(q.gpu, k.gpu, v.gpu, seqs, tables, block_size, scale, precision),
                    cpu_->paged_attention(q.cpu, k.cpu, v.cpu, seqs, tables, block_size, scale,
                                          AttentionPrecision::F32),
                    bound, label("block ", block_size, " hd ", hd));
            }
        }
    }
    const Pair q = random({2, 4, 8}), k = random({32, 2, 8});
    const std::vector<PagedSequence> seq = {{0, 2, 20, 0}};
    const std::vector<int32_t> short_table = {0};
    constexpr auto kF32 = AttentionPrecision::F32;
    EXPECT_THROW(gpu_->paged_attention(q.gpu, k.gpu, k.gpu, seq, short_table, 16, 1.0f, kF32), Error);
    const std::vector<int32_t> bad_block = {0, 2};
    EXPECT_THROW(gpu_->paged_attention(q.gpu, k.gpu, k.gpu, seq, bad_block, 16, 1.0f, kF32), Error);
    EXPECT_THROW(gpu_->paged_attention(q.gpu, k.gpu, k.gpu, seq, bad_block, 7, 1.0f, kF32), Error)
        << "32 % 7";
    const std::vector<int32_t> table = {0, 1};
    const Tensor v_bf16 = gpu_->upload_kv(std::vector<float>(32 * 2 * 8), {32, 2, 8}, ScalarType::BF16);
    EXPECT_THROW(gpu_->paged_attention(q.gpu, k.gpu, v_bf16, seq, table, 16, 1.0f, kF32), Error)
        << "a float32 k cache with a bfloat16 v cache";
}

// Exact: both backends choose the first of the largest values; ties are planted on purpose.

TEST_F(BackendOpsTest, RopeQkvToCache) {
    const auto sections = [](int t, int h, int w) {
        return RotaryLayout(3).section(0, t).section(1, h).section(2, w);
    };
    const auto interleaved = [](int hw, int t) {
        const std::pair<int, int> axes[] = {{1, hw}, {2, hw}};
        return RotaryLayout(3).interleaved(axes).section(0, t);
    };
    const auto one_axis = [](int n) { return RotaryLayout(1).section(0, n); };
    struct Case {
        int64_t n, n_head, n_kv_head, hd;
        RotaryLayout layout;
        int64_t in;
        Quantization type;
    };
    for (const ScalarType cache_type : kCacheTypes) {
        for (const Case& c : {Case{1, 2, 1, 6, sections(1, 1, 1), 64, Quantization::Bf16},
                              Case{5, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Bf16},
                              Case{1, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Wint8},
                              Case{1, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Wint4},
                              Case{2, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Bf16},
                              Case{8, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Wint4},
                              Case{37, 4, 2, 64, sections(8, 12, 12), 96, Quantization::Bf16},
                              Case{3, 3, 3, 2, sections(0, 1, 0), 20, Quantization::Wint8},
                              Case{1, 20, 4, 128, interleaved(22, 20), 256, Quantization::Wint4},
                              Case{7, 20, 4, 128, interleaved(22, 20), 256, Quantization::Bf16},
                              Case{2, 8, 2, 128, one_axis(64), 256, Quantization::Wint8},
                              Case{40, 8, 2, 128, one_axis(64), 256, Quantization::Bf16},
                              // From 256 tokens a block a token, its angles found once for all its heads.
                              Case{300, 16, 2, 128, sections(16, 24, 24), 1024, Quantization::Bf16},
                              Case{260, 20, 4, 128, interleaved(22, 20), 256, Quantization::Bf16},
                              Case{257, 3, 3, 2, sections(0, 1, 0), 20, Quantization::Wint8}}) {
            const int64_t n_slots = 2 * c.n + 5, n_qkv = (c.n_head + 2 * c.n_kv_head) * c.hd;
            const int n_axes = c.layout.n_axes();
            const Pair qkv = random({c.n, n_qkv});
            std::mt19937 rng(seed_++);
            std::vector<int32_t> positions(static_cast<size_t>(n_axes * c.n)),
                slots(static_cast<size_t>(n_slots));
            for (int32_t& p : positions) {
                p = static_cast<int32_t>(rng() % 20000);
            }
            std::iota(slots.begin(), slots.end(), 0);
            std::shuffle(slots.begin(), slots.end(), rng);
            slots.resize(static_cast<size_t>(c.n));
            slots[0] = -1;  // padding: not stored
            const Pair pos = upload_i32(positions, {c.n, n_axes});
            const Pair slot = upload_i32(slots, {c.n});
            const RopeParams rope_gpu = c.layout.upload(*gpu_, c.hd, 10000.0f),
                             rope_cpu = c.layout.upload(*cpu_, c.hd, 10000.0f);
            Pair k_cache = random_kv({n_slots, c.n_kv_head, c.hd}, cache_type),
                 v_cache = random_kv({n_slots, c.n_kv_head, c.hd}, cache_type);
            // A level may round the other way where the backends' turned keys differ in their last bit.
            const double cache_bound = cache_type == ScalarType::F32 ? kF32Bound : kBf16CacheBound;
            const Tensor q_gpu =
                gpu_->rope_qkv_to_cache(qkv.gpu, pos.gpu, slot.gpu, rope_gpu, k_cache.gpu, v_cache.gpu);
            const Tensor q_cpu =
                cpu_->rope_qkv_to_cache(qkv.cpu, pos.cpu, slot.cpu, rope_cpu, k_cache.cpu, v_cache.cpu);
            const std::string where = label(c.n, " tokens, ", c.n_head, "/", c.n_kv_head, " heads of ", c.hd,
                                            ", ", n_axes, " axes, ", dtype_name(cache_type), " cache");
            expect_close("rope_qkv_to_cache (q)", q_gpu, q_cpu, kF32Bound, where);
            expect_close(label("rope_qkv_to_cache (", dtype_name(cache_type), " k cache)"), k_cache.gpu,
                         k_cache.cpu, cache_bound, where);
            expect_close(label("rope_qkv_to_cache (", dtype_name(cache_type), " v cache)"), v_cache.gpu,
                         v_cache.cpu, cache_bound, where);

            const auto w = quantize(random_values(n_qkv * c.in, seed_++), n_qkv, c.in, c.type,
                                    c.type == Quantization::Wint4 ? 64 : 0);
            const Weight w_cpu = cpu_->upload(w);
            const Weight w_gpu = gpu_->upload(w);
            const Pair x = random({c.n, c.in}, 0.5f, 2.0f), norm = random({c.in}, 1.0f, 0.1f),
                       b = random({n_qkv});
            const Tensor linear_q_gpu =
                gpu_->linear(x.gpu, w_gpu,
                             {.norm = LinearNorm::Rms,
                              .norm_w = &norm.gpu,
                              .eps = 1e-5f,
                              .bias = &b.gpu,
                              .output = LinearOutputKind::RopeToCache,
                              .rope_to_cache = {&pos.gpu, &slot.gpu, &rope_gpu, &k_cache.gpu, &v_cache.gpu}});
            const Tensor linear_q_cpu =
                cpu_->linear(x.cpu, w_cpu,
                             {.norm = LinearNorm::Rms,
                              .norm_w = &norm.cpu,
                              .eps = 1e-5f,
                              .bias = &b.cpu,
                              .output = LinearOutputKind::RopeToCache,
                              .rope_to_cache = {&pos.cpu, &slot.cpu, &rope_cpu, &k_cache.cpu, &v_cache.cpu}});
            const double bound = linear_bound(c.n, c.in, c.type);
            const std::string format = quantization_name(c.type);
            expect_close(label("linear rms_norm rope_to_cache (q) ", format), linear_q_gpu, linear_q_cpu,
                         bound, where);
            expect_close(
                label("linear rms_norm rope_to_cache (", dtype_name(cache_type), " k cache) ", format),
                k_cache.gpu, k_cache.cpu, std::max(bound, cache_bound), where);
            expect_close(
                label("linear rms_norm rope_to_cache (", dtype_name(cache_type), " v cache) ", format),
                v_cache.gpu, v_cache.cpu, std::max(bound, cache_bound), where);
        }
    }
    const Pair qkv = random({2, 4 * 8}), pos = upload_i32({0, 0, 0, 1, 1, 1}, {2, 3});
    const Pair slot = upload_i32({0, 1}, {2});
    Pair cache = random({4, 1, 8});
    const RopeParams rope = RotaryLayout(3).section(0, 2).section(1, 1).section(2, 1).upload(*gpu_, 8, 1e4f);
    EXPECT_THROW(gpu_->rope_qkv_to_cache(
                     qkv.gpu, pos.gpu, slot.gpu,
                     RotaryLayout(3).section(0, 1).section(1, 1).section(2, 1).upload(*gpu_, 6, 1e4f),
                     cache.gpu, cache.gpu),
                 Error)
        << "three frequencies, not four";
    EXPECT_THROW(
        gpu_->rope_qkv_to_cache(qkv.gpu, pos.gpu, slot.gpu,
                                RotaryLayout(1).section(0, 4).upload(*gpu_, 8, 1e4f), cache.gpu, cache.gpu),
        Error)
        << "positions of three axes for a one-axis layout";
    EXPECT_THROW(gpu_->rope_qkv_to_cache(qkv.gpu, slot.gpu, slot.gpu, rope, cache.gpu, cache.gpu), Error)
        << "positions [2]";
    EXPECT_THROW(gpu_->rope_qkv_to_cache(qkv.gpu, pos.gpu, qkv.gpu, rope, cache.gpu, cache.gpu), Error)
        << "float32 slots";
    const Weight w = gpu_->upload(quantize(random_values(4 * 8 * 16, 3), 4 * 8, 16, Quantization::Bf16, 0));
    const Pair x = random({2, 16});
    const Pair norm15 = random({15}), norm16 = random({16});
    EXPECT_THROW(gpu_->linear(x.gpu, w,
                              {.norm = LinearNorm::Rms,
                               .norm_w = &norm15.gpu,
                               .eps = 1e-5f,
                               .output = LinearOutputKind::RopeToCache,
                               .rope_to_cache = {&pos.gpu, &slot.gpu, &rope, &cache.gpu, &cache.gpu}}),
                 Error)
        << "norm width";
    Pair two_head_cache = random({4, 2, 8});
    EXPECT_THROW(gpu_->linear(x.gpu, w,
                              {.norm = LinearNorm::Rms,
                               .norm_w = &norm16.gpu,
                               .eps = 1e-5f,
                               .output = LinearOutputKind::RopeToCache,
                               .rope_to_cache = {&pos.gpu, &slot.gpu, &rope, &two_head_cache.gpu,
                                                 &two_head_cache.gpu}}),
                 Error)
        << "32 rows are not q, k and v heads for 2 k/v heads of 8";
}

// Sequences of random lengths (0 for padding rows) over shuffled blocks of a larger cache; table entries past
// a sequence's length hold blocks the kernel must not read. One sequence splits its keys most, 300 sequences
// not at all (in three on the tensor cores); rows of fewer keys than a tile have their splits' outputs at
// once. A second identical call must give the same output, the split counters having been left at zero.
TEST_F(BackendOpsTest, PagedDecodeAttention) {
    std::vector<int32_t> many(300);
    std::mt19937 length_rng(seed_++);
    for (int32_t& len : many) {
        len = static_cast<int32_t>(length_rng() % 700);
    }
    struct Case {
        std::vector<int32_t> lengths;
        int64_t n_head, n_kv_head;
    };
    // Groups of 8 heads of 128 take the tensor cores at bfloat16 precision, with a bfloat16 cache in each
    // warp's own tiles of 16 keys (decode-attention.cu), with a float32 cache in the split-row kernel's tiles
    // of 32: lengths that end at every place in a tile, rows of no key and of one. The row of 545 keys merges
    // 9 splits; the 300 rows of `many` fill the device with one split each over a bfloat16 cache, with three
    // each over a float32 one.
    const std::vector<Case> cases = {{{1, 0, 17, 64, 65, 2999, 300, 0, 1000}, 8, 2},
                                     {{545}, 16, 2},
                                     {{2999}, 6, 3},
                                     {{33, 1, 700, 0}, 16, 2},
                                     {{1, 31, 32, 33, 64, 97, 0, 2999}, 16, 2},
                                     {many, 16, 2}};
    for (const auto& [precision, bound] : kAttentionPrecisions) {
        for (const Case& c : cases) {
            for (const auto& [cache_type, block_size] : {std::pair{ScalarType::F32, int64_t{1}},
                                                         {ScalarType::BF16, 1},
                                                         {ScalarType::F32, 16},
                                                         {ScalarType::BF16, 16},
                                                         {ScalarType::BF16, 64},
                                                         {ScalarType::Q8, 1},
                                                         {ScalarType::Q8, 16}}) {
                for (const int64_t hd : {5, 64, 128, 256}) {
                    const int64_t n_head = c.n_head, n_kv_head = c.n_kv_head,
                                  max_blocks = 3000 / block_size + 1;
                    const auto n = static_cast<int64_t>(c.lengths.size());
                    int64_t n_blocks = 0;
                    for (const int32_t len : c.lengths) {
                        n_blocks += (len + block_size - 1) / block_size;
                    }
                    n_blocks += 5;
                    std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
                    std::iota(perm.begin(), perm.end(), 0);
                    std::mt19937 rng(seed_++);
                    std::shuffle(perm.begin(), perm.end(), rng);
                    std::vector<int32_t> tables(static_cast<size_t>(n * max_blocks));
                    size_t next = 0;
                    for (int64_t i = 0; i < n; ++i) {
                        for (int64_t b = 0; b < max_blocks; ++b) {
                            tables[i * max_blocks + b] = b < (c.lengths[i] + block_size - 1) / block_size
                                                             ? perm[next++]
                                                             : static_cast<int32_t>(rng() % n_blocks);
                        }
                    }
                    const Pair q = random({n, n_head, hd}),
                               k = random_kv({n_blocks * block_size, n_kv_head, hd}, cache_type),
                               v = random_kv({n_blocks * block_size, n_kv_head, hd}, cache_type);
                    const Pair lens = upload_i32(c.lengths, {n});
                    const Pair table = upload_i32(tables, {n, max_blocks});
                    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
                    const std::string what = label(n, " sequences, ", n_head, "/", n_kv_head,
                                                   " heads, block ", block_size, ", hd ", hd);
                    const Tensor first = gpu_->paged_decode_attention(
                        q.gpu, k.gpu, v.gpu, lens.gpu, table.gpu, block_size, scale, precision);
                    expect_close(label("paged_decode_attention ", precision_name(precision), ", ",
                                       dtype_name(cache_type), " cache"),
                                 first,
                                 cpu_->paged_decode_attention(q.cpu, k.cpu, v.cpu, lens.cpu, table.cpu,
                                                              block_size, scale, AttentionPrecision::F32),
                                 bound, what);
                    const Tensor second = gpu_->paged_decode_attention(
                        q.gpu, k.gpu, v.gpu, lens.gpu, table.gpu, block_size, scale, precision);
                    EXPECT_EQ(gpu_->download(first), gpu_->download(second)) << what << ": a repeated call";
                }
            }
        }
    }
    const Pair q = random({2, 4, 8}), k = random({32, 2, 8});
    const Pair lens = upload_i32({3, 4}, {2}), table = upload_i32({0, 1}, {2, 1});
    EXPECT_THROW(gpu_->paged_decode_attention(q.gpu, k.gpu, k.gpu, lens.gpu, table.gpu, 7, 1.0f,
                                              AttentionPrecision::F32),
                 Error)
        << "32 % 7";
    EXPECT_THROW(gpu_->paged_decode_attention(q.gpu, k.gpu, k.gpu, table.gpu, lens.gpu, 16, 1.0f,
                                              AttentionPrecision::F32),
                 Error)
        << "tables [2]";
    EXPECT_THROW(cpu_->paged_decode_attention(q.cpu, k.cpu, k.cpu, lens.cpu, table.cpu, 2, 1.0f,
                                              AttentionPrecision::F32),
                 Error)
        << "length 3 beyond one block of 2";
}

// A decoding row of a step that also runs prompt chunks comes out bit for bit as in a decoding step, but for
// the decoding step rounding it to bfloat16: at bfloat16 precision both take decode_attention_bf16, with one
// split a row when the rows fill the device.
TEST_F(BackendOpsTest, PagedAttentionRowsMatchDecode) {
    constexpr int64_t kRows = 150, kHeadDim = 128, kHeads = 16, kKvHeads = 2, kBlockSize = 16;
    constexpr int64_t kMaxBlocks = 3000 / kBlockSize + 1;
    std::mt19937 rng(seed_++);
    std::vector<int32_t> lengths(kRows);
    for (int32_t& n : lengths) {
        n = static_cast<int32_t>(1 + rng() % 2999);
    }
    lengths[0] = 1;
    lengths[1] = 2999;
    lengths[2] = 64;
    const int64_t n_blocks = kRows * kMaxBlocks + 9;
    std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    // The decoding rows' tables, [kRows, kMaxBlocks], and a prompt chunk of 40 rows after 100 cached tokens,
    // whose q rows come after the decoding rows'.
    std::vector<int32_t> tables(perm.begin(), perm.begin() + kRows * kMaxBlocks);
    std::vector<PagedSequence> seqs;
    for (int64_t i = 0; i < kRows; ++i) {
        seqs.push_back({i, 1, lengths[static_cast<size_t>(i)], i * kMaxBlocks});
    }
    constexpr int64_t kChunkRows = 40, kChunkKeys = 140;
    seqs.push_back({kRows, kChunkRows, kChunkKeys, static_cast<int64_t>(tables.size())});
    for (int64_t b = 0; b < (kChunkKeys + kBlockSize - 1) / kBlockSize; ++b) {
        tables.push_back(perm[static_cast<size_t>(kRows * kMaxBlocks + b)]);
    }
    const Pair k = random_kv({n_blocks * kBlockSize, kKvHeads, kHeadDim}, ScalarType::BF16),
               v = random_kv({n_blocks * kBlockSize, kKvHeads, kHeadDim}, ScalarType::BF16);
    const std::vector<float> q_values = random_values((kRows + kChunkRows) * kHeads * kHeadDim, seed_++);
    const Tensor q_step = gpu_->upload(q_values, {kRows + kChunkRows, kHeads, kHeadDim});
    const Tensor q_decode =
        gpu_->upload(std::vector<float>(q_values.begin(), q_values.begin() + kRows * kHeads * kHeadDim),
                     {kRows, kHeads, kHeadDim});
    const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    // The decoding step's outputs come rounded to bfloat16 for the output projection.
    std::vector<float> mixed = gpu_->download(gpu_->paged_attention(
        q_step, k.gpu, v.gpu, seqs, tables, kBlockSize, scale, AttentionPrecision::Bf16));
    for (float& x : mixed) {
        x = from_bf16(to_bf16(x));
    }
    const Pair lens = upload_i32(lengths, {kRows});
    const Pair table = upload_i32(std::vector<int32_t>(tables.begin(), tables.begin() + kRows * kMaxBlocks),
                                  {kRows, kMaxBlocks});
    const std::vector<float> decoded = gpu_->download(gpu_->paged_decode_attention(
        q_decode, k.gpu, v.gpu, lens.gpu, table.gpu, kBlockSize, scale, AttentionPrecision::Bf16));
    ASSERT_EQ(decoded.size(), static_cast<size_t>(kRows * kHeads * kHeadDim));
    for (int64_t i = 0; i < kRows; ++i) {
        const auto row = [&](const std::vector<float>& x) {
            const auto first = x.begin() + i * kHeads * kHeadDim;
            return std::vector<float>(first, first + kHeads * kHeadDim);
        };
        ASSERT_EQ(row(mixed), row(decoded))
            << "row " << i << " of " << lengths[static_cast<size_t>(i)] << " keys";
    }
}

}  // namespace
}  // namespace folio::backend_ops_test
