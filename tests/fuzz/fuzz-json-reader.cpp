// Fuzzes the JSON parsing every reader of outside JSON goes through: any input either parses or throws
// folio::Error whose message names the file, in valid UTF-8, of bounded length, without the JSON library's
// markers; reading the value's members with their types checked throws nothing else either.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

bool is_valid_utf8(std::string_view text) {
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

// A message names the file, shows none of the library's markers (unless the input itself holds the text, in a
// key or a token the message quotes) and is valid UTF-8; a parse error's is short (a key a type error names
// may be long).
void check_message(std::string_view message, std::string_view origin, std::string_view input,
                   bool short_message) {
    check(message.starts_with(std::string(origin) + ": "));
    check(message.find("json.exception") == std::string_view::npos ||
          input.find("json.exception") != std::string_view::npos);
    check(is_valid_utf8(message));
    check(!short_message || message.size() < 400);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string origin = "fuzz.json";
    nlohmann::json value;
    try {
        value = folio::parse_json(text, origin);
    } catch (const folio::Error& e) {
        check_message(e.what(), origin, text, true);
        std::string problem;
        check(!folio::try_parse_json(text, problem).has_value() && !problem.empty());
        return 0;
    }
    if (!value.is_object()) {
        return 0;
    }
    // Every member read as each type: a value or a folio::Error naming the file and the key.
    const folio::ObjectReader reader(value, "", origin);
    for (auto it = value.begin(); it != value.end(); ++it) {
        const std::string& key = it.key();
        const nlohmann::json& member = it.value();
        const auto attempt = [&](auto read) {
            try {
                read();
            } catch (const folio::Error& e) {
                check_message(e.what(), origin, text, false);
            }
        };
        attempt([&] { static_cast<void>(reader.integer(key, 0)); });
        attempt([&] { static_cast<void>(reader.integer64(key, 0)); });
        attempt([&] { static_cast<void>(reader.number(key, 0.0)); });
        attempt([&] { static_cast<void>(reader.boolean(key, false)); });
        attempt([&] { static_cast<void>(reader.string(key, "")); });
        attempt([&] { static_cast<void>(reader.channels(key, {0.0f, 0.0f, 0.0f})); });
        attempt([&] { static_cast<void>(reader.object(key)); });
        const std::optional<int64_t> n = folio::json_int64(member);
        check(!n || member.is_number_integer());
    }
    return 0;
}
