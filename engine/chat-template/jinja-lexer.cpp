#include "engine/chat-template/jinja-lexer.h"

#include <algorithm>
#include <cstdint>

#include "engine/chat-template/jinja-value.h"
#include "engine/common/error.h"

namespace folio::jinja {

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) {
    return is_name_start(c) || is_digit(c);
}

std::string rstrip_space(std::string_view text) {
    size_t end = text.size();
    while (end > 0 && is_space(text[end - 1])) {
        --end;
    }
    return std::string(text.substr(0, end));
}

class Lexer {
public:
    Lexer(const std::string& source, const std::string& origin) : src_(source), origin_(origin) {}

    std::vector<Token> run() {
        while (pos_ < src_.size()) {
            lex_root();
        }
        tokens_.push_back({TokenType::End, "", src_.size()});
        return std::move(tokens_);
    }

private:
    [[noreturn]] void error(size_t offset, const std::string& what) {
        fail(describe_position(src_, origin_, offset), ": ", what);
    }

    // The text before a tag, with the tag's whitespace control or lstrip_blocks applied.
    void emit_text(std::string_view text, size_t offset, char sign, bool lstrip_allowed) {
        std::string data;
        if (sign == '-') {
            data = rstrip_space(text);
        } else if (sign != '+' && lstrip_allowed) {
            const size_t newline = text.rfind('\n');
            const size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
            const std::string_view tail = text.substr(line_start);
            if ((line_start > 0 || line_starting_) && !tail.empty() &&
                std::all_of(tail.begin(), tail.end(), is_space)) {
                data = std::string(text.substr(0, line_start));
            } else {
                data = std::string(text);
            }
        } else {
            data = std::string(text);
        }
        if (!data.empty()) {
            tokens_.push_back({TokenType::Text, std::move(data), offset});
        }
    }

    // After a block or comment end: "-" strips all whitespace, "+" nothing, else one newline (trim_blocks).
    void after_block_end(char sign) {
        if (sign == '-') {
            while (pos_ < src_.size() && is_space(src_[pos_])) {
                ++pos_;
            }
        } else if (sign != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
        }
        line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    }

    // Matches {%[-+]?\s*raw\s*(-%}\s*|%}) at `at`; returns the end of the match or npos.
    size_t match_raw_begin(size_t at) const {
        size_t p = at + 2;
        if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) {
            ++p;
        }
        while (p < src_.size() && is_space(src_[p])) {
            ++p;
        }
        if (src_.compare(p, 3, "raw") != 0) {
            return std::string::npos;
        }
        p += 3;
        while (p < src_.size() && is_space(src_[p])) {
            ++p;
        }
        if (src_.compare(p, 3, "-%}") == 0) {
            p += 3;
            while (p < src_.size() && is_space(src_[p])) {
                ++p;
            }
            return p;
        }
        if (src_.compare(p, 2, "%}") == 0) {
            return p + 2;
        }
        return std::string::npos;
    }

    void lex_root() {
        size_t open = pos_;
        while (true) {
            open = src_.find('{', open);
            if (open == std::string::npos || open + 1 >= src_.size()) {
                open = std::string::npos;
                break;
            }
            const char next = src_[open + 1];
            if (next == '%' || next == '{' || next == '#') {
                break;
            }
            ++open;
        }
        if (open == std::string::npos) {
            tokens_.push_back({TokenType::Text, src_.substr(pos_), pos_});
            pos_ = src_.size();
            return;
        }
        const char kind = src_[open + 1];
        char sign = 0;
        if (open + 2 < src_.size() && (src_[open + 2] == '-' || src_[open + 2] == '+')) {
            sign = src_[open + 2];
        }
        const std::string_view text(src_.data() + pos_, open - pos_);
        const size_t text_offset = pos_;
        if (kind == '%') {
            const size_t raw_end = match_raw_begin(open);
            if (raw_end != std::string::npos) {
                emit_text(text, text_offset, sign, true);
                pos_ = raw_end;
                line_starting_ = src_[pos_ - 1] == '\n';
                lex_raw(open);
                return;
            }
        }
        emit_text(text, text_offset, sign, kind != '{');
        pos_ = open + 2 + (sign != 0 ? 1 : 0);
        line_starting_ = false;
        if (kind == '#') {
            lex_comment(open);
        } else if (kind == '%') {
            tokens_.push_back({TokenType::BlockBegin, "", open});
            lex_tag(false, open);
        } else {
            tokens_.push_back({TokenType::VariableBegin, "", open});
            lex_tag(true, open);
        }
    }

    void lex_comment(size_t open) {
        const size_t close = src_.find("#}", pos_);
        if (close == std::string::npos) {
            error(open, "missing end of comment tag");
        }
        char sign = 0;
        if (close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+')) {
            sign = src_[close - 1];
        }
        pos_ = close + 2;
        after_block_end(sign);
    }

    void lex_raw(size_t open) {
        size_t search = pos_;
        while (true) {
            const size_t tag = src_.find("{%", search);
            if (tag == std::string::npos) {
                error(open, "missing end of raw directive");
            }
            size_t p = tag + 2;
            char sign = 0;
            if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) {
                sign = src_[p];
                ++p;
            }
            while (p < src_.size() && is_space(src_[p])) {
                ++p;
            }
            if (src_.compare(p, 6, "endraw") == 0) {
                p += 6;
                while (p < src_.size() && is_space(src_[p])) {
                    ++p;
                }
                char end_sign = 0;
                if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) {
                    end_sign = src_[p];
                    ++p;
                }
                if (src_.compare(p, 2, "%}") == 0) {
                    emit_text(std::string_view(src_.data() + pos_, tag - pos_), pos_, sign, true);
                    pos_ = p + 2;
                    after_block_end(end_sign);
                    return;
                }
            }
            search = tag + 2;
        }
    }

    // Tokens inside {% %} or {{ }} up to the closing delimiter; closing delimiters inside brackets are
    // operators, as in jinja2.
    void lex_tag(bool variable, size_t open) {
        std::vector<char> brackets;
        while (true) {
            if (pos_ >= src_.size()) {
                error(open, variable ? "unexpected end of template, expected '}}'"
                                     : "unexpected end of template, expected '%}'");
            }
            if (brackets.empty()) {
                if (variable) {
                    if (src_.compare(pos_, 3, "-}}") == 0) {
                        pos_ += 3;
                        while (pos_ < src_.size() && is_space(src_[pos_])) {
                            ++pos_;
                        }
                        finish_tag(TokenType::VariableEnd);
                        return;
                    }
                    if (src_.compare(pos_, 2, "}}") == 0) {
                        pos_ += 2;
                        finish_tag(TokenType::VariableEnd);
                        return;
                    }
                } else {
                    if (src_.compare(pos_, 3, "+%}") == 0 || src_.compare(pos_, 3, "-%}") == 0) {
                        const char sign = src_[pos_];
                        pos_ += 3;
                        after_block_end(sign);
                        tokens_.push_back({TokenType::BlockEnd, "", pos_});
                        return;
                    }
                    if (src_.compare(pos_, 2, "%}") == 0) {
                        pos_ += 2;
                        after_block_end(0);
                        tokens_.push_back({TokenType::BlockEnd, "", pos_});
                        return;
                    }
                }
            }
            const char c = src_[pos_];
            if (is_space(c)) {
                ++pos_;
                continue;
            }
            const size_t start = pos_;
            if (is_digit(c)) {
                lex_number();
                continue;
            }
            if (is_name_start(c)) {
                while (pos_ < src_.size() && is_name_char(src_[pos_])) {
                    ++pos_;
                }
                tokens_.push_back({TokenType::Name, src_.substr(start, pos_ - start), start});
                continue;
            }
            if (c == '\'' || c == '"') {
                lex_string();
                continue;
            }
            static const char* const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                                     "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                                     "<",  ">",  "=",  ".",  ":",  "|",  ",", ";"};
            bool matched = false;
            for (const char* op : kOperators) {
                const std::string_view o(op);
                if (src_.compare(pos_, o.size(), o) == 0) {
                    matched = true;
                    pos_ += o.size();
                    if (o == "(" || o == "[" || o == "{") {
                        brackets.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
                    } else if (o == ")" || o == "]" || o == "}") {
                        if (brackets.empty()) {
                            error(start, "unexpected '" + std::string(o) + "'");
                        }
                        if (brackets.back() != o[0]) {
                            error(start, "unexpected '" + std::string(o) + "', expected '" +
                                             std::string(1, brackets.back()) + "'");
                        }
                        brackets.pop_back();
                    }
                    tokens_.push_back({TokenType::Operator, std::string(o), start});
                    break;
                }
            }
            if (!matched) {
                error(start, "unexpected char '" + std::string(1, c) + "'");
            }
        }
    }

    void finish_tag(TokenType type) {
        line_starting_ = src_[pos_ - 1] == '\n';
        tokens_.push_back({type, "", pos_});
    }

    // Digits with optional underscores between them.
    std::string digits() {
        std::string out;
        while (pos_ < src_.size()) {
            if (is_digit(src_[pos_])) {
                out += src_[pos_++];
            } else if (src_[pos_] == '_' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]) &&
                       !out.empty()) {
                ++pos_;
            } else {
                break;
            }
        }
        return out;
    }

    void lex_number() {
        const size_t start = pos_;
        std::string text = digits();
        bool is_float = false;
        const bool after_dot = start > 0 && src_[start - 1] == '.';
        if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
            ++pos_;
            text += '.';
            text += digits();
            is_float = true;
        }
        if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
            size_t p = pos_ + 1;
            std::string exponent = "e";
            if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) {
                exponent += src_[p++];
            }
            if (p < src_.size() && is_digit(src_[p])) {
                pos_ = p;
                text += exponent;
                text += digits();
                is_float = true;
            }
        }
        tokens_.push_back({is_float ? TokenType::Float : TokenType::Integer, text, start});
    }

    // A quoted string with Python's escapes (as jinja2 decodes them with "unicode-escape").
    void lex_string() {
        const size_t start = pos_;
        const char quote = src_[pos_++];
        std::string value;
        while (true) {
            if (pos_ >= src_.size()) {
                error(start, "unterminated string");
            }
            const char c = src_[pos_++];
            if (c == quote) {
                break;
            }
            if (c != '\\') {
                value += c;
                continue;
            }
            if (pos_ >= src_.size()) {
                error(start, "unterminated string");
            }
            const char e = src_[pos_++];
            switch (e) {
                case '\n':
                    break;
                case '\\':
                    value += '\\';
                    break;
                case '\'':
                    value += '\'';
                    break;
                case '"':
                    value += '"';
                    break;
                case 'a':
                    value += '\a';
                    break;
                case 'b':
                    value += '\b';
                    break;
                case 'f':
                    value += '\f';
                    break;
                case 'n':
                    value += '\n';
                    break;
                case 'r':
                    value += '\r';
                    break;
                case 't':
                    value += '\t';
                    break;
                case 'v':
                    value += '\v';
                    break;
                case 'x':
                case 'u':
                case 'U': {
                    const size_t count = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    uint32_t code = 0;
                    for (size_t k = 0; k < count; ++k) {
                        const char h = pos_ < src_.size() ? src_[pos_] : '\0';
                        int digit = -1;
                        if (h >= '0' && h <= '9') {
                            digit = h - '0';
                        } else if (h >= 'a' && h <= 'f') {
                            digit = h - 'a' + 10;
                        } else if (h >= 'A' && h <= 'F') {
                            digit = h - 'A' + 10;
                        }
                        if (digit < 0) {
                            error(start, "truncated \\" + std::string(1, e) + " escape in string");
                        }
                        code = code * 16 + static_cast<uint32_t>(digit);
                        ++pos_;
                    }
                    if (code > 0x10ffff) {
                        error(start, "illegal Unicode character in string");
                    }
                    utf8_append(value, static_cast<char32_t>(code));
                    break;
                }
                default:
                    if (e >= '0' && e <= '7') {
                        uint32_t code = static_cast<uint32_t>(e - '0');
                        for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7';
                             ++k) {
                            code = code * 8 + static_cast<uint32_t>(src_[pos_++] - '0');
                        }
                        utf8_append(value, static_cast<char32_t>(code));
                    } else {
                        value += '\\';
                        value += e;
                    }
            }
        }
        tokens_.push_back({TokenType::String, std::move(value), start});
    }

    const std::string& src_;
    const std::string& origin_;
    size_t pos_ = 0;
    bool line_starting_ = true;
    std::vector<Token> tokens_;
};

}  // namespace

std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') {
                ++i;
            }
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') {
        out.pop_back();
    }
    return out;
}

std::vector<Token> tokenize(const std::string& source, const std::string& origin) {
    return Lexer(source, origin).run();
}

std::string describe_position(const std::string& source, const std::string& origin, size_t offset) {
    offset = std::min(offset, source.size());
    size_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
        if (source[i] == '\n') {
            ++line;
            line_start = i + 1;
        }
    }
    const size_t column = utf8_length(source.substr(line_start, offset - line_start)) + 1;
    return origin + ":" + std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace folio::jinja
