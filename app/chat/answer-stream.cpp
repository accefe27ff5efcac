#include "app/chat/answer-stream.h"

namespace folio {

AnswerStream::AnswerStream(std::optional<ReasoningFormat> format) {
    if (format) {
        reasoning_.emplace(*format);
    }
}

AnswerStream::Delta AnswerStream::push(ChatTurn& turn, std::string_view text, int64_t n_tokens, bool last,
                                       bool complete) {
    Delta delta;
    if (!reasoning_) {
        delta.text = QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
        turn.text += delta.text;
        return delta;
    }
    // An output's tokens count as the thought's while "</think>" had not come before it.
    if (!reasoning_->in_content()) {
        turn.reasoningTokens += n_tokens;
    }
    ReasoningSplit split = reasoning_->push(text);
    if (last) {
        const ReasoningSplit rest = reasoning_->finish();
        split.reasoning += rest.reasoning;
        split.content += rest.content;
    }
    delta.reasoning = QString::fromStdString(split.reasoning);
    delta.text = QString::fromStdString(split.content);
    turn.reasoning += delta.reasoning;
    turn.text += delta.text;
    if (last && complete && !reasoning_->in_content()) {
        turn.text = turn.reasoning + turn.text;
        turn.reasoning.clear();
        turn.reasoningTokens = 0;
    }
    return delta;
}

}  // namespace folio
