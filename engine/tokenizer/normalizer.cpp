#include "engine/tokenizer/normalizer.h"

namespace folio {

namespace {

std::string strip(std::string_view text, bool left, bool right) {
    size_t begin = 0;
    size_t end = text.size();
    if (left) {
        while (begin < end) {
            const CodePoint cp = code_point_at(text, begin);
            if (!is_unicode_whitespace(cp.value)) {
                break;
            }
            begin += cp.size;
        }
    }
    if (right) {
        while (end > begin) {
            size_t start = end - 1;
            while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
                --start;
            }
            if (!is_unicode_whitespace(code_point_at(text, start).value)) {
                break;
            }
            end = start;
        }
    }
    return std::string(text.substr(begin, end - begin));
}

}  // namespace

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content) {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t found = text.find(pattern, pos);
        if (found == std::string_view::npos) {
            out.append(text.substr(pos));
            break;
        }
        out.append(text.substr(pos, found - pos));
        out.append(content);
        pos = found + pattern.size();
    }
    return out;
}

std::string Normalizer::normalize(std::string_view text) const {
    std::string current(text);
    for (const NormalizerStep& step : steps_) {
        switch (step.kind) {
            case NormalizerStep::Kind::Precompiled:
                current = step.charsmap->normalize(current);
                break;
            case NormalizerStep::Kind::Unicode:
                current = normalize_unicode(current, step.form);
                break;
            case NormalizerStep::Kind::Replace:
                current = replace_all(current, step.pattern, step.content);
                break;
            case NormalizerStep::Kind::Prepend:
                if (!current.empty()) {
                    current.insert(0, step.content);
                }
                break;
            case NormalizerStep::Kind::Strip:
                current = strip(current, step.strip_left, step.strip_right);
                break;
        }
    }
    return current;
}

}  // namespace folio
