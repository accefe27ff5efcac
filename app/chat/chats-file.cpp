#include "app/chat/chats-file.h"

#include <QBuffer>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <optional>
#include <utility>

#include "engine/common/error.h"

namespace folio {

namespace {

constexpr int kVersion = 1;
// Bounds on what a file read back may hold, far above what a conversation reaches.
constexpr qsizetype kMaxConversations = 100000;
constexpr qsizetype kMaxImagesPerTurn = 1000;

const char* stateKey(ChatTurn::State state) {
    switch (state) {
        case ChatTurn::State::Done:
            return "done";
        case ChatTurn::State::Streaming:  // the answer stops where the file was written
        case ChatTurn::State::Stopped:
            return "stopped";
        case ChatTurn::State::Failed:
            return "failed";
    }
    return "stopped";
}

std::optional<ChatTurn::State> stateOf(const QString& key) {
    if (key == QLatin1String("done")) {
        return ChatTurn::State::Done;
    }
    if (key == QLatin1String("stopped")) {
        return ChatTurn::State::Stopped;
    }
    if (key == QLatin1String("failed")) {
        return ChatTurn::State::Failed;
    }
    return std::nullopt;
}

QJsonObject turnJson(const ChatTurn& turn) {
    const bool user = turn.role == ChatTurn::Role::User;
    QJsonObject o{{QStringLiteral("role"), user ? QStringLiteral("user") : QStringLiteral("assistant")},
                  {QStringLiteral("text"), turn.text}};
    if (user) {
        QJsonArray images;
        for (const QImage& image : turn.images) {
            QByteArray bytes;
            QBuffer buffer(&bytes);
            buffer.open(QIODevice::WriteOnly);
            image.save(&buffer, "PNG");
            images.append(QString::fromLatin1(bytes.toBase64()));
        }
        if (!images.isEmpty()) {
            o.insert(QStringLiteral("images"), images);
        }
        const qsizetype videos = turn.videos.size() + turn.videosNotKept;
        if (videos > 0) {
            o.insert(QStringLiteral("videos_not_kept"), videos);
        }
        return o;
    }
    o.insert(QStringLiteral("state"), QLatin1String(stateKey(turn.state)));
    if (!turn.reasoning.isEmpty()) {
        o.insert(QStringLiteral("reasoning"), turn.reasoning);
        o.insert(QStringLiteral("reasoning_tokens"), static_cast<qint64>(turn.reasoningTokens));
    }
    if (!turn.error.isEmpty()) {
        o.insert(QStringLiteral("error"), turn.error);
    }
    o.insert(QStringLiteral("prompt_tokens"), static_cast<qint64>(turn.promptTokens));
    o.insert(QStringLiteral("cached_tokens"), static_cast<qint64>(turn.cachedTokens));
    if (turn.fromDocument) {
        o.insert(QStringLiteral("from_document"), true);
        QJsonArray pages;
        for (const int page : turn.pagesLeftOut) {
            pages.append(page);
        }
        o.insert(QStringLiteral("pages_left_out"), pages);
        QJsonArray inPart;
        for (const int page : turn.pagesInPart) {
            inPart.append(page);
        }
        o.insert(QStringLiteral("pages_in_part"), inPart);
    }
    return o;
}

// A whole number within [lo, hi], or nothing.
std::optional<int64_t> wholeNumber(const QJsonValue& value, double lo, double hi) {
    if (!value.isDouble()) {
        return std::nullopt;
    }
    const double d = value.toDouble();
    if (!(d >= lo && d <= hi) || d != static_cast<double>(static_cast<int64_t>(d))) {
        return std::nullopt;
    }
    return static_cast<int64_t>(d);
}

// One turn read back; nothing where it cannot be read whole.
std::optional<ChatTurn> turnOf(const QJsonValue& value, ChatTurn::Role expected) {
    if (!value.isObject()) {
        return std::nullopt;
    }
    const QJsonObject o = value.toObject();
    const QString role = o.value(QStringLiteral("role")).toString();
    ChatTurn turn;
    turn.role = role == QLatin1String("user") ? ChatTurn::Role::User : ChatTurn::Role::Assistant;
    if ((role != QLatin1String("user") && role != QLatin1String("assistant")) || turn.role != expected ||
        !o.value(QStringLiteral("text")).isString()) {
        return std::nullopt;
    }
    turn.text = o.value(QStringLiteral("text")).toString();
    if (turn.role == ChatTurn::Role::User) {
        const QJsonArray images = o.value(QStringLiteral("images")).toArray();
        if (images.size() > kMaxImagesPerTurn) {
            return std::nullopt;
        }
        for (const QJsonValue& image : images) {
            const QByteArray bytes = QByteArray::fromBase64(image.toString().toLatin1());
            QImage decoded = QImage::fromData(bytes, "PNG");
            if (decoded.isNull()) {
                return std::nullopt;
            }
            turn.images.append(std::move(decoded));
        }
        if (o.contains(QStringLiteral("videos_not_kept"))) {
            const std::optional<int64_t> videos =
                wholeNumber(o.value(QStringLiteral("videos_not_kept")), 0, kMaxImagesPerTurn);
            if (!videos) {
                return std::nullopt;
            }
            turn.videosNotKept = static_cast<int>(*videos);
        }
        return turn;
    }
    const std::optional<ChatTurn::State> state = stateOf(o.value(QStringLiteral("state")).toString());
    if (!state) {
        return std::nullopt;
    }
    turn.state = *state;
    turn.reasoning = o.value(QStringLiteral("reasoning")).toString();
    turn.error = o.value(QStringLiteral("error")).toString();
    constexpr double kMaxTokens = 1e15;
    for (const auto& [key, field] :
         {std::pair{"reasoning_tokens", &turn.reasoningTokens},
          std::pair{"prompt_tokens", &turn.promptTokens}, std::pair{"cached_tokens", &turn.cachedTokens}}) {
        const QJsonValue v = o.value(QLatin1String(key));
        if (v.isUndefined()) {
            continue;
        }
        const std::optional<int64_t> n = wholeNumber(v, -1, kMaxTokens);
        if (!n) {
            return std::nullopt;
        }
        *field = *n;
    }
    turn.fromDocument = o.value(QStringLiteral("from_document")).toBool(false);
    // The pages left out or given in part belong to an answer from the document (a file written before
    // pages_in_part has none).
    const auto pages = [&](const char* key, QList<int>& out) {
        const QJsonArray list = turn.fromDocument ? o.value(QLatin1String(key)).toArray() : QJsonArray();
        for (const QJsonValue& page : list) {
            const std::optional<int64_t> n = wholeNumber(page, 0, 1e9);
            if (!n) {
                return false;
            }
            out.append(static_cast<int>(*n));
        }
        return true;
    };
    if (!pages("pages_left_out", turn.pagesLeftOut) || !pages("pages_in_part", turn.pagesInPart)) {
        return std::nullopt;
    }
    return turn;
}

}  // namespace

QByteArray chatsJson(const ChatHistories& histories) {
    QJsonArray conversations;
    for (auto it = histories.begin(); it != histories.end(); ++it) {
        QJsonArray turns;
        for (const ChatTurn& turn : it.value()) {
            turns.append(turnJson(turn));
        }
        if (!turns.isEmpty()) {
            conversations.append(
                QJsonObject{{QStringLiteral("document"), it.key()}, {QStringLiteral("turns"), turns}});
        }
    }
    const QJsonObject root{{QStringLiteral("folioChats"), kVersion},
                           {QStringLiteral("conversations"), conversations}};
    return QJsonDocument(root).toJson(QJsonDocument::Compact);
}

ChatHistories parseChatsJson(const QByteArray& json, const QString& where) {
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(json, &error);
    if (error.error != QJsonParseError::NoError) {
        fail(where.toStdString(), ": not JSON: ", error.errorString().toStdString(), " at byte ",
             error.offset);
    }
    const QJsonObject root = document.object();
    const QJsonValue version = root.value(QStringLiteral("folioChats"));
    if (!document.isObject() || !version.isDouble()) {
        fail(where.toStdString(), ": not a conversations file (no \"folioChats\" version)");
    }
    if (version.toInt() != kVersion) {
        fail(where.toStdString(), ": conversations file version ", version.toInt(), ", expected ", kVersion);
    }
    const QJsonArray conversations = root.value(QStringLiteral("conversations")).toArray();
    if (conversations.size() > kMaxConversations) {
        fail(where.toStdString(), ": ", conversations.size(), " conversations, more than ",
             kMaxConversations);
    }
    ChatHistories histories;
    for (const QJsonValue& value : conversations) {
        const QJsonObject o = value.toObject();
        const QJsonValue key = o.value(QStringLiteral("document"));
        if (!key.isString() || histories.contains(key.toString())) {
            continue;
        }
        // Question and answer by pairs, as the session adds them; the first pair that cannot be read whole
        // ends the conversation there.
        const QJsonArray turns = o.value(QStringLiteral("turns")).toArray();
        QList<ChatTurn> kept;
        for (qsizetype i = 0; i + 1 < turns.size(); i += 2) {
            std::optional<ChatTurn> question = turnOf(turns[i], ChatTurn::Role::User);
            std::optional<ChatTurn> answer = turnOf(turns[i + 1], ChatTurn::Role::Assistant);
            if (!question || !answer) {
                break;
            }
            kept.append(std::move(*question));
            kept.append(std::move(*answer));
        }
        if (!kept.isEmpty()) {
            histories.insert(key.toString(), std::move(kept));
        }
    }
    return histories;
}

}  // namespace folio
