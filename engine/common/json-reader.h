// JSON from outside Folio (a model folder's config.json, tokenizer files and safetensors headers, the Hub's
// answers, the server's request bodies, options given as JSON): parsing that turns every fault of the text
// and every exception of the JSON library into folio::Error naming where the text came from, and reads of an
// object's keys with their types checked and a fallback for an absent key, each error naming the file and
// the key.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace folio {

// The value's type and its text, cut after 60 characters, for error messages.
std::string describe_json(const nlohmann::json& value);

// Arrays and objects nested deeper than this are refused before parsing: no configuration, tokenizer or
// request comes near it, and readers that walk a value recursively stay within the stack.
constexpr int kMaxJsonDepth = 512;

// The message of a JSON library exception in words: without the library's marker
// ("[json.exception.parse_error.101]"), a token it quotes cut to a few dozen characters, valid UTF-8.
std::string json_error_text(const nlohmann::json::exception& error);

// The JSON value `text` holds. Throws folio::Error naming `origin` (and the line and column where it can)
// when the text is not valid JSON, holds a number too large for a double or nests deeper than
// kMaxJsonDepth; no exception of the JSON library leaves it. `callback` is nlohmann's parser callback; a
// folio::Error it throws passes through.
nlohmann::json parse_json(std::string_view text, std::string_view origin,
                          const nlohmann::json::parser_callback_t& callback = nullptr);

// As parse_json without the exception: nullopt, and `problem` says what is wrong and where ("not valid JSON:
// line 1, column 5: ..."), where the text is not JSON that Folio reads.
std::optional<nlohmann::json> try_parse_json(std::string_view text, std::string& problem,
                                             const nlohmann::json::parser_callback_t& callback = nullptr);

// As parse_json, and the value must be an object.
nlohmann::json parse_json_object(std::string_view text, std::string_view origin);

// Throws folio::Error naming `origin` for an exception of the JSON library raised while reading values
// parsed from it.
[[noreturn]] void throw_json_read_error(std::string_view origin, const nlohmann::json::exception& error);

// Runs `read`, the reading of values parsed from `origin`, and turns any JSON library exception that escapes
// it (a key or type the reader did not check) into folio::Error naming `origin`.
template <typename Read>
decltype(auto) read_json_values(std::string_view origin, Read&& read) {
    try {
        return std::forward<Read>(read)();
    } catch (const nlohmann::json::exception& e) {
        throw_json_read_error(origin, e);
    }
}

// The value as a 64-bit integer, or nullopt where it is not an integer (1.0 is not) or lies outside int64.
std::optional<int64_t> json_int64(const nlohmann::json& value);

// Reads the keys of one JSON object; `prefix` ("" or "vision_config.") qualifies key names in messages and
// `origin` names the file. A key that is absent or null reads as its fallback unless a caller asks for the
// raw value. The object and origin must outlive the reader.
class ObjectReader {
public:
    ObjectReader(const nlohmann::json& object, std::string prefix, const std::string& origin)
        : object_(object), prefix_(std::move(prefix)), origin_(origin) {}

    const std::string& origin() const { return origin_; }
    // The key as messages name it: quoted, with the prefix.
    std::string key_name(std::string_view key) const { return "\"" + prefix_ + std::string(key) + "\""; }

    // The value, or nullptr where the key is absent or null.
    const nlohmann::json* find(std::string_view key) const;
    bool is_null(std::string_view key) const;

    // Throws naming the file, the key, what it must be and what it is.
    [[noreturn]] void type_error(std::string_view key, std::string_view expected,
                                 const nlohmann::json& value) const;

    int64_t integer64(std::string_view key, int64_t fallback) const;
    int integer(std::string_view key, int fallback) const;
    double number(std::string_view key, double fallback) const;  // finite
    bool boolean(std::string_view key, bool fallback) const;
    std::string string(std::string_view key, const std::string& fallback) const;
    // An RGB triple (image_mean, image_std): one number for every channel, or a list of 3 numbers.
    std::array<float, 3> channels(std::string_view key, const std::array<float, 3>& fallback) const;
    // A nested object's reader, or nullopt where the key is absent or null.
    std::optional<ObjectReader> object(std::string_view key) const;

    // A value of the key (an element of its list, say) as those types.
    int as_integer(std::string_view key, const nlohmann::json& value) const;
    int64_t as_integer64(std::string_view key, const nlohmann::json& value) const;
    double as_number(std::string_view key, const nlohmann::json& value) const;

private:
    const nlohmann::json& object_;
    std::string prefix_;
    const std::string& origin_;
};

// Throw naming the key unless each value is positive and finite (a JSON number too large for the float it
// was read into is infinite).
void require_positive(const ObjectReader& reader, std::string_view key, double value);
void require_positive(const ObjectReader& reader,
                      std::initializer_list<std::pair<std::string_view, int>> values);

}  // namespace folio
