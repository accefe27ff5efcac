#include "app/chat/chat-store.h"

#include <QFile>
#include <exception>

#include "app/chat/chat-session.h"
#include "engine/common/error.h"

namespace folio {

ChatStore::ChatStore(ChatSession& session, QString path, std::function<bool(const QString&)> keeps,
                     QObject* parent)
    : QObject(parent),
      session_(session),
      keeps_(std::move(keeps)),
      file_(
          std::move(path),
          [this] { return [histories = kept(session_.histories())] { return chatsJson(histories); }; },
          [this](const QString& message) { Q_EMIT failed(message); }) {
    connect(&session_, &ChatSession::turnAdded, this, &ChatStore::scheduleWrite);
    connect(&session_, &ChatSession::answerFinished, this, &ChatStore::scheduleWrite);
    connect(&session_, &ChatSession::historyCleared, this, &ChatStore::scheduleWrite);
}

ChatStore::~ChatStore() = default;

void ChatStore::scheduleWrite() {
    file_.schedule();
}

void ChatStore::writeNow() {
    file_.writeNow();
}

ChatHistories ChatStore::kept(ChatHistories histories) const {
    for (auto it = histories.begin(); it != histories.end();) {
        it = it.key().isEmpty() || !keeps_ || keeps_(it.key()) ? std::next(it) : histories.erase(it);
    }
    return histories;
}

void ChatStore::restore(QStringList* problems) {
    QFile file(path());
    if (!file.exists()) {
        return;
    }
    ChatHistories histories;
    try {
        if (!file.open(QIODevice::ReadOnly)) {
            fail(path().toStdString(), ": ", file.errorString().toStdString());
        }
        histories = parseChatsJson(file.readAll(), path());
    } catch (const std::exception& e) {
        // Set aside rather than written over by the next conversation, so that it can still be looked at.
        file.close();
        const QString message = setAsideUnreadable(path(), QString::fromUtf8(e.what()));
        if (problems != nullptr) {
            problems->append(message);
        }
        return;
    }
    histories = kept(std::move(histories));
    for (auto it = histories.begin(); it != histories.end(); ++it) {
        session_.restoreHistory(it.key(), it.value());
    }
}

}  // namespace folio
