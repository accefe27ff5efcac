// One turn of a chat: a question with its attachments (images, videos), or an answer with its state and, from
// a reasoning model, the thought before it.
#pragma once

#include <QImage>
#include <QList>
#include <QMetaType>
#include <QString>
#include <cstdint>

#include "engine/image/image.h"

namespace folio {

struct ChatTurn {
    enum class Role { User, Assistant };
    enum class State { Streaming, Done, Stopped, Failed };
    Role role = Role::User;
    QString text;  // an answer's content, after its reasoning
    // A reasoning model's thought before its answer and the tokens it took; empty for other models. The
    // conversation sent on leaves it out.
    QString reasoning;
    int64_t reasoningTokens = 0;
    QList<QImage> images;  // a user turn's attachments
    QList<Video> videos;   // a user turn's videos, sampled frames (the chat model alone takes them)
    int videosNotKept =
        0;  // a conversation read back from the chats file: its videos, which it does not keep
    State state = State::Done;
    QString error;  // Failed: why
    // An answer's prompt as the engine took it: the tokens of the conversation before it, images included
    // (-1 until the engine has built it). It tells how much of the context the conversation uses.
    int64_t promptTokens = -1;
    // Of those, the tokens the engine found in its prefix cache and did not compute again (-1 until known).
    int64_t cachedTokens = -1;
    // Asked of the document (Ask the document): the answer cites its blocks; pagesLeftOut are the pages none
    // of whose blocks fitted in the context, pagesInPart those only some of whose blocks did, from 0.
    bool fromDocument = false;
    QList<int> pagesLeftOut;
    QList<int> pagesInPart;
};

}  // namespace folio

Q_DECLARE_METATYPE(folio::ChatTurn::State)
