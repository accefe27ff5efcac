// The tokenizer and the chat prompt against the reference ids, texts and prompts of transformers 5.17.
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "error.h"
#include "models/paddleocr-vl/chat-prompt.h"
#include "tokenizer.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = FOLIO_FIXTURES_DIR;
const fs::path kModelDir = kFixtures / "paddleocr-vl-tiny";
constexpr const char* kTokenizerFiles[] = {"tokenizer.model", "tokenizer_config.json", "added_tokens.json",
                                           "special_tokens_map.json"};

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    EXPECT_TRUE(in) << path;
    std::string bytes(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
    in.seekg(0);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

void write_bytes(const fs::path& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out) << path;
}

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

// Well-formed UTF-8 (RFC 3629): no overlong forms, surrogates, code points above U+10FFFF or cut sequences.
bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            ++i;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
        } else if (c == 0xE0) {
            n = 2;
            lo = 0xA0;
        } else if (c == 0xED) {
            n = 2;
            hi = 0x9F;
        } else if (c >= 0xE1 && c <= 0xEF) {
            n = 2;
        } else if (c == 0xF0) {
            n = 3;
            lo = 0x90;
        } else if (c == 0xF4) {
            n = 3;
            hi = 0x8F;
        } else if (c >= 0xF1 && c <= 0xF3) {
            n = 3;
        } else {
            return false;
        }
        if (i + n >= s.size()) {
            return false;
        }
        for (size_t k = 1; k <= n; ++k) {
            const auto b = static_cast<unsigned char>(s[i + k]);
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
                return false;
            }
        }
        i += n + 1;
    }
    return true;
}

TEST(Utf8Validator, AcceptsAndRejects) {
    EXPECT_TRUE(valid_utf8("a\xC3\xA9\xE6\x96\x87\xF0\x9F\x99\x82"));
    EXPECT_FALSE(valid_utf8("\xF0\x9F\x99"));
    EXPECT_FALSE(valid_utf8("\xC0\xAF"));
    EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));
    EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));
    EXPECT_FALSE(valid_utf8("\x80"));
}

// A copy of the fixture's tokenizer files in a fresh directory, to break one of them.
class TokenizerDir {
public:
    TokenizerDir() {
        static std::atomic<int> counter{0};
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        path_ = fs::temp_directory_path() / ("folio-test-tokenizer-" + std::to_string(::getpid()) + "-" +
                                             info->name() + "-" + std::to_string(counter++));
        fs::remove_all(path_);
        fs::create_directories(path_);
        for (const char* name : kTokenizerFiles) {
            fs::copy_file(kModelDir / name, path_ / name);
        }
    }
    ~TokenizerDir() {
        std::error_code error;
        fs::remove_all(path_, error);
    }
    TokenizerDir(const TokenizerDir&) = delete;
    TokenizerDir& operator=(const TokenizerDir&) = delete;

    const fs::path& path() const { return path_; }
    json config() const { return json::parse(read_bytes(path_ / "tokenizer_config.json")); }
    void write_config(const json& config) const {
        write_bytes(path_ / "tokenizer_config.json", config.dump(2));
    }

private:
    fs::path path_;
};

// The message of the folio::Error that loading dir throws, or "" when it loads.
std::string load_error(const fs::path& dir) {
    try {
        Tokenizer::load(dir);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

class TokenizerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { tokenizer_ = Tokenizer::load(kModelDir).release(); }
    static void TearDownTestSuite() {
        delete tokenizer_;
        tokenizer_ = nullptr;
    }
    void SetUp() override { tokenizer_->set_prefix_space(PrefixSpace::Never); }

    static Tokenizer* tokenizer_;
};

Tokenizer* TokenizerTest::tokenizer_ = nullptr;

TEST_F(TokenizerTest, FixtureSetIsComplete) {
    ASSERT_EQ(reference().at("tokenizer").size(), 14u);
    EXPECT_EQ(tokenizer_->n_vocab(), 606);
}

TEST_F(TokenizerTest, ConfiguredSchemeIsNever) {
    EXPECT_EQ(Tokenizer::load(kModelDir)->prefix_space(), PrefixSpace::Never);
}

TEST_F(TokenizerTest, EncodesReferenceIdsWithEveryPrefixScheme) {
    const std::pair<PrefixSpace, const char*> schemes[] = {{PrefixSpace::Never, "ids"},
                                                           {PrefixSpace::Always, "ids_prefix_always"},
                                                           {PrefixSpace::First, "ids_prefix_first"}};
    for (const auto& [scheme, key] : schemes) {
        tokenizer_->set_prefix_space(scheme);
        for (const json& entry : reference().at("tokenizer")) {
            const std::string text = entry.at("text");
            EXPECT_EQ(tokenizer_->encode(text), ids_of(entry.at(key))) << key << ": " << text;
        }
    }
}

TEST_F(TokenizerTest, SchemesDifferOnTheFixtureTexts) {
    // The three schemes must be told apart by the data, or the test above would prove nothing.
    const json& image_text = reference().at("tokenizer")[11];
    ASSERT_EQ(image_text.at("text"), "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>OCR:");
    EXPECT_NE(image_text.at("ids_prefix_always"), image_text.at("ids_prefix_first"));
    EXPECT_NE(reference().at("tokenizer")[0].at("ids"),
              reference().at("tokenizer")[0].at("ids_prefix_first"));
}

TEST_F(TokenizerTest, EmptyTextEncodesToNothing) {
    for (const PrefixSpace scheme : {PrefixSpace::Never, PrefixSpace::First, PrefixSpace::Always}) {
        tokenizer_->set_prefix_space(scheme);
        EXPECT_TRUE(tokenizer_->encode("").empty());
    }
}

TEST_F(TokenizerTest, DecodesToReferenceText) {
    for (const json& entry : reference().at("tokenizer")) {
        EXPECT_EQ(tokenizer_->decode(ids_of(entry.at("ids"))), entry.at("decoded").get<std::string>())
            << entry.at("text");
    }
}

TEST_F(TokenizerTest, RoundTripsWithoutPrefix) {
    for (const json& entry : reference().at("tokenizer")) {
        const std::string text = entry.at("text");
        EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text)), text);
    }
}

TEST_F(TokenizerTest, PiecesAreTheReferenceTokens) {
    for (const json& entry : reference().at("tokenizer")) {
        const auto ids = ids_of(entry.at("ids"));
        const auto pieces = entry.at("pieces").get<std::vector<std::string>>();
        ASSERT_EQ(ids.size(), pieces.size());
        for (size_t i = 0; i < ids.size(); ++i) {
            EXPECT_EQ(tokenizer_->token_id(pieces[i]), ids[i]) << pieces[i];
        }
    }
}

TEST_F(TokenizerTest, DecodeStripsTheLeadingSpaceThePrefixAdded) {
    // transformers' decoder for add_prefix_space true ends in Strip(" ", left=1) over the whole text.
    tokenizer_->set_prefix_space(PrefixSpace::First);
    for (const json& entry : reference().at("tokenizer")) {
        const std::string text = entry.at("text");
        const std::string expected = text.starts_with(' ') ? text.substr(1) : text;
        EXPECT_EQ(tokenizer_->decode(ids_of(entry.at("ids_prefix_first"))), expected);
    }
    tokenizer_->set_prefix_space(PrefixSpace::Always);
    const auto& texts = reference().at("tokenizer");
    EXPECT_EQ(tokenizer_->decode(ids_of(texts[0].at("ids_prefix_always"))), "OCR:");
    EXPECT_EQ(tokenizer_->decode(ids_of(texts[5].at("ids_prefix_always"))),
              texts[5].at("text").get<std::string>());
    EXPECT_EQ(tokenizer_->decode(ids_of(texts[11].at("ids_prefix_always"))),
              "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|> OCR:");
}

TEST_F(TokenizerTest, DecodesGreedyReferenceText) {
    // The second prompt's greedy tokens hold a lone byte piece, which decodes to U+FFFD.
    for (const char* prompt : {"one_image", "two_images"}) {
        const json& p = reference().at("prompts").at(prompt);
        EXPECT_EQ(tokenizer_->decode(ids_of(p.at("greedy_tokens"))), p.at("greedy_text").get<std::string>())
            << prompt;
    }
}

TEST_F(TokenizerTest, InvalidByteRunBecomesOneReplacementPerByte) {
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

TEST_F(TokenizerTest, SpecialTokens) {
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

TEST_F(TokenizerTest, AddedTokensInsideText) {
    const int32_t a = tokenizer_->token_id("a");
    const int32_t b = tokenizer_->token_id("b");
    EXPECT_EQ(tokenizer_->encode("a<s>b"), (std::vector<int32_t>{a, 1, b}));
    EXPECT_EQ(tokenizer_->encode("a<|IMAGE_END|><|IMAGE_END|>b"), (std::vector<int32_t>{a, 604, 604, b}));
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode("a<|IMAGE_END|>b"), true), "ab");
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode("a<|IMAGE_END|>b")), "a<|IMAGE_END|>b");
}

TEST_F(TokenizerTest, IdsWithoutTokenDecodeToNothing) {
    EXPECT_EQ(tokenizer_->decode(std::vector<int32_t>{-5, 606, 1 << 30, tokenizer_->token_id("O")}), "O");
}

// Pushes ids one by one; every chunk must be valid UTF-8 and all of them must make decode()'s text.
void expect_incremental_matches(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                                bool skip_special) {
    IncrementalDetokenizer detokenizer(tokenizer, skip_special);
    std::string text;
    for (const int32_t id : ids) {
        const std::string chunk = detokenizer.push(id);
        EXPECT_TRUE(valid_utf8(chunk)) << "after id " << id;
        text += chunk;
    }
    const std::string rest = detokenizer.flush();
    EXPECT_TRUE(valid_utf8(rest));
    text += rest;
    EXPECT_EQ(text, tokenizer.decode(ids, skip_special));
}

TEST_F(TokenizerTest, IncrementalDetokenizationMatchesDecode) {
    const std::pair<PrefixSpace, const char*> schemes[] = {{PrefixSpace::Never, "ids"},
                                                           {PrefixSpace::Always, "ids_prefix_always"},
                                                           {PrefixSpace::First, "ids_prefix_first"}};
    for (const auto& [scheme, key] : schemes) {
        tokenizer_->set_prefix_space(scheme);
        for (const json& entry : reference().at("tokenizer")) {
            for (const bool skip : {false, true}) {
                SCOPED_TRACE(std::string(key) + (skip ? " skip: " : ": ") +
                             entry.at("text").get<std::string>());
                expect_incremental_matches(*tokenizer_, ids_of(entry.at(key)), skip);
            }
        }
    }
    tokenizer_->set_prefix_space(PrefixSpace::Never);
    for (const char* prompt : {"one_image", "two_images"}) {
        expect_incremental_matches(*tokenizer_,
                                   ids_of(reference().at("prompts").at(prompt).at("greedy_tokens")), true);
    }
}

TEST_F(TokenizerTest, IncrementalHoldsASplitEmojiUntilItsRunEnds) {
    // "🙂" is F0 9F 99 82, four byte fallback pieces in this vocabulary.
    std::vector<int32_t> emoji;
    for (const char* byte : {"<0xF0>", "<0x9F>", "<0x99>", "<0x82>"}) {
        emoji.push_back(tokenizer_->token_id(byte));
    }
    const int32_t space = tokenizer_->token_id("\xE2\x96\x81");
    IncrementalDetokenizer detokenizer(*tokenizer_);
    EXPECT_EQ(detokenizer.push(tokenizer_->token_id("a")), "a");
    for (const int32_t id : emoji) {
        EXPECT_EQ(detokenizer.push(id), "");
    }
    EXPECT_EQ(detokenizer.push(space), "\xF0\x9F\x99\x82 ");
    EXPECT_EQ(detokenizer.flush(), "");

    IncrementalDetokenizer cut(*tokenizer_);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(cut.push(emoji[i]), "");
    }
    EXPECT_EQ(cut.flush(), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(tokenizer_->decode(std::span(emoji).first(3)), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");

    IncrementalDetokenizer at_end(*tokenizer_);
    for (const int32_t id : emoji) {
        EXPECT_EQ(at_end.push(id), "");
    }
    EXPECT_EQ(at_end.flush(), "\xF0\x9F\x99\x82");
}

TEST_F(TokenizerTest, IncrementalSkipsSpecialTokensInsideAByteRun) {
    const std::vector<int32_t> ids = {tokenizer_->token_id("<0xF0>"), tokenizer_->token_id("<0x9F>"), 603,
                                      tokenizer_->token_id("<0x99>"), tokenizer_->token_id("<0x82>")};
    expect_incremental_matches(*tokenizer_, ids, true);
    expect_incremental_matches(*tokenizer_, ids, false);
    EXPECT_EQ(tokenizer_->decode(ids, true), "\xF0\x9F\x99\x82");
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

class ChatPromptTest : public TokenizerTest {
protected:
    static SpecialTokenIds special_ids() {
        const json config = json::parse(read_bytes(kModelDir / "config.json"));
        return {config.at("image_token_id").get<int32_t>(), config.at("vision_start_token_id").get<int32_t>(),
                config.at("vision_end_token_id").get<int32_t>()};
    }
};

TEST_F(ChatPromptTest, TextIsTheTemplate) {
    for (const char* name : {"one_image", "two_images"}) {
        const json& prompt = reference().at("prompts").at(name);
        EXPECT_EQ(chat_prompt_text(prompt.at("images").size(), prompt.at("task").get<std::string>()),
                  prompt.at("text").get<std::string>());
    }
}

TEST_F(ChatPromptTest, IdsAreTheReferenceInputIds) {
    const SpecialTokenIds special = special_ids();
    for (const char* name : {"one_image", "two_images"}) {
        const json& prompt = reference().at("prompts").at(name);
        const std::vector<int64_t> n_image = image_tokens(prompt);
        const ChatPromptTokens tokens =
            build_chat_prompt(*tokenizer_, special, n_image, prompt.at("task").get<std::string>());
        const std::vector<int64_t> expected = reference_i64(std::string(name) + ".input_ids");
        ASSERT_EQ(tokens.ids.size(), expected.size()) << name;
        EXPECT_EQ(static_cast<int64_t>(tokens.ids.size()), prompt.at("n_prompt_tokens").get<int64_t>());
        ASSERT_EQ(tokens.is_image.size(), tokens.ids.size());
        int64_t n_flagged = 0;
        for (size_t i = 0; i < expected.size(); ++i) {
            EXPECT_EQ(tokens.ids[i], expected[i]) << name << " at " << i;
            EXPECT_EQ(tokens.is_image[i], expected[i] == special.image_token_id ? 1 : 0)
                << name << " at " << i;
            n_flagged += tokens.is_image[i];
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
    EXPECT_THROW(build_chat_prompt(*tokenizer_, special, zero, "OCR:"), Error);
    EXPECT_THROW(build_chat_prompt(*tokenizer_, special, one, "OCR:<|IMAGE_PLACEHOLDER|>"), Error);
    EXPECT_THROW(build_chat_prompt(*tokenizer_, special, one, "<|IMAGE_START|>OCR:"), Error);
    SpecialTokenIds swapped = special;
    std::swap(swapped.vision_start_token_id, swapped.vision_end_token_id);
    EXPECT_THROW(build_chat_prompt(*tokenizer_, swapped, one, "OCR:"), Error);
    EXPECT_EQ(build_chat_prompt(*tokenizer_, special, {}, "OCR:").ids,
              tokenizer_->encode("<|begin_of_sentence|>User: OCR:\nAssistant: "));
}

TEST(TokenizerLoad, MissingModelNamesTheFile) {
    TokenizerDir dir;
    fs::remove(dir.path() / "tokenizer.model");
    EXPECT_NE(load_error(dir.path()).find("tokenizer.model"), std::string::npos);
}

TEST(TokenizerLoad, CorruptModelNamesTheFile) {
    TokenizerDir dir;
    std::mt19937 rng(20261122);
    for (const size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{8660}}) {
        for (int attempt = 0; attempt < 20; ++attempt) {
            std::string bytes(size, '\0');
            for (char& c : bytes) {
                c = static_cast<char>(rng() & 0xFF);
            }
            write_bytes(dir.path() / "tokenizer.model", bytes);
            const std::string error = load_error(dir.path());
            EXPECT_NE(error.find("tokenizer.model"), std::string::npos) << size << " random bytes: " << error;
        }
    }
    const std::string model = read_bytes(kModelDir / "tokenizer.model");
    write_bytes(dir.path() / "tokenizer.model", std::string_view(model).substr(0, model.size() / 2));
    EXPECT_NE(load_error(dir.path()).find("tokenizer.model"), std::string::npos);
}

TEST(TokenizerLoad, ConfigThatIsNotJsonNamesTheFile) {
    TokenizerDir dir;
    write_bytes(dir.path() / "tokenizer_config.json", "{\"legacy\": true,");
    EXPECT_NE(load_error(dir.path()).find("tokenizer_config.json"), std::string::npos);
    write_bytes(dir.path() / "tokenizer_config.json", "[1, 2]");
    EXPECT_NE(load_error(dir.path()).find("tokenizer_config.json"), std::string::npos);
}

TEST(TokenizerLoad, AddedTokenCollidingWithAPieceIsRejected) {
    TokenizerDir dir;
    json config = dir.config();
    auto& decoder = config["added_tokens_decoder"];
    decoder["100"] = decoder["603"];
    decoder.erase("603");
    dir.write_config(config);
    fs::remove(dir.path() / "added_tokens.json");
    const std::string error = load_error(dir.path());
    EXPECT_NE(error.find("<|IMAGE_START|>"), std::string::npos) << error;
    EXPECT_NE(error.find("100"), std::string::npos) << error;
}

TEST(TokenizerLoad, FilesDisagreeingOnAnIdAreRejected) {
    TokenizerDir dir;
    write_bytes(dir.path() / "added_tokens.json", R"({"<|IMAGE_START|>": 604})");
    const std::string error = load_error(dir.path());
    EXPECT_NE(error.find("added_tokens.json"), std::string::npos) << error;
    EXPECT_NE(error.find("604"), std::string::npos) << error;
}

TEST(TokenizerLoad, NeedsConfigOrAddedTokens) {
    TokenizerDir dir;
    fs::remove(dir.path() / "tokenizer_config.json");
    fs::remove(dir.path() / "added_tokens.json");
    EXPECT_NE(load_error(dir.path()), "");
}

TEST(TokenizerLoad, AddedTokensJsonAloneIsEnough) {
    TokenizerDir dir;
    fs::remove(dir.path() / "tokenizer_config.json");
    fs::remove(dir.path() / "special_tokens_map.json");
    const auto tokenizer = Tokenizer::load(dir.path());
    EXPECT_EQ(tokenizer->token_id("<|IMAGE_END|>"), 604);
    EXPECT_EQ(tokenizer->n_vocab(), 606);
    EXPECT_FALSE(tokenizer->is_special(604));
    EXPECT_EQ(tokenizer->bos_id(), 1);
    EXPECT_EQ(tokenizer->prefix_space(), PrefixSpace::First);
}

TEST(TokenizerLoad, LongestAddedTokenWins) {
    TokenizerDir dir;
    write_bytes(dir.path() / "added_tokens.json", R"({"<|A|>": 700, "<|A|><|B|>": 701, "<|B|>": 702})");
    const auto tokenizer = Tokenizer::load(dir.path());
    tokenizer->set_prefix_space(PrefixSpace::Never);
    const int32_t x = tokenizer->token_id("x");
    EXPECT_EQ(tokenizer->encode("x<|A|><|B|>x"), (std::vector<int32_t>{x, 701, x}));
    EXPECT_EQ(tokenizer->encode("<|A|>x<|B|>"), (std::vector<int32_t>{700, x, 702}));
    EXPECT_EQ(tokenizer->n_vocab(), 703);
    EXPECT_EQ(tokenizer->decode(std::vector<int32_t>{650, 701}), "<|A|><|B|>");
}

TEST(TokenizerLoad, PrefixSchemeFromConfig) {
    struct Case {
        std::optional<bool> add_prefix_space;
        std::optional<bool> legacy;
        PrefixSpace expected;
    };
    const Case cases[] = {
        {false, true, PrefixSpace::Never},
        {false, std::nullopt, PrefixSpace::Never},
        {true, true, PrefixSpace::Always},
        {true, false, PrefixSpace::First},
        {true, std::nullopt, PrefixSpace::First},
        {std::nullopt, true, PrefixSpace::Always},
        {std::nullopt, std::nullopt, PrefixSpace::First},
    };
    const json& ocr = reference().at("tokenizer")[0];
    for (const Case& c : cases) {
        TokenizerDir dir;
        json config = dir.config();
        config.erase("add_prefix_space");
        config.erase("legacy");
        if (c.add_prefix_space) {
            config["add_prefix_space"] = *c.add_prefix_space;
        }
        if (c.legacy) {
            config["legacy"] = *c.legacy;
        }
        dir.write_config(config);
        const auto tokenizer = Tokenizer::load(dir.path());
        EXPECT_EQ(tokenizer->prefix_space(), c.expected) << config.dump();
        const char* key = c.expected == PrefixSpace::Never ? "ids" : "ids_prefix_always";
        EXPECT_EQ(tokenizer->encode("OCR:"), ids_of(ocr.at(key))) << config.dump();
    }
    TokenizerDir dir;
    json config = dir.config();
    config["add_prefix_space"] = "yes";
    dir.write_config(config);
    EXPECT_NE(load_error(dir.path()).find("add_prefix_space"), std::string::npos);
}

// The ModelProto with its normalizer_spec (field 3) replaced by spec.
std::string with_normalizer(std::string_view proto, std::string_view spec) {
    std::string out;
    size_t pos = 0;
    const auto varint = [&] {
        uint64_t value = 0;
        for (int shift = 0;; shift += 7) {
            const auto byte = static_cast<unsigned char>(proto.at(pos++));
            value |= static_cast<uint64_t>(byte & 0x7F) << shift;
            if ((byte & 0x80) == 0) {
                return value;
            }
        }
    };
    while (pos < proto.size()) {
        const size_t start = pos;
        const uint64_t key = varint();
        switch (key & 7) {
            case 0:
                varint();
                break;
            case 1:
                pos += 8;
                break;
            case 2:
                pos += varint();
                break;
            case 5:
                pos += 4;
                break;
            default:
                ADD_FAILURE() << "wire type " << (key & 7);
                return out;
        }
        if ((key >> 3) != 3) {
            out.append(proto.substr(start, pos - start));
        }
    }
    out.push_back(0x1A);
    out.push_back(static_cast<char>(spec.size()));
    out.append(spec);
    return out;
}

TEST(TokenizerLoad, IgnoresTheSentencePieceNormalizer) {
    // A normalizer that adds a dummy prefix and folds whitespace, as transformers 5 ignores it.
    TokenizerDir dir;
    const std::string spec = std::string("\x0A\x08identity", 10) + std::string("\x18\x01\x20\x01\x28\x01", 6);
    const std::string model = with_normalizer(read_bytes(kModelDir / "tokenizer.model"), spec);
    write_bytes(dir.path() / "tokenizer.model", model);

    sentencepiece::SentencePieceProcessor raw;
    ASSERT_TRUE(raw.LoadFromSerializedProto(model).ok());
    std::vector<int> raw_ids;
    ASSERT_TRUE(raw.Encode("OCR:", &raw_ids).ok());
    EXPECT_NE(std::vector<int32_t>(raw_ids.begin(), raw_ids.end()),
              ids_of(reference().at("tokenizer")[0].at("ids")));

    const auto tokenizer = Tokenizer::load(dir.path());
    for (const json& entry : reference().at("tokenizer")) {
        EXPECT_EQ(tokenizer->encode(entry.at("text").get<std::string>()), ids_of(entry.at("ids")))
            << entry.at("text");
    }
}

}  // namespace
}  // namespace folio
