// JSON from outside: every fault of the text and every exception of the JSON library becomes folio::Error
// naming the file, in words, and the readers built on it (config.json, tokenizer.json, the safetensors
// index) refuse numbers out of range and values of the wrong type by file and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"
#include "engine/files/safetensors.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/paddleocr-vl/config.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {
namespace {

using nlohmann::json;

// The tokenizer.json that made nlohmann's parser throw out_of_range 406 past the tokenizer's catch: 2E0
// followed by 122 digits 1, a number too large for a double (tests/fuzz/corpus/fuzz-tokenizer-json/
// number-overflow.json holds the same bytes).
const std::string kOverflowingNumber = "2E0" + std::string(122, '1');

bool is_valid_utf8(const std::string& text) {
    size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        const size_t n = c < 0x80             ? 1
                         : (c & 0xE0) == 0xC0 ? 2
                         : (c & 0xF0) == 0xE0 ? 3
                         : (c & 0xF8) == 0xF0 ? 4
                                              : 0;
        if (n == 0 || i + n > text.size()) {
            return false;
        }
        for (size_t k = 1; k < n; ++k) {
            if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) {
                return false;
            }
        }
        i += n;
    }
    return true;
}

// The folio::Error `action` throws; a test failure where it throws nothing or something else.
std::string error_of(const std::function<void()>& action) {
    try {
        action();
    } catch (const Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not a folio::Error: " << e.what();
        return "";
    }
    ADD_FAILURE() << "nothing thrown";
    return "";
}

// The message starts with the file's name and shows none of the library's markers.
void expect_clean(const std::string& message, const std::string& origin) {
    EXPECT_TRUE(message.starts_with(origin + ": ")) << message;
    EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
    EXPECT_EQ(message.find("[json"), std::string::npos) << message;
    EXPECT_TRUE(is_valid_utf8(message)) << message;
    EXPECT_LT(message.size(), 300u) << message;
}

TEST(ParseJson, SyntaxErrorNamesFileLineAndColumn) {
    const std::string message = error_of([] { parse_json("{\n  \"a\": tru\n}", "config.json"); });
    expect_clean(message, "config.json");
    EXPECT_TRUE(message.starts_with("config.json: not valid JSON: line 2, column ")) << message;
    EXPECT_NE(message.find("invalid literal"), std::string::npos) << message;

    const std::string end = error_of([] { parse_json(R"({"messages": [)", "the body"); });
    expect_clean(end, "the body");
    EXPECT_NE(end.find("unexpected end of input"), std::string::npos) << end;
    expect_clean(error_of([] { parse_json("", "empty.json"); }), "empty.json");
}

TEST(ParseJson, NumberTooLargeForADoubleNamesFileAndPlace) {
    const std::string text = "{\n  \"vocab_size\": " + kOverflowingNumber + "\n}";
    const std::string message = error_of([&] { parse_json(text, "config.json"); });
    expect_clean(message, "config.json");
    EXPECT_NE(message.find("line 2, column 17"), std::string::npos) << message;
    EXPECT_NE(message.find("a number too large for a double: 2E0111"), std::string::npos) << message;
    EXPECT_NE(message.find("(125 bytes)"), std::string::npos) << message;
}

TEST(ParseJson, LongTokensAreCutAndBytesKeptValid) {
    // An unterminated string of 100 000 characters: the message quotes its start only.
    const std::string message = error_of([] { parse_json("[\"" + std::string(100000, 'x'), "long.json"); });
    expect_clean(message, "long.json");
    EXPECT_NE(message.find("... (100001 bytes)'"), std::string::npos) << message;
    // A long literal that is none, then what was expected.
    const std::string literal =
        error_of([] { parse_json("{\"a\" " + std::string(100, 't') + "}", "literal.json"); });
    expect_clean(literal, "literal.json");
    // A byte that is not UTF-8 inside a string.
    const std::string bad = error_of([] { parse_json("[\"a\xFF\xFE\"]", "bytes.json"); });
    expect_clean(bad, "bytes.json");
    EXPECT_NE(bad.find("UTF-8"), std::string::npos) << bad;
    // A token that itself holds the text the library puts before what it expected is still cut.
    const std::string holds =
        error_of([] { parse_json("\"abc'; expected " + std::string(500, 'x') + "\x01", "expected.json"); });
    expect_clean(holds, "expected.json");
    EXPECT_NE(holds.find("... (524 bytes)'"), std::string::npos) << holds;
    const std::string clause = error_of([] { parse_json("[1 '; expected ", "clause.json"); });
    expect_clean(clause, "clause.json");
    EXPECT_TRUE(clause.ends_with("last read: '1 ''; expected ']'")) << clause;
}

TEST(ParseJson, NestingIsBounded) {
    const std::string deep(kMaxJsonDepth + 1, '[');
    const std::string message = error_of([&] { parse_json(deep, "deep.json"); });
    expect_clean(message, "deep.json");
    EXPECT_NE(message.find("nested deeper than 512 levels"), std::string::npos) << message;
    // Brackets inside strings do not count, and the limit itself parses.
    EXPECT_NO_THROW(parse_json("[\"" + deep + "\"]", "strings.json"));
    const std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
    EXPECT_EQ(parse_json(at_limit, "limit.json").size(), 1u);
}

TEST(ParseJson, ObjectRequired) {
    EXPECT_EQ(error_of([] { parse_json_object("[1, 2]", "x.json"); }),
              "x.json: must be a JSON object, got array [1,2]");
    EXPECT_EQ(parse_json_object(R"({"a": 1})", "x.json").at("a"), 1);
}

TEST(ParseJson, TryParseSaysWhatIsWrong) {
    std::string problem;
    EXPECT_FALSE(try_parse_json("{\"a\": " + kOverflowingNumber + "}", problem));
    EXPECT_TRUE(problem.starts_with("not valid JSON: line 1, column 7: a number too large")) << problem;
    EXPECT_TRUE(try_parse_json("[1]", problem));
}

TEST(ParseJson, CallbackErrorsPassThrough) {
    const json::parser_callback_t refuse = [](int, json::parse_event_t event, json&) {
        if (event == json::parse_event_t::key) {
            fail("header.json: no keys here");
        }
        return true;
    };
    EXPECT_EQ(error_of([&] { parse_json(R"({"a": 1})", "header.json", refuse); }),
              "header.json: no keys here");
}

// Each kind of exception the JSON library throws while values are read becomes folio::Error naming the file.
TEST(ReadJsonValues, EveryLibraryExceptionNamesTheFile) {
    const std::vector<std::pair<std::string, std::function<void()>>> reads = {
        {"type_error", [] { static_cast<void>(json("text").get<int>()); }},
        {"out_of_range", [] { static_cast<void>(json::object().at("missing")); }},
        {"invalid_iterator",
         [] {
             json list = json::array({1, 2});
             const json other = json::array({3});
             list.erase(other.begin());
         }},
        {"other_error",
         [] {
             static_cast<void>(
                 json::object().patch(json::array({{{"op", "test"}, {"path", "/a"}, {"value", 1}}})));
         }},
        {"parse_error",
         [] {
             const json value = json::parse("{");
             EXPECT_TRUE(value.is_discarded());
         }},
    };
    for (const auto& [kind, read] : reads) {
        SCOPED_TRACE(kind);
        const std::string message = error_of([&] { read_json_values("tokenizer_config.json", read); });
        expect_clean(message, "tokenizer_config.json");
        EXPECT_TRUE(message.starts_with("tokenizer_config.json: unexpected JSON content: ")) << message;
    }
    EXPECT_EQ(read_json_values("x.json", [] { return 7; }), 7);
}

TEST(JsonErrorText, DropsTheLibrarysMarker) {
    try {
        static_cast<void>(json("text").get<int>());
        FAIL();
    } catch (const json::exception& e) {
        EXPECT_EQ(json_error_text(e), "type must be number, but is string");
    }
}

TEST(DescribeJson, CutsOnACharactersBoundary) {
    // 56 ASCII bytes then a four-byte character across the 57-byte cut.
    const json value = std::string(54, 'x') + "\xF0\x9F\x98\x80" + std::string(10, 'y');
    const std::string text = describe_json(value);
    EXPECT_TRUE(is_valid_utf8(text)) << text;
    EXPECT_EQ(text, "string \"" + std::string(54, 'x') + "...");
}

TEST(JsonInt64, IntegersInRangeOnly) {
    EXPECT_EQ(json_int64(json(42)), 42);
    EXPECT_EQ(json_int64(json(-3)), -3);
    EXPECT_EQ(json_int64(json(std::numeric_limits<int64_t>::max())), std::numeric_limits<int64_t>::max());
    EXPECT_EQ(json_int64(json::parse("9223372036854775808")), std::nullopt);
    EXPECT_EQ(json_int64(json::parse("18446744073709551615")), std::nullopt);
    EXPECT_EQ(json_int64(json(1.0)), std::nullopt);
    EXPECT_EQ(json_int64(json(1e300)), std::nullopt);
    EXPECT_EQ(json_int64(json("5")), std::nullopt);
    EXPECT_EQ(json_int64(json(true)), std::nullopt);
}

TEST(ObjectReader, NumbersOutOfRangeAndWrongTypesNameFileAndKey) {
    const std::string origin = "config.json";
    const json object = json::parse(R"({"huge": 18446744073709551615, "big": 4294967296, "float": 1e300,
                                         "text": "12", "nested": {"n": "x"}})");
    const ObjectReader reader(object, "", origin);
    EXPECT_EQ(error_of([&] { reader.integer64("huge", 0); }),
              "config.json: \"huge\" must be a 64-bit integer, got number 18446744073709551615");
    EXPECT_EQ(error_of([&] { reader.integer("big", 0); }),
              "config.json: \"big\" must be a 32-bit integer, got number 4294967296");
    EXPECT_EQ(error_of([&] { reader.integer("float", 0); }),
              "config.json: \"float\" must be an integer, got number 1e+300");
    EXPECT_EQ(error_of([&] { reader.number("text", 0); }),
              "config.json: \"text\" must be a number, got string \"12\"");
    EXPECT_EQ(error_of([&] { reader.object("nested")->integer("n", 0); }),
              "config.json: \"nested.n\" must be an integer, got string \"x\"");
}

// ------------------------------------------------------------------------------------------ real readers

TEST(JsonReaders, ConfigJsonRefusesHugeNumbersAndStrings) {
    const auto config = [](const std::string& key, const std::string& value) {
        return R"({"model_type": "paddleocr_vl", ")" + key + "\": " + value + "}";
    };
    std::string message =
        error_of([&] { parse_model_config(config("vocab_size", kOverflowingNumber), "config.json"); });
    expect_clean(message, "config.json");
    EXPECT_NE(message.find("a number too large for a double"), std::string::npos) << message;

    message =
        error_of([&] { parse_model_config(config("vocab_size", "18446744073709551615"), "config.json"); });
    EXPECT_EQ(message,
              "config.json: \"vocab_size\" must be a 64-bit integer, got number 18446744073709551615");
    message = error_of([&] { parse_model_config(config("hidden_size", "1e300"), "config.json"); });
    EXPECT_EQ(message, "config.json: \"hidden_size\" must be an integer, got number 1e+300");
    message = error_of([&] { parse_model_config(config("rms_norm_eps", "\"small\""), "config.json"); });
    EXPECT_EQ(message, "config.json: \"rms_norm_eps\" must be a number, got string \"small\"");
    message =
        error_of([&] { parse_preprocessor_config(R"({"max_pixels": "many"})", "preprocessor_config.json"); });
    EXPECT_EQ(message, "preprocessor_config.json: \"max_pixels\" must be an integer, got string \"many\"");
}

TEST(JsonReaders, TokenizerJsonCrashInputFromTheFuzzCorpus) {
    const std::filesystem::path file = std::filesystem::path(FOLIO_FIXTURES_DIR) / ".." / ".." / "fuzz" /
                                       "corpus" / "fuzz-tokenizer-json" / "number-overflow.json";
    const std::string text = read_file_text(file);
    ASSERT_EQ(text, kOverflowingNumber);
    const std::string message = error_of([&] { Tokenizer::from_tokenizer_json(text, file.string()); });
    expect_clean(message, "tokenizer: " + file.string());
    EXPECT_NE(message.find("line 1, column 1: a number too large for a double: 2E0111"), std::string::npos)
        << message;
}

TEST(JsonReaders, TokenizerJsonNumberOverflowIsAFolioError) {
    // The input as the fuzzer found it: the whole file is the number.
    std::string message =
        error_of([] { Tokenizer::from_tokenizer_json(kOverflowingNumber, "tokenizer.json"); });
    expect_clean(message, "tokenizer: tokenizer.json");
    EXPECT_NE(message.find("a number too large for a double"), std::string::npos) << message;

    message = error_of([] {
        Tokenizer::from_tokenizer_json(R"({"added_tokens": [{"id": 18446744073709551615, "content": "x"}]})",
                                       "tokenizer.json");
    });
    EXPECT_NE(message.find("added token.id is number 18446744073709551615, not a 64-bit integer"),
              std::string::npos)
        << message;
    message = error_of([] {
        Tokenizer::from_tokenizer_json(R"({"model": {"type": "BPE", "vocab": {"a": 1e300}}})",
                                       "tokenizer.json");
    });
    EXPECT_NE(message.find("the id of piece \"a\" is number 1e+300, not an integer"), std::string::npos)
        << message;
}

TEST(JsonReaders, SafetensorsIndex) {
    const SafetensorsIndex index =
        parse_safetensors_index(R"({"metadata": {"total_size": 8}, "weight_map": {"a": "one.safetensors",
                                    "b": "two.safetensors"}})",
                                "model.safetensors.index.json");
    ASSERT_EQ(index.weight_map.size(), 2u);
    EXPECT_EQ(index.weight_map[1], (std::pair<std::string, std::string>("b", "two.safetensors")));

    const std::string origin = "model.safetensors.index.json";
    EXPECT_EQ(
        error_of([&] { parse_safetensors_index(R"({"weight_map": {"a": "../x.safetensors"}})", origin); }),
        origin +
            ": weight_map entry 'a' names shard '../x.safetensors', which is not a file name inside the "
            "model folder");
    EXPECT_EQ(error_of([&] { parse_safetensors_index(R"({"weight_map": {"a": 3}})", origin); }),
              origin + ": weight_map entry 'a' must be a shard file name, got number 3");
    EXPECT_EQ(error_of([&] { parse_safetensors_index(R"({"weight_map": {}})", origin); }),
              origin + ": \"weight_map\" is empty");
    const std::string message = error_of([&] {
        parse_safetensors_index(R"({"metadata": {"total_size": )" + kOverflowingNumber + "}}", origin);
    });
    expect_clean(message, origin);
}

}  // namespace
}  // namespace folio
