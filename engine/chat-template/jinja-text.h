// Python's string operations as jinja2's filters and str's methods apply them, on UTF-8 text by code point:
// whitespace, case mapping, strip, capitalize, title (str's and the filter's), replace, and json.dumps of a
// string.
#pragma once

#include <cstdint>
#include <string>

#include "engine/chat-template/jinja-value.h"

namespace folio::jinja {

// Whether Python's str.isspace() holds for the code point.
bool is_py_space(char32_t c);
// Simple case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (what chat text needs).
char32_t ascii_upper(char32_t c);
char32_t ascii_lower(char32_t c);
bool is_alpha(char32_t c);
std::string upper(const std::string& s);
std::string lower(const std::string& s);
// Python's str.strip family: `chars` null strips whitespace.
std::string strip(const std::string& s, const Value* chars, bool left, bool right);
std::string capitalize(const std::string& s);
// str.title(): a letter after a non-letter is upper case, others lower.
std::string py_title(const std::string& s);
// jinja2's title filter: words begin after whitespace, '-', '(', '{', '[' or '<'.
std::string jinja_title(const std::string& s);
// str.replace(old, with, count); count < 0: every occurrence.
std::string replace_all(const std::string& s, const std::string& old, const std::string& with, int64_t count);
// json.dumps of a string with ensure_ascii=False: quotes, backslashes and control characters escaped.
std::string json_string(const std::string& s);

}  // namespace folio::jinja
