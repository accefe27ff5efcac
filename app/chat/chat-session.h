// A conversation with the engine about pages and images, kept per document: each send() submits the whole
// conversation as one interactive request (ahead of any document's blocks), the answer's text arrives on the
// engine thread and is re-emitted as queued signals on the session's thread, and stop() ends it. Requests go
// to the loaded chat model (ModelRole::Chat, ERNIE-4.5-VL) where there is one, else to the recognition model.
// A reasoning model's answer is split as the family's reasoning parser splits it (ERNIE-4.5-VL: ernie-45-vl):
// the thought before "</think>" apart from the answer, streamed as it arrives.
#pragma once

#include <QHash>
#include <QImage>
#include <QList>
#include <QObject>
#include <QString>
#include <QThreadPool>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "app/chat/answer-stream.h"
#include "app/chat/chat-turn.h"
#include "app/chat/document-context.h"
#include "engine/chat-template/reasoning-parser.h"
#include "engine/service/engine-service.h"

namespace folio {

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
    // Every document's conversation (the chats file keeps them).
    const QHash<QString, QList<ChatTurn>>& histories() const { return histories_; }
    // A conversation read back for a document that has none yet.
    void restoreHistory(const QString& key, const QList<ChatTurn>& turns);

    // Counts the document's passages in the answering model's tokenizer in the background, so that the first
    // question about it does not wait for them (the panel calls it when Ask the document is switched on).
    void countDocumentAhead(const std::shared_ptr<const DocumentContext>& context);
    // Texts whose tokens are known (tests).
    int64_t countedTexts() const;

    // Sends a question with its images and videos; false (and failed() emitted) when the engine is not ready,
    // another answer is under way, or images or videos go to a model that does not take them.
    // fromDocument: answered from the document's context (setDocumentContext), which must have text.
    bool send(const QString& text, const QList<QImage>& images = {}, const QList<Video>& videos = {},
              bool fromDocument = false);
    // Ends the answer under way; its text so far is kept.
    void stop();
    bool busy() const { return active_.has_value(); }

    // Ask the document: a document's context, which questions sent fromDocument are answered from (the
    // document part goes ahead of the conversation's first question, the same for every question while the
    // whole document fits, so that the engine's prefix cache holds it), and whose blocks the answers cite.
    // It stays for the links of earlier answers when later questions are not about it; null removes it.
    void setDocumentContext(const QString& key, std::shared_ptr<const DocumentContext> context);
    std::shared_ptr<const DocumentContext> documentContext(const QString& key) const {
        return contexts_.value(key);
    }

    // The most new tokens an answer takes (fewer where max_model_len leaves fewer).
    void setMaxNewTokens(int64_t n) { maxNewTokens_ = n; }
    int64_t maxNewTokens() const { return maxNewTokens_; }

    // The loaded chat model's name (ModelDescription::name) that questions go to; empty where none is loaded
    // (questions then go to the recognition model) or the engine is not ready.
    QString chatModel() const;
    // Whether the model questions go to (the chat model, else the recognition model) takes a kind of input:
    // a text-only chat model takes no images, so pages and pictures cannot be attached for it.
    bool answersWith(Modality modality) const;
    // Why a text-only model takes no images, and what to do instead.
    static QString textOnlyMessage(const QString& model);
    bool engineReady() const { return service_.status().state == ServiceState::Ready; }

    // The reasoning parser a model's answers are split with (its description's); none for a model whose
    // answers have no reasoning part.
    static std::optional<ReasoningFormat> reasoningFormatOf(const ModelDescription& model);

Q_SIGNALS:
    // A turn was added to a document's history (the question, then its answer, Streaming).
    void turnAdded(const QString& document, int index);
    // More text of the answer at `index`.
    void answerDelta(const QString& document, int index, const QString& delta);
    // More of the reasoning before the answer at `index`; tokens: the reasoning's tokens so far.
    void reasoningDelta(const QString& document, int index, const QString& delta, qint64 tokens);
    // The answer ended: Done, Stopped or Failed (with its error).
    void answerFinished(const QString& document, int index, folio::ChatTurn::State state,
                        const QString& error);
    void busyChanged(bool busy);
    // A question that could not be sent.
    void failed(const QString& message);
    void documentChanged(const QString& document);
    // A document's conversation was forgotten (New conversation).
    void historyCleared(const QString& document);

private:
    struct Relay;
    struct Active {
        QString document;
        int index = 0;
        RequestHandle handle;
        AnswerStream stream;
    };

    void onOutput(const RequestOutput& output);
    // The model questions go to: the chat model where one is loaded, else the first generative one.
    std::optional<ModelDescription> answeringModel() const;
    Chat buildChat(const QList<ChatTurn>& turns, const std::string& model, bool takesImages,
                   bool takesVideo) const;
    // The tokens each text takes in the model's tokenizer: those not counted before are counted now, so that
    // a document's passages are counted once rather than at every question. Estimates where the model cannot
    // count.
    std::vector<int64_t> countTexts(const std::string& model, const std::vector<std::string>& texts);
    // The model whose tokenizer counts the questions' documents: the chat model's name, or "" (the first).
    std::string countingModel() const;

    EngineService& service_;
    std::shared_ptr<Relay> relay_;
    QHash<QString, QList<ChatTurn>> histories_;
    QHash<QString, std::shared_ptr<const DocumentContext>> contexts_;
    QString document_;
    std::optional<Active> active_;
    // Texts counted in one model's tokenizer, shared with the counts made ahead on counter_.
    class TokenCounts {
    public:
        // The texts not yet counted in model's tokenizer; another model's counts are dropped first, and all
        // of them once they grow past a bound.
        std::vector<std::string> missing(const std::string& model, const std::vector<std::string>& texts);
        // Keeps the counts of texts made in model's tokenizer, unless the store went to another model since.
        void add(const std::string& model, const std::vector<std::string>& texts,
                 const std::vector<int64_t>& counts);
        // Each text's count, estimate_tokens where none is kept.
        std::vector<int64_t> of(const std::string& model, const std::vector<std::string>& texts) const;
        int64_t size() const;

    private:
        mutable std::mutex mutex_;
        std::string model_;
        std::unordered_map<std::string, int64_t> counts_;
    };
    std::shared_ptr<TokenCounts> tokenCounts_ = std::make_shared<TokenCounts>();
    QThreadPool counter_;  // one thread; the destructor waits for it
    int64_t maxNewTokens_ = 2048;
    std::mt19937_64 seeds_{std::random_device{}()};  // one seed per answer, for sampling models
};

}  // namespace folio
