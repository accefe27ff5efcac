#include "app/chat/chat-session.h"

#include <QMetaObject>
#include <QPainter>
#include <mutex>

#include "app/documents/page-image.h"
#include "engine/common/error.h"

namespace folio {

namespace {

// An image with transparency on white, as a page would show it (a plain conversion would put it on black).
QImage opaque(const QImage& image) {
    if (!image.hasAlphaChannel()) {
        return image;
    }
    QImage flat(image.size(), QImage::Format_RGB888);
    flat.fill(Qt::white);
    QPainter painter(&flat);
    painter.drawImage(0, 0, image);
    return flat;
}

}  // namespace

// Carries outputs from the engine thread to the session while it lives: the destructor clears the target
// under the lock, and events already posted to it are dropped with it.
struct ChatSession::Relay {
    std::mutex mutex;
    ChatSession* target = nullptr;
};

ChatSession::ChatSession(EngineService& service, QObject* parent)
    : QObject(parent), service_(service), relay_(std::make_shared<Relay>()) {
    qRegisterMetaType<folio::ChatTurn::State>();
    relay_->target = this;
    counter_.setMaxThreadCount(1);
}

ChatSession::~ChatSession() {
    counter_.clear();
    counter_.waitForDone();  // its counts ask the service
    {
        std::lock_guard lock(relay_->mutex);
        relay_->target = nullptr;
    }
    if (active_) {
        active_->handle.cancel();
    }
}

void ChatSession::setDocument(const QString& key) {
    if (key == document_) {
        return;
    }
    document_ = key;
    Q_EMIT documentChanged(key);
}

void ChatSession::clearHistory() {
    if (active_ && active_->document == document_) {
        stop();
    }
    histories_.remove(document_);
    Q_EMIT historyCleared(document_);
    Q_EMIT documentChanged(document_);
}

void ChatSession::restoreHistory(const QString& key, const QList<ChatTurn>& turns) {
    if (turns.isEmpty() || histories_.contains(key)) {
        return;
    }
    histories_.insert(key, turns);
    if (key == document_) {
        Q_EMIT documentChanged(key);
    }
}

std::optional<ReasoningFormat> ChatSession::reasoningFormatOf(const ModelDescription& model) {
    return find_reasoning_format(model.reasoning_parser);
}

QString ChatSession::chatModel() const {
    for (const ModelDescription& model : service_.models()) {
        if (model.role == ModelRole::Chat) {
            return QString::fromStdString(model.name);
        }
    }
    return {};
}

std::optional<ModelDescription> ChatSession::answeringModel() const {
    const std::vector<ModelDescription> models = service_.models();
    for (const ModelDescription& model : models) {
        if (model.role == ModelRole::Chat) {
            return model;
        }
    }
    for (const ModelDescription& model : models) {
        if (model.role != ModelRole::Layout) {
            return model;
        }
    }
    return std::nullopt;
}

QString ChatSession::textOnlyMessage(const QString& model) {
    return tr("%1 reads text only and cannot see images: install ERNIE-4.5-VL to ask about pages and "
              "pictures, "
              "or use Ask the document to ask about the recognised text.")
        .arg(model);
}

bool ChatSession::answersWith(Modality modality) const {
    const std::optional<ModelDescription> model = answeringModel();
    return !model || model->takes(modality);
}

void ChatSession::setDocumentContext(const QString& key, std::shared_ptr<const DocumentContext> context) {
    if (context) {
        contexts_.insert(key, std::move(context));
    } else {
        contexts_.remove(key);
    }
}

Chat ChatSession::buildChat(const QList<ChatTurn>& turns, const std::string& model, bool takesImages,
                            bool takesVideo) const {
    // A question whose answer failed is left out with it, so that turns alternate.
    QList<const ChatTurn*> kept;
    for (qsizetype i = 0; i < turns.size(); ++i) {
        const ChatTurn& turn = turns[i];
        const bool answerFailed = turn.role == ChatTurn::Role::User && i + 1 < turns.size() &&
                                  turns[i + 1].state == ChatTurn::State::Failed;
        if (turn.state == ChatTurn::State::Failed || answerFailed) {
            continue;
        }
        kept.append(&turn);
    }
    // The newest attachments first (a turn's videos before its images), as many as a request may carry;
    // older turns keep their text alone, and a model without images or video gets none of the earlier turns'
    // (asked of another model before).
    const int64_t limit = std::max<int64_t>(service_.limits(model).limit_mm_per_prompt, 0);
    int64_t left = limit;
    QList<std::pair<int, int>> taken(kept.size(), {0, 0});  // videos, images
    for (qsizetype i = kept.size() - 1; i >= 0; --i) {
        const int n_videos =
            takesVideo ? static_cast<int>(std::min<int64_t>(kept[i]->videos.size(), left)) : 0;
        left -= n_videos;
        const int n_images =
            takesImages ? static_cast<int>(std::min<int64_t>(kept[i]->images.size(), left)) : 0;
        left -= n_images;
        taken[i] = {n_videos, n_images};
    }
    Chat chat;
    for (qsizetype i = 0; i < kept.size(); ++i) {
        const ChatTurn& turn = *kept[i];
        ChatMessage message;
        message.role =
            turn.role == ChatTurn::Role::User ? ChatMessage::Role::User : ChatMessage::Role::Assistant;
        message.text = turn.text.toStdString();
        for (int k = 0; k < taken[i].second; ++k) {
            message.images.push_back(toEngineImage(opaque(turn.images[k])));
        }
        for (int k = 0; k < taken[i].first; ++k) {
            message.videos.push_back(turn.videos[k]);
        }
        chat.messages.push_back(std::move(message));
    }
    return chat;
}

bool ChatSession::send(const QString& text, const QList<QImage>& images, const QList<Video>& videos,
                       bool fromDocument) {
    if (active_) {
        Q_EMIT failed(tr("An answer is still being written: stop it first."));
        return false;
    }
    if (text.trimmed().isEmpty() && images.isEmpty() && videos.isEmpty()) {
        return false;
    }
    if (service_.status().state != ServiceState::Ready) {
        Q_EMIT failed(tr("The model is not loaded yet."));
        return false;
    }
    ChatTurn question;
    question.role = ChatTurn::Role::User;
    question.text = text.trimmed();
    question.images = images;
    question.videos = videos;
    QList<ChatTurn> turns = histories_.value(document_);
    turns.append(question);

    // The chat model where one is loaded, with its family's reasoning parser.
    const std::optional<ModelDescription> answering = answeringModel();
    std::string model;
    std::optional<ReasoningFormat> reasoning;
    if (answering && answering->role == ModelRole::Chat) {
        model = answering->name;
        reasoning = reasoningFormatOf(*answering);
    }
    const bool takesImages = !answering || answering->takes(Modality::Image);
    const bool takesVideo = !answering || answering->takes(Modality::Video);
    if (!images.isEmpty() && !takesImages) {
        Q_EMIT failed(textOnlyMessage(QString::fromStdString(answering->name)));
        return false;
    }
    if (!videos.isEmpty() && !takesVideo) {
        Q_EMIT failed(tr("%1 does not take videos: install a chat model (ERNIE-4.5-VL) to ask about one.")
                          .arg(QString::fromStdString(answering->name)));
        return false;
    }

    Chat chat;
    try {
        chat = buildChat(turns, model, takesImages, takesVideo);
    } catch (const Error& e) {
        Q_EMIT failed(QString::fromStdString(e.what()));
        return false;
    }

    // Ask the document: the passages that fit beside the conversation, its attachments and the answer open
    // the first question, so that every question of the conversation shares them.
    QList<int> leftOut;
    QList<int> inPart;
    bool documentGiven = false;
    const std::shared_ptr<const DocumentContext> context = contexts_.value(document_);
    if (fromDocument && (!context || context->empty())) {
        Q_EMIT failed(tr("This document has no recognised text to ask about yet: run it first."));
        return false;
    }
    if (fromDocument) {
        ChatBudget budget;
        for (const ChatMessage& message : chat.messages) {
            budget.messages.push_back(message.text);
        }
        try {
            for (const int64_t n : service_.count_media(model, media_sizes(chat.messages))) {
                budget.media_tokens += n;
            }
        } catch (const Error& e) {
            Q_EMIT failed(QString::fromStdString(e.what()));
            return false;
        }
        budget.context_len = service_.limits(model).max_model_len;
        budget.answer_room = std::min<int64_t>(maxNewTokens_, budget.context_len / 4);
        const auto count = [this, &model](const std::vector<std::string>& texts) {
            return countTexts(model, texts);
        };
        const DocumentSelection selection = context->selectForChat(budget, count);
        if (selection.text.isEmpty()) {
            // What would make room: leaving the attachments out, a new conversation, a longer context.
            ChatBudget bare = budget;
            bare.media_tokens = 0;
            const bool attachmentsInTheWay =
                budget.media_tokens > 0 && !context->selectForChat(bare, count).text.isEmpty();
            Q_EMIT failed(attachmentsInTheWay
                              ? tr("Not even one block of the document fits in the model's context of %1 "
                                   "tokens beside the attached images and videos (%2 tokens): ask without "
                                   "them, or load the model with a longer context (Settings).")
                                    .arg(budget.context_len)
                                    .arg(budget.media_tokens)
                          : turns.size() == 1
                              ? tr("Not even one block of the document fits in the model's context of %1 "
                                   "tokens beside the question and room for the answer: load the model with "
                                   "a longer context (Settings).")
                                    .arg(budget.context_len)
                              : tr("Not even one block of the document fits in the model's context of %1 "
                                   "tokens beside this conversation: start a new conversation, or load the "
                                   "model with a longer context (Settings).")
                                    .arg(budget.context_len));
            return false;
        }
        if (!chat.messages.empty() && chat.messages.front().role == ChatMessage::Role::User) {
            chat.messages.front().text = selection.text.toStdString() + "\n\n" + chat.messages.front().text;
        }
        documentGiven = true;
        leftOut = selection.leftOut;
        inPart = selection.inPart;
    }

    GenerationOptions options;
    options.max_tokens = maxNewTokens_;
    options.fit_max_tokens = true;
    // The model's generation_config.json chooses how to sample (ERNIE-4.5-VL: temperature 0.2, top_p 0.8);
    // without one the answer is greedy. Each answer draws its own seed.
    options.model_defaults = SamplingDefaultsUse::all();
    options.model_defaults.max_tokens = false;
    options.sampling.seed = seeds_();
    SubmitOptions submit;
    submit.priority = Priority::Interactive;
    submit.on_output = [relay = relay_](const RequestOutput& output) {
        std::lock_guard lock(relay->mutex);
        if (ChatSession* target = relay->target) {
            QMetaObject::invokeMethod(
                target, [target, output] { target->onOutput(output); }, Qt::QueuedConnection);
        }
    };
    RequestHandle handle;
    try {
        RequestSpec spec(std::move(chat), options);
        spec.model = model;
        handle = service_.submit(std::move(spec), std::move(submit));
    } catch (const Error& e) {
        Q_EMIT failed(QString::fromStdString(e.what()));
        return false;
    }
    // The question and its answer join the history only once the engine took the request; outputs reach
    // onOutput through the event loop, after this returns.
    ChatTurn answer;
    answer.role = ChatTurn::Role::Assistant;
    answer.state = ChatTurn::State::Streaming;
    answer.fromDocument = documentGiven;
    answer.pagesLeftOut = leftOut;
    answer.pagesInPart = inPart;
    turns.append(answer);
    const QString document = document_;
    const int index = static_cast<int>(turns.size() - 1);
    histories_.insert(document, turns);
    active_ = Active{document, index, std::move(handle), AnswerStream(reasoning)};
    Q_EMIT turnAdded(document, index - 1);
    Q_EMIT turnAdded(document, index);
    Q_EMIT busyChanged(true);
    return true;
}

std::vector<std::string> ChatSession::TokenCounts::missing(const std::string& model,
                                                           const std::vector<std::string>& texts) {
    // Counts kept for one model, and not without bound: a long session of many documents starts again.
    constexpr size_t kMaxCounts = 100000;
    const std::lock_guard lock(mutex_);
    if (model != model_ || counts_.size() > kMaxCounts) {
        counts_.clear();
        model_ = model;
    }
    std::vector<std::string> out;
    for (const std::string& text : texts) {
        if (!counts_.count(text)) {
            out.push_back(text);
        }
    }
    return out;
}

void ChatSession::TokenCounts::add(const std::string& model, const std::vector<std::string>& texts,
                                   const std::vector<int64_t>& counts) {
    const std::lock_guard lock(mutex_);
    for (size_t i = 0; i < texts.size() && i < counts.size() && model == model_; ++i) {
        counts_[texts[i]] = counts[i];
    }
}

std::vector<int64_t> ChatSession::TokenCounts::of(const std::string& model,
                                                  const std::vector<std::string>& texts) const {
    const std::lock_guard lock(mutex_);
    std::vector<int64_t> out;
    for (const std::string& text : texts) {
        const auto it = model == model_ ? counts_.find(text) : counts_.end();
        out.push_back(it == counts_.end() ? estimate_tokens(text) : it->second);
    }
    return out;
}

int64_t ChatSession::TokenCounts::size() const {
    const std::lock_guard lock(mutex_);
    return static_cast<int64_t>(counts_.size());
}

std::string ChatSession::countingModel() const {
    const std::optional<ModelDescription> answering = answeringModel();
    return answering && answering->role == ModelRole::Chat ? answering->name : std::string();
}

std::vector<int64_t> ChatSession::countTexts(const std::string& model,
                                             const std::vector<std::string>& texts) {
    counter_.waitForDone();  // a count made ahead finishes rather than being made twice
    const std::vector<std::string> missing = tokenCounts_->missing(model, texts);
    if (!missing.empty()) {
        try {
            tokenCounts_->add(model, missing, service_.count_tokens(model, missing));
        } catch (const Error&) {
            // A model without a tokenizer of its own: estimates.
        }
    }
    return tokenCounts_->of(model, texts);
}

void ChatSession::countDocumentAhead(const std::shared_ptr<const DocumentContext>& context) {
    if (!context || context->empty() || service_.status().state != ServiceState::Ready) {
        return;
    }
    const std::string model = countingModel();
    std::vector<std::string> texts = tokenCounts_->missing(model, context->textsToCount());
    if (texts.empty()) {
        return;
    }
    counter_.start([service = &service_, store = tokenCounts_, model, texts = std::move(texts)] {
        try {
            store->add(model, texts, service->count_tokens(model, texts));
        } catch (const Error&) {
            // Unloaded meanwhile, or no tokenizer: the question estimates or counts then.
        }
    });
}

int64_t ChatSession::countedTexts() const {
    return tokenCounts_->size();
}

void ChatSession::stop() {
    if (!active_) {
        return;
    }
    const Active active = std::move(*active_);
    active_.reset();
    RequestHandle handle = active.handle;
    handle.cancel();
    QList<ChatTurn>& turns = histories_[active.document];
    if (active.index < turns.size()) {
        turns[active.index].state = ChatTurn::State::Stopped;
    }
    Q_EMIT answerFinished(active.document, active.index, ChatTurn::State::Stopped, QString());
    Q_EMIT busyChanged(false);
}

void ChatSession::onOutput(const RequestOutput& output) {
    if (!active_ || output.id != active_->handle.id()) {
        return;  // a stopped answer's last outputs
    }
    const QString document = active_->document;
    const int index = active_->index;
    ChatTurn& answer = histories_[document][index];
    if (answer.promptTokens < 0) {
        answer.promptTokens = active_->handle.n_prompt_tokens();
    }
    if (answer.cachedTokens < 0 && output.n_cached_tokens >= 0) {
        answer.cachedTokens = output.n_cached_tokens;
    }
    const bool complete = output.finish && (*output.finish == FinishReason::Stop);
    const AnswerStream::Delta delta = active_->stream.push(
        answer, output.text, static_cast<int64_t>(output.tokens.size()), output.finish.has_value(), complete);
    if (!delta.reasoning.isEmpty()) {
        Q_EMIT reasoningDelta(document, index, delta.reasoning, answer.reasoningTokens);
    }
    if (!delta.text.isEmpty()) {
        Q_EMIT answerDelta(document, index, delta.text);
    }
    if (!output.finish) {
        return;
    }
    active_.reset();
    QString error;
    switch (*output.finish) {
        case FinishReason::Stop:
        case FinishReason::Length:
            answer.state = ChatTurn::State::Done;
            break;
        case FinishReason::Cancelled:
            if (output.error_kind == ErrorKind::Stopped) {
                answer.state = ChatTurn::State::Failed;
                error = tr("The engine stopped before the answer was complete.");
            } else {
                answer.state = ChatTurn::State::Stopped;
            }
            break;
        case FinishReason::Error:
            answer.state = ChatTurn::State::Failed;
            error = output.error.empty() ? tr("The request failed.") : QString::fromStdString(output.error);
            break;
    }
    answer.error = error;
    Q_EMIT answerFinished(document, index, answer.state, error);
    Q_EMIT busyChanged(false);
}

}  // namespace folio
