// Tokenizer folders that do not load, or load in a way of their own: missing, corrupt and truncated files,
// unsupported classes and components named, broken tokenizer.json and configuration values, added tokens.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/common/error.h"
#include "engine/tokenizer/precompiled-charsmap.h"
#include "engine/tokenizer/sentencepiece-model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tokenizer-fixture-files.h"

namespace folio {
namespace {

using namespace tokenizer_test;
using nlohmann::json;

// A copy of a fixture folder's tokenizer files in a fresh directory, to break one of them.
class TokenizerDir {
public:
    explicit TokenizerDir(const fs::path& source = kModelDir) {
        static std::atomic<int> counter{0};
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        path_ = fs::temp_directory_path() / ("folio-test-tokenizer-" + std::to_string(::getpid()) + "-" +
                                             info->name() + "-" + std::to_string(counter++));
        fs::remove_all(path_);
        fs::create_directories(path_);
        for (const char* name : {"tokenizer.model", "tokenizer.json", "tokenizer_config.json",
                                 "added_tokens.json", "special_tokens_map.json", "config.json"}) {
            if (fs::exists(source / name)) {
                fs::copy_file(source / name, path_ / name);
            }
        }
    }
    ~TokenizerDir() {
        std::error_code error;
        fs::remove_all(path_, error);
    }
    TokenizerDir(const TokenizerDir&) = delete;
    TokenizerDir& operator=(const TokenizerDir&) = delete;

    const fs::path& path() const { return path_; }
    json read(const char* name) const { return json::parse(read_bytes(path_ / name)); }
    void write(const char* name, const json& value) const { write_bytes(path_ / name, value.dump(1)); }

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

bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

TEST(TokenizerLoad, MissingFilesAreNamed) {
    TokenizerDir dir;
    fs::remove(dir.path() / "tokenizer.model");
    const std::string error = load_error(dir.path());
    EXPECT_TRUE(contains(error, "tokenizer.model") && contains(error, "tokenizer.json")) << error;
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
            EXPECT_TRUE(contains(error, "tokenizer.model")) << size << " random bytes: " << error;
        }
    }
    const std::string model = read_bytes(kModelDir / "tokenizer.model");
    write_bytes(dir.path() / "tokenizer.model", std::string_view(model).substr(0, model.size() / 2));
    EXPECT_TRUE(contains(load_error(dir.path()), "tokenizer.model"));
}

TEST(TokenizerLoad, TruncatedCharsmapNamesTheFile) {
    const std::string model = read_bytes(kTokenizerFixtures / "model-nfkc" / "tokenizer.model");
    const SentencePieceModel spm = parse_sentencepiece_model(model, "model-nfkc");
    ASSERT_GT(spm.precompiled_charsmap.size(), 1000u);
    EXPECT_EQ(spm.model_type, 2);
    EXPECT_TRUE(spm.byte_fallback);
    EXPECT_EQ(spm.pieces.size(), 600u);
    EXPECT_EQ(spm.normalizer_name, "nmt_nfkc");
    const PrecompiledCharsmap whole(spm.precompiled_charsmap, "model-nfkc");
    EXPECT_EQ(whole.normalize("\xEF\xBC\xA1\xEF\xBC\x91"), "A1");  // full-width A1
    for (const size_t size : {size_t{0}, size_t{3}, size_t{4}, size_t{100}}) {
        try {
            PrecompiledCharsmap broken(std::string_view(spm.precompiled_charsmap).substr(0, size),
                                       "the file");
            ADD_FAILURE() << size << " bytes of a charsmap were accepted";
        } catch (const Error& e) {
            EXPECT_TRUE(contains(e.what(), "the file")) << e.what();
        }
    }
}

TEST(TokenizerLoad, ConfigThatIsNotJsonNamesTheFile) {
    TokenizerDir dir;
    write_bytes(dir.path() / "tokenizer_config.json", "{\"legacy\": true,");
    EXPECT_TRUE(contains(load_error(dir.path()), "tokenizer_config.json"));
    write_bytes(dir.path() / "tokenizer_config.json", "[1, 2]");
    EXPECT_TRUE(contains(load_error(dir.path()), "tokenizer_config.json"));
}

TEST(TokenizerLoad, UnsupportedClassIsNamed) {
    TokenizerDir dir(kTokenizerFixtures / "llama-identity-first");
    json config = dir.read("tokenizer_config.json");
    config["tokenizer_class"] = "T5Tokenizer";
    dir.write("tokenizer_config.json", config);
    const std::string error = load_error(dir.path());
    EXPECT_TRUE(contains(error, "T5Tokenizer") && contains(error, "tokenizer_config.json")) << error;
}

TEST(TokenizerLoad, ModelFolderTakesTheBackendWhateverTheClass) {
    // A PaddleOCR-VL folder is tokenized by TokenizersBackend even when tokenizer_config.json names a class
    // Folio does not read, as transformers does.
    TokenizerDir dir(kTokenizerFixtures / "model-nfkc");
    json config = dir.read("tokenizer_config.json");
    config["tokenizer_class"] = "T5Tokenizer";
    dir.write("tokenizer_config.json", config);
    EXPECT_EQ(Tokenizer::load(dir.path())->description(), "TokenizersBackend (tokenizer.model)");
}

TEST(TokenizerLoad, UnknownTokenizerJsonComponentsAreNamed) {
    const fs::path source = kTokenizerFixtures / "json-identity";
    struct Case {
        const char* pointer;
        json value;
        const char* expected;
    };
    const Case cases[] = {
        {"/pre_tokenizer", json{{"type", "Whitespace"}}, "Whitespace"},
        {"/pre_tokenizer", json{{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Isolated"}},
         "followed by ByteLevel"},
        {"/pre_tokenizer",
         json{{"type", "Sequence"},
              {"pretokenizers", json::array({json{{"type", "Split"},
                                                  {"pattern", {{"Regex", "a"}}},
                                                  {"behavior", "Isolated"},
                                                  {"invert", true}},
                                             json{{"type", "ByteLevel"}}})}},
         "inverted"},
        {"/pre_tokenizer",
         json{{"type", "Sequence"},
              {"pretokenizers", json::array({json{{"type", "ByteLevel"}}, json{{"type", "Split"},
                                                                               {"pattern", {{"Regex", "a"}}},
                                                                               {"behavior", "Isolated"}}})}},
         "Split"},
        {"/pre_tokenizer",
         json{{"type", "Sequence"},
              {"pretokenizers",
               json::array(
                   {json{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}},
                    json{{"type", "ByteLevel"}}})}},
         "not a regular expression"},
        {"/pre_tokenizer",
         json{{"type", "Sequence"},
              {"pretokenizers",
               json::array({json{{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}},
                            json{{"type", "ByteLevel"}}})}},
         "Sideways"},
        {"/normalizer", json{{"type", "BertNormalizer"}}, "BertNormalizer"},
        {"/decoder", json{{"type", "WordPiece"}, {"prefix", "##"}}, "WordPiece"},
        {"/model/type", "Unigram", "Unigram"},
        {"/post_processor", json{{"type", "RobertaProcessing"}}, "RobertaProcessing"},
        {"/normalizer", json{{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}},
         "regular"},
        {"/model/dropout", 0.1, "dropout"},
        {"/model/continuing_subword_prefix", "##", "continuing_subword_prefix"},
    };
    for (const Case& c : cases) {
        TokenizerDir dir(source);
        json tokenizer = dir.read("tokenizer.json");
        tokenizer[json::json_pointer(c.pointer)] = c.value;
        dir.write("tokenizer.json", tokenizer);
        const std::string error = load_error(dir.path());
        EXPECT_TRUE(contains(error, "tokenizer.json") && contains(error, c.expected))
            << c.pointer << ": " << error;
    }
}

TEST(TokenizerLoad, MergesOfUnknownPiecesAreNamed) {
    TokenizerDir dir(kTokenizerFixtures / "json-identity");
    json tokenizer = dir.read("tokenizer.json");
    tokenizer["model"]["merges"].push_back(json::array({"zz-not-a-piece", "a"}));
    dir.write("tokenizer.json", tokenizer);
    std::string error = load_error(dir.path());
    EXPECT_TRUE(contains(error, "tokenizer.json") && contains(error, "zz-not-a-piece")) << error;

    tokenizer = TokenizerDir(kTokenizerFixtures / "json-identity").read("tokenizer.json");
    tokenizer["model"]["merges"].push_back("a b c");
    dir.write("tokenizer.json", tokenizer);
    error = load_error(dir.path());
    EXPECT_TRUE(contains(error, "tokenizer.json") && contains(error, "a b c")) << error;
}

TEST(TokenizerLoad, BrokenTokenizerJsonNamesTheFile) {
    TokenizerDir dir(kTokenizerFixtures / "json-nfkc-model");
    const std::string text = read_bytes(dir.path() / "tokenizer.json");
    for (const size_t size : {size_t{0}, size_t{1}, text.size() / 3, text.size() - 2}) {
        write_bytes(dir.path() / "tokenizer.json", std::string_view(text).substr(0, size));
        EXPECT_TRUE(contains(load_error(dir.path()), "tokenizer.json")) << size;
    }
    json tokenizer = json::parse(text);
    tokenizer["normalizer"]["normalizers"][0]["precompiled_charsmap"] = "AAAA";
    write_bytes(dir.path() / "tokenizer.json", tokenizer.dump());
    EXPECT_TRUE(contains(load_error(dir.path()), "tokenizer.json"));
    tokenizer = json::parse(text);
    tokenizer["model"]["vocab"]["x"] = "seven";
    write_bytes(dir.path() / "tokenizer.json", tokenizer.dump());
    EXPECT_TRUE(contains(load_error(dir.path()), "seven"));
}

// The folder's token configuration files: a number too large, out of range or of the wrong type is a
// folio::Error naming the file, never the JSON library's exception.
TEST(TokenizerLoad, ConfigurationNumbersAndTypesNameTheFile) {
    const std::string overflow = "2E0" + std::string(122, '1');
    struct Case {
        const char* file;
        std::string text;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {"added_tokens.json", R"({"<|A|>": )" + overflow + "}", "a number too large for a double"},
        {"added_tokens.json", R"({"<|A|>": 18446744073709551615})",
         "the id of \"<|A|>\" is number 18446744073709551615"},
        {"added_tokens.json", R"({"<|A|>": 1e300})", "the id of \"<|A|>\" is number 1e+300"},
        {"added_tokens.json", R"({"<|A|>": "700"})", "the id of \"<|A|>\" is string \"700\""},
        {"tokenizer_config.json", R"({"add_bos_token": )" + overflow + "}",
         "a number too large for a double"},
        {"tokenizer_config.json", R"({"add_bos_token": "yes"})",
         "add_bos_token is string \"yes\", not true or false"},
        {"special_tokens_map.json", R"({"bos_token": 5})", "bos_token is number 5, not a token"},
        {"config.json", R"({"model_type": )" + overflow + "}", "a number too large for a double"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.file) + ": " + c.text.substr(0, 40));
        TokenizerDir dir;
        write_bytes(dir.path() / c.file, c.text);
        const std::string error = load_error(dir.path());
        EXPECT_TRUE(contains(error, c.file)) << error;
        EXPECT_TRUE(contains(error, c.expected)) << error;
        EXPECT_FALSE(contains(error, "json.exception")) << error;
    }
}

TEST(TokenizerLoad, LongestAddedTokenWins) {
    TokenizerDir dir;
    write_bytes(dir.path() / "added_tokens.json", R"({"<|A|>": 700, "<|A|><|B|>": 701, "<|B|>": 702})");
    const auto tokenizer = Tokenizer::load(dir.path());
    const int32_t x = tokenizer->token_id("x");
    EXPECT_EQ(tokenizer->encode("x<|A|><|B|>x"), (std::vector<int32_t>{x, 701, x}));
    EXPECT_EQ(tokenizer->encode("<|A|>x<|B|>"), (std::vector<int32_t>{700, x, 702}));
    EXPECT_EQ(tokenizer->n_vocab(), 703);
    EXPECT_EQ(tokenizer->decode(std::vector<int32_t>{650, 701}), "<|A|><|B|>");
}

}  // namespace
}  // namespace folio
