#include "engine/chat-template/reasoning-parser.h"

#include <algorithm>
#include <cctype>

namespace folio {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

struct NamedFormat {
    std::string_view name;
    ReasoningFormat format;
};
// ernie-45-vl-thinking (FastDeploy's parser for ERNIE-4.5-VL-28B-A3B-Thinking) splits the answer at
// "</think>" as ernie-45-vl does; its tool-call handling has nothing to find, as requests with tools are
// refused.
constexpr NamedFormat kFormats[] = {{"deepseek_r1", ReasoningFormat::DeepSeekR1},
                                    {"ernie-45-vl", ReasoningFormat::Ernie45Vl},
                                    {"ernie-45-vl-thinking", ReasoningFormat::Ernie45Vl}};

// The length of the longest end of text that begins tag without being all of it.
size_t partial_tag_at_end(std::string_view text, std::string_view tag) {
    for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
        if (text.substr(text.size() - n) == tag.substr(0, n)) {
            return n;
        }
    }
    return 0;
}

}  // namespace

std::optional<ReasoningFormat> find_reasoning_format(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const NamedFormat& f : kFormats) {
        if (lower == f.name) {
            return f.format;
        }
    }
    return std::nullopt;
}

const char* reasoning_format_name(ReasoningFormat format) {
    for (const NamedFormat& f : kFormats) {
        if (f.format == format) {
            return f.name.data();
        }
    }
    return "unknown";
}

std::string reasoning_format_names() {
    std::string names;
    constexpr size_t n = std::size(kFormats);
    for (size_t i = 0; i < n; ++i) {
        names += i == 0 ? "" : i + 1 == n ? " or " : ", ";
        names += kFormats[i].name;
    }
    return names;
}

ReasoningStream::ReasoningStream(ReasoningFormat format)
    : state_(format == ReasoningFormat::DeepSeekR1 ? State::Opening : State::Reasoning) {}

ReasoningSplit ReasoningStream::push(std::string_view text) {
    held_.append(text);
    return take(false);
}

ReasoningSplit ReasoningStream::finish() {
    return take(true);
}

ReasoningSplit ReasoningStream::take(bool at_end) {
    ReasoningSplit out;
    for (;;) {
        switch (state_) {
            case State::Opening:
                // The answer may start with "<think>": wait while it still could.
                if (held_.starts_with(kOpen)) {
                    held_.erase(0, kOpen.size());
                } else if (!at_end && kOpen.starts_with(held_)) {
                    return out;
                }
                state_ = State::Reasoning;
                break;
            case State::Reasoning: {
                const size_t close = held_.find(kClose);
                if (close != std::string::npos) {
                    out.reasoning.append(held_, 0, close);
                    held_.erase(0, close + kClose.size());
                    state_ = State::Content;
                    break;
                }
                const size_t n_held = at_end ? 0 : partial_tag_at_end(held_, kClose);
                out.reasoning.append(held_, 0, held_.size() - n_held);
                held_.erase(0, held_.size() - n_held);
                return out;
            }
            case State::Content:
                out.content.append(held_);
                held_.clear();
                return out;
        }
    }
}

ReasoningSplit split_reasoning(ReasoningFormat format, std::string_view text) {
    ReasoningStream stream(format);
    ReasoningSplit split = stream.push(text);
    const ReasoningSplit rest = stream.finish();
    split.reasoning += rest.reasoning;
    split.content += rest.content;
    if (!stream.in_content()) {
        if (format == ReasoningFormat::Ernie45Vl) {
            return {"", std::string(text), false};
        }
        split.content_null = true;
    } else if (format == ReasoningFormat::DeepSeekR1 && split.content.empty()) {
        split.content_null = true;  // vLLM answers null where nothing follows "</think>"
    }
    return split;
}

}  // namespace folio
