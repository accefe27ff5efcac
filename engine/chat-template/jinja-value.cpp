#include "engine/chat-template/jinja-value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace folio::jinja {

const Value* DictData::find(const Value& key) const {
    for (const auto& [k, v] : items) {
        if (equal(k, key)) {
            return &v;
        }
    }
    return nullptr;
}

void DictData::set(Value key, Value value) {
    for (auto& [k, v] : items) {
        if (equal(k, key)) {
            v = std::move(value);
            return;
        }
    }
    items.emplace_back(std::move(key), std::move(value));
}

Value Value::list(std::vector<Value> items, bool tuple) {
    auto data = std::make_shared<ListData>();
    data->items = std::move(items);
    data->tuple = tuple;
    return Value(std::shared_ptr<const ListData>(std::move(data)));
}

Value Value::dict(DictData data) {
    return Value(std::shared_ptr<const DictData>(std::make_shared<DictData>(std::move(data))));
}

Value Value::function(std::string name, NativeFunction function) {
    auto callable = std::make_shared<Callable>();
    callable->name = std::move(name);
    callable->function = std::move(function);
    return Value(std::shared_ptr<const Callable>(std::move(callable)));
}

double Value::to_double() const {
    if (is_int()) {
        return static_cast<double>(as_int());
    }
    if (is_bool()) {
        return as_bool() ? 1.0 : 0.0;
    }
    return as_float();
}

bool Value::truthy() const {
    if (is_undefined() || is_none()) {
        return false;
    }
    if (is_bool()) {
        return as_bool();
    }
    if (is_int()) {
        return as_int() != 0;
    }
    if (is_float()) {
        return as_float() != 0.0;
    }
    if (is_string()) {
        return !as_string().empty();
    }
    if (is_list()) {
        return !as_list().items.empty();
    }
    if (is_dict()) {
        return !as_dict().items.empty();
    }
    return true;
}

std::string Value::type_name() const {
    if (is_undefined()) {
        return "Undefined";
    }
    if (is_none()) {
        return "NoneType";
    }
    if (is_bool()) {
        return "bool";
    }
    if (is_int()) {
        return "int";
    }
    if (is_float()) {
        return "float";
    }
    if (is_string()) {
        return "str";
    }
    if (is_list()) {
        return as_list().tuple ? "tuple" : "list";
    }
    if (is_dict()) {
        return "dict";
    }
    if (is_namespace()) {
        return "Namespace";
    }
    return "function";
}

bool equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) {
            return a.to_double() == b.to_double();
        }
        const int64_t x = a.is_bool() ? (a.as_bool() ? 1 : 0) : a.as_int();
        const int64_t y = b.is_bool() ? (b.as_bool() ? 1 : 0) : b.as_int();
        return x == y;
    }
    if (a.is_string() && b.is_string()) {
        return a.as_string() == b.as_string();
    }
    if (a.is_none() && b.is_none()) {
        return true;
    }
    if (a.is_undefined() && b.is_undefined()) {
        return true;
    }
    if (a.is_list() && b.is_list()) {
        const ListData& x = a.as_list();
        const ListData& y = b.as_list();
        if (x.tuple != y.tuple || x.items.size() != y.items.size()) {
            return false;
        }
        for (size_t i = 0; i < x.items.size(); ++i) {
            if (!equal(x.items[i], y.items[i])) {
                return false;
            }
        }
        return true;
    }
    if (a.is_dict() && b.is_dict()) {
        const DictData& x = a.as_dict();
        const DictData& y = b.as_dict();
        if (x.items.size() != y.items.size()) {
            return false;
        }
        for (const auto& [k, v] : x.items) {
            const Value* other = y.find(k);
            if (other == nullptr || !equal(v, *other)) {
                return false;
            }
        }
        return true;
    }
    if (a.is_callable() && b.is_callable()) {
        return &a.as_callable() == &b.as_callable();
    }
    if (a.is_namespace() && b.is_namespace()) {
        return &a.as_namespace() == &b.as_namespace();
    }
    return false;
}

std::string float_repr(double value) {
    if (std::isnan(value)) {
        return "nan";
    }
    if (std::isinf(value)) {
        return value > 0 ? "inf" : "-inf";
    }
    // Shortest round-trip digits in scientific form, then laid out as Python's repr does.
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
    std::string sci(buffer, result.ptr);
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const size_t e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exponent = std::stoi(sci.substr(e + 1));
    const int point = exponent + 1;  // digits before the decimal point
    std::string out = sign;
    if (point > 16 || point <= -4) {
        out += digits.substr(0, 1);
        if (digits.size() > 1) {
            out += "." + digits.substr(1);
        }
        char exp_text[16];
        std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out += exp_text;
    } else if (point <= 0) {
        out += "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
        out += digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
        out += digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
    }
    return out;
}

namespace {

std::string string_repr(const std::string& text) {
    const bool has_single = text.find('\'') != std::string::npos;
    const bool has_double = text.find('"') != std::string::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == quote || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", u);
            out += hex;
        } else {
            out += c;
        }
    }
    out += quote;
    return out;
}

}  // namespace

std::string to_repr(const Value& value) {
    if (value.is_string()) {
        return string_repr(value.as_string());
    }
    if (value.is_undefined()) {
        return "Undefined";
    }
    if (value.is_list()) {
        const ListData& list = value.as_list();
        std::string out = list.tuple ? "(" : "[";
        for (size_t i = 0; i < list.items.size(); ++i) {
            if (i > 0) {
                out += ", ";
            }
            out += to_repr(list.items[i]);
        }
        if (list.tuple && list.items.size() == 1) {
            out += ",";
        }
        out += list.tuple ? ")" : "]";
        return out;
    }
    if (value.is_dict()) {
        std::string out = "{";
        bool first = true;
        for (const auto& [k, v] : value.as_dict().items) {
            if (!first) {
                out += ", ";
            }
            first = false;
            out += to_repr(k) + ": " + to_repr(v);
        }
        return out + "}";
    }
    if (value.is_namespace()) {
        std::string out = "<Namespace {";
        bool first = true;
        for (const auto& [k, v] : value.as_namespace().attributes.items) {
            if (!first) {
                out += ", ";
            }
            first = false;
            out += to_repr(k) + ": " + to_repr(v);
        }
        return out + "}>";
    }
    return to_str(value);
}

std::string to_str(const Value& value) {
    if (value.is_undefined()) {
        return "";
    }
    if (value.is_none()) {
        return "None";
    }
    if (value.is_bool()) {
        return value.as_bool() ? "True" : "False";
    }
    if (value.is_int()) {
        return std::to_string(value.as_int());
    }
    if (value.is_float()) {
        return float_repr(value.as_float());
    }
    if (value.is_string()) {
        return value.as_string();
    }
    if (value.is_callable()) {
        return "<function " + value.as_callable().name + ">";
    }
    return to_repr(value);
}

std::u32string utf8_decode(const std::string& text) {
    std::u32string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        int extra = 0;
        char32_t code = 0;
        if (c < 0x80) {
            code = c;
        } else if ((c & 0xe0) == 0xc0) {
            extra = 1;
            code = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            extra = 2;
            code = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            extra = 3;
            code = c & 0x07;
        } else {
            out += U'\uFFFD';
            ++i;
            continue;
        }
        if (i + static_cast<size_t>(extra) >= text.size()) {
            out += U'\uFFFD';
            ++i;
            continue;
        }
        bool valid = true;
        for (int k = 1; k <= extra; ++k) {
            const auto next = static_cast<unsigned char>(text[i + static_cast<size_t>(k)]);
            if ((next & 0xc0) != 0x80) {
                valid = false;
                break;
            }
            code = (code << 6) | (next & 0x3f);
        }
        if (!valid) {
            out += U'\uFFFD';
            ++i;
            continue;
        }
        out += code;
        i += static_cast<size_t>(extra) + 1;
    }
    return out;
}

void utf8_append(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xc0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xe0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x110000) {
        out += static_cast<char>(0xf0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
        utf8_append(out, U'\uFFFD');
    }
}

std::string utf8_encode(const std::u32string& text) {
    std::string out;
    out.reserve(text.size());
    for (const char32_t c : text) {
        utf8_append(out, c);
    }
    return out;
}

size_t utf8_length(const std::string& text) {
    size_t n = 0;
    for (const char c : text) {
        if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) {
            ++n;
        }
    }
    return n;
}

}  // namespace folio::jinja
