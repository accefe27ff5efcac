#include "engine/tokenizer/unicode-text.h"

#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <memory>

#include "engine/common/error.h"

namespace folio {

CodePoint code_point_at(std::string_view s, size_t pos) {
    const auto lead = static_cast<unsigned char>(s[pos]);
    size_t size = 1;
    uint32_t value = lead;
    if (lead >= 0xF0) {
        size = 4;
        value = lead & 0x07;
    } else if (lead >= 0xE0) {
        size = 3;
        value = lead & 0x0F;
    } else if (lead >= 0xC0) {
        size = 2;
        value = lead & 0x1F;
    } else if (lead >= 0x80) {
        return {0xFFFD, 1};
    }
    if (size == 1) {
        return {value, 1};
    }
    if (s.size() - pos < size) {
        return {0xFFFD, 1};
    }
    for (size_t k = 1; k < size; ++k) {
        const auto byte = static_cast<unsigned char>(s[pos + k]);
        if ((byte & 0xC0) != 0x80) {
            return {0xFFFD, 1};
        }
        value = (value << 6) | (byte & 0x3F);
    }
    return {value, size};
}

void append_utf8(std::string& out, uint32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

bool is_valid_utf8(std::string_view bytes) {
    size_t i = 0;
    while (i < bytes.size()) {
        const auto lead = static_cast<unsigned char>(bytes[i]);
        int n_continuation = 0;
        uint32_t code_point = 0;
        if (lead < 0x80) {
            ++i;
            continue;
        } else if (lead >= 0xC2 && lead <= 0xDF) {
            n_continuation = 1;
            code_point = lead & 0x1F;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            n_continuation = 2;
            code_point = lead & 0x0F;
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            n_continuation = 3;
            code_point = lead & 0x07;
        } else {
            return false;
        }
        if (bytes.size() - i <= static_cast<size_t>(n_continuation)) {
            return false;
        }
        for (int k = 1; k <= n_continuation; ++k) {
            const auto byte = static_cast<unsigned char>(bytes[i + static_cast<size_t>(k)]);
            if ((byte & 0xC0) != 0x80) {
                return false;
            }
            code_point = (code_point << 6) | (byte & 0x3F);
        }
        const bool overlong =
            (n_continuation == 2 && code_point < 0x800) || (n_continuation == 3 && code_point < 0x10000);
        if (overlong || (code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF) {
            return false;
        }
        i += static_cast<size_t>(n_continuation) + 1;
    }
    return true;
}

Utf8Prefix utf8_prefix(std::string_view bytes) {
    size_t i = 0;
    while (i < bytes.size()) {
        const auto lead = static_cast<unsigned char>(bytes[i]);
        if (lead < 0x80) {
            ++i;
            continue;
        }
        // The continuation bytes a lead takes, and the range of the first: the ranges leave out overlong
        // forms, surrogates and code points above U+10FFFF (RFC 3629's table).
        size_t n_continuation = 0;
        unsigned char low = 0x80;
        unsigned char high = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) {
            n_continuation = 1;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            n_continuation = 2;
            low = lead == 0xE0 ? 0xA0 : 0x80;
            high = lead == 0xED ? 0x9F : 0xBF;
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            n_continuation = 3;
            low = lead == 0xF0 ? 0x90 : 0x80;
            high = lead == 0xF4 ? 0x8F : 0xBF;
        } else {
            return {i, true};
        }
        for (size_t k = 1; k <= n_continuation; ++k) {
            if (i + k >= bytes.size()) {
                return {i, false};
            }
            const auto byte = static_cast<unsigned char>(bytes[i + k]);
            if (byte < (k == 1 ? low : 0x80) || byte > (k == 1 ? high : 0xBF)) {
                return {i, true};
            }
        }
        i += n_continuation + 1;
    }
    return {i, false};
}

bool is_unicode_whitespace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

bool is_word_character(uint32_t c) {
    const auto cp = static_cast<UChar32>(c);
    return u_hasBinaryProperty(cp, UCHAR_ALPHABETIC) ||
           (U_GET_GC_MASK(cp) & (U_GC_M_MASK | U_GC_PC_MASK)) != 0 ||
           u_charType(cp) == U_DECIMAL_DIGIT_NUMBER || u_hasBinaryProperty(cp, UCHAR_JOIN_CONTROL);
}

std::string normalize_unicode(std::string_view text, UnicodeForm form) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* normalizer = nullptr;
    switch (form) {
        case UnicodeForm::NFC:
            normalizer = icu::Normalizer2::getNFCInstance(status);
            break;
        case UnicodeForm::NFD:
            normalizer = icu::Normalizer2::getNFDInstance(status);
            break;
        case UnicodeForm::NFKC:
            normalizer = icu::Normalizer2::getNFKCInstance(status);
            break;
        case UnicodeForm::NFKD:
            normalizer = icu::Normalizer2::getNFKDInstance(status);
            break;
    }
    if (U_FAILURE(status) || normalizer == nullptr) {
        fail("tokenizer: the Unicode normalizer is unavailable: ", u_errorName(status));
    }
    const icu::UnicodeString source =
        icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    const icu::UnicodeString result = normalizer->normalize(source, status);
    if (U_FAILURE(status)) {
        fail("tokenizer: Unicode normalization failed: ", u_errorName(status));
    }
    std::string out;
    result.toUTF8String(out);
    return out;
}

std::vector<size_t> grapheme_boundaries(std::string_view text) {
    std::vector<size_t> boundaries;
    if (text.empty()) {
        boundaries.push_back(0);
        return boundaries;
    }
    // ICU iterates UTF-16; map its offsets back to UTF-8 bytes as the code points go by.
    const icu::UnicodeString source =
        icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::BreakIterator> breaks(
        icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
    if (U_FAILURE(status) || !breaks) {
        fail("tokenizer: the grapheme segmenter is unavailable: ", u_errorName(status));
    }
    breaks->setText(source);
    int32_t utf16 = 0;
    size_t utf8 = 0;
    for (int32_t boundary = breaks->first(); boundary != icu::BreakIterator::DONE;
         boundary = breaks->next()) {
        while (utf16 < boundary && utf8 < text.size()) {
            const CodePoint cp = code_point_at(text, utf8);
            utf8 += cp.size;
            utf16 += cp.value >= 0x10000 ? 2 : 1;
        }
        boundaries.push_back(utf8);
    }
    if (boundaries.empty() || boundaries.back() != text.size()) {
        boundaries.push_back(text.size());
    }
    return boundaries;
}

}  // namespace folio
