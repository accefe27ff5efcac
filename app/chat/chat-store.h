// The desktop app's conversations kept across restarts: each open document's chat (and the one about images
// alone) in a JSON file beside the session file, written a moment after a turn is added or an answer ends (on
// a thread of its own, under a temporary name renamed over the file) and read back into the chat session at
// start. Questions keep their images (PNG); videos are not kept, only how many there were. An answer still
// being written when the file is written is kept as stopped there.
#pragma once

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>
#include <QTimer>
#include <functional>

#include "app/chat/chat-turn.h"

namespace folio {

class ChatSession;

using ChatHistories = QHash<QString, QList<ChatTurn>>;  // by document key ("" for images alone)

// The file's text (JSON, version 1) for these conversations.
QByteArray chatsJson(const ChatHistories& histories);
// Reads a file's text; throws folio::Error naming `where` and what is wrong. Turns that cannot be read whole
// (an unknown role, an image that does not decode) are dropped with the rest of their conversation's later
// turns, so that questions and answers still alternate.
ChatHistories parseChatsJson(const QByteArray& json, const QString& where);

class ChatStore : public QObject {
    Q_OBJECT

public:
    // keeps: whether a document's conversation is still wanted (its document open); "" is always kept.
    ChatStore(ChatSession& session, QString path, std::function<bool(const QString&)> keeps,
              QObject* parent = nullptr);
    ~ChatStore() override;

    const QString& path() const { return path_; }
    // Gives the session the file's conversations of the documents it keeps (a document that already has
    // one keeps its own); problems reading the file go to `problems`.
    void restore(QStringList* problems = nullptr);
    // Writes the file a moment from now (a document closed, a conversation changed).
    void scheduleWrite();
    // Writes the file now and waits for it (quitting, tests).
    void writeNow();

Q_SIGNALS:
    // The file could not be written: why.
    void failed(const QString& message);

private:
    void startWrite();

    ChatSession& session_;
    QString path_;
    std::function<bool(const QString&)> keeps_;
    QTimer timer_;
    QThreadPool writer_;  // one thread: writes in order
};

}  // namespace folio
