// A model folder's generation_config.json: the values read (numbers, do_sample, eos_token_id as one id or a
// list, max_new_tokens), unknown keys ignored, bad values refused naming the file and the key; where the
// defaults come from (--generation-config auto, vllm, a folder); how they fill in what a request leaves
// unset; and the fixture models describing theirs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "engine/common/error.h"
#include "engine/models/generation-config.h"
#include "engine/models/model-registry.h"
#include "temp-dir.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const fs::path kFixtures = FOLIO_FIXTURES_DIR;
const fs::path kErnieFixture = kFixtures.parent_path() / "ernie45-vl" / "ernie45-vl-tiny";

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string error_of(const std::function<void()>& action) {
    try {
        action();
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

TEST(GenerationConfig, ReadsTheSamplingValuesAndIgnoresUnknownKeys) {
    const GenerationDefaults d = parse_generation_config(
        R"({"_from_model_config": true, "temperature": 0.2, "top_p": 0.8, "top_k": 20,
            "repetition_penalty": 1.05, "do_sample": true, "eos_token_id": [2, 7], "max_new_tokens": 512,
            "bos_token_id": 1, "pad_token_id": 0, "use_cache": true, "transformers_version": "4.56.0"})",
        "g.json");
    ASSERT_TRUE(d.temperature && d.top_p && d.top_k && d.repetition_penalty && d.do_sample);
    EXPECT_FLOAT_EQ(*d.temperature, 0.2f);
    EXPECT_FLOAT_EQ(*d.top_p, 0.8f);
    EXPECT_EQ(*d.top_k, 20);
    EXPECT_FLOAT_EQ(*d.repetition_penalty, 1.05f);
    EXPECT_TRUE(*d.do_sample);
    EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{2, 7}));
    EXPECT_EQ(d.max_new_tokens, 512);
    EXPECT_EQ(describe_generation_defaults(d),
              "do_sample true, temperature 0.2, top_p 0.8, top_k 20, repetition_penalty 1.05, eos 2,7, "
              "max_new_tokens 512");
}

TEST(GenerationConfig, AbsentAndNullKeysLeaveNoDefault) {
    const GenerationDefaults d = parse_generation_config(R"({"temperature": null, "eos_token_id": 5})", "g");
    EXPECT_FALSE(d.temperature);
    EXPECT_FALSE(d.top_p);
    EXPECT_FALSE(d.do_sample);
    EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{5}));
    EXPECT_TRUE(parse_generation_config("{}", "g").empty());
    EXPECT_EQ(describe_generation_defaults({}), "none");
    // top_k -1 is off, as vLLM writes it.
    EXPECT_EQ(parse_generation_config(R"({"top_k": -1})", "g").top_k, 0);
}

TEST(GenerationConfig, BadValuesNameTheFileAndTheKey) {
    const auto error = [](const std::string& text) {
        return error_of([&] { parse_generation_config(text, "/m/generation_config.json"); });
    };
    EXPECT_NE(error(R"({"temperature": "hot"})").find("/m/generation_config.json"), std::string::npos);
    EXPECT_NE(error(R"({"temperature": "hot"})").find("\"temperature\""), std::string::npos);
    EXPECT_NE(
        error(R"({"temperature": -0.5})").find("\"temperature\" must be a finite number >= 0, got -0.5"),
        std::string::npos);
    EXPECT_NE(error(R"({"top_p": 1.5})").find("\"top_p\" must be in (0, 1], got 1.5"), std::string::npos);
    EXPECT_NE(error(R"({"top_p": 0})").find("\"top_p\""), std::string::npos);
    EXPECT_NE(error(R"({"top_k": 2.5})").find("\"top_k\""), std::string::npos);
    EXPECT_NE(error(R"({"top_k": -3})").find("\"top_k\""), std::string::npos);
    EXPECT_NE(
        error(R"({"repetition_penalty": 0})").find("\"repetition_penalty\" must be a finite number above 0"),
        std::string::npos);
    // Values are checked as the floats they become.
    EXPECT_NE(error(R"({"temperature": 1e300})").find("\"temperature\" must be a finite number"),
              std::string::npos);
    EXPECT_NE(error(R"({"top_p": 1e-300})").find("\"top_p\" must be in (0, 1], got 1e-300"),
              std::string::npos);
    EXPECT_NE(error(R"({"repetition_penalty": 1e-300})").find("\"repetition_penalty\""), std::string::npos);
    EXPECT_NE(error(R"({"repetition_penalty": 1e300})").find("\"repetition_penalty\""), std::string::npos);
    EXPECT_NE(error(R"({"do_sample": "yes"})").find("\"do_sample\""), std::string::npos);
    EXPECT_NE(error(R"({"eos_token_id": [2, "x"]})").find("\"eos_token_id\""), std::string::npos);
    EXPECT_NE(error(R"({"eos_token_id": -1})").find("\"eos_token_id\" must be a token id >= 0"),
              std::string::npos);
    EXPECT_NE(error(R"({"max_new_tokens": 0})").find("\"max_new_tokens\" must be at least 1"),
              std::string::npos);
    const GenerationDefaults large = parse_generation_config(R"({"eos_token_id": [2, 700]})", "/m/g.json");
    EXPECT_EQ(large.origin, "/m/g.json");
    EXPECT_NO_THROW(check_generation_token_ids(large, 701));
    EXPECT_EQ(error_of([&] { check_generation_token_ids(large, 610); }),
              "/m/g.json: \"eos_token_id\" 700 is not a token of the model's vocabulary of 610");
    EXPECT_NE(error("[1, 2]").find("/m/generation_config.json"), std::string::npos);
    EXPECT_NE(error("{\"temperature\": ").find("/m/generation_config.json"), std::string::npos);
}

TEST(GenerationConfig, DefaultsFillInOnlyWhatTheRequestLeaves) {
    GenerationDefaults d;
    d.temperature = 0.2f;
    d.top_p = 0.8f;
    d.top_k = 40;
    d.repetition_penalty = 1.1f;
    SamplingParams given;
    given.temperature = 0.7f;
    given.top_p = 0.5f;
    // Nothing left to the defaults: the request's values.
    SamplingParams s = apply_generation_defaults(d, given, {});
    EXPECT_FLOAT_EQ(s.temperature, 0.7f);
    EXPECT_FLOAT_EQ(s.top_p, 0.5f);
    EXPECT_EQ(s.top_k, 0);
    EXPECT_FLOAT_EQ(s.repetition_penalty, 1.0f);
    // The temperature given, the rest left.
    SamplingDefaultsUse use = SamplingDefaultsUse::all();
    use.temperature = false;
    s = apply_generation_defaults(d, given, use);
    EXPECT_FLOAT_EQ(s.temperature, 0.7f);
    EXPECT_FLOAT_EQ(s.top_p, 0.8f);
    EXPECT_EQ(s.top_k, 40);
    EXPECT_FLOAT_EQ(s.repetition_penalty, 1.1f);
    // do_sample false: greedy where the temperature is left, the sampling values unused, the penalty kept.
    d.do_sample = false;
    s = apply_generation_defaults(d, given, SamplingDefaultsUse::all());
    EXPECT_FLOAT_EQ(s.temperature, 0.0f);
    EXPECT_FLOAT_EQ(s.top_p, 0.5f);
    EXPECT_EQ(s.top_k, 0);
    EXPECT_FLOAT_EQ(s.repetition_penalty, 1.1f);
    // ... and a request that asks for sampling gets it.
    s = apply_generation_defaults(d, given, use);
    EXPECT_FLOAT_EQ(s.temperature, 0.7f);
}

TEST(GenerationConfig, SourceIsAutoVllmOrAFolder) {
    EXPECT_EQ(GenerationConfigSource::parse("auto", "--generation-config").kind,
              GenerationConfigSource::Kind::Model);
    EXPECT_EQ(GenerationConfigSource::parse("vllm", "--generation-config").kind,
              GenerationConfigSource::Kind::None);
    const GenerationConfigSource folder =
        GenerationConfigSource::parse(kErnieFixture.string(), "--generation-config");
    EXPECT_EQ(folder.kind, GenerationConfigSource::Kind::Folder);
    TempDir empty;
    EXPECT_NE(error_of([&] {
                  GenerationConfigSource::parse(empty.path().string(), "--generation-config");
              }).find("--generation-config " + empty.path().string() + ": no generation_config.json"),
              std::string::npos);

    // auto reads the model folder's file; vllm none; a folder its own, whatever the model folder has.
    EXPECT_FLOAT_EQ(load_generation_defaults(kErnieFixture).temperature.value_or(-1), 0.2f);
    EXPECT_TRUE(load_generation_defaults(kErnieFixture, GenerationConfigSource::parse("vllm", "x")).empty());
    EXPECT_TRUE(load_generation_defaults(empty.path()).empty());
    EXPECT_FLOAT_EQ(load_generation_defaults(empty.path(), folder).top_p.value_or(-1), 0.8f);

    write_text(empty.path() / "generation_config.json", R"({"top_p": 7})");
    EXPECT_NE(error_of([&] {
                  load_generation_defaults(empty.path());
              }).find((empty.path() / "generation_config.json").string() + ": \"top_p\""),
              std::string::npos);
}

TEST(GenerationConfig, TheFixtureModelsDescribeTheirDefaults) {
    const ModelDescription ernie = ModelRegistry::builtin().describe(kErnieFixture);
    ASSERT_TRUE(ernie.generation.temperature && ernie.generation.top_p && ernie.generation.do_sample);
    EXPECT_FLOAT_EQ(*ernie.generation.temperature, 0.2f);
    EXPECT_FLOAT_EQ(*ernie.generation.top_p, 0.8f);
    EXPECT_TRUE(*ernie.generation.do_sample);
    EXPECT_EQ(ernie.generation.eos_token_ids, (std::vector<int32_t>{601}));
    EXPECT_FALSE(ernie.generation.top_k);
}

}  // namespace
}  // namespace folio
