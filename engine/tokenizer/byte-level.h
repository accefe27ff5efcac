// Byte-level BPE (GPT-2, Llama 3): the text's bytes stand for printable code points before the model sees
// them, so every byte sequence has tokens; pre-tokenizers split the text with regular expressions first.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

// GPT-2's pre-tokenizer expression, which ByteLevel with use_regex applies.
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Each byte as the code point that stands for it (printable bytes as themselves, the others from U+0100 on).
std::string byte_level_encode(std::string_view bytes);
// The bytes a token stands for: each code point's byte where all of them stand for one, else the token's own
// UTF-8 (an added token such as "<|begin_of_text|>" maps either way to itself).
std::string byte_level_bytes(std::string_view token);
// The bytes as UTF-8, each maximal ill-formed subsequence replaced by one U+FFFD (Rust's
// String::from_utf8_lossy, which the ByteLevel decoder applies to all tokens' bytes at once).
std::string utf8_lossy(std::string_view bytes);
// The bytes at the end that begin a character more bytes could finish (0 where the bytes end between
// characters or in an ill-formed part): utf8_lossy of bytes cut there equals the lossy whole's beginning.
size_t utf8_unfinished_tail(std::string_view bytes);

// How a Split pre-tokenizer keeps what its pattern matches.
enum class SplitBehavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };

// A regular expression that splits text into pieces (ICU's engine, with \s and \S as Unicode White_Space as
// the tokenizers library's Oniguruma has them).
class RegexSplitter {
public:
    // A regular expression, or the literal text where literal is set. Throws naming source for a pattern
    // the engine refuses.
    RegexSplitter(std::string_view pattern, bool literal, std::string_view source);
    ~RegexSplitter();
    RegexSplitter(const RegexSplitter&) = delete;
    RegexSplitter& operator=(const RegexSplitter&) = delete;

    // The pieces of text as the tokenizers library's Split gives them: matches and the text between them,
    // kept by behavior; empty pieces are dropped. Every piece is a view into text.
    std::vector<std::string_view> split(std::string_view text, SplitBehavior behavior) const;

private:
    struct Compiled;
    std::unique_ptr<Compiled> compiled_;
};

// The expression as ICU reads it: \s and \S (outside and inside classes) as \p{White_Space} and its
// complement. Other escapes are left as they are.
std::string icu_pattern(std::string_view pattern);

}  // namespace folio
