#include "engine/common/json-reader.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/common/error.h"

namespace folio {

using nlohmann::json;

namespace {

// The largest end at or before `end` that does not cut a UTF-8 character of `text`.
size_t character_boundary(std::string_view text, size_t end) {
    while (end > 0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
        --end;
    }
    return end;
}

}  // namespace

std::string describe_json(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 60) {
        // Cut on a character's boundary: the message stays valid UTF-8.
        text = text.substr(0, character_boundary(text, 57)) + "...";
    }
    return std::string(value.type_name()) + " " + text;
}

namespace {

// Longest token an error message quotes, in bytes.
constexpr size_t kMaxQuotedToken = 40;

// The text with every byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        size_t n = 0;
        uint32_t min = 0;
        if (c < 0x80) {
            n = 1;
        } else if ((c & 0xE0) == 0xC0) {
            n = 2;
            min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3;
            min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4;
            min = 0x10000;
        }
        bool ok = n > 0 && i + n <= text.size();
        uint32_t code = n == 1 ? c : (c & (0x7F >> n));
        for (size_t k = 1; ok && k < n; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            ok = (next & 0xC0) == 0x80;
            code = (code << 6) | (next & 0x3F);
        }
        ok = ok && code >= min && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF);
        if (ok) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

// The token cut to kMaxQuotedToken bytes (on a character's boundary), with "..." and its length where cut.
std::string quoted_token(std::string_view token) {
    if (token.size() <= kMaxQuotedToken) {
        return std::string(token);
    }
    return std::string(token.substr(0, character_boundary(token, kMaxQuotedToken))) + "... (" +
           std::to_string(token.size()) + " bytes)";
}

// The message with the token after `marker` cut as quoted_token does. The library writes
// "last read: 'TOKEN'", then "; expected WHAT" for some faults.
std::string cut_quoted(std::string message, std::string_view marker) {
    const size_t start = message.find(marker);
    if (start == std::string::npos) {
        return message;
    }
    const size_t begin = start + marker.size();
    // The token may itself hold "'; expected ", so the clause is recognised by what the library can expect.
    static constexpr std::string_view kExpected[] = {"'[', '{', or a literal",
                                                     "end of input",
                                                     "'['",
                                                     "'{'",
                                                     "']'",
                                                     "'}'",
                                                     "':'",
                                                     "','",
                                                     "string literal",
                                                     "number literal",
                                                     "true literal",
                                                     "false literal",
                                                     "null literal",
                                                     "<parse error>",
                                                     "<uninitialized>",
                                                     "unknown token"};
    size_t end = std::string::npos;
    for (const std::string_view name : kExpected) {
        const std::string clause = "'; expected " + std::string(name);
        if (message.ends_with(clause) && message.size() - clause.size() >= begin) {
            end = message.size() - clause.size();
            break;
        }
    }
    if (end == std::string::npos) {
        end = message.rfind('\'');
    }
    if (end == std::string::npos || end < begin) {
        return message;
    }
    return message.substr(0, begin) + quoted_token(std::string_view(message).substr(begin, end - begin)) +
           message.substr(end);
}

// Line and column (both from 1) of a byte offset.
std::string line_and_column(std::string_view text, size_t offset) {
    offset = std::min(offset, text.size());
    size_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++line;
            line_start = i + 1;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
}

// Where arrays and objects nest deeper than kMaxJsonDepth (strings skipped, so brackets in them do not
// count), or nullopt; the parser reports every other fault.
std::optional<size_t> too_deep_at(std::string_view text) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth) {
                return i;
            }
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return std::nullopt;
}

}  // namespace

std::string json_error_text(const json::exception& error) {
    std::string message = error.what();
    // The library's marker: "[json.exception.KIND.ID] ".
    if (message.starts_with("[json.exception.")) {
        const size_t end = message.find("] ");
        if (end != std::string::npos) {
            message.erase(0, end + 2);
        }
    }
    // A parse error: "parse error at line L, column C: syntax error while parsing value - WHAT".
    if (message.starts_with("parse error")) {
        message.erase(0, std::string_view("parse error").size());
        if (message.starts_with(" at ")) {
            message.erase(0, 4);
        } else if (message.starts_with(": ")) {
            message.erase(0, 2);
        }
        const size_t syntax = message.find("syntax error");
        const size_t dash = message.find(" - ", syntax == std::string::npos ? 0 : syntax);
        if (syntax != std::string::npos && dash != std::string::npos) {
            message.erase(syntax, dash + 3 - syntax);
        }
        message = cut_quoted(std::move(message), "last read: '");
    } else if (message.starts_with("number overflow parsing '")) {
        message = "a number too large for a double: " +
                  quoted_token(std::string_view(message).substr(25, message.size() - 26));
    }
    return valid_utf8(message);
}

std::optional<json> try_parse_json(std::string_view text, std::string& problem,
                                   const json::parser_callback_t& callback) {
    if (const std::optional<size_t> at = too_deep_at(text)) {
        problem = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (" +
                  line_and_column(text, *at) + ")";
        return std::nullopt;
    }
    try {
        return json::parse(text.begin(), text.end(), callback);
    } catch (const json::out_of_range& e) {
        problem = "not valid JSON: ";
        // 406, a number that overflows a double: the parser gives no position, the number's text does.
        const std::string what = e.what();
        const size_t quote = what.find('\'');
        if (e.id == 406 && quote != std::string::npos && what.size() > quote + 2) {
            const size_t at = text.find(std::string_view(what).substr(quote + 1, what.size() - quote - 2));
            if (at != std::string_view::npos) {
                problem += line_and_column(text, at) + ": ";
            }
        }
        problem += json_error_text(e);
    } catch (const json::parse_error& e) {
        // The library counts the character it stopped on into its line and column (a line's end reads as
        // column 0 of the next line); the byte it stopped on is named instead.
        std::string what = json_error_text(e);
        if (what.starts_with("line ") && what.find(": ") != std::string::npos) {
            what.erase(0, what.find(": ") + 2);
        }
        problem = "not valid JSON: " + line_and_column(text, e.byte > 0 ? e.byte - 1 : 0) + ": " + what;
    } catch (const json::exception& e) {
        problem = "not valid JSON: " + json_error_text(e);
    }
    return std::nullopt;
}

json parse_json(std::string_view text, std::string_view origin, const json::parser_callback_t& callback) {
    std::string problem;
    std::optional<json> value = try_parse_json(text, problem, callback);
    if (!value) {
        fail(origin, ": ", problem);
    }
    return std::move(*value);
}

json parse_json_object(std::string_view text, std::string_view origin) {
    json value = parse_json(text, origin);
    if (!value.is_object()) {
        fail(origin, ": must be a JSON object, got ", describe_json(value));
    }
    return value;
}

void throw_json_read_error(std::string_view origin, const json::exception& error) {
    fail(origin, ": unexpected JSON content: ", json_error_text(error));
}

std::optional<int64_t> json_int64(const json& value) {
    if (value.is_number_unsigned()) {
        const auto n = value.get<uint64_t>();
        if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return std::nullopt;
        }
        return static_cast<int64_t>(n);
    }
    if (value.is_number_integer()) {
        return value.get<int64_t>();
    }
    return std::nullopt;
}

const json* ObjectReader::find(std::string_view key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
}

bool ObjectReader::is_null(std::string_view key) const {
    const auto it = object_.find(key);
    return it != object_.end() && it->is_null();
}

void ObjectReader::type_error(std::string_view key, std::string_view expected, const json& value) const {
    fail(origin_, ": ", key_name(key), " must be ", expected, ", got ", describe_json(value));
}

int64_t ObjectReader::integer64(std::string_view key, int64_t fallback) const {
    const json* value = find(key);
    return value ? as_integer64(key, *value) : fallback;
}

int ObjectReader::integer(std::string_view key, int fallback) const {
    const json* value = find(key);
    return value ? as_integer(key, *value) : fallback;
}

int ObjectReader::as_integer(std::string_view key, const json& value) const {
    const int64_t n = as_integer64(key, value);
    if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max()) {
        type_error(key, "a 32-bit integer", value);
    }
    return static_cast<int>(n);
}

int64_t ObjectReader::as_integer64(std::string_view key, const json& value) const {
    const std::optional<int64_t> n = json_int64(value);
    if (!n) {
        type_error(key, value.is_number_integer() ? "a 64-bit integer" : "an integer", value);
    }
    return *n;
}

double ObjectReader::number(std::string_view key, double fallback) const {
    const json* value = find(key);
    return value ? as_number(key, *value) : fallback;
}

double ObjectReader::as_number(std::string_view key, const json& value) const {
    if (!value.is_number()) {
        type_error(key, "a number", value);
    }
    const double x = value.get<double>();
    if (!std::isfinite(x)) {
        type_error(key, "a finite number", value);
    }
    return x;
}

bool ObjectReader::boolean(std::string_view key, bool fallback) const {
    const json* value = find(key);
    if (value && !value->is_boolean()) {
        type_error(key, "true or false", *value);
    }
    return value ? value->get<bool>() : fallback;
}

std::string ObjectReader::string(std::string_view key, const std::string& fallback) const {
    const json* value = find(key);
    if (value && !value->is_string()) {
        type_error(key, "a string", *value);
    }
    return value ? value->get<std::string>() : fallback;
}

std::array<float, 3> ObjectReader::channels(std::string_view key,
                                            const std::array<float, 3>& fallback) const {
    const json* value = find(key);
    if (!value) {
        return fallback;
    }
    if (value->is_number()) {
        const auto x = static_cast<float>(as_number(key, *value));
        return {x, x, x};
    }
    if (!value->is_array() || value->size() != 3) {
        type_error(key, "a number or a list of 3 numbers", *value);
    }
    std::array<float, 3> values{};
    for (size_t i = 0; i < 3; ++i) {
        if (!(*value)[i].is_number()) {
            type_error(key, "a number or a list of 3 numbers", *value);
        }
        values[i] = static_cast<float>(as_number(key, (*value)[i]));
    }
    return values;
}

std::optional<ObjectReader> ObjectReader::object(std::string_view key) const {
    const json* value = find(key);
    if (!value) {
        return std::nullopt;
    }
    if (!value->is_object()) {
        type_error(key, "an object", *value);
    }
    return ObjectReader(*value, prefix_ + std::string(key) + ".", origin_);
}

void require_positive(const ObjectReader& reader, std::string_view key, double value) {
    if (!(value > 0)) {
        fail(reader.origin(), ": ", reader.key_name(key), " must be positive, got ", value);
    }
    if (std::isinf(value)) {
        fail(reader.origin(), ": ", reader.key_name(key), " is too large for a number of its kind");
    }
}

void require_positive(const ObjectReader& reader,
                      std::initializer_list<std::pair<std::string_view, int>> values) {
    for (const auto& [key, value] : values) {
        require_positive(reader, key, value);
    }
}

}  // namespace folio
