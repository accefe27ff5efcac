// A conversation with the engine about pages and images, kept per document: each send() submits the whole
// conversation as one interactive request (ahead of any document's blocks), the answer's text arrives on the
// engine thread and is re-emitted as queued signals on the session's thread, and stop() ends it.
#pragma once

#include <QHash>
#include <QImage>
#include <QList>
#include <QObject>
#include <QString>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>

#include "engine/service/engine-service.h"

namespace folio {

struct ChatTurn {
    enum class Role { User, Assistant };
    enum class State { Streaming, Done, Stopped, Failed };
    Role role = Role::User;
    QString text;
    QList<QImage> images;  // a user turn's attachments
    State state = State::Done;
    QString error;  // Failed: why
    // An answer's prompt as the engine took it: the tokens of the conversation before it, images included
    // (-1 until the engine has built it). It tells how much of the context the conversation uses.
    int64_t promptTokens = -1;
};

class ChatSession : public QObject {
    Q_OBJECT

public:
    explicit ChatSession(EngineService& service, QObject* parent = nullptr);
    // Stops the answer under way; nothing is emitted afterwards.
    ~ChatSession() override;

    // The conversation shown and continued: one per document key (a file path; "" for images alone). An
    // answer under way goes on in its own document's history.
    void setDocument(const QString& key);
    QString document() const { return document_; }
    QList<ChatTurn> history() const { return histories_.value(document_); }
    QList<ChatTurn> history(const QString& key) const { return histories_.value(key); }
    void clearHistory();

    // Sends a question with its images; false (and failed() emitted) when the engine is not ready or another
    // answer is under way.
    bool send(const QString& text, const QList<QImage>& images = {});
    // Ends the answer under way; its text so far is kept.
    void stop();
    bool busy() const { return active_.has_value(); }

    // The most new tokens an answer takes (fewer where max_model_len leaves fewer).
    void setMaxNewTokens(int64_t n) { maxNewTokens_ = n; }
    int64_t maxNewTokens() const { return maxNewTokens_; }

Q_SIGNALS:
    // A turn was added to a document's history (the question, then its answer, Streaming).
    void turnAdded(const QString& document, int index);
    // More text of the answer at `index`.
    void answerDelta(const QString& document, int index, const QString& delta);
    // The answer ended: Done, Stopped or Failed (with its error).
    void answerFinished(const QString& document, int index, folio::ChatTurn::State state,
                        const QString& error);
    void busyChanged(bool busy);
    // A question that could not be sent.
    void failed(const QString& message);
    void documentChanged(const QString& document);

private:
    struct Relay;
    struct Active {
        QString document;
        int index = 0;
        RequestHandle handle;
    };

    void onOutput(const RequestOutput& output);
    Chat buildChat(const QList<ChatTurn>& turns) const;

    EngineService& service_;
    std::shared_ptr<Relay> relay_;
    QHash<QString, QList<ChatTurn>> histories_;
    QString document_;
    std::optional<Active> active_;
    int64_t maxNewTokens_ = 2048;
    std::mt19937_64 seeds_{std::random_device{}()};  // one seed per answer, for sampling models
};

}  // namespace folio

Q_DECLARE_METATYPE(folio::ChatTurn::State)
