// The desktop app's conversations kept across restarts: each open document's chat (and the one about images
// alone) in a chats file (chats-file.h) beside the session file, written a moment after a turn is added or an
// answer ends (on a thread of its own, under a temporary name renamed over the file) and read back into the
// chat session at start.
#pragma once

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>

#include "app/chat/chats-file.h"
#include "app/export/deferred-file-writer.h"

namespace folio {

class ChatSession;

class ChatStore : public QObject {
    Q_OBJECT

public:
    // keeps: whether a document's conversation is still wanted (its document open); "" is always kept.
    ChatStore(ChatSession& session, QString path, std::function<bool(const QString&)> keeps,
              QObject* parent = nullptr);
    ~ChatStore() override;

    const QString& path() const { return file_.path(); }
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
    // The conversations the store keeps of these.
    ChatHistories kept(ChatHistories histories) const;

    ChatSession& session_;
    std::function<bool(const QString&)> keeps_;
    DeferredFileWriter file_;
};

}  // namespace folio
