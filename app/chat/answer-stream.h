// An answer's outputs as its chat turn takes them. Without a reasoning format the text is the answer; with
// one (a reasoning model's family) it is split as the engine's reasoning parser splits a stream: the thought
// up to "</think>", with the tokens it took, then the answer. An answer that ends without "</think>" is all
// answer, as the parser splits a whole one; one cut short (max tokens, stopped) keeps its thought as thought.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>
#include <string_view>

#include "app/chat/chat-turn.h"
#include "engine/chat-template/reasoning-parser.h"

namespace folio {

class AnswerStream {
public:
    explicit AnswerStream(std::optional<ReasoningFormat> format = std::nullopt);

    // What one output added to the turn.
    struct Delta {
        QString reasoning;
        QString text;
    };
    // Adds an output's text and its n_tokens new tokens to the turn. last: the answer's final output;
    // complete: it ended by itself (a stop token or string), not cut short.
    Delta push(ChatTurn& turn, std::string_view text, int64_t n_tokens, bool last, bool complete);

    bool splitsReasoning() const { return reasoning_.has_value(); }

private:
    std::optional<ReasoningStream> reasoning_;
};

}  // namespace folio
