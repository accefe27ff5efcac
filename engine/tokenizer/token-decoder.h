// The decoder of a tokenizer pipeline (tokenizers' SentencePiece-style family): steps that each turn the list
// of token strings into a new list, then the list joined. Without steps the tokens are joined with spaces.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

// The byte a byte fallback token "<0xXX>" stands for, or -1 for any other token.
int byte_fallback_value(std::string_view token);

enum class PrependScheme { Always, First, Never };

struct TokenDecoderStep {
    // ByteLevel: every token's bytes (byte_level_bytes) joined and read as UTF-8 (utf8_lossy), one token.
    enum class Kind { Replace, ByteFallback, Fuse, Strip, Metaspace, ByteLevel };
    Kind kind = Kind::Fuse;
    std::string pattern;        // Replace
    std::string content;        // Replace: the replacement; Metaspace: the replacement character
    uint32_t strip_char = ' ';  // Strip: up to start leading and stop trailing copies of it, per token
    size_t start = 0;
    size_t stop = 0;
    PrependScheme prepend_scheme = PrependScheme::Always;  // Metaspace: the first token loses its leading one
};

class TokenDecoder {
public:
    void add(TokenDecoderStep step) { steps_.push_back(std::move(step)); }
    bool empty() const { return steps_.empty(); }
    // Whether a step takes characters off the end of the text (Strip with stop > 0).
    bool strips_end() const {
        return std::any_of(steps_.begin(), steps_.end(), [](const TokenDecoderStep& s) {
            return s.kind == TokenDecoderStep::Kind::Strip && s.stop > 0;
        });
    }
    // Whether a ByteFallback step turns "<0xXX>" tokens into bytes.
    bool has_byte_fallback() const {
        return std::any_of(steps_.begin(), steps_.end(), [](const TokenDecoderStep& s) {
            return s.kind == TokenDecoderStep::Kind::ByteFallback;
        });
    }
    // Whether a ByteLevel step turns tokens into bytes.
    bool has_byte_level() const {
        return std::any_of(steps_.begin(), steps_.end(), [](const TokenDecoderStep& s) {
            return s.kind == TokenDecoderStep::Kind::ByteLevel;
        });
    }
    // Whether the text of a growing list of tokens only grows at its end, apart from what the incremental
    // detokenizer handles itself (the start of the text, trailing strips, byte runs): false where a step
    // matches across tokens an earlier step joined (a Replace of more than one character after Fuse,
    // ByteFallback or ByteLevel), or where ByteFallback or ByteLevel read tokens an earlier step changed.
    bool grows_at_end() const;
    std::string decode(std::vector<std::string> tokens) const;

private:
    std::vector<TokenDecoderStep> steps_;
};

}  // namespace folio
