// The CUDA backend's element-wise and row operations (sampling, arg-max, weighted rows, the mixture of
// experts, SwiGLU) against the CPU reference backend; skipped where no CUDA device is present.
#include <tuple>

#include "backend-ops-fixture.h"
#include "kernels/moe.h"

namespace folio::backend_ops_test {
namespace {

TEST_F(BackendOpsTest, ElementWise) {
    for (const int64_t n : {1, 7, 96 * 3, 1000 * 17 + 1}) {
        Pair x = random({n}, 0.0f, 3.0f);
        const Pair y = random({n});
        cpu_->add(x.cpu, y.cpu);
        gpu_->add(x.gpu, y.gpu);
        expect_close("add", x.gpu, x.cpu, kF32Bound, dims({n}));
        cpu_->gelu_tanh(x.cpu);
        gpu_->gelu_tanh(x.gpu);
        expect_close("gelu_tanh", x.gpu, x.cpu, kF32Bound, dims({n}));
        Pair z = random({n}, 0.0f, 3.0f);
        cpu_->gelu_erf(z.cpu);
        gpu_->gelu_erf(z.gpu);
        expect_close("gelu_erf", z.gpu, z.cpu, kF32Bound, dims({n}));
    }
    Pair a = random({3, 4});
    const Pair b = random({4, 3});
    EXPECT_THROW(gpu_->add(a.gpu, b.gpu), Error);
}

TEST_F(BackendOpsTest, ArgmaxRows) {
    for (const int64_t d : {1, 7, 1000, 103424}) {
        for (const int64_t n : {1, 3, 130}) {
            std::vector<float> values = random_values(n * d, seed_++, 0.0f, 1.0f);
            for (int64_t r = 0; r < n; r += 2) {
                values[r * d + (r * 7919) % d] = 9.0f;
                values[r * d + (r * 104729 + d / 2) % d] = 9.0f;
            }
            const Pair x = upload(values, {n, d});
            EXPECT_EQ(gpu_->argmax_rows(x.gpu), cpu_->argmax_rows(x.cpu)) << dims({n, d});
        }
    }
    // NaNs and infinities, the largest value in a later chunk of columns: as std::max_element, a NaN never
    // wins, except in column 0, where nothing beats it.
    const int64_t d = 103424;
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> values(4 * d, -inf);
    values[0 * d + 0] = nan;  // row 0: NaN first, a larger number later
    values[0 * d + 70000] = 5.0f;
    for (int64_t c = 1; c < d; c += 3) {
        values[1 * d + c] = nan;  // row 1: NaNs everywhere but column 0's -inf and one 1.0
    }
    values[1 * d + 99001] = 1.0f;
    // row 2: all -inf; row 3: +inf twice, in different chunks
    values[3 * d + 8191] = inf;
    values[3 * d + 100000] = inf;
    const Pair x = upload(values, {4, d});
    const std::vector<int32_t> expected = cpu_->argmax_rows(x.cpu);
    EXPECT_EQ(expected, (std::vector<int32_t>{0, 99001, 0, 8191}));
    EXPECT_EQ(gpu_->argmax_rows(x.gpu), expected);
    const Pair empty = random({3, 0});
    EXPECT_THROW(gpu_->argmax_rows(empty.gpu), Error);
}

// Whether a choice of row [vocab] hangs on float rounding: recomputed in double, a running sum of the top-p
// walk (in rank order) lies within margin · total of the top-p mass, or one of the pick's running sums (in
// token order) within margin · total of the target. Greedy rows compare exactly.
bool near_boundary(std::vector<float> logits, const RowSampling& row, std::span<const int32_t> history,
                   double margin) {
    if (row.temperature == 0.0f) {
        return false;
    }
    const std::span<const int32_t> own = history.subspan(row.history_begin, row.history_count);
    for (const int32_t id : std::set<int32_t>(own.begin(), own.end())) {
        logits[id] =
            logits[id] > 0.0f ? logits[id] / row.repetition_penalty : logits[id] * row.repetition_penalty;
    }
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    for (float& l : logits) {
        l /= row.temperature;
    }
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return rank_key(logits[a], a) > rank_key(logits[b], b); });
    auto n_keep = static_cast<int64_t>(order.size());
    if (row.top_k > 0) {
        n_keep = std::min<int64_t>(n_keep, row.top_k);
    }
    std::vector<double> weights(logits.size(), 0.0);
    double total = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        weights[order[i]] = std::exp(static_cast<double>(logits[order[i]]) - logits[order[0]]);
        total += weights[order[i]];
    }
    bool near = false;
    if (row.top_p < 1.0f) {
        const double mass = row.top_p * total;
        double cumulative = 0.0;
        for (int64_t i = 0; i < n_keep; ++i) {
            cumulative += weights[order[i]];
            near = near || std::fabs(cumulative - mass) <= margin * total;
            if (cumulative >= mass) {
                n_keep = i + 1;
                break;
            }
        }
    }
    std::sort(order.begin(), order.begin() + n_keep);
    double kept_total = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        kept_total += weights[order[i]];
    }
    const double target = row.uniform * kept_total;
    double cumulative = 0.0;
    for (int64_t i = 0; i < n_keep; ++i) {
        cumulative += weights[order[i]];
        near = near || std::fabs(cumulative - target) <= margin * kept_total;
    }
    return near;
}

// The same token from both backends, on random logits (some rounded to plant ties), parameters, uniform
// numbers and histories with repeats. The GPU sums in float in another order than the CPU, so a choice may
// differ only where it hangs on rounding (near_boundary), and then in fewer than 1% of the rows.
TEST_F(BackendOpsTest, SampleRows) {
    constexpr double kMargin = 1e-4;
    std::mt19937_64 rng(2024);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    int64_t n_rows_total = 0, n_differ = 0;
    for (const int64_t vocab : {1, 7, 1000, 4099, 103424}) {
        const int64_t n_rows = vocab > 10000 ? 48 : 300;
        std::vector<float> values = random_values(n_rows * vocab, seed_++, 0.0f, 1.0f);
        std::vector<RowSampling> rows(static_cast<size_t>(n_rows));
        std::vector<int32_t> history;
        for (int64_t r = 0; r < n_rows; ++r) {
            const float scale = std::array{0.5f, 2.0f, 8.0f}[r % 3];
            for (int64_t i = 0; i < vocab; ++i) {
                float& v = values[r * vocab + i];
                v = r % 4 == 0 ? std::round(v * 2.0f) / 2.0f * scale : v * scale;
            }
            RowSampling& row = rows[r];
            row.temperature = r % 10 == 0 ? 0.0f : 0.2f + 1.8f * unit(rng);
            const uint64_t k_kind = rng() % 4;
            row.top_k = k_kind == 0   ? 0
                        : k_kind == 1 ? 1 + static_cast<int>(rng() % 50)
                        : k_kind == 2 ? static_cast<int>(rng() % (vocab + 3))
                                      : static_cast<int>(vocab);
            row.top_p = rng() % 3 == 0 ? 1.0f : 0.05f + 0.95f * unit(rng);
            row.repetition_penalty = rng() % 2 == 0 ? 1.0f : 0.5f + 1.5f * unit(rng);
            row.uniform = static_cast<float>(rng() >> 40) * 0x1.0p-24f;
            row.history_begin = static_cast<int64_t>(history.size());
            row.history_count = static_cast<int64_t>(rng() % 65);
            const int64_t window = std::min<int64_t>(vocab, 1 + static_cast<int64_t>(rng() % 40));
            for (int64_t i = 0; i < row.history_count; ++i) {
                history.push_back(static_cast<int32_t>(rng() % window));
            }
        }
        const Pair logits = upload(values, {n_rows, vocab});
        const std::vector<int32_t> gpu = gpu_->sample_rows(logits.gpu, rows, history);
        const std::vector<int32_t> cpu = cpu_->sample_rows(logits.cpu, rows, history);
        ASSERT_EQ(gpu.size(), cpu.size());
        for (int64_t r = 0; r < n_rows; ++r) {
            if (gpu[r] == cpu[r]) {
                continue;
            }
            ++n_differ;
            const RowSampling& row = rows[r];
            const std::vector<float> own(values.begin() + r * vocab, values.begin() + (r + 1) * vocab);
            EXPECT_TRUE(near_boundary(own, row, history, kMargin))
                << label("vocab ", vocab, " row ", r, ": gpu ", gpu[r], ", cpu ", cpu[r],
                         " with temperature ", row.temperature, ", top_k ", row.top_k, ", top_p ", row.top_p,
                         ", penalty ", row.repetition_penalty, ", uniform ", row.uniform);
        }
        n_rows_total += n_rows;
        EXPECT_EQ(gpu_->download(logits.gpu), values) << "the logits are left as they are";
    }
    std::cout << "sample_rows: " << n_differ << " of " << n_rows_total
              << " rows differ, each near a boundary\n";
    EXPECT_LT(n_differ * 100, n_rows_total);

    const Pair logits = random({2, 7});
    const std::vector<int32_t> history{1, 2, 3};
    std::vector<RowSampling> rows(2);
    rows[1].temperature = 1.0f;
    EXPECT_EQ(gpu_->sample_rows(logits.gpu, rows, history).size(), 2u);
    EXPECT_THROW(gpu_->sample_rows(logits.gpu, std::span(rows).first(1), history), Error);
    const auto rejects = [&](auto change, const std::string& what) {
        std::vector<RowSampling> bad = rows;
        change(bad[1]);
        EXPECT_THROW(gpu_->sample_rows(logits.gpu, bad, history), Error) << what;
    };
    rejects([](RowSampling& r) { r.history_count = 4; }, "history past the end");
    rejects([](RowSampling& r) { r.history_begin = -1; }, "history before the start");
    rejects([](RowSampling& r) { r.top_p = 1.5f; }, "top_p");
    rejects([](RowSampling& r) { r.temperature = NAN; }, "temperature");
    rejects([](RowSampling& r) { r.uniform = 1.0f; }, "uniform");
    const std::vector<int32_t> outside{7};
    rows[0].history_count = 1;
    rows[0].repetition_penalty = 1.2f;
    EXPECT_THROW(gpu_->sample_rows(logits.gpu, rows, outside), Error) << "token outside the vocabulary";
    rows[0].history_count = 0;
    EXPECT_THROW(gpu_->sample_rows(random({2, 0}).gpu, rows, history), Error) << "no columns";
}

// The vision position grid resampled onto images: each row of x gains a weighted sum of rows of the table.
TEST_F(BackendOpsTest, AddWeightedRows) {
    std::mt19937 rng(seed_++);
    for (const int64_t d : {1, 7, 1152}) {
        for (const int64_t n_taps : {1, 4}) {
            const int64_t n = 301, n_src = 729;
            const Pair src = random({n_src, d});
            Pair x = random({n, d});
            std::vector<int64_t> rows(static_cast<size_t>(n * n_taps));
            std::vector<float> weights(rows.size());
            for (size_t i = 0; i < rows.size(); ++i) {
                rows[i] = static_cast<int64_t>(rng() % n_src);
                weights[i] = static_cast<float>(rng() % 1000) / 1000.0f;
            }
            cpu_->add_weighted_rows(x.cpu, src.cpu, rows, weights);
            gpu_->add_weighted_rows(x.gpu, src.gpu, rows, weights);
            expect_close("add_weighted_rows", x.gpu, x.cpu, kF32Bound, dims({n, n_taps, d}));
        }
    }
    Pair x = random({2, 3});
    const Pair src = random({4, 3});
    const std::vector<int64_t> rows = {0, 1, 2, 4};
    const std::vector<float> weights = {1, 1, 1, 1};
    EXPECT_THROW(gpu_->add_weighted_rows(x.gpu, src.gpu, rows, weights), Error) << "row 4 of 4";
    EXPECT_THROW(
        gpu_->add_weighted_rows(x.gpu, src.gpu, std::span(rows).first(3), std::span(weights).first(3)), Error)
        << "3 taps for 2 rows";
    EXPECT_THROW(gpu_->add_weighted_rows(x.gpu, random({4, 2}).gpu, std::span(rows).first(2),
                                         std::span(weights).first(2)),
                 Error)
        << "row sizes 3 and 2";
}

// Routing, the products with each row's expert and the weighted sum of the mixture of experts, and one
// expert's rows of a stacked weight as an ordinary linear layer, in every weight format.
TEST_F(BackendOpsTest, MixtureOfExperts) {
    for (const int n_experts : {8, 64, 160}) {
        for (const int k : {1, 6}) {
            const int64_t n = 37;
            const Pair logits = random({n, n_experts}, 0.0f, 2.0f), bias = random({n_experts}, 0.0f, 0.05f);
            const ExpertRouting c = cpu_->route_experts(logits.cpu, bias.cpu, k, 1e-12f);
            const ExpertRouting g = gpu_->route_experts(logits.gpu, bias.gpu, k, 1e-12f);
            EXPECT_EQ(gpu_->download_i32(g.experts), cpu_->download_i32(c.experts))
                << n_experts << " top " << k;
            expect_close("route_experts", g.weights, c.weights, kF32Bound, dims({n, n_experts, k}));
        }
    }
    const Pair bad_logits = random({2, 4}), bad_bias = random({4});
    EXPECT_THROW(gpu_->route_experts(bad_logits.gpu, bad_bias.gpu, 5, 0.0f), Error) << "top 5 of 4";

    const std::vector<LinearCase> formats = {{Quantization::None, 128, 48, 0},
                                             {Quantization::Bf16, 128, 48, 0},
                                             {Quantization::Wint8, 128, 48, 0},
                                             {Quantization::Wint4, 128, 48, 64},
                                             // Rows longer than a warp's four chunks of 256 columns, with a
                                             // partial last round.
                                             {Quantization::Bf16, 1288, 24, 0},
                                             {Quantization::Wint8, 1288, 24, 0},
                                             {Quantization::Wint4, 1344, 24, 64}};
    std::mt19937 rng(seed_++);
    for (const LinearCase& f : formats) {
        const int64_t n_experts = 5, n_rows = 2 * f.out, n = 3, k = 2;
        const std::vector<float> values = random_values(n_experts * n_rows * f.in, seed_++);
        Weight w_cpu, w_gpu;
        if (f.type == Quantization::None) {
            w_cpu = dense_weight(cpu_->upload(values, {n_experts * n_rows, f.in}));
            w_gpu = dense_weight(gpu_->upload(values, {n_experts * n_rows, f.in}));
        } else {
            const auto q = quantize(values, n_experts * n_rows, f.in, f.type, f.group_size);
            w_cpu = cpu_->upload(q);
            w_gpu = gpu_->upload(q);
        }
        std::vector<int32_t> chosen(static_cast<size_t>(n * k));
        for (int32_t& e : chosen) {
            e = static_cast<int32_t>(rng() % n_experts);
        }
        const Pair experts = upload_i32(chosen, {n, k});
        const Pair x = random({n, f.in});
        const std::string where = label(quantization_name(f.type), " ", dims({n, k, f.in, n_rows}));
        const double bound = f.type == Quantization::None ? kF32Bound : kQuantizedBound;
        const Tensor h_cpu =
            cpu_->expert_rows_linear(x.cpu, w_cpu, experts.cpu, n_rows, k, Activation::Swiglu);
        const Tensor h_gpu =
            gpu_->expert_rows_linear(x.gpu, w_gpu, experts.gpu, n_rows, k, Activation::Swiglu);
        expect_close("expert_rows_linear", h_gpu, h_cpu, bound, where + " swiglu");
        const Tensor y_cpu = cpu_->expert_rows_linear(x.cpu, w_cpu, experts.cpu, n_rows, k, Activation::None);
        const Tensor y_gpu = gpu_->expert_rows_linear(x.gpu, w_gpu, experts.gpu, n_rows, k, Activation::None);
        expect_close("expert_rows_linear", y_gpu, y_cpu, bound, where);
        // Row r of the plain product is expert chosen[r]'s rows of the stacked weight as a linear layer.
        const std::vector<float> y_rows = cpu_->download(y_cpu);  // [n k, n_rows]
        for (int64_t r = 0; r < n * k; ++r) {
            const int32_t e = chosen[static_cast<size_t>(r)];
            const Tensor one = gpu_->linear(x.gpu.view((r / k) * f.in, {1, f.in}),
                                            weight_rows(w_gpu, e * n_rows, n_rows), LinearSpec{});
            const std::vector<float> expected(y_rows.begin() + r * n_rows, y_rows.begin() + (r + 1) * n_rows);
            expect_close("weight_rows", one, cpu_->upload(expected, {1, n_rows}), bound, where);
        }
        Pair sums = random({n, n_rows});
        const Pair mix = random({n, k});
        cpu_->add_expert_outputs(sums.cpu, y_cpu, mix.cpu);
        gpu_->add_expert_outputs(sums.gpu, y_gpu, mix.gpu);
        expect_close("add_expert_outputs", sums.gpu, sums.cpu, bound, where);
    }
    const Weight w = dense_weight(gpu_->upload(random_values(4 * 8, 3), {4, 8}));
    const Pair x = random({2, 8});
    const Pair one_each = upload_i32({0, 1}, {2});
    EXPECT_THROW(gpu_->expert_rows_linear(x.gpu, w, one_each.gpu, 3, 1, Activation::None), Error)
        << "4 rows in 3s";
    EXPECT_THROW(gpu_->expert_rows_linear(x.gpu, w, one_each.gpu, 2, 2, Activation::None), Error)
        << "x_step 2";
}

// A decode step's experts in add_routed_experts: the CUDA backend's three launches (router and routing, the
// chosen and shared experts' gate/up rows, their down rows summed into x) against the CPU backend's
// operations one at a time, in every weight format, with and without shared experts, on the packed path
// and the one a column a lane at a time; then against the CUDA backend's own operations one at a time, and
// run twice, which gives the same sums only where the routing leaves its counters zero.
TEST_F(BackendOpsTest, RoutedExperts) {
    // {format, d, d_ff, group}: d and d_ff multiples of eight (of the group for WINT4) take the packed path;
    // 44 and 43 columns do not, and 43 also takes the router's one column a lane at a time.
    const std::vector<LinearCase> formats = {
        {Quantization::None, 128, 48, 0},
        {Quantization::Bf16, 128, 48, 0},
        {Quantization::Wint8, 128, 48, 0},
        {Quantization::Wint4, 128, 64, 64},
        {Quantization::Wint4, 1344, 192, 64},
        {Quantization::Wint8, 1288, 40, 0},
        // ERNIE-4.5-VL's widths: gate/up over 2,560 inputs (two parts of five chunks a lane in the streamed
        // kernel), down over 1,536 (six chunks), the shared experts' 3,072 in two parts.
        {Quantization::Wint4, 2560, 320, 64},
        {Quantization::Wint4, 256, 1536, 64},
        // Wider than the router's weights held in registers (4,096 inputs).
        {Quantization::Wint8, 4608, 24, 0},
        {Quantization::Wint8, 44, 20, 0},
        {Quantization::Bf16, 43, 6, 0}};
    const auto weight_pair = [&](const LinearCase& f, int64_t n_out, int64_t n_in) {
        const float scale = 1.0f / std::sqrt(static_cast<float>(n_in));
        const std::vector<float> values = random_values(n_out * n_in, seed_++, 0.0f, scale);
        if (f.type == Quantization::None) {
            return std::pair(dense_weight(cpu_->upload(values, {n_out, n_in})),
                             dense_weight(gpu_->upload(values, {n_out, n_in})));
        }
        const auto q = quantize(values, n_out, n_in, f.type, f.group_size);
        return std::pair(cpu_->upload(q), gpu_->upload(q));
    };
    for (const LinearCase& f : formats) {
        for (const int n_experts : {8, 64}) {
            for (const bool shared : {false, true}) {
                const int64_t d = f.in, d_ff = f.out, d_shared = 2 * d_ff;
                const int k = n_experts == 8 ? 1 : 6;
                ExpertLayer c, g;
                const std::vector<float> router =
                    random_values(n_experts * d, seed_++, 0.0f, 1.0f / std::sqrt(static_cast<float>(d)));
                c.router = cpu_->upload(router, {n_experts, d});
                g.router = gpu_->upload(router, {n_experts, d});
                const std::vector<float> bias = random_values(n_experts, seed_++, 0.0f, 0.01f);
                c.score_bias = cpu_->upload(bias, {n_experts});
                g.score_bias = gpu_->upload(bias, {n_experts});
                std::tie(c.gate_up, g.gate_up) = weight_pair(f, n_experts * 2 * d_ff, d);
                std::tie(c.down, g.down) = weight_pair(f, n_experts * d, d_ff);
                if (shared) {
                    std::tie(c.shared_gate_up, g.shared_gate_up) = weight_pair(f, 2 * d_shared, d);
                    std::tie(c.shared_down, g.shared_down) = weight_pair(f, d, d_shared);
                }
                c.k = g.k = k;
                c.norm_min = g.norm_min = 1e-12f;
                // With a norm the input is x itself, as a decoder layer passes it, and the routing launch
                // normalizes it (folded in up to 4,096 inputs, else in a pass of its own).
                for (const bool normed : {false, true}) {
                    const std::vector<float> norm_w = random_values(d, seed_++, 1.0f, 0.25f);
                    c.norm_w = normed ? cpu_->upload(norm_w, {d}) : Tensor{};
                    g.norm_w = normed ? gpu_->upload(norm_w, {d}) : Tensor{};
                    c.norm_eps = g.norm_eps = normed ? 1e-5f : 0.0f;
                    // 37 rows take the parts one at a time.
                    for (const int64_t n :
                         {int64_t{1}, int64_t{3}, kernels::kRoutedExpertsMaxRows, int64_t{37}}) {
                        const std::string where =
                            label(quantization_name(f.type), " ", dims({n, d, d_ff}), " ", n_experts,
                                  " experts, top ", k, shared ? ", shared" : "", normed ? ", normed" : "");
                        const Pair xn = random({n, d});
                        const std::vector<float> start =
                            normed ? cpu_->download(xn.cpu)
                                   : std::vector<float>(static_cast<size_t>(n * d), 0.0f);
                        Pair x = upload(start, {n, d});
                        cpu_->add_routed_experts(x.cpu, normed ? x.cpu : xn.cpu, c);
                        gpu_->add_routed_experts(x.gpu, normed ? x.gpu : xn.gpu, g);
                        // The parts' shared experts are linear layers, on the tensor cores for enough rows.
                        const double bound = f.type == Quantization::None ? kF32Bound : kQuantizedBound;
                        const double parts_bound = shared ? std::max({bound, linear_bound(n, d, f.type),
                                                                      linear_bound(n, d_shared, f.type)})
                                                          : bound;
                        const bool fused = n <= kernels::kRoutedExpertsMaxRows;
                        expect_close("add_routed_experts", x.gpu, x.cpu, fused ? bound : parts_bound, where);
                        Tensor parts = gpu_->upload(start, {n, d});
                        gpu_->Backend::add_routed_experts(parts, normed ? parts : xn.gpu, g);
                        expect_close("add_routed_experts", x.gpu, cpu_->upload(gpu_->download(parts), {n, d}),
                                     parts_bound, where + " against its parts");
                        Tensor again = gpu_->upload(start, {n, d});
                        gpu_->add_routed_experts(again, normed ? again : xn.gpu, g);
                        EXPECT_EQ(gpu_->download(again), gpu_->download(x.gpu)) << where << " run twice";
                    }
                }
            }
        }
    }
    ExpertLayer bad;
    bad.router = gpu_->upload(random_values(4 * 8, 5), {4, 8});
    bad.score_bias = gpu_->upload(random_values(4, 6), {4});
    bad.gate_up = dense_weight(gpu_->upload(random_values(4 * 6 * 8, 7), {4 * 6, 8}));
    bad.down = dense_weight(gpu_->upload(random_values(4 * 8 * 3, 8), {4 * 8, 3}));
    bad.k = 2;
    Pair x = random({2, 8});
    const Pair xn = random({2, 8});
    gpu_->add_routed_experts(x.gpu, xn.gpu, bad);  // d_ff 3: accepted
    bad.k = 5;
    EXPECT_THROW(gpu_->add_routed_experts(x.gpu, xn.gpu, bad), Error) << "top 5 of 4";
    bad.k = 2;
    bad.down = dense_weight(gpu_->upload(random_values(4 * 8 * 4, 8), {4 * 8, 4}));
    EXPECT_THROW(gpu_->add_routed_experts(x.gpu, xn.gpu, bad), Error) << "down over 4 inputs, d_ff 3";
    bad.down = dense_weight(gpu_->upload(random_values(4 * 8 * 3, 8), {4 * 8, 3}));
    bad.shared_gate_up = dense_weight(gpu_->upload(random_values(4 * 8, 9), {4, 8}));
    EXPECT_THROW(gpu_->add_routed_experts(x.gpu, xn.gpu, bad), Error) << "shared gate_up without down";
    bad.shared_gate_up = Weight{};
    bad.norm_w = gpu_->upload(random_values(7, 10), {7});
    EXPECT_THROW(gpu_->add_routed_experts(x.gpu, xn.gpu, bad), Error) << "norm weights for 7 inputs";
}

// A prompt step's experts: two pools' routings merged, the pairs grouped by expert, and the grouped
// products of each pool's experts over its rows, in every weight format, against the CPU backend; then the
// whole path (ordered, grouped, put back and summed) against the products with each row's expert.
TEST_F(BackendOpsTest, GroupedExperts) {
    std::mt19937 rng(seed_++);
    const int64_t n = 29, k = 3, n_a = 6;
    std::vector<int32_t> a_experts(static_cast<size_t>(n * k)), b_experts(a_experts.size()), use_b(n);
    for (size_t i = 0; i < a_experts.size(); ++i) {
        a_experts[i] = static_cast<int32_t>(rng() % n_a);
        b_experts[i] = static_cast<int32_t>(rng() % 4);
    }
    for (int32_t& v : use_b) {
        v = static_cast<int32_t>(rng() % 3 == 0);
    }
    const Pair ae = upload_i32(a_experts, {n, k}), be = upload_i32(b_experts, {n, k}),
               pick = upload_i32(use_b, {n});
    const Pair aw = random({n, k}), bw = random({n, k});
    const ExpertRouting merged_cpu =
        cpu_->merge_expert_routings({ae.cpu, aw.cpu}, {be.cpu, bw.cpu}, pick.cpu, 6);
    const ExpertRouting merged_gpu =
        gpu_->merge_expert_routings({ae.gpu, aw.gpu}, {be.gpu, bw.gpu}, pick.gpu, 6);
    EXPECT_EQ(gpu_->download_i32(merged_gpu.experts), cpu_->download_i32(merged_cpu.experts));
    EXPECT_EQ(gpu_->download(merged_gpu.weights), cpu_->download(merged_cpu.weights));
    const std::vector<int32_t> merged = cpu_->download_i32(merged_cpu.experts);
    for (size_t i = 0; i < merged.size(); ++i) {
        EXPECT_EQ(merged[i], use_b[i / k] != 0 ? b_experts[i] + 6 : a_experts[i]) << "pair " << i;
    }

    // The order: the same offsets; each slot holds a pair of its expert, and slots[p] points back at p's
    // token.
    const int n_experts = 10;
    const ExpertOrder oc = cpu_->order_by_expert(merged_cpu.experts, n_experts);
    const ExpertOrder og = gpu_->order_by_expert(merged_gpu.experts, n_experts);
    const std::vector<int32_t> offsets = gpu_->download_i32(og.offsets);
    EXPECT_EQ(offsets, cpu_->download_i32(oc.offsets));
    const std::vector<int32_t> rows = gpu_->download_i32(og.rows), slots = gpu_->download_i32(og.slots);
    ASSERT_EQ(rows.size(), merged.size());
    std::vector<int> seen(merged.size(), 0);
    for (size_t p = 0; p < merged.size(); ++p) {
        const int32_t s = slots[p];
        ASSERT_GE(s, 0);
        ASSERT_LT(static_cast<size_t>(s), merged.size());
        ++seen[static_cast<size_t>(s)];
        EXPECT_EQ(rows[static_cast<size_t>(s)], static_cast<int32_t>(p / k)) << "pair " << p;
        EXPECT_GE(s, offsets[static_cast<size_t>(merged[p])]) << "pair " << p;
        EXPECT_LT(s, offsets[static_cast<size_t>(merged[p]) + 1]) << "pair " << p;
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(seen.size()))
        << "a slot each";
    EXPECT_THROW(cpu_->order_by_expert(merged_cpu.experts, 9), Error) << "expert 9 of 9";

    // The grouped products: pool a (experts [0, 6)) with one weight, pool b ([6, 10)) with another, each
    // writing only its rows of the shared output. Sizes across the tiles: experts with more rows than a tile,
    // an expert with none, outputs and inputs that are not multiples of a tile.
    const std::vector<LinearCase> formats = {{Quantization::None, 72, 40, 0},
                                             {Quantization::Bf16, 136, 40, 0},
                                             {Quantization::Wint8, 96, 72, 0},
                                             {Quantization::Wint4, 128, 40, 64},
                                             {Quantization::Wint4, 2560, 24, 128}};
    for (const LinearCase& f : formats) {
        // 300 tokens: several row tiles an expert.
        for (const int64_t m_tokens : {int64_t{29}, int64_t{300}}) {
            std::vector<int32_t> chosen(static_cast<size_t>(m_tokens * k));
            for (int32_t& e : chosen) {
                e = static_cast<int32_t>(rng() % n_experts);
                e = e == 3 ? 4 : e;  // expert 3 gets no rows
            }
            const Pair experts = upload_i32(chosen, {m_tokens, k});
            const ExpertOrder order_cpu = cpu_->order_by_expert(experts.cpu, n_experts);
            const ExpertOrder order_gpu = gpu_->order_by_expert(experts.gpu, n_experts);
            const Pair x = random({m_tokens, f.in});
            const Tensor sorted_cpu = cpu_->gather_rows(x.cpu, order_cpu.rows);
            const Tensor sorted_gpu = gpu_->gather_rows(x.gpu, order_gpu.rows);
            const int64_t n_rows = 2 * f.out, m = m_tokens * k;
            Weight w_cpu[2], w_gpu[2];
            const int64_t pool_experts[2] = {6, 4};
            for (int pool = 0; pool < 2; ++pool) {
                const int64_t total = pool_experts[pool] * n_rows;
                const std::vector<float> values = random_values(total * f.in, seed_++);
                if (f.type == Quantization::None) {
                    w_cpu[pool] = dense_weight(cpu_->upload(values, {total, f.in}));
                    w_gpu[pool] = dense_weight(gpu_->upload(values, {total, f.in}));
                } else {
                    const auto q = quantize(values, total, f.in, f.type, f.group_size);
                    w_cpu[pool] = cpu_->upload(q);
                    w_gpu[pool] = gpu_->upload(q);
                }
            }
            const std::string where = label(quantization_name(f.type), " ", dims({m, f.in, n_rows}));
            for (const Activation act : {Activation::Swiglu, Activation::None}) {
                const int64_t n_y = act == Activation::Swiglu ? f.out : n_rows;
                Tensor y_cpu = cpu_->alloc({m, n_y}), y_gpu = gpu_->alloc({m, n_y});
                for (int pool = 0; pool < 2; ++pool) {
                    const int first = pool == 0 ? 0 : 6;
                    cpu_->grouped_expert_linear(sorted_cpu, w_cpu[pool], order_cpu.offsets, first, n_rows,
                                                act, y_cpu);
                    gpu_->grouped_expert_linear(sorted_gpu, w_gpu[pool], order_gpu.offsets, first, n_rows,
                                                act, y_gpu);
                }
                // Rows in the CPU's order: the GPU's order within an expert may differ, so compare by pair.
                const Tensor by_pair_cpu = cpu_->gather_rows(y_cpu, order_cpu.slots);
                const Tensor by_pair_gpu = gpu_->gather_rows(y_gpu, order_gpu.slots);
                expect_close("grouped_expert_linear", by_pair_gpu, by_pair_cpu, kBf16TensorCoreBound,
                             where + (act == Activation::Swiglu ? " swiglu" : ""));
            }
        }
    }

    // The whole prompt path of one pool against the products with each row's expert.
    const int64_t in = 64, n_rows = 48, n_pool = 8;
    const std::vector<float> values = random_values(n_pool * n_rows * in, seed_++);
    const Weight w = gpu_->upload(quantize(values, n_pool * n_rows, in, Quantization::Bf16, 0));
    std::vector<int32_t> chosen(static_cast<size_t>(n * k));
    for (int32_t& e : chosen) {
        e = static_cast<int32_t>(rng() % n_pool);
    }
    const Pair experts = upload_i32(chosen, {n, k});
    const Pair x = random({n, in}), mix = random({n, k});
    const ExpertOrder order = gpu_->order_by_expert(experts.gpu, static_cast<int>(n_pool));
    Tensor grouped = gpu_->alloc({n * k, n_rows});
    gpu_->grouped_expert_linear(gpu_->gather_rows(x.gpu, order.rows), w, order.offsets, 0, n_rows,
                                Activation::None, grouped);
    Pair sums = random({n, n_rows});
    gpu_->add_expert_outputs(sums.gpu, gpu_->gather_rows(grouped, order.slots), mix.gpu);
    const Tensor each = gpu_->expert_rows_linear(x.gpu, w, experts.gpu, n_rows, k, Activation::None);
    cpu_->add_expert_outputs(sums.cpu, cpu_->upload(gpu_->download(each), each.shape), mix.cpu);
    expect_close("grouped experts, put back", sums.gpu, sums.cpu, kBf16TensorCoreBound,
                 dims({n, k, in, n_rows}));

    Tensor y_bad = gpu_->alloc({n * k, n_rows});
    EXPECT_THROW(gpu_->grouped_expert_linear(x.gpu, w, order.offsets, 0, n_rows, Activation::None, y_bad),
                 Error)
        << "x of n rows, y of n k";
    EXPECT_THROW(gpu_->grouped_expert_linear(gpu_->gather_rows(x.gpu, order.rows), w, order.offsets, 3,
                                             n_rows, Activation::None, y_bad),
                 Error)
        << "experts 3 to 11 of 8 offsets";
}

TEST_F(BackendOpsTest, Swiglu) {
    for (const auto& [n, d] :
         std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {5, 1024}, {130, 33}}) {
        const Pair gate_up = random({n, 2 * d});
        expect_close("swiglu", gpu_->swiglu(gate_up.gpu), cpu_->swiglu(gate_up.cpu), kF32Bound, dims({n, d}));
    }
    EXPECT_THROW(gpu_->swiglu(random({2, 5}).gpu), Error) << "odd width";
}

// Both backends turn q and k by the same float angles (position times the same inverse frequency) with libm's
// and CUDA's sine and cosine, and store k and v at the same rows; rows not named keep their values. The same
// from the normed input of the stacked q, k and v projections: up to 8 rows the GEMV pairs each row of a head
// with its rotate-half partner and stores the turned pair as it comes out (columns a multiple of 8 or not),
// more rows run the product on the tensor cores first. Frequencies turn with one axis (a text model), three
// in contiguous sections (PaddleOCR-VL's mRoPE) or interleaved ones (height and width in turn, then
// temporal, as ERNIE-4.5-VL's).

}  // namespace
}  // namespace folio::backend_ops_test
