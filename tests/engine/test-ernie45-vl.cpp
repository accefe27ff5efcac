// ERNIE-4.5-VL on the CPU backend against the reference implementation's outputs (the fixture model made by
// tests/fixtures/make_ernie45_vl_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/common/mapped-file.h"
#include "engine/files/safetensors.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/ernie45-vl/ernie45-vl.h"
#include "engine/models/ernie45-vl/moe.h"
#include "engine/models/ernie45-vl/weights.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/kv-cache.h"
#include "fixture-reference.h"

namespace folio {
namespace {

using testing::relative_error;

std::filesystem::path ernie_dir() {
    return testing::fixtures_dir().parent_path() / "ernie45-vl";
}

struct Fixture {
    Fixture()
        : store(TensorStore::open(ernie_dir() / "ernie45-vl-tiny")),
          config(load_ernie45_vl_config(ernie_dir() / "ernie45-vl-tiny" / "config.json")),
          backend(make_cpu_backend(2)),
          model([this] {
              const auto weights = make_ernie45_vl_weight_source(*store, config);
              return std::make_unique<Ernie45Vl>(*backend, config, *weights);
          }()),
          reference(ernie_dir() / "reference.safetensors"),
          meta(nlohmann::json::parse(read_file_text(ernie_dir() / "reference.json"))) {}

    std::unique_ptr<TensorStore> store;
    Ernie45VlConfig config;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Ernie45Vl> model;
    testing::Reference reference;
    nlohmann::json meta;
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

// The reference's patches (each 2x2 window's patches one after another) in raster order, as Folio's
// preprocessing gives them.  [n_patches, patch_dim] for the grids, in order
std::vector<float> raster_patches(const std::vector<float>& windowed, const std::vector<ImageGrid>& grids,
                                  int64_t patch_dim) {
    std::vector<float> out(windowed.size());
    int64_t base = 0, src = 0;
    for (const ImageGrid& g : grids) {
        for (int64_t t = 0; t < g.t; ++t) {
            for (int64_t wy = 0; wy < g.h / 2; ++wy) {
                for (int64_t wx = 0; wx < g.w / 2; ++wx) {
                    for (int64_t dy = 0; dy < 2; ++dy) {
                        for (int64_t dx = 0; dx < 2; ++dx, ++src) {
                            const int64_t dst = base + (t * g.h + 2 * wy + dy) * g.w + 2 * wx + dx;
                            std::copy_n(windowed.begin() + src * patch_dim, patch_dim,
                                        out.begin() + dst * patch_dim);
                        }
                    }
                }
            }
        }
        base += g.n_patches();
    }
    return out;
}

class Ernie45VlTest : public ::testing::TestWithParam<std::string> {
protected:
    Fixture& f = fixture();

    PromptTokens prompt() const {
        PromptTokens p;
        for (const int64_t id : f.reference.i64(GetParam() + ".input_ids")) {
            p.ids.push_back(static_cast<int32_t>(id));
            p.modality.push_back(id == f.config.image_token_id ? TokenModality::Image : TokenModality::Text);
        }
        return p;
    }
    bool has_images() const { return !f.meta["prompts"][GetParam()]["images"].empty(); }
    std::vector<ImageGrid> grids() const {
        std::vector<ImageGrid> out;
        if (has_images()) {
            const std::vector<int64_t> g = f.reference.i64(GetParam() + ".grid_thw");
            for (size_t i = 0; i + 2 < g.size(); i += 3) {
                out.push_back({g[i], g[i + 1], g[i + 2]});
            }
        }
        return out;
    }
    PreprocessedImages images() const {
        PreprocessedImages out;
        out.grids = grids();
        for (const auto& name : f.meta["prompts"][GetParam()]["images"]) {
            const std::vector<float> px = f.reference.f32("pixel_values." + name.get<std::string>());
            out.pixel_values.insert(out.pixel_values.end(), px.begin(), px.end());
        }
        out.pixel_values = raster_patches(out.pixel_values, out.grids, f.config.vision.patch_dim());
        return out;
    }
};

TEST_P(Ernie45VlTest, PositionsMatchReference) {
    const PromptTokens p = prompt();
    const PromptPositions positions = f.model->prompt_positions(p.modality, grids());
    const std::vector<int64_t> expected = f.reference.i64(GetParam() + ".position_ids");  // [3, n]
    const size_t n = p.ids.size();
    ASSERT_EQ(positions.pos.size(), 3 * n);
    for (size_t i = 0; i < n; ++i) {
        for (size_t axis = 0; axis < 3; ++axis) {
            ASSERT_EQ(positions.pos[3 * i + axis], expected[axis * n + i])
                << "token " << i << " axis " << axis;
        }
    }
    EXPECT_EQ(positions.delta, f.meta["prompts"][GetParam()]["rope_delta"].get<int64_t>());
}

TEST_P(Ernie45VlTest, StepModalityRoutesMarkersWithTheirImage) {
    const std::vector<TokenModality> step = f.model->step_modality(prompt());
    const std::vector<int64_t> expected = f.reference.i64(GetParam() + ".moe_token_types");
    ASSERT_EQ(step.size(), expected.size());
    for (size_t i = 0; i < step.size(); ++i) {
        EXPECT_EQ(static_cast<int64_t>(step[i]), expected[i]) << "token " << i;
    }
}

TEST_P(Ernie45VlTest, ImageFeaturesMatchReference) {
    if (!has_images()) {
        GTEST_SKIP() << GetParam() << " has no image";
    }
    const PreprocessedImages im = images();
    const std::span<const float> part(im.pixel_values);
    const Tensor features = f.model->encode_images(std::span(&part, 1), im.grids);
    EXPECT_EQ(features.shape, f.reference.shape(GetParam() + ".image_features"));
    const double err =
        relative_error(f.backend->download(features), f.reference.f32(GetParam() + ".image_features"));
    std::cout << GetParam() << ": image features relative error " << err << "\n";
    EXPECT_LT(err, 1e-4);
}

TEST_P(Ernie45VlTest, PromptLogitsMatchReference) {
    const PromptTokens p = prompt();
    const PreprocessedImages im = images();
    Backend& backend = *f.backend;
    Tensor embeds = f.model->embed(p.ids);
    if (!im.grids.empty()) {
        const std::span<const float> part(im.pixel_values);
        std::vector<int64_t> rows;
        for (size_t i = 0; i < p.ids.size(); ++i) {
            if (is_media(p.modality[i])) {
                rows.push_back(static_cast<int64_t>(i));
            }
        }
        backend.scatter_rows(embeds, rows, f.model->encode_images(std::span(&part, 1), im.grids));
    }
    const PromptPositions positions = f.model->prompt_positions(p.modality, im.grids);
    const auto n = static_cast<int64_t>(p.ids.size());
    const int64_t block_size = 8, n_blocks = (n + block_size - 1) / block_size;
    PagedKvCache cache(backend, f.model->kv_cache_params(n_blocks, block_size));
    KvBatch batch;
    batch.seqs.push_back({0, n, n, 0});
    for (int64_t b = 0; b < n_blocks; ++b) {
        batch.block_tables.push_back(static_cast<int32_t>(n_blocks - 1 - b));
    }
    for (int64_t t = 0; t < n; ++t) {
        batch.slots.push_back(batch.block_tables[t / block_size] * block_size + t % block_size);
    }
    const std::vector<int32_t> flat(positions.pos.begin(), positions.pos.end());
    const Tensor logits = f.model->logits(
        f.model->forward_text(std::move(embeds), flat, f.model->step_modality(p), cache, batch));
    EXPECT_EQ(logits.shape, f.reference.shape(GetParam() + ".logits"));
    const double err = relative_error(backend.download(logits), f.reference.f32(GetParam() + ".logits"));
    std::cout << GetParam() << ": prompt logits relative error " << err << "\n";
    EXPECT_LT(err, 1e-4);
}

TEST_P(Ernie45VlTest, GreedyTokensMatchReference) {
    const std::vector<int64_t> expected = f.reference.i64(GetParam() + ".greedy_tokens");
    GenerateParams params;
    params.max_tokens = static_cast<int>(expected.size());
    const GenerateResult result =
        generate(*f.model, prompt(), images(), params, [](int32_t) { return true; });
    const std::vector<int64_t> tokens(result.tokens.begin(), result.tokens.end());
    EXPECT_EQ(tokens, expected);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Ernie45VlTest,
                         ::testing::Values("text", "text_thinking_off", "system_text", "one_image",
                                           "two_images", "multi_turn"));

TEST(Ernie45VlRouting, TopKByBiasedScoresWeightsByProbabilities) {
    // Two tokens over four experts: the bias moves expert 3 ahead of expert 1 for the first token but the
    // weights stay the softmax probabilities, renormalised over the chosen experts.
    const std::vector<float> logits = {2.0f, 1.0f, 0.0f, 0.5f, 0.0f, 0.0f, 3.0f, 0.0f};
    const std::vector<float> bias = {0.0f, 0.0f, 0.0f, 0.2f};
    const ExpertChoice c = route_top_k(logits, bias, 2, 1e-12f);
    ASSERT_EQ(c.experts.size(), 4u);
    EXPECT_EQ(c.experts[0], 0);
    EXPECT_EQ(c.experts[1], 3);
    const double e0 = std::exp(2.0), e3 = std::exp(0.5);
    EXPECT_NEAR(c.weights[0], e0 / (e0 + e3), 1e-6);
    EXPECT_NEAR(c.weights[1], e3 / (e0 + e3), 1e-6);
    EXPECT_EQ(c.experts[2], 2);
    EXPECT_EQ(c.experts[3], 3) << "among equal probabilities the bias ranks expert 3 next";
    EXPECT_THROW(route_top_k(logits, bias, 5, 1e-12f), Error);
}

TEST(Ernie45VlConfig, RefusesSizesThatDoNotFit) {
    EXPECT_THROW(
        parse_ernie45_vl_config(R"({"text_config": {"moe_num_experts": 4, "moe_k": 6}})", "config.json"),
        Error);
    EXPECT_THROW(
        parse_ernie45_vl_config(R"({"text_config": {"rope_parameters": {"mrope_section": [20, 22, 22]}}})",
                                "config.json"),
        Error);
    EXPECT_THROW(parse_ernie45_vl_config(R"({"text_config": {"mlp_layer_types": ["dense"]}})", "config.json"),
                 Error);
    const Ernie45VlConfig c = parse_ernie45_vl_config("{}", "config.json");
    EXPECT_EQ(c.text.n_experts, 64);
    EXPECT_EQ(c.text.n_experts_per_token, 6);
    EXPECT_FALSE(c.text.sparse_layers[0]);
    EXPECT_TRUE(c.text.sparse_layers[27]);
}

}  // namespace
}  // namespace folio
