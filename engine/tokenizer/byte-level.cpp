#include "engine/tokenizer/byte-level.h"

#include <unicode/uregex.h>
#include <unicode/utext.h>

#include <array>

#include "engine/common/error.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio {

namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for U+0100 onwards in order.
struct ByteTable {
    std::array<uint32_t, 256> code_point{};
    std::array<int16_t, 324> byte_of{};  // by code point below 324; -1 where none stands for a byte

    ByteTable() {
        byte_of.fill(-1);
        uint32_t next = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            code_point[b] = printable ? b : next++;
            byte_of[code_point[b]] = static_cast<int16_t>(b);
        }
    }
};

const ByteTable& byte_table() {
    static const ByteTable table;
    return table;
}

class IcuError {
public:
    UErrorCode* operator&() { return &status_; }
    bool failed() const { return U_FAILURE(status_); }
    const char* name() const { return u_errorName(status_); }
    UErrorCode code() const { return status_; }

private:
    UErrorCode status_ = U_ZERO_ERROR;
};

struct RegexCloser {
    void operator()(URegularExpression* r) const { uregex_close(r); }
};
struct TextCloser {
    void operator()(UText* t) const { utext_close(t); }
};

}  // namespace

std::string byte_level_encode(std::string_view bytes) {
    const ByteTable& table = byte_table();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        append_utf8(out, table.code_point[static_cast<uint8_t>(c)]);
    }
    return out;
}

std::string byte_level_bytes(std::string_view token) {
    const ByteTable& table = byte_table();
    std::string out;
    out.reserve(token.size());
    for (size_t pos = 0; pos < token.size();) {
        const CodePoint c = code_point_at(token, pos);
        if (c.value >= table.byte_of.size() || table.byte_of[c.value] < 0) {
            return std::string(token);
        }
        out.push_back(static_cast<char>(table.byte_of[c.value]));
        pos += c.size;
    }
    return out;
}

// Walks bytes as Rust's lossy UTF-8 reading does: each step a whole character (valid) or a maximal
// ill-formed part, given to step(begin, size, valid, finishable) where finishable marks an ill-formed part
// that is only cut short by the end of the bytes.
template <class Step>
void walk_utf8(std::string_view bytes, Step step) {
    const auto at = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
    const auto in = [](uint8_t b, uint8_t lo, uint8_t hi) { return b >= lo && b <= hi; };
    size_t i = 0;
    while (i < bytes.size()) {
        const uint8_t b = at(i);
        if (b < 0x80) {
            step(i, size_t{1}, true, false);
            ++i;
            continue;
        }
        size_t width = 0;
        uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte
        if (in(b, 0xC2, 0xDF)) {
            width = 2;
        } else if (in(b, 0xE0, 0xEF)) {
            width = 3;
            lo = b == 0xE0 ? 0xA0 : 0x80;
            hi = b == 0xED ? 0x9F : 0xBF;
        } else if (in(b, 0xF0, 0xF4)) {
            width = 4;
            lo = b == 0xF0 ? 0x90 : 0x80;
            hi = b == 0xF4 ? 0x8F : 0xBF;
        }
        size_t n = 1;
        if (width > 0) {
            while (n < width && i + n < bytes.size() &&
                   in(at(i + n), n == 1 ? lo : uint8_t{0x80}, n == 1 ? hi : uint8_t{0xBF})) {
                ++n;
            }
        }
        const bool valid = width > 0 && n == width;
        step(i, n, valid, !valid && width > 0 && i + n == bytes.size());
        i += n;
    }
}

std::string utf8_lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    walk_utf8(bytes, [&](size_t begin, size_t n, bool valid, bool) {
        if (valid) {
            out.append(bytes.substr(begin, n));
        } else {
            out.append(kReplacementCharacter);  // one for the maximal ill-formed part
        }
    });
    return out;
}

size_t utf8_unfinished_tail(std::string_view bytes) {
    size_t tail = 0;
    walk_utf8(bytes, [&](size_t, size_t n, bool, bool finishable) { tail = finishable ? n : 0; });
    return tail;
}

std::string icu_pattern(std::string_view pattern) {
    std::string out;
    out.reserve(pattern.size() + 16);
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '\\' || i + 1 == pattern.size()) {
            out.push_back(pattern[i]);
            continue;
        }
        const char next = pattern[++i];
        if (next == 's') {
            out.append("\\p{White_Space}");
        } else if (next == 'S') {
            out.append("\\P{White_Space}");
        } else {
            out.push_back('\\');
            out.push_back(next);
        }
    }
    return out;
}

struct RegexSplitter::Compiled {
    std::unique_ptr<URegularExpression, RegexCloser> regex;
};

RegexSplitter::RegexSplitter(std::string_view pattern, bool literal, std::string_view source)
    : compiled_(std::make_unique<Compiled>()) {
    if (pattern.empty()) {
        fail("tokenizer: ", source, ": a Split pre-tokenizer has an empty pattern");
    }
    if (!is_valid_utf8(pattern)) {
        fail("tokenizer: ", source, ": a Split pre-tokenizer's pattern is not valid UTF-8");
    }
    const std::string text = literal ? std::string(pattern) : icu_pattern(pattern);
    IcuError status;
    UParseError where{};
    std::unique_ptr<UText, TextCloser> source_text(
        utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status));
    if (!status.failed()) {
        compiled_->regex.reset(
            uregex_openUText(source_text.get(), literal ? UREGEX_LITERAL : 0, &where, &status));
    }
    if (status.failed()) {
        fail("tokenizer: ", source, ": the Split pattern \"", pattern, "\" is not a regular expression (",
             status.name(), " at offset ", where.offset, ")");
    }
}

RegexSplitter::~RegexSplitter() = default;

std::vector<std::string_view> RegexSplitter::split(std::string_view text, SplitBehavior behavior) const {
    // The compiled pattern is shared; each split matches with a clone of its own.
    IcuError status;
    std::unique_ptr<URegularExpression, RegexCloser> regex(uregex_clone(compiled_->regex.get(), &status));
    std::unique_ptr<UText, TextCloser> input(
        utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status));
    // A pattern from an untrusted file may backtrack without end: each match has a bounded number of steps.
    constexpr int32_t kMatchStepLimit = 10000;
    if (!status.failed()) {
        uregex_setTimeLimit(regex.get(), kMatchStepLimit, &status);
        uregex_setUText(regex.get(), input.get(), &status);
    }
    struct Segment {
        size_t begin, end;
        bool match;
    };
    std::vector<Segment> segments;
    size_t last = 0;
    while (!status.failed() && uregex_findNext(regex.get(), &status)) {
        const auto begin = static_cast<size_t>(uregex_start64(regex.get(), 0, &status));
        const auto end = static_cast<size_t>(uregex_end64(regex.get(), 0, &status));
        if (status.failed() || begin == end) {
            continue;
        }
        if (begin > last) {
            segments.push_back({last, begin, false});
        }
        segments.push_back({begin, end, true});
        last = end;
    }
    if (status.failed()) {
        fail("tokenizer: splitting text by a regular expression failed (", status.name(), ")",
             status.code() == U_REGEX_TIME_OUT ? ": the pattern backtracks too long on this text" : "");
    }
    if (last < text.size()) {
        segments.push_back({last, text.size(), false});
    }
    std::vector<std::string_view> pieces;
    const auto piece = [&](size_t begin, size_t end) { pieces.push_back(text.substr(begin, end - begin)); };
    switch (behavior) {
        case SplitBehavior::Isolated:
            for (const Segment& s : segments) {
                piece(s.begin, s.end);
            }
            break;
        case SplitBehavior::Removed:
            for (const Segment& s : segments) {
                if (!s.match) {
                    piece(s.begin, s.end);
                }
            }
            break;
        case SplitBehavior::MergedWithPrevious:
            for (size_t i = 0; i < segments.size(); ++i) {
                const bool joins = segments[i].match && i > 0 && !segments[i - 1].match;
                if (joins) {
                    pieces.back() =
                        text.substr(segments[i - 1].begin, segments[i].end - segments[i - 1].begin);
                } else {
                    piece(segments[i].begin, segments[i].end);
                }
            }
            break;
        case SplitBehavior::MergedWithNext:
            for (size_t i = 0; i < segments.size(); ++i) {
                if (segments[i].match && i + 1 < segments.size() && !segments[i + 1].match) {
                    piece(segments[i].begin, segments[i + 1].end);
                    ++i;
                } else {
                    piece(segments[i].begin, segments[i].end);
                }
            }
            break;
        case SplitBehavior::Contiguous:
            for (size_t i = 0; i < segments.size(); ++i) {
                if (segments[i].match && i > 0 && segments[i - 1].match) {
                    pieces.back() = text.substr(
                        pieces.back().data() - text.data(),
                        segments[i].end - static_cast<size_t>(pieces.back().data() - text.data()));
                } else {
                    piece(segments[i].begin, segments[i].end);
                }
            }
            break;
    }
    return pieces;
}

}  // namespace folio
