// The tokenizer's decoder steps as the incremental detokenizer meets them, on tokenizers written inline:
// decoders that treat the start of the text apart, which steps only grow the text at its end, and decoders
// whose text is held until the end because a later token could change it.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "detokenizer-check.h"
#include "engine/common/error.h"
#include "engine/tokenizer/token-decoder.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {
namespace {

using namespace tokenizer_test;
using nlohmann::json;

TEST(TokenizerJson, IncrementalMatchesDecodeWhereTheDecoderTreatsTheStartApart) {
    // Metaspace drops the first token's "▁" and Strip takes a space from both ends of the text: text decoded
    // in pieces must still equal the whole text's decoding, however the pieces fall.
    const json tokenizer = {
        {"added_tokens", json::array()},
        {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}},
        {"pre_tokenizer", nullptr},
        {"decoder",
         {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Metaspace"},
             {"replacement", "\xE2\x96\x81"},
             {"prepend_scheme", "first"},
             {"split", true}},
            {{"type", "ByteFallback"}},
            {{"type", "Fuse"}},
            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 1}}}}}},
        {"model",
         {{"type", "BPE"},
          {"unk_token", "<unk>"},
          {"fuse_unk", true},
          {"byte_fallback", true},
          {"vocab", {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"\xE2\x96\x81", 3}, {"<0x41>", 4}}},
          {"merges", json::array()}}}};
    const auto t = Tokenizer::from_tokenizer_json(tokenizer.dump(), "inline tokenizer.json");
    std::mt19937 rng(7);
    expect_random_streams_match(*t, rng, 5, {false, true});
    EXPECT_EQ(t->decode(std::vector<int32_t>{3, 1, 3, 3, 2, 3}), "a  b");

    // Two spaces off the end and "▁" dropped from every first token.
    json two = tokenizer;
    two["decoder"]["decoders"][0]["prepend_scheme"] = "always";
    two["decoder"]["decoders"][3]["stop"] = 2;
    const auto t2 = Tokenizer::from_tokenizer_json(two.dump(), "inline tokenizer.json");
    expect_random_streams_match(*t2, rng, 5, {false});

    // A post-processor that adds an id no token has is refused when the file is read.
    json orphan = tokenizer;
    orphan["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<x>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<x>", {{"id", "<x>"}, {"ids", {9}}, {"tokens", {"<x>"}}}}}}};
    try {
        Tokenizer::from_tokenizer_json(orphan.dump(), "inline tokenizer.json");
        ADD_FAILURE() << "a post-processor id without a token was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("post-processor adds id 9"), std::string::npos) << e.what();
    }
}

TokenDecoderStep replace_step(std::string pattern, std::string content) {
    TokenDecoderStep step;
    step.kind = TokenDecoderStep::Kind::Replace;
    step.pattern = std::move(pattern);
    step.content = std::move(content);
    return step;
}

TokenDecoderStep step_of(TokenDecoderStep::Kind kind) {
    TokenDecoderStep step;
    step.kind = kind;
    return step;
}

TEST(TokenDecoder, GrowsAtEndUnlessAStepCanChangeTextAlreadyGiven) {
    using Kind = TokenDecoderStep::Kind;
    TokenDecoderStep metaspace_x = step_of(Kind::Metaspace);
    metaspace_x.content = "x";  // occurs in every "<0xXX>" token
    TokenDecoderStep strip = step_of(Kind::Strip);
    strip.start = 1;
    strip.stop = 1;
    const struct {
        const char* name;
        std::vector<TokenDecoderStep> steps;
        bool grows;
    } cases[] = {
        {"none", {}, true},
        {"Llama 2",
         {replace_step("\xE2\x96\x81", " "), step_of(Kind::ByteFallback), step_of(Kind::Fuse), strip},
         true},
        {"ByteLevel", {step_of(Kind::ByteLevel)}, true},
        {"one character replaced after Fuse", {step_of(Kind::Fuse), replace_step("a", "bc")}, true},
        {"two characters replaced after Fuse", {step_of(Kind::Fuse), replace_step("ab", "X")}, false},
        {"two characters replaced before Fuse", {replace_step("ab", "X"), step_of(Kind::Fuse)}, true},
        {"two characters replaced in byte runs",
         {step_of(Kind::ByteFallback), replace_step("ab", "X")},
         false},
        {"two characters replaced after ByteLevel",
         {step_of(Kind::ByteLevel), replace_step("ab", "X")},
         false},
        {"byte tokens changed before ByteFallback", {metaspace_x, step_of(Kind::ByteFallback)}, false},
        {"byte tokens kept before ByteFallback", {replace_step("y", "z"), step_of(Kind::ByteFallback)}, true},
        {"byte tokens joined before ByteFallback", {step_of(Kind::Fuse), step_of(Kind::ByteFallback)}, false},
        {"bytes changed before ByteLevel", {replace_step("a", "b"), step_of(Kind::ByteLevel)}, false},
    };
    for (const auto& c : cases) {
        TokenDecoder decoder;
        for (const TokenDecoderStep& step : c.steps) {
            decoder.add(step);
        }
        EXPECT_EQ(decoder.grows_at_end(), c.grows) << c.name;
    }
}

TEST(TokenizerJson, IncrementalHoldsTextALaterTokenCouldChange) {
    // "ab" becomes "X" after Fuse, so the "a" of one token is not text yet when the next token may be "b".
    const json tokenizer = {
        {"added_tokens", json::array()},
        {"normalizer", nullptr},
        {"pre_tokenizer", nullptr},
        {"decoder",
         {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Fuse"}}, {{"type", "Replace"}, {"pattern", {{"String", "ab"}}}, {"content", "X"}}}}}},
        {"model",
         {{"type", "BPE"},
          {"unk_token", "<unk>"},
          {"vocab", {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"c", 3}}},
          {"merges", json::array()}}}};
    const auto t = Tokenizer::from_tokenizer_json(tokenizer.dump(), "inline tokenizer.json");
    const std::vector<int32_t> ab = {1, 2, 3, 1};
    EXPECT_EQ(t->decode(ab), "Xca");
    IncrementalDetokenizer detokenizer(*t);
    std::string streamed;
    for (const int32_t id : ab) {
        streamed += detokenizer.push(id);
    }
    EXPECT_EQ(streamed, "");
    EXPECT_EQ(detokenizer.flush(), "Xca");
    std::mt19937 rng(11);
    expect_random_streams_match(*t, rng, 4, {true});
}

}  // namespace
}  // namespace folio
