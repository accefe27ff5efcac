#include "engine/chat-template/jinja-text.h"

#include <cstdio>

namespace folio::jinja {

bool is_py_space(char32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
           c == 0x205f || c == 0x3000;
}

// Simple case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (what chat text needs).
char32_t ascii_upper(char32_t c) {
    if (c >= 'a' && c <= 'z') {
        return c - 32;
    }
    if ((c >= 0xe0 && c <= 0xfe && c != 0xf7) || (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) ||
        (c >= 0x430 && c <= 0x44f)) {
        return c - 32;
    }
    if (c == 0xff) {
        return 0x178;
    }
    if (c == 0x3c2) {
        return 0x3a3;
    }
    if (c >= 0x450 && c <= 0x45f) {
        return c - 80;
    }
    if (((c >= 0x100 && c <= 0x137) || (c >= 0x14a && c <= 0x177)) && (c & 1) == 1) {
        return c - 1;
    }
    if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) && (c & 1) == 0) {
        return c - 1;
    }
    return c;
}
char32_t ascii_lower(char32_t c) {
    if (c >= 'A' && c <= 'Z') {
        return c + 32;
    }
    if ((c >= 0xc0 && c <= 0xde && c != 0xd7) || (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) ||
        (c >= 0x410 && c <= 0x42f)) {
        return c + 32;
    }
    if (c == 0x178) {
        return 0xff;
    }
    if (c >= 0x400 && c <= 0x40f) {
        return c + 80;
    }
    if (((c >= 0x100 && c <= 0x137) || (c >= 0x14a && c <= 0x177)) && (c & 1) == 0) {
        return c + 1;
    }
    if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) && (c & 1) == 1) {
        return c + 1;
    }
    return c;
}
bool is_alpha(char32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0xc0 && c != 0xd7 && c != 0xf7);
}

std::string upper(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (const char32_t c : utf8_decode(s)) {
        if (c == 0xdf) {
            out += "SS";
        } else {
            utf8_append(out, ascii_upper(c));
        }
    }
    return out;
}

std::string lower(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (const char32_t c : utf8_decode(s)) {
        utf8_append(out, ascii_lower(c));
    }
    return out;
}

// Python's str.strip family: `chars` null strips whitespace.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
    const std::u32string text = utf8_decode(s);
    std::u32string set;
    const bool by_set = chars != nullptr && chars->is_string();
    if (by_set) {
        set = utf8_decode(chars->as_string());
    }
    auto strippable = [&](char32_t c) {
        return by_set ? set.find(c) != std::u32string::npos : is_py_space(c);
    };
    size_t begin = 0;
    size_t end = text.size();
    while (left && begin < end && strippable(text[begin])) {
        ++begin;
    }
    while (right && end > begin && strippable(text[end - 1])) {
        --end;
    }
    return utf8_encode(text.substr(begin, end - begin));
}

std::string capitalize(const std::string& s) {
    std::u32string text = utf8_decode(s);
    for (size_t i = 0; i < text.size(); ++i) {
        text[i] = i == 0 ? ascii_upper(text[i]) : ascii_lower(text[i]);
    }
    return utf8_encode(text);
}

// str.title(): a letter after a non-letter is upper case, others lower.
std::string py_title(const std::string& s) {
    std::u32string text = utf8_decode(s);
    bool previous_cased = false;
    for (char32_t& c : text) {
        const bool alpha = is_alpha(c);
        c = alpha ? (previous_cased ? ascii_lower(c) : ascii_upper(c)) : c;
        previous_cased = alpha;
    }
    return utf8_encode(text);
}

// jinja2's title filter: words begin after whitespace, '-', '(', '{', '[' or '<'.
std::string jinja_title(const std::string& s) {
    std::u32string text = utf8_decode(s);
    bool word_start = true;
    for (char32_t& c : text) {
        const bool separator = is_py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
        if (separator) {
            word_start = true;
            continue;
        }
        c = word_start ? ascii_upper(c) : ascii_lower(c);
        word_start = false;
    }
    return utf8_encode(text);
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& with,
                        int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts `with` between every code point (and at both ends).
        const std::u32string text = utf8_decode(s);
        int64_t done = 0;
        for (size_t i = 0; i <= text.size(); ++i) {
            if (count < 0 || done < count) {
                out += with;
                ++done;
            }
            if (i < text.size()) {
                utf8_append(out, text[i]);
            }
        }
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t found = s.find(old, pos);
        if (found == std::string::npos) {
            break;
        }
        out.append(s, pos, found - pos);
        out += with;
        pos = found + old.size();
        ++done;
    }
    out.append(s, pos, std::string::npos);
    return out;
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (u < 0x20) {
                    char hex[8];
                    std::snprintf(hex, sizeof hex, "\\u%04x", u);
                    out += hex;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

}  // namespace folio::jinja
