#include "app/chat/chat-store.h"

#include <QFile>
#include <exception>

#include "app/chat/chat-session.h"
#include "app/export/staged-file.h"
#include "engine/common/error.h"

namespace folio {

namespace {

constexpr int kWriteDelayMs = 1500;

}  // namespace

ChatStore::ChatStore(ChatSession& session, QString path, std::function<bool(const QString&)> keeps,
                     QObject* parent)
    : QObject(parent), session_(session), path_(std::move(path)), keeps_(std::move(keeps)) {
    writer_.setMaxThreadCount(1);
    timer_.setSingleShot(true);
    timer_.setInterval(kWriteDelayMs);
    connect(&timer_, &QTimer::timeout, this, &ChatStore::startWrite);
    connect(&session_, &ChatSession::turnAdded, this, &ChatStore::scheduleWrite);
    connect(&session_, &ChatSession::answerFinished, this, &ChatStore::scheduleWrite);
    connect(&session_, &ChatSession::historyCleared, this, &ChatStore::scheduleWrite);
}

ChatStore::~ChatStore() {
    writer_.waitForDone();
}

void ChatStore::scheduleWrite() {
    // Started once, not restarted: a stream of changes still writes every couple of seconds.
    if (!timer_.isActive()) {
        timer_.start();
    }
}

void ChatStore::startWrite() {
    ChatHistories histories = session_.histories();
    for (auto it = histories.begin(); it != histories.end();) {
        it = it.key().isEmpty() || !keeps_ || keeps_(it.key()) ? std::next(it) : histories.erase(it);
    }
    writer_.start([this, histories = std::move(histories)] {
        try {
            StagedFile file(path_);
            file.file().write(chatsJson(histories));
            file.commit();
        } catch (const std::exception& e) {
            const QString message = QString::fromUtf8(e.what());
            QMetaObject::invokeMethod(
                this, [this, message] { Q_EMIT failed(message); }, Qt::QueuedConnection);
        }
    });
}

void ChatStore::writeNow() {
    timer_.stop();
    startWrite();
    writer_.waitForDone();
}

void ChatStore::restore(QStringList* problems) {
    QFile file(path_);
    if (!file.exists()) {
        return;
    }
    ChatHistories histories;
    try {
        if (!file.open(QIODevice::ReadOnly)) {
            fail(path_.toStdString(), ": ", file.errorString().toStdString());
        }
        histories = parseChatsJson(file.readAll(), path_);
    } catch (const std::exception& e) {
        // Set aside rather than written over by the next conversation, so that it can still be looked at.
        file.close();
        const QString aside = path_ + QStringLiteral(".unreadable");
        QFile::remove(aside);
        const bool kept = QFile::rename(path_, aside);
        if (problems != nullptr) {
            problems->append(kept ? tr("%1 (kept as %2)").arg(QString::fromUtf8(e.what()), aside)
                                  : QString::fromUtf8(e.what()));
        }
        return;
    }
    for (auto it = histories.begin(); it != histories.end(); ++it) {
        if (it.key().isEmpty() || !keeps_ || keeps_(it.key())) {
            session_.restoreHistory(it.key(), it.value());
        }
    }
}

}  // namespace folio
