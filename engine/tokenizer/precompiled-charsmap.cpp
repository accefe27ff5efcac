#include "engine/tokenizer/precompiled-charsmap.h"

#include "engine/common/error.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio {

namespace {

bool has_leaf(uint32_t unit) {
    return ((unit >> 8) & 1) == 1;
}
uint32_t value_of(uint32_t unit) {
    return unit & ((1U << 31) - 1);
}
uint32_t label_of(uint32_t unit) {
    return unit & ((1U << 31) | 0xFF);
}
size_t offset_of(uint32_t unit) {
    return static_cast<size_t>(unit >> 10) << ((unit & (1U << 9)) >> 6);
}

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view bytes, std::string_view source) : source_(source) {
    if (bytes.size() < 4) {
        fail("tokenizer: ", source_, ": the precompiled charsmap has ", bytes.size(),
             " bytes, too few for its header");
    }
    uint32_t trie_bytes = 0;
    for (int i = 3; i >= 0; --i) {
        trie_bytes = (trie_bytes << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
    }
    const size_t n_units = trie_bytes / 4;
    if (n_units == 0 || n_units * 4 > bytes.size() - 4) {
        fail("tokenizer: ", source_, ": the precompiled charsmap declares a trie of ", trie_bytes,
             " bytes in ", bytes.size() - 4, " bytes");
    }
    units_.resize(n_units);
    for (size_t u = 0; u < n_units; ++u) {
        uint32_t unit = 0;
        for (int i = 3; i >= 0; --i) {
            unit = (unit << 8) | static_cast<unsigned char>(bytes[4 + u * 4 + static_cast<size_t>(i)]);
        }
        units_[u] = unit;
    }
    replacements_.assign(bytes.substr(4 + n_units * 4));
    if (!is_valid_utf8(replacements_)) {
        fail("tokenizer: ", source_, ": the precompiled charsmap's replacements are not valid UTF-8");
    }
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const {
    size_t node = offset_of(units_[0]);
    for (const char ch : chunk) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == 0) {
            break;
        }
        node ^= c;
        if (node >= units_.size()) {
            return std::nullopt;
        }
        const uint32_t unit = units_[node];
        if (label_of(unit) != c) {
            return std::nullopt;
        }
        node ^= offset_of(unit);
        if (has_leaf(unit)) {
            if (node >= units_.size()) {
                fail("tokenizer: ", source_, ": the precompiled charsmap's trie points outside itself");
            }
            const size_t begin = value_of(units_[node]);
            if (begin > replacements_.size()) {
                fail("tokenizer: ", source_, ": the precompiled charsmap names replacement ", begin, " of ",
                     replacements_.size(), " bytes");
            }
            size_t end = replacements_.find('\0', begin);
            if (end == std::string::npos) {
                end = replacements_.size();
            }
            const std::string_view replacement = std::string_view(replacements_).substr(begin, end - begin);
            if (!is_valid_utf8(replacement)) {
                fail("tokenizer: ", source_, ": the precompiled charsmap's replacement at ", begin,
                     " starts inside a character");
            }
            return replacement;
        }
    }
    return std::nullopt;
}

std::string PrecompiledCharsmap::normalize(std::string_view text) const {
    std::string out;
    out.reserve(text.size());
    const std::vector<size_t> bounds = grapheme_boundaries(text);
    for (size_t g = 0; g + 1 < bounds.size(); ++g) {
        const std::string_view grapheme = text.substr(bounds[g], bounds[g + 1] - bounds[g]);
        if (grapheme.size() < 6) {
            if (const auto replacement = transform(grapheme)) {
                out.append(*replacement);
                continue;
            }
        }
        size_t pos = 0;
        while (pos < grapheme.size()) {
            const size_t size = code_point_at(grapheme, pos).size;
            const std::string_view one = grapheme.substr(pos, size);
            if (const auto replacement = transform(one)) {
                out.append(*replacement);
            } else {
                out.append(one);
            }
            pos += size;
        }
    }
    return out;
}

}  // namespace folio
