// The chats file's text: the desktop app's conversations by document key, as ChatStore writes and reads them
// (JSON, version 1). Questions keep their images (PNG); videos are not kept, only how many there were; an
// answer still being written is kept as stopped there.
#pragma once

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QString>

#include "app/chat/chat-turn.h"

namespace folio {

using ChatHistories = QHash<QString, QList<ChatTurn>>;  // by document key ("" for images alone)

// The file's text for these conversations.
QByteArray chatsJson(const ChatHistories& histories);
// Reads a file's text; throws folio::Error naming `where` and what is wrong. Turns that cannot be read whole
// (an unknown role, an image that does not decode) are dropped with the rest of their conversation's later
// turns, so that questions and answers still alternate.
ChatHistories parseChatsJson(const QByteArray& json, const QString& where);

}  // namespace folio
