// Byte-level BPE as GPT-2 and Llama 3 tokenizers use it: the regular-expression split, the byte alphabet,
// the model with ignore_merges, the ByteLevel decoder's UTF-8 repair and the streaming detokenizer, on a
// tokenizer.json written here whose ids follow from its merges by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/tokenizer/byte-level.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {
namespace {

using nlohmann::json;

// Llama 3's pre-tokenizer expression, as its tokenizer.json has it.
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr int32_t kBos = 300;

std::vector<std::string> strings(const std::vector<std::string_view>& views) {
    return {views.begin(), views.end()};
}

// The 256 byte characters as ids 0..255 in byte order, then the merged pieces from 256 on.
json byte_level_tokenizer(bool ignore_merges) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) {
        vocab[byte_level_encode(std::string(1, static_cast<char>(b)))] = b;
    }
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"H", "e"},        {"l", "l"},         {"He", "ll"}, {"Hell", "o"},
        {"\xC4\xA0", "o"}, {"\xC4\xA0o", "k"}, {"1", "2"},   {"12", "3"}};
    json merge_list = json::array();
    int32_t next = 256;
    for (const auto& [a, b] : merges) {
        merge_list.push_back(a + " " + b);
        vocab[a + b] = next++;
    }
    vocab["\xC4\xA0x"] = next++;  // " x" as one piece that no merge makes
    return json{
        {"added_tokens",
         json::array({json{{"id", kBos}, {"content", "<|begin_of_text|>"}, {"special", true}}})},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers", json::array({json{{"type", "Split"},
                                              {"pattern", {{"Regex", kLlama3Pattern}}},
                                              {"behavior", "Isolated"},
                                              {"invert", false}},
                                         json{{"type", "ByteLevel"},
                                              {"add_prefix_space", false},
                                              {"trim_offsets", true},
                                              {"use_regex", false}}})}}},
        {"post_processor",
         {{"type", "Sequence"},
          {"processors",
           json::array({json{{"type", "ByteLevel"}, {"trim_offsets", false}},
                        json{{"type", "TemplateProcessing"},
                             {"single", json::array({json{{"SpecialToken", {{"id", "<|begin_of_text|>"}}}},
                                                     json{{"Sequence", {{"id", "A"}}}}})},
                             {"special_tokens",
                              {{"<|begin_of_text|>", {{"id", "<|begin_of_text|>"}, {"ids", {kBos}}}}}}}})}}},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}}},
        {"model",
         {{"type", "BPE"}, {"ignore_merges", ignore_merges}, {"vocab", vocab}, {"merges", merge_list}}}};
}

std::unique_ptr<Tokenizer> tokenizer(bool ignore_merges = true) {
    return Tokenizer::from_tokenizer_json(byte_level_tokenizer(ignore_merges).dump(),
                                          "byte-level tokenizer.json");
}

TEST(ByteLevel, BytesStandForPrintableCodePoints) {
    EXPECT_EQ(byte_level_encode("Hi"), "Hi");
    EXPECT_EQ(byte_level_encode(" "), "\xC4\xA0");                 // U+0120
    EXPECT_EQ(byte_level_encode("\n"), "\xC4\x8A");                // U+010A
    EXPECT_EQ(byte_level_encode("\xC3\xA9"), "\xC3\x83\xC2\xA9");  // é's bytes: Ã and ©, both printable
    for (int b = 0; b < 256; ++b) {
        const std::string one(1, static_cast<char>(b));
        EXPECT_EQ(byte_level_bytes(byte_level_encode(one)), one) << "byte " << b;
    }
    EXPECT_EQ(byte_level_bytes("<|begin_of_text|>"), "<|begin_of_text|>");
    EXPECT_EQ(byte_level_bytes("a b"), "a b") << "a space stands for no byte: the token as it is";
}

TEST(ByteLevel, LossyUtf8ReplacesEachMaximalIllFormedPart) {
    const std::string r = "\xEF\xBF\xBD";
    EXPECT_EQ(utf8_lossy("ok \xF0\x9F\x98\x80"), "ok \xF0\x9F\x98\x80");
    EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), r) << "a character cut short is one replacement";
    EXPECT_EQ(utf8_lossy("\xE2\x82"
                         "A"),
              r + "A");
    EXPECT_EQ(utf8_lossy("\xC0\x80"), r + r) << "an overlong lead starts nothing";
    EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), r + r + r) << "a surrogate's bytes";
    EXPECT_EQ(utf8_unfinished_tail("ok \xF0\x9F\x98"), 3u);
    EXPECT_EQ(utf8_unfinished_tail("\xC3"
                                   "A\xC3"),
              1u)
        << "after an ill-formed part, the last lead still waits";
    EXPECT_EQ(utf8_unfinished_tail("\xC3\xA9"), 0u);
    EXPECT_EQ(utf8_unfinished_tail("\xE0\x80"), 0u) << "E0 80 can never be finished";
    EXPECT_EQ(utf8_lossy("\xFF"
                         "a\x80"),
              r + "a" + r);
}

TEST(ByteLevel, SplitsAsTheLlama3Expression) {
    const RegexSplitter split(kLlama3Pattern, false, "test");
    EXPECT_EQ(strings(split.split("I'm 12345 ok\n\n  x", SplitBehavior::Isolated)),
              (std::vector<std::string>{"I", "'m", " ", "123", "45", " ok", "\n\n", " ", " x"}));
    EXPECT_EQ(strings(split.split("DON'T stop", SplitBehavior::Isolated)),
              (std::vector<std::string>{"DON", "'T", " stop"}))
        << "contractions in any case";
    EXPECT_EQ(strings(split.split("a\u3000b\u00A0c", SplitBehavior::Isolated)),
              (std::vector<std::string>{"a", "\u3000b", "\u00A0c"}))
        << "Unicode spaces are \\s, and one goes with the word after it";
    EXPECT_EQ(strings(split.split("x...\r\ny", SplitBehavior::Isolated)),
              (std::vector<std::string>{"x", "...\r\n", "y"}));
    const RegexSplitter dash("-", true, "test");
    EXPECT_EQ(strings(dash.split("the-final--countdown", SplitBehavior::Removed)),
              (std::vector<std::string>{"the", "final", "countdown"}));
    EXPECT_EQ(strings(dash.split("the-final--countdown", SplitBehavior::MergedWithPrevious)),
              (std::vector<std::string>{"the-", "final-", "-", "countdown"}));
    EXPECT_EQ(strings(dash.split("the-final--countdown", SplitBehavior::MergedWithNext)),
              (std::vector<std::string>{"the", "-final", "-", "-countdown"}));
    EXPECT_EQ(strings(dash.split("the-final--countdown", SplitBehavior::Contiguous)),
              (std::vector<std::string>{"the", "-", "final", "--", "countdown"}));
    EXPECT_EQ(icu_pattern(R"(\s+(?!\S)|[^\s\p{L}]|\\s)"),
              R"(\p{White_Space}+(?!\P{White_Space})|[^\p{White_Space}\p{L}]|\\s)");
    EXPECT_THROW(RegexSplitter("(a", false, "test"), Error);
}

TEST(ByteLevel, EncodesPiecesThroughTheByteAlphabet) {
    const auto t = tokenizer();
    // "Hello", " ok", " ", "123", "4": the space before a digit is a piece of its own.
    EXPECT_EQ(t->encode("Hello ok 1234", false), (std::vector<int32_t>{259, 261, ' ', 263, '4'}));
    EXPECT_EQ(t->encode("Hello", true), (std::vector<int32_t>{kBos, 259}));
    EXPECT_EQ(t->encode("<|begin_of_text|>Hi", false), (std::vector<int32_t>{kBos, 'H', 'i'}));
    EXPECT_EQ(t->encode("\xC3\xA9", false), (std::vector<int32_t>{0xC3, 0xA9}));
    // " x" is in the vocabulary though no merge makes it: ignore_merges takes it whole.
    EXPECT_EQ(t->encode("a x", false), (std::vector<int32_t>{'a', 264}));
    EXPECT_EQ(tokenizer(false)->encode("a x", false), (std::vector<int32_t>{'a', ' ', 'x'}));
}

TEST(ByteLevel, DecodesBytesAndRepairsBrokenCharacters) {
    const auto t = tokenizer();
    for (const std::string text : {"Hello ok 1234", "caf\xC3\xA9 \xF0\x9F\x98\x80\n\n\ttab", "\x01\x7F"}) {
        EXPECT_EQ(t->decode(t->encode(text, false)), text);
    }
    EXPECT_EQ(t->decode(std::vector<int32_t>{kBos, 'H', 'i'}), "<|begin_of_text|>Hi");
    EXPECT_EQ(t->decode(std::vector<int32_t>{kBos, 'H', 'i'}, true), "Hi");
    EXPECT_EQ(t->decode(std::vector<int32_t>{'a', 0xF0, 0x9F, 'b'}),
              "a\xEF\xBF\xBD"
              "b");
}

TEST(ByteLevel, StreamsWholeCharactersOnly) {
    const auto t = tokenizer();
    const std::string text =
        "a\xF0\x9F\x98\x80"
        "b\xC3\xA9";
    const std::vector<int32_t> ids = t->encode(text, false);
    ASSERT_EQ(ids.size(), 8u) << "one token a byte here";
    IncrementalDetokenizer stream(*t);
    std::vector<std::string> pieces;
    for (const int32_t id : ids) {
        pieces.push_back(stream.push(id));
    }
    EXPECT_EQ(pieces, (std::vector<std::string>{"a", "", "", "", "\xF0\x9F\x98\x80", "b", "", "\xC3\xA9"}));
    EXPECT_EQ(stream.flush(), "");
    // A character never finished becomes one U+FFFD, as decode() has it.
    IncrementalDetokenizer cut(*t);
    EXPECT_EQ(cut.push('x'), "x");
    EXPECT_EQ(cut.push(0xF0), "");
    EXPECT_EQ(cut.push(0x9F), "");
    EXPECT_EQ(cut.flush(), "\xEF\xBF\xBD");
    // A broken character then one begun: the replacement and the letter come at once, the new one waits.
    IncrementalDetokenizer mixed(*t);
    EXPECT_EQ(mixed.push(0xC3), "");
    EXPECT_EQ(mixed.push('A'),
              "\xEF\xBF\xBD"
              "A");
    EXPECT_EQ(mixed.push(0xC3), "");
    EXPECT_EQ(mixed.push(0xA9), "\xC3\xA9");
    // A byte that can start nothing is given at once.
    IncrementalDetokenizer bad(*t);
    EXPECT_EQ(bad.push(0xFF), "\xEF\xBF\xBD");
    EXPECT_EQ(bad.push('y'), "y");
}

}  // namespace
}  // namespace folio
