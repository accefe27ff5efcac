// Llama's config.json (DeepSeek-R1-Distill-Llama-8B's published values, and transformers 5's
// rope_parameters) and the rotary frequencies of each rope type, against their definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>

#include "engine/common/error.h"
#include "engine/models/llama/config.h"

namespace folio {
namespace {

using nlohmann::json;

// DeepSeek-R1-Distill-Llama-8B's config.json values (Llama 3.1 8B's shape).
json distill_8b() {
    return json{{"architectures", {"LlamaForCausalLM"}},
                {"model_type", "llama"},
                {"vocab_size", 128256},
                {"hidden_size", 4096},
                {"intermediate_size", 14336},
                {"num_hidden_layers", 32},
                {"num_attention_heads", 32},
                {"num_key_value_heads", 8},
                {"max_position_embeddings", 131072},
                {"rms_norm_eps", 1e-5},
                {"rope_theta", 500000.0},
                {"rope_scaling",
                 {{"factor", 8.0},
                  {"low_freq_factor", 1.0},
                  {"high_freq_factor", 4.0},
                  {"original_max_position_embeddings", 8192},
                  {"rope_type", "llama3"}}},
                {"tie_word_embeddings", false},
                {"attention_bias", false},
                {"mlp_bias", false},
                {"hidden_act", "silu"},
                {"bos_token_id", 128000},
                {"eos_token_id", 128001}};
}

LlamaConfig parse(const json& j) {
    return parse_llama_config(j.dump(), "config.json");
}

std::string error_of(const json& j) {
    try {
        parse(j);
    } catch (const Error& e) {
        return e.what();
    }
    return "accepted";
}

TEST(LlamaConfig, ReadsTheDistilledEightBillion) {
    const LlamaConfig c = parse(distill_8b());
    EXPECT_EQ(c.vocab_size, 128256);
    EXPECT_EQ(c.num_key_value_heads, 8);
    EXPECT_EQ(c.head_dim, 128) << "hidden_size / num_attention_heads where head_dim is absent";
    EXPECT_EQ(c.rope.type, LlamaRopeType::Llama3);
    EXPECT_EQ(c.rope.theta, 500000.0);
    EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_EQ(c.bos_token_id, 128000);
    EXPECT_EQ(c.eos_token_ids, std::vector<int>{128001});

    // transformers 5 writes rope_parameters, rope_theta inside.
    json v5 = distill_8b();
    v5.erase("rope_scaling");
    v5.erase("rope_theta");
    v5["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 250000.0},
                             {"factor", 4.0},           {"low_freq_factor", 1.0},
                             {"high_freq_factor", 2.0}, {"original_max_position_embeddings", 4096}};
    v5["eos_token_id"] = {128001, 128009};
    v5["head_dim"] = 64;
    const LlamaConfig c5 = parse(v5);
    EXPECT_EQ(c5.rope.theta, 250000.0);
    EXPECT_EQ(c5.rope.factor, 4.0);
    EXPECT_EQ(c5.rope.high_freq_factor, 2.0);
    EXPECT_EQ(c5.head_dim, 64);
    EXPECT_EQ(c5.eos_token_ids, (std::vector<int>{128001, 128009}));
}

TEST(LlamaConfig, Llama3FrequenciesFollowTheirDefinition) {
    const LlamaConfig c = parse(distill_8b());
    const std::vector<float> f = llama_rope_inverse_frequencies(c);
    ASSERT_EQ(f.size(), 64u);
    int n_kept = 0, n_scaled = 0, n_blended = 0;
    for (int i = 0; i < 64; ++i) {
        const double base = 1.0 / std::pow(500000.0, 2.0 * i / 128);
        const double wavelen = 2 * std::numbers::pi / base;
        double expected = base;
        if (wavelen < 8192.0 / 4.0) {
            ++n_kept;  // short wavelengths: as they are
        } else if (wavelen > 8192.0) {
            expected = base / 8.0;  // long ones: the context's scale
            ++n_scaled;
        } else {
            const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
            expected = (1 - smooth) * base / 8.0 + smooth * base;
            EXPECT_GT(expected, base / 8.0);
            EXPECT_LT(expected, base);
            ++n_blended;
        }
        EXPECT_FLOAT_EQ(f[static_cast<size_t>(i)], static_cast<float>(expected)) << "frequency " << i;
    }
    EXPECT_GT(n_kept, 0);
    EXPECT_GT(n_scaled, 0);
    EXPECT_GT(n_blended, 0);
    EXPECT_FLOAT_EQ(f[0], 1.0f);

    json linear = distill_8b();
    linear["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
    json plain = distill_8b();
    plain["rope_scaling"] = nullptr;
    const std::vector<float> fl = llama_rope_inverse_frequencies(parse(linear));
    const std::vector<float> fd = llama_rope_inverse_frequencies(parse(plain));
    for (size_t i = 0; i < fd.size(); ++i) {
        EXPECT_FLOAT_EQ(fd[i],
                        static_cast<float>(1.0 / std::pow(500000.0, 2.0 * static_cast<double>(i) / 128)));
        EXPECT_FLOAT_EQ(fl[i], fd[i] / 2.0f);
    }
}

TEST(LlamaConfig, RefusesWhatDoesNotFitByName) {
    const auto with = [](const char* key, const json& value) {
        json j = distill_8b();
        j[key] = value;
        return j;
    };
    struct Case {
        json config;
        const char* expected;
    };
    json yarn = distill_8b();
    yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    json inverted = distill_8b();
    inverted["rope_scaling"]["high_freq_factor"] = 0.5;
    const Case cases[] = {
        {with("model_type", "mistral"), "\"mistral\" is not \"llama\""},
        {with("num_key_value_heads", 5), "must divide"},
        {with("head_dim", 127), "even"},
        {with("hidden_act", "gelu"), "hidden_act"},
        {with("vocab_size", 0), "vocab_size"},
        {with("eos_token_id", 128256), "eos_token_id"},
        {with("bos_token_id", "x"), "bos_token_id"},
        {with("num_attention_heads", -1), "num_attention_heads"},
        {yarn, "\"yarn\" is not supported"},
        {inverted, "high_freq_factor"},
    };
    for (const Case& c : cases) {
        const std::string error = error_of(c.config);
        EXPECT_NE(error.find("config.json"), std::string::npos) << error;
        EXPECT_NE(error.find(c.expected), std::string::npos) << error;
    }
    EXPECT_THROW(parse_llama_config("{not json", "config.json"), Error);
}

}  // namespace
}  // namespace folio
