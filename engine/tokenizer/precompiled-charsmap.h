// A SentencePiece normalizer compiled into its model: a Darts double-array trie over UTF-8 byte strings whose
// values are offsets into a blob of NUL-terminated replacements. Applied as the tokenizers library's
// Precompiled normalizer applies it: per extended grapheme cluster shorter than six bytes, the replacement of
// the cluster's shortest prefix in the trie stands for the whole cluster; other clusters go code point by
// code point.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

class PrecompiledCharsmap {
public:
    // Parses the serialized form (u32 little-endian trie size in bytes, the trie's u32 units, the replacement
    // blob); throws naming `source` when it is malformed.
    PrecompiledCharsmap(std::string_view bytes, std::string_view source);

    std::string normalize(std::string_view text) const;
    // The replacement of the shortest prefix of chunk that the trie holds.
    std::optional<std::string_view> transform(std::string_view chunk) const;

    size_t n_units() const { return units_.size(); }

private:
    std::vector<uint32_t> units_;
    std::string replacements_;
    std::string source_;
};

}  // namespace folio
