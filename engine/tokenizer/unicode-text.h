// UTF-8 and Unicode helpers the tokenizer pipeline needs: code points, the Unicode properties that Rust's
// char::is_whitespace and regex \w test, normalization forms and grapheme clusters (both through ICU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

// The code point at s[pos] and its length in bytes; {U+FFFD, 1} for a byte that does not start a well-formed
// sequence (input is validated before it reaches the pipeline, so this only guards against misuse).
struct CodePoint {
    uint32_t value = 0;
    size_t size = 0;
};
CodePoint code_point_at(std::string_view s, size_t pos);

void append_utf8(std::string& out, uint32_t code_point);
bool is_valid_utf8(std::string_view bytes);

// How far bytes are well-formed UTF-8: n_complete bytes of whole characters from the start, then either
// nothing, the start of a character that more bytes may finish (invalid false), or bytes that no continuation
// makes well-formed (invalid true: a byte that starts no character, a continuation out of its range).
struct Utf8Prefix {
    size_t n_complete = 0;
    bool invalid = false;
};
Utf8Prefix utf8_prefix(std::string_view bytes);

// Unicode White_Space (Rust's char::is_whitespace, regex \s).
bool is_unicode_whitespace(uint32_t code_point);
// Regex \w: Alphabetic, marks, decimal digits, connector punctuation, Join_Control.
bool is_word_character(uint32_t code_point);

enum class UnicodeForm { NFC, NFD, NFKC, NFKD };
std::string normalize_unicode(std::string_view text, UnicodeForm form);

// Byte offsets where extended grapheme clusters start, followed by text.size().
std::vector<size_t> grapheme_boundaries(std::string_view text);

}  // namespace folio
