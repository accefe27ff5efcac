// Splits a template's source into tokens as jinja2's lexer does with trim_blocks, lstrip_blocks and
// keep_trailing_newline=False: text between tags (whitespace control already applied), tag delimiters,
// and the names, literals and operators inside tags. Comments are dropped; {% raw %} becomes text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace folio::jinja {

enum class TokenType {
    Text,
    VariableBegin,
    VariableEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,   // text holds the unescaped value
    Integer,  // text holds the digits, underscores removed
    Float,
    Operator,
    End,
};

struct Token {
    TokenType type;
    std::string text;
    size_t offset;  // into the normalized source, for line and column
};

// The source with newlines normalized to "\n" and one trailing newline removed, as jinja2 reads it.
std::string normalize_source(std::string_view source);

// Tokenizes a normalized source. Throws folio::Error naming `origin`, line and column.
std::vector<Token> tokenize(const std::string& source, const std::string& origin);

// "origin:line:column" of an offset into a normalized source.
std::string describe_position(const std::string& source, const std::string& origin, size_t offset);

}  // namespace folio::jinja
