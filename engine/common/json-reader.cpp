#include "engine/common/json-reader.h"

#include <cmath>
#include <limits>

#include "engine/common/error.h"

namespace folio {

using nlohmann::json;

std::string describe_json(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 60) {
        text = text.substr(0, 57) + "...";
    }
    return std::string(value.type_name()) + " " + text;
}

json parse_json_object(std::string_view text, const std::string& origin) {
    json value;
    try {
        value = json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        fail(origin, ": not valid JSON: ", e.what());
    }
    if (!value.is_object()) {
        fail(origin, ": must be a JSON object, got ", describe_json(value));
    }
    return value;
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
    if (value.is_number_unsigned()) {
        const auto n = value.get<uint64_t>();
        if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            type_error(key, "a 64-bit integer", value);
        }
        return static_cast<int64_t>(n);
    }
    if (!value.is_number_integer()) {
        type_error(key, "an integer", value);
    }
    return value.get<int64_t>();
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
}

void require_positive(const ObjectReader& reader,
                      std::initializer_list<std::pair<std::string_view, int>> values) {
    for (const auto& [key, value] : values) {
        require_positive(reader, key, value);
    }
}

}  // namespace folio
