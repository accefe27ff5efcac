// JSON configuration files as a model folder holds them (config.json, preprocessor_config.json, a
// safetensors index): the document as one object, and its keys read with their types checked and a fallback
// for an absent key, each error naming the file and the key.
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

// The JSON object text holds. Throws folio::Error naming `origin` where it is not valid JSON or not an
// object.
nlohmann::json parse_json_object(std::string_view text, const std::string& origin);

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

// Throw naming the key unless each value is positive.
void require_positive(const ObjectReader& reader, std::string_view key, double value);
void require_positive(const ObjectReader& reader,
                      std::initializer_list<std::pair<std::string_view, int>> values);

}  // namespace folio
