#include "engine/tokenizer/token-decoder.h"

#include <charconv>

#include "engine/tokenizer/byte-level.h"
#include "engine/tokenizer/normalizer.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio {

int byte_fallback_value(std::string_view token) {
    if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') {
        return -1;
    }
    int value = 0;
    const auto [end, error] = std::from_chars(token.data() + 3, token.data() + 5, value, 16);
    return error == std::errc() && end == token.data() + 5 ? value : -1;
}

namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

std::vector<std::string> byte_fallback(std::vector<std::string> tokens) {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string bytes;
    const auto flush = [&] {
        if (bytes.empty()) {
            return;
        }
        if (is_valid_utf8(bytes)) {
            out.push_back(bytes);
        } else {
            for (size_t i = 0; i < bytes.size(); ++i) {
                out.emplace_back(kReplacementCharacter);
            }
        }
        bytes.clear();
    };
    for (std::string& token : tokens) {
        const int value = byte_fallback_value(token);
        if (value >= 0) {
            bytes.push_back(static_cast<char>(value));
            continue;
        }
        flush();
        out.push_back(std::move(token));
    }
    flush();
    return out;
}

std::string strip_token(const std::string& token, uint32_t c, size_t start, size_t stop) {
    std::vector<size_t> starts;
    size_t pos = 0;
    while (pos < token.size()) {
        starts.push_back(pos);
        pos += code_point_at(token, pos).size;
    }
    const size_t n = starts.size();
    starts.push_back(token.size());
    size_t begin = 0;
    for (size_t i = 0; i < std::min(start, n); ++i) {
        if (code_point_at(token, starts[i]).value != c) {
            break;
        }
        begin = i + 1;
    }
    size_t end = n;
    for (size_t i = 0; i < stop && i < n; ++i) {
        const size_t index = n - i - 1;
        if (code_point_at(token, starts[index]).value != c) {
            break;
        }
        end = index;
    }
    if (end <= begin) {
        return {};
    }
    return token.substr(starts[begin], starts[end] - starts[begin]);
}

}  // namespace

bool TokenDecoder::grows_at_end() const {
    // Whether an earlier step has joined tokens, so that a later one sees text across their boundaries.
    bool joined = false;
    for (size_t i = 0; i < steps_.size(); ++i) {
        const TokenDecoderStep& step = steps_[i];
        switch (step.kind) {
            case TokenDecoderStep::Kind::Replace:
                if (joined && !step.pattern.empty() &&
                    code_point_at(step.pattern, 0).size < step.pattern.size()) {
                    return false;
                }
                break;
            case TokenDecoderStep::Kind::Fuse:
                joined = true;
                break;
            case TokenDecoderStep::Kind::ByteLevel:
                if (i > 0) {
                    return false;  // the detokenizer reads the tokens' own bytes
                }
                joined = true;
                break;
            case TokenDecoderStep::Kind::ByteFallback: {
                if (joined) {
                    return false;
                }
                // The detokenizer reads byte tokens as they come, so the steps before must not change them.
                TokenDecoder before;
                before.steps_.assign(steps_.begin(), steps_.begin() + static_cast<std::ptrdiff_t>(i));
                for (int value = 0; value < 256; ++value) {
                    static constexpr char kHex[] = "0123456789ABCDEF";
                    const std::string token = {'<', '0', 'x', kHex[value >> 4], kHex[value & 15], '>'};
                    if (before.decode({token}) != token) {
                        return false;
                    }
                }
                joined = true;
                break;
            }
            case TokenDecoderStep::Kind::Strip:
            case TokenDecoderStep::Kind::Metaspace:
                break;
        }
    }
    return true;
}

std::string TokenDecoder::decode(std::vector<std::string> tokens) const {
    if (steps_.empty()) {
        std::string text;
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (i > 0) {
                text.push_back(' ');
            }
            text.append(tokens[i]);
        }
        return text;
    }
    for (const TokenDecoderStep& step : steps_) {
        switch (step.kind) {
            case TokenDecoderStep::Kind::Replace:
                for (std::string& token : tokens) {
                    token = replace_all(token, step.pattern, step.content);
                }
                break;
            case TokenDecoderStep::Kind::ByteFallback:
                tokens = byte_fallback(std::move(tokens));
                break;
            case TokenDecoderStep::Kind::Fuse: {
                std::string fused;
                for (const std::string& token : tokens) {
                    fused.append(token);
                }
                tokens.assign(1, std::move(fused));
                break;
            }
            case TokenDecoderStep::Kind::Strip:
                for (std::string& token : tokens) {
                    token = strip_token(token, step.strip_char, step.start, step.stop);
                }
                break;
            case TokenDecoderStep::Kind::ByteLevel: {
                std::string bytes;
                for (const std::string& token : tokens) {
                    bytes.append(byte_level_bytes(token));
                }
                tokens.assign(1, utf8_lossy(bytes));
                break;
            }
            case TokenDecoderStep::Kind::Metaspace:
                for (size_t i = 0; i < tokens.size(); ++i) {
                    // In the first token every replacement character goes, as in the reference.
                    const bool first = i == 0 && step.prepend_scheme != PrependScheme::Never;
                    tokens[i] = replace_all(tokens[i], step.content, first ? "" : " ");
                }
                break;
        }
    }
    std::string text;
    for (const std::string& token : tokens) {
        text.append(token);
    }
    return text;
}

}  // namespace folio
