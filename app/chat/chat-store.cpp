#include "app/chat/chat-store.h"

#include "app/chat/chat-session.h"

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
    ChatHistories histories;
    if (!file_.read([&](const QByteArray& bytes) { histories = parseChatsJson(bytes, path()); }, problems)) {
        return;
    }
    histories = kept(std::move(histories));
    for (auto it = histories.begin(); it != histories.end(); ++it) {
        session_.restoreHistory(it.key(), it.value());
    }
}

}  // namespace folio
