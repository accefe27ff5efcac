// The tokenizer and the chat prompt against the reference ids, texts and prompts of transformers 5.17: every
// tokenizer layout of tests/fixtures/tokenizers and the fixture model's tokenizer (broken files:
// test-tokenizer-load; decoders written inline: test-token-decoder).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "detokenizer-check.h"
#include "engine/common/error.h"
#include "engine/models/paddleocr-vl/chat-prompt.h"
#include "engine/tokenizer/bpe-model.h"
#include "engine/tokenizer/precompiled-charsmap.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode-text.h"
#include "tokenizer-fixture-files.h"

namespace folio {
namespace {

using namespace tokenizer_test;
using nlohmann::json;

const json& reference() {
    static const json value = json::parse(read_bytes(kFixtures / "reference.json"));
    return value;
}

// A tensor of reference.safetensors as int64: 8-byte little-endian header length, JSON header, data.
std::vector<int64_t> reference_i64(const std::string& name) {
    const std::string file = read_bytes(kFixtures / "reference.safetensors");
    uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) {
        header_size = (header_size << 8) | static_cast<unsigned char>(file.at(static_cast<size_t>(i)));
    }
    const json header = json::parse(file.substr(8, header_size));
    const json& tensor = header.at(name);
    EXPECT_EQ(tensor.at("dtype"), "I64") << name;
    const size_t begin = 8 + header_size + tensor.at("data_offsets")[0].get<size_t>();
    const size_t end = 8 + header_size + tensor.at("data_offsets")[1].get<size_t>();
    if (begin > end || end > file.size()) {
        ADD_FAILURE() << name << " lies outside reference.safetensors";
        return {};
    }
    std::vector<int64_t> values((end - begin) / sizeof(int64_t));
    std::memcpy(values.data(), file.data() + begin, values.size() * sizeof(int64_t));
    return values;
}

std::vector<int32_t> ids_of(const json& list) {
    return list.get<std::vector<int32_t>>();
}

TEST(Utf8Validator, AcceptsAndRejects) {
    EXPECT_TRUE(valid_utf8("a\xC3\xA9\xE6\x96\x87\xF0\x9F\x99\x82"));
    EXPECT_FALSE(valid_utf8("\xF0\x9F\x99"));
    EXPECT_FALSE(valid_utf8("\xC0\xAF"));
    EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));
    EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));
    EXPECT_FALSE(valid_utf8("\x80"));
}

TEST(Utf8Prefix, WholeCharactersThenAStartOrAFault) {
    const auto check = [](std::string_view bytes, size_t n_complete, bool invalid) {
        const Utf8Prefix p = utf8_prefix(bytes);
        EXPECT_EQ(p.n_complete, n_complete) << testing::PrintToString(std::string(bytes));
        EXPECT_EQ(p.invalid, invalid) << testing::PrintToString(std::string(bytes));
    };
    check("", 0, false);
    check("a\xC3\xA9", 3, false);
    check("a\xF0\x9F\x99", 1, false);      // an emoji's first three bytes
    check("a\xF0\x9F\x99\x82", 5, false);  // and its last
    check("\x80", 0, true);                // a continuation byte first
    check("ab\xC0", 2, true);              // never in UTF-8: C0, C1, F5 and above
    check("\xF5", 0, true);
    check("\xE0\x80", 0, true);  // overlong
    check("\xED\xA0", 0, true);  // a surrogate
    check("\xF4\x90", 0, true);  // above U+10FFFF
    check("\xE6\x41", 0, true);  // a lead byte without its continuation
    check("\xE6\xB7\xB7\xF0\x9F", 3, false);
    // Whatever follows a fault, the answer stays at it.
    check("\xE6\xB7\xB7\x80\xC3\xA9", 3, true);
}

// The folders of tests/fixtures/tokenizers, each with the reference.json that transformers made on it.
struct LayoutCase {
    std::string folder;          // under tests/fixtures/tokenizers, or the fixture model's folder
    std::string reference;       // its reference.json
    std::string expected_class;  // the class AutoTokenizer chose
    std::string description;     // how Folio names what it read
};

std::vector<LayoutCase> layout_cases() {
    std::vector<LayoutCase> cases = {
        {"llama-identity-first", "", "LlamaTokenizer", "LlamaTokenizer (tokenizer.model)"},
        {"llama-nfkc-always", "", "LlamaTokenizer", "LlamaTokenizer (tokenizer.model)"},
        {"llama-nfkc-never", "", "LlamaTokenizer", "LlamaTokenizer (tokenizer.model)"},
        {"model-identity", "", "TokenizersBackend", "TokenizersBackend (tokenizer.model)"},
        {"model-nfkc", "", "TokenizersBackend", "TokenizersBackend (tokenizer.model)"},
        {"json-identity", "", "TokenizersBackend", "TokenizersBackend (tokenizer.json)"},
        {"json-nfkc-model", "", "TokenizersBackend", "TokenizersBackend (tokenizer.json)"},
        {"json-llama-nfkc", "", "LlamaTokenizer", "LlamaTokenizer (tokenizer.json)"},
        {"json-byte-level", "", "TokenizersBackend", "TokenizersBackend (tokenizer.json)"},
        {"paddleocr-vl-tiny", "paddleocr-vl-tiny.reference.json", "TokenizersBackend",
         "TokenizersBackend (tokenizer.model)"},
    };
    for (LayoutCase& c : cases) {
        const bool own = c.reference.empty();
        c.reference = (kTokenizerFixtures / (own ? c.folder + "/reference.json" : c.reference)).string();
        c.folder = (own ? kTokenizerFixtures / c.folder : kModelDir).string();
    }
    return cases;
}

class TokenizerLayoutTest : public ::testing::TestWithParam<LayoutCase> {
protected:
    void SetUp() override {
        dir_ = GetParam().folder;
        reference_ = json::parse(read_bytes(GetParam().reference));
        tokenizer_ = Tokenizer::load(dir_);
    }
    fs::path dir_;
    json reference_;
    std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_P(TokenizerLayoutTest, BuildsWhatTheReferenceBuilt) {
    EXPECT_EQ(reference_.at("transformers"), "5.17.0");
    EXPECT_EQ(reference_.at("class"), GetParam().expected_class);
    EXPECT_EQ(tokenizer_->description(), GetParam().description);
    EXPECT_EQ(tokenizer_->n_vocab(), reference_.at("vocab_size").get<int32_t>());
    EXPECT_GE(reference_.at("cases").size(), 300u);
    for (const json& token : reference_.at("pipeline").at("added_tokens")) {
        const auto id = token.at("id").get<int32_t>();
        EXPECT_EQ(tokenizer_->token_text(id), token.at("content").get<std::string>()) << id;
        EXPECT_EQ(tokenizer_->is_special(id), token.at("special").get<bool>()) << id;
    }
}

TEST_P(TokenizerLayoutTest, EncodesTheReferenceIds) {
    int n_checked = 0;
    for (const json& c : reference_.at("cases")) {
        const std::string text = c.at("text");
        EXPECT_EQ(tokenizer_->encode(text), ids_of(c.at("ids"))) << json(text).dump();
        EXPECT_EQ(tokenizer_->encode(text, true), ids_of(c.at("ids_with_special"))) << json(text).dump();
        ++n_checked;
    }
    EXPECT_GE(n_checked, 300);
}

TEST_P(TokenizerLayoutTest, PiecesAreTheReferenceTokens) {
    for (const json& c : reference_.at("cases")) {
        const auto ids = ids_of(c.at("ids"));
        const auto pieces = c.at("pieces").get<std::vector<std::string>>();
        ASSERT_EQ(ids.size(), pieces.size());
        for (size_t i = 0; i < ids.size(); ++i) {
            EXPECT_EQ(tokenizer_->token_text(ids[i]), pieces[i]) << ids[i];
            EXPECT_EQ(tokenizer_->find_token(pieces[i]), ids[i]) << pieces[i];
        }
    }
}

TEST_P(TokenizerLayoutTest, DecodesToTheReferenceText) {
    for (const json& c : reference_.at("cases")) {
        const auto ids = ids_of(c.at("ids"));
        EXPECT_EQ(tokenizer_->decode(ids), c.at("decoded").get<std::string>()) << json(c.at("text")).dump();
        EXPECT_EQ(tokenizer_->decode(ids, true), c.at("decoded_skip").get<std::string>())
            << json(c.at("text")).dump();
    }
    for (const json& c : reference_.at("decode")) {
        const auto ids = ids_of(c.at("ids"));
        EXPECT_EQ(tokenizer_->decode(ids), c.at("decoded").get<std::string>()) << c.at("ids").dump();
        EXPECT_EQ(tokenizer_->decode(ids, true), c.at("decoded_skip").get<std::string>())
            << c.at("ids").dump();
    }
}

TEST_P(TokenizerLayoutTest, IncrementalDetokenizationMatchesDecode) {
    for (const char* list : {"cases", "decode"}) {
        for (const json& c : reference_.at(list)) {
            for (const bool skip : {false, true}) {
                SCOPED_TRACE(c.at("ids").dump() + (skip ? " skipping special tokens" : ""));
                expect_incremental_matches(*tokenizer_, ids_of(c.at("ids")), skip);
            }
        }
    }
}

TEST_P(TokenizerLayoutTest, TextStreamsBeforeTheEnd) {
    // Every published layout's decoder only grows its text, so most of it comes before flush().
    size_t n_before = 0;
    size_t n_total = 0;
    for (const json& c : reference_.at("cases")) {
        IncrementalDetokenizer detokenizer(*tokenizer_);
        for (const int32_t id : ids_of(c.at("ids"))) {
            n_before += detokenizer.push(id).size();
        }
        n_total += tokenizer_->decode(ids_of(c.at("ids"))).size();
    }
    EXPECT_GT(n_before, n_total / 2);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerLayoutTest, ::testing::ValuesIn(layout_cases()),
                         [](const auto& param_info) {
                             std::string name = fs::path(param_info.param.folder).filename().string();
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

TEST(TokenizerLayouts, NormalizerChangesTheIds) {
    // The fixtures must tell the layouts apart, or the tests above would prove less than they claim: the
    // nmt_nfkc model as TokenizersBackend folds "\n" into "▁" and full-width forms, LlamaTokenizer does not.
    const json backend = json::parse(read_bytes(kTokenizerFixtures / "model-nfkc" / "reference.json"));
    const json llama = json::parse(read_bytes(kTokenizerFixtures / "llama-nfkc-never" / "reference.json"));
    int n_different = 0;
    for (size_t i = 0; i < backend.at("cases").size(); ++i) {
        n_different += backend["cases"][i].at("ids") != llama["cases"][i].at("ids");
    }
    EXPECT_GT(n_different, 100);
    const auto tokenizer = Tokenizer::load(kTokenizerFixtures / "model-nfkc");
    const auto ids = tokenizer->encode("\nAssistant: ");
    EXPECT_EQ(tokenizer->token_text(ids.front()).value_or("").substr(0, 3), "\xE2\x96\x81");
    EXPECT_EQ(tokenizer->encode("\xEF\xBC\xA1"), tokenizer->encode("A"));  // full-width A
}

// The fixture model's tokenizer (a model folder with added_tokens.json): its reference ids and texts.
class TinyTokenizerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { tokenizer_ = Tokenizer::load(kModelDir).release(); }
    static void TearDownTestSuite() {
        delete tokenizer_;
        tokenizer_ = nullptr;
    }
    static Tokenizer* tokenizer_;
};

Tokenizer* TinyTokenizerTest::tokenizer_ = nullptr;

TEST_F(TinyTokenizerTest, EncodesAndDecodesTheReferenceTexts) {
    ASSERT_EQ(reference().at("tokenizer").size(), 14u);
    EXPECT_EQ(tokenizer_->n_vocab(), 606);
    EXPECT_EQ(tokenizer_->description(), "TokenizersBackend (tokenizer.model)");
    for (const json& entry : reference().at("tokenizer")) {
        const std::string text = entry.at("text");
        EXPECT_EQ(tokenizer_->encode(text), ids_of(entry.at("ids"))) << text;
        EXPECT_EQ(tokenizer_->decode(ids_of(entry.at("ids"))), entry.at("decoded").get<std::string>())
            << text;
        EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text)), text);
    }
}

TEST_F(TinyTokenizerTest, DecodesGreedyReferenceText) {
    // The second prompt's greedy tokens hold a lone byte piece, which decodes to U+FFFD.
    for (const char* prompt : {"one_image", "two_images"}) {
        const json& p = reference().at("prompts").at(prompt);
        EXPECT_EQ(tokenizer_->decode(ids_of(p.at("greedy_tokens"))), p.at("greedy_text").get<std::string>())
            << prompt;
        expect_incremental_matches(*tokenizer_, ids_of(p.at("greedy_tokens")), true);
    }
}

TEST_F(TinyTokenizerTest, InvalidByteRunBecomesOneReplacementPerByte) {
    // Like the reference ByteFallback decoder: a run of byte pieces that is not UTF-8 as a whole turns into
    // one U+FFFD per byte, the complete character at its start included.
    std::vector<int32_t> ids;
    for (const char* byte : {"<0xE6>", "<0xB7>", "<0xB7>", "<0xF0>", "<0x9F>"}) {
        ids.push_back(tokenizer_->token_id(byte));
    }
    ids.push_back(tokenizer_->token_id("a"));
    std::string expected;
    for (int i = 0; i < 5; ++i) {
        expected += "\xEF\xBF\xBD";
    }
    EXPECT_EQ(tokenizer_->decode(ids), expected + "a");
    ids.resize(3);
    EXPECT_EQ(tokenizer_->decode(ids), "\xE6\xB7\xB7");
}

TEST_F(TinyTokenizerTest, SpecialTokens) {
    EXPECT_EQ(tokenizer_->token_id("<|begin_of_sentence|>"), 600);
    EXPECT_EQ(tokenizer_->token_id("<|IMAGE_PLACEHOLDER|>"), 602);
    EXPECT_EQ(tokenizer_->token_id("<|VIDEO_PLACEHOLDER|>"), 605);
    EXPECT_EQ(tokenizer_->token_id("\xE2\x96\x81"), 411);
    EXPECT_EQ(tokenizer_->bos_id(), 1);
    EXPECT_EQ(tokenizer_->eos_id(), 2);
    EXPECT_EQ(tokenizer_->pad_id(), 0);
    for (int32_t id = 600; id <= 605; ++id) {
        EXPECT_TRUE(tokenizer_->is_special(id)) << id;
    }
    for (int32_t id = 0; id <= 3; ++id) {
        EXPECT_TRUE(tokenizer_->is_special(id)) << id;
    }
    EXPECT_FALSE(tokenizer_->is_special(411));
    EXPECT_FALSE(tokenizer_->is_special(-1));
    EXPECT_FALSE(tokenizer_->is_special(606));
    EXPECT_EQ(tokenizer_->find_token("<|no such token|>"), std::nullopt);
    try {
        tokenizer_->token_id("<|no such token|>");
        ADD_FAILURE() << "token_id of an unknown token did not throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("<|no such token|>"), std::string::npos) << e.what();
    }
}

TEST_F(TinyTokenizerTest, AddedTokensInsideText) {
    const int32_t a = tokenizer_->token_id("a");
    const int32_t b = tokenizer_->token_id("b");
    EXPECT_EQ(tokenizer_->encode("a<s>b"), (std::vector<int32_t>{a, 1, b}));
    EXPECT_EQ(tokenizer_->encode("a<|IMAGE_END|><|IMAGE_END|>b"), (std::vector<int32_t>{a, 604, 604, b}));
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode("a<s>b"), true), "ab");
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode("a<|IMAGE_END|>b")), "a<|IMAGE_END|>b");
}

TEST_F(TinyTokenizerTest, IdsWithoutTokenDecodeToNothing) {
    EXPECT_EQ(tokenizer_->decode(std::vector<int32_t>{-5, 606, 1 << 30, tokenizer_->token_id("O")}), "O");
}

TEST_F(TinyTokenizerTest, EncodingInvalidUtf8Throws) {
    EXPECT_THROW(tokenizer_->encode("ab\xC3"), Error);
}

TEST_F(TinyTokenizerTest, IncrementalGivesACharacterOnTheByteThatCompletesIt) {
    // "🙂" is F0 9F 99 82, four byte fallback pieces in this vocabulary: nothing after the first three, the
    // emoji after the fourth, whether or not another piece follows.
    std::vector<int32_t> emoji;
    for (const char* byte : {"<0xF0>", "<0x9F>", "<0x99>", "<0x82>"}) {
        emoji.push_back(tokenizer_->token_id(byte));
    }
    const int32_t space = tokenizer_->token_id("\xE2\x96\x81");
    IncrementalDetokenizer detokenizer(*tokenizer_);
    EXPECT_EQ(detokenizer.push(tokenizer_->token_id("a")), "a");
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(detokenizer.push(emoji[i]), "") << "byte " << i + 1;
    }
    EXPECT_EQ(detokenizer.push(emoji[3]), "\xF0\x9F\x99\x82");
    EXPECT_EQ(detokenizer.push(space), " ");
    EXPECT_EQ(detokenizer.flush(), "");

    IncrementalDetokenizer at_end(*tokenizer_);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(at_end.push(emoji[i]), "");
    }
    EXPECT_EQ(at_end.push(emoji[3]), "\xF0\x9F\x99\x82");
    EXPECT_EQ(at_end.flush(), "");

    // Two emoji in one run: each on its own last byte.
    IncrementalDetokenizer twice(*tokenizer_);
    std::string given;
    for (int round = 0; round < 2; ++round) {
        for (size_t i = 0; i < 4; ++i) {
            const std::string chunk = twice.push(emoji[i]);
            EXPECT_EQ(chunk, i == 3 ? "\xF0\x9F\x99\x82" : "") << "round " << round << " byte " << i + 1;
            given += chunk;
        }
    }
    EXPECT_EQ(twice.flush(), "");
    EXPECT_EQ(given, tokenizer_->decode(std::vector<int32_t>{emoji[0], emoji[1], emoji[2], emoji[3], emoji[0],
                                                             emoji[1], emoji[2], emoji[3]}));

    // A run that ends in the middle of a character: one U+FFFD a byte, as decode() has it.
    IncrementalDetokenizer cut(*tokenizer_);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(cut.push(emoji[i]), "");
    }
    EXPECT_EQ(cut.flush(), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    IncrementalDetokenizer cut_by_a_piece(*tokenizer_);
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(cut_by_a_piece.push(emoji[i]), "");
    }
    EXPECT_EQ(cut_by_a_piece.push(tokenizer_->token_id("a")),
              "\xEF\xBF\xBD\xEF\xBF\xBD"
              "a");
}

TEST_F(TinyTokenizerTest, IncrementalGivesReplacementsAsSoonAsARunCannotBeUtf8) {
    const auto id = [&](const char* token) { return tokenizer_->token_id(token); };
    // A continuation byte with nothing before it: U+FFFD at once, and every byte of the run after it one
    // more, whatever they make (the reference turns the whole run into one U+FFFD a byte).
    IncrementalDetokenizer lone(*tokenizer_);
    EXPECT_EQ(lone.push(id("<0x80>")), kReplacement);
    for (const char* byte : {"<0xE6>", "<0xB7>", "<0xB7>"}) {
        EXPECT_EQ(lone.push(id(byte)), kReplacement) << byte;
    }
    EXPECT_EQ(lone.push(id("a")), "a");
    EXPECT_EQ(lone.flush(), "");
    const std::vector<int32_t> lone_ids = {id("<0x80>"), id("<0xE6>"), id("<0xB7>"), id("<0xB7>"), id("a")};
    expect_incremental_matches(*tokenizer_, lone_ids, true);
    EXPECT_EQ(tokenizer_->decode(lone_ids), std::string(kReplacement) + std::string(kReplacement) +
                                                std::string(kReplacement) + std::string(kReplacement) + "a");

    // A lead byte that a wrong byte follows: both are U+FFFD on the byte that shows it.
    IncrementalDetokenizer wrong(*tokenizer_);
    EXPECT_EQ(wrong.push(id("<0xE6>")), "");
    EXPECT_EQ(wrong.push(id("<0x41>")), std::string(kReplacement) + std::string(kReplacement));
    // Bytes no UTF-8 has (C0, F5) and a surrogate's first two bytes (ED A0).
    IncrementalDetokenizer never(*tokenizer_);
    EXPECT_EQ(never.push(id("<0xC0>")), kReplacement);
    IncrementalDetokenizer surrogate(*tokenizer_);
    EXPECT_EQ(surrogate.push(id("<0xED>")), "");
    EXPECT_EQ(surrogate.push(id("<0xA0>")), std::string(kReplacement) + std::string(kReplacement));

    // "涷" (E6 B7 B7) is given when its last byte comes; when F0 9F and then "a" follow, the run as a whole
    // is not UTF-8 and decode() has five U+FFFD, but the character given stays and only the two bytes after
    // it become U+FFFD.
    IncrementalDetokenizer kept(*tokenizer_);
    EXPECT_EQ(kept.push(id("<0xE6>")), "");
    EXPECT_EQ(kept.push(id("<0xB7>")), "");
    EXPECT_EQ(kept.push(id("<0xB7>")), "\xE6\xB7\xB7");
    EXPECT_EQ(kept.push(id("<0xF0>")), "");
    EXPECT_EQ(kept.push(id("<0x9F>")), "");
    EXPECT_EQ(kept.push(id("a")), std::string(kReplacement) + std::string(kReplacement) + "a");
    EXPECT_EQ(kept.flush(), "");
    expect_incremental_matches(
        *tokenizer_, {id("<0xE6>"), id("<0xB7>"), id("<0xB7>"), id("<0xF0>"), id("<0x9F>"), id("a")}, true);
}

TEST_F(TinyTokenizerTest, IncrementalSkipsSpecialTokensInsideAByteRun) {
    const std::vector<int32_t> ids = {tokenizer_->token_id("<0xF0>"), tokenizer_->token_id("<0x9F>"), 600,
                                      tokenizer_->token_id("<0x99>"), tokenizer_->token_id("<0x82>")};
    expect_incremental_matches(*tokenizer_, ids, true);
    expect_incremental_matches(*tokenizer_, ids, false);
    EXPECT_EQ(tokenizer_->decode(ids, true), "\xF0\x9F\x99\x82");
}

TEST(BpeModel, MergesFromAVocabularyFollowTheMergedPieceThenTheHalves) {
    // "abc" splits as a+bc and ab+c; both make id 5, so the shorter left half goes first.
    const std::vector<std::pair<std::string, int32_t>> vocab = {{"a", 0},  {"b", 1},  {"c", 2},
                                                                {"ab", 3}, {"bc", 4}, {"abc", 5}};
    const auto merges = merges_from_vocab(vocab);
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"a", "b"}, {"b", "c"}, {"a", "bc"}, {"ab", "c"}};
    EXPECT_EQ(merges, expected);
    BpeConfig config;
    config.vocab = vocab;
    config.merges = merges;
    const BpeModel model(config, "vocab");
    std::vector<int32_t> ids;
    model.encode("abcab", ids);
    EXPECT_EQ(ids, (std::vector<int32_t>{5, 3}));
    ids.clear();
    model.encode("xa", ids);  // no unknown token and no byte pieces: x is dropped
    EXPECT_EQ(ids, (std::vector<int32_t>{0}));
}

// The chat template's prompts of reference.json, with each image's tokens from its grid_thw.
std::vector<int64_t> image_tokens(const json& prompt) {
    std::vector<int64_t> n;
    for (const json& image : prompt.at("images")) {
        const auto grid =
            reference().at("grid_thw." + image.get<std::string>())[0].get<std::vector<int64_t>>();
        n.push_back(grid[0] * grid[1] * grid[2] / 4);
    }
    return n;
}

class ChatPromptTest : public TinyTokenizerTest {
protected:
    static const ChatTemplate& chat_template() {
        static const std::shared_ptr<const ChatTemplate> folder = paddleocr_vl_chat_template(kModelDir);
        return *folder;
    }
    static SpecialTokenIds special_ids() {
        const json config = json::parse(read_bytes(kModelDir / "config.json"));
        return {config.at("image_token_id").get<int32_t>(), config.at("vision_start_token_id").get<int32_t>(),
                config.at("vision_end_token_id").get<int32_t>()};
    }
};

// The reference's prompt texts, through the folder's chat_template.jinja and through the built-in template
// a folder without one gets.
TEST_F(ChatPromptTest, TextIsTheTemplate) {
    const std::shared_ptr<const ChatTemplate> folder = paddleocr_vl_chat_template(kModelDir);
    const std::shared_ptr<const ChatTemplate> builtin = paddleocr_vl_chat_template("");
    EXPECT_NE(folder->origin(), builtin->origin());
    for (const char* name : {"one_image", "two_images"}) {
        const json& prompt = reference().at("prompts").at(name);
        for (const ChatTemplate* chat_template : {folder.get(), builtin.get()}) {
            EXPECT_EQ(chat_prompt_text(*chat_template, prompt.at("images").size(),
                                       prompt.at("task").get<std::string>()),
                      prompt.at("text").get<std::string>())
                << chat_template->origin();
        }
    }
}

TEST_F(ChatPromptTest, IdsAreTheReferenceInputIds) {
    const SpecialTokenIds special = special_ids();
    for (const char* name : {"one_image", "two_images"}) {
        const json& prompt = reference().at("prompts").at(name);
        const std::vector<int64_t> n_image = image_tokens(prompt);
        const ChatPromptTokens tokens = build_chat_prompt(*tokenizer_, chat_template(), special, n_image,
                                                          prompt.at("task").get<std::string>());
        const std::vector<int64_t> expected = reference_i64(std::string(name) + ".input_ids");
        ASSERT_EQ(tokens.ids.size(), expected.size()) << name;
        EXPECT_EQ(static_cast<int64_t>(tokens.ids.size()), prompt.at("n_prompt_tokens").get<int64_t>());
        ASSERT_EQ(tokens.modality.size(), tokens.ids.size());
        int64_t n_flagged = 0;
        for (size_t i = 0; i < expected.size(); ++i) {
            EXPECT_EQ(tokens.ids[i], expected[i]) << name << " at " << i;
            const bool placeholder = expected[i] == special.image_token_id;
            EXPECT_EQ(tokens.modality[i], placeholder ? TokenModality::Image : TokenModality::Text)
                << name << " at " << i;
            n_flagged += placeholder ? 1 : 0;
        }
        EXPECT_EQ(n_flagged, std::accumulate(n_image.begin(), n_image.end(), int64_t{0})) << name;
    }
    EXPECT_EQ(image_tokens(reference().at("prompts").at("one_image")), (std::vector<int64_t>{42}));
    EXPECT_EQ(image_tokens(reference().at("prompts").at("two_images")), (std::vector<int64_t>{63, 6}));
}

TEST_F(ChatPromptTest, RejectsBadInput) {
    const SpecialTokenIds special = special_ids();
    const std::vector<int64_t> one = {4};
    const std::vector<int64_t> zero = {0};
    EXPECT_THROW(build_chat_prompt(*tokenizer_, chat_template(), special, zero, "OCR:"), Error);
    EXPECT_THROW(build_chat_prompt(*tokenizer_, chat_template(), special, one, "OCR:<|IMAGE_PLACEHOLDER|>"),
                 Error);
    EXPECT_THROW(build_chat_prompt(*tokenizer_, chat_template(), special, one, "<|IMAGE_START|>OCR:"), Error);
    SpecialTokenIds swapped = special;
    std::swap(swapped.vision_start_token_id, swapped.vision_end_token_id);
    EXPECT_THROW(build_chat_prompt(*tokenizer_, chat_template(), swapped, one, "OCR:"), Error);
    EXPECT_EQ(build_chat_prompt(*tokenizer_, chat_template(), special, {}, "OCR:").ids,
              tokenizer_->encode("<|begin_of_sentence|>User: OCR:\nAssistant: "));
}

}  // namespace
}  // namespace folio
