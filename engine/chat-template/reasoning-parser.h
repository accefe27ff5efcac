// A reasoning model's answer split into its reasoning and its content, as vLLM's and FastDeploy's reasoning
// parsers split it (--reasoning-parser): the text up to "</think>" is the reasoning, the text after it the
// content. Whole answers through split_reasoning, streams through ReasoningStream, which gives each piece of
// text as soon as it cannot be part of a tag: only what could still become a tag is held back.
//
// The formats differ where the model never writes "</think>" and in the opening tag:
//   deepseek_r1 (vLLM's DeepSeekR1ReasoningParser): the prompt may already end with "<think>", so the text
//     before "</think>" is reasoning with or without an opening tag; a "<think>" the answer starts with is
//     dropped. Without "</think>" the whole answer is reasoning and the content is null.
//   ernie-45-vl (FastDeploy's ErnieVLReasoningParser): the text before "</think>" is reasoning, a "<think>"
//     kept as it is. Without "</think>" a whole answer is all content and its reasoning empty, while a stream
//     gives its text as reasoning until "</think>" comes (it cannot wait for the end): FastDeploy does both.
//     ernie-45-vl-thinking (the -Thinking checkpoint's parser) is read the same way.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

enum class ReasoningFormat { DeepSeekR1, Ernie45Vl };

// The format of a --reasoning-parser name (vLLM's and FastDeploy's names, in any case); nothing for another.
std::optional<ReasoningFormat> find_reasoning_format(std::string_view name);
const char* reasoning_format_name(ReasoningFormat format);
// Every name, as an error message lists them: "deepseek_r1, ernie-45-vl or ernie-45-vl-thinking".
std::string reasoning_format_names();

struct ReasoningSplit {
    std::string reasoning;
    std::string content;
    bool content_null = false;  // deepseek_r1 without "</think>": no content at all, as vLLM answers null
};

ReasoningSplit split_reasoning(ReasoningFormat format, std::string_view text);

class ReasoningStream {
public:
    explicit ReasoningStream(ReasoningFormat format);

    // The reasoning and content the text so far settles; a possible tag at its end waits for more.
    ReasoningSplit push(std::string_view text);
    // What was held back, at the end of the answer (an unfinished tag is text).
    ReasoningSplit finish();
    // Whether "</think>" has come: the rest is content.
    bool in_content() const { return state_ == State::Content; }

private:
    enum class State { Opening, Reasoning, Content };
    ReasoningSplit take(bool at_end);

    State state_;
    std::string held_;  // text not yet given, at most a tag's length but for one step
};

}  // namespace folio
