// Conversations kept across restarts: the chats file's text read back as it was written, files that are
// damaged or from elsewhere refused or cut at the first turn that cannot be read, and on the Llama fixture a
// conversation asked, written, and shown again by a new session and panel, a closed document's left out.
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QtTest>
#include <algorithm>
#include <chrono>

#include "app/chat/chat-session.h"
#include "app/chat/chat-store.h"
#include "app/chat/document-context.h"
#include "app/settings/settings.h"
#include "engine/common/error.h"
#include "engine/service/engine-service.h"
#include "screenshot.h"
#include "ui/chat/chat-message-view.h"
#include "ui/chat/chat-panel.h"

using namespace folio;
using folio::test::saveScreenshot;
using namespace std::chrono_literals;

namespace {

const char* const kOcrDir = FOLIO_FIXTURES_ROOT "/paddleocr-vl/paddleocr-vl-tiny";
const char* const kLlamaDir = FOLIO_FIXTURES_ROOT "/llama/llama-tiny";

ChatTurn question(const QString& text, QList<QImage> images = {}) {
    ChatTurn turn;
    turn.role = ChatTurn::Role::User;
    turn.text = text;
    turn.images = std::move(images);
    return turn;
}

ChatTurn answer(const QString& text, ChatTurn::State state = ChatTurn::State::Done) {
    ChatTurn turn;
    turn.role = ChatTurn::Role::Assistant;
    turn.text = text;
    turn.state = state;
    return turn;
}

QImage gradient() {
    QImage image(23, 17, QImage::Format_RGB888);
    for (int y = 0; y < image.height(); ++y) {
        for (int x = 0; x < image.width(); ++x) {
            image.setPixel(x, y, qRgb(x * 11, y * 15, (x * y) % 256));
        }
    }
    return image;
}

QString errorOf(const QByteArray& json) {
    try {
        parseChatsJson(json, QStringLiteral("chats.json"));
    } catch (const Error& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace

class TestChatStore : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

private Q_SLOTS:
    void readsBackWhatItWrote() {
        ChatHistories histories;
        ChatTurn asked = question(QStringLiteral("What does the table say? 表"), {gradient()});
        asked.videos.append(Video{});
        ChatTurn answered = answer(QStringLiteral("It lists [p1.b2] prices."));
        answered.reasoning = QStringLiteral("The user wants the table.");
        answered.reasoningTokens = 7;
        answered.promptTokens = 310;
        answered.cachedTokens = 256;
        answered.fromDocument = true;
        answered.pagesLeftOut = {3, 4};
        answered.pagesInPart = {1};
        ChatTurn failedAnswer = answer(QString(), ChatTurn::State::Failed);
        failedAnswer.error = QStringLiteral("out of memory");
        histories.insert(QStringLiteral("/docs/a.pdf"),
                         {asked, answered, question(QStringLiteral("And then?")), failedAnswer});
        // An answer still being written is kept as stopped there.
        histories.insert(QString(), {question(QStringLiteral("Hi")),
                                     answer(QStringLiteral("Hel"), ChatTurn::State::Streaming)});

        const ChatHistories read = parseChatsJson(chatsJson(histories), QStringLiteral("chats.json"));
        QCOMPARE(read.size(), 2);
        const QList<ChatTurn> a = read.value(QStringLiteral("/docs/a.pdf"));
        QCOMPARE(a.size(), 4);
        QCOMPARE(a[0].role, ChatTurn::Role::User);
        QCOMPARE(a[0].text, asked.text);
        QCOMPARE(a[0].images.size(), 1);
        QCOMPARE(a[0].images[0].convertToFormat(QImage::Format_RGB888), gradient());
        QVERIFY(a[0].videos.isEmpty());
        QCOMPARE(a[0].videosNotKept, 1);
        QCOMPARE(a[1].role, ChatTurn::Role::Assistant);
        QCOMPARE(a[1].text, answered.text);
        QCOMPARE(a[1].reasoning, answered.reasoning);
        QCOMPARE(a[1].reasoningTokens, 7);
        QCOMPARE(a[1].promptTokens, 310);
        QCOMPARE(a[1].cachedTokens, 256);
        QVERIFY(a[1].fromDocument);
        QCOMPARE(a[1].pagesLeftOut, (QList<int>{3, 4}));
        QCOMPARE(a[1].pagesInPart, (QList<int>{1}));
        QCOMPARE(a[1].state, ChatTurn::State::Done);
        QCOMPARE(a[3].state, ChatTurn::State::Failed);
        QCOMPARE(a[3].error, QStringLiteral("out of memory"));
        const QList<ChatTurn> alone = read.value(QString());
        QCOMPARE(alone.size(), 2);
        QCOMPARE(alone[1].state, ChatTurn::State::Stopped);
        QCOMPARE(alone[1].text, QStringLiteral("Hel"));
    }

    void refusesFilesItCannotRead_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("message");
        QTest::newRow("not JSON") << QByteArray("{\"folioChats\": 1,")
                                  << QStringLiteral("chats.json: not JSON");
        QTest::newRow("an array") << QByteArray("[1, 2]") << QStringLiteral("not a conversations file");
        QTest::newRow("no version") << QByteArray("{\"conversations\": []}")
                                    << QStringLiteral("not a conversations file");
        QTest::newRow("a later version")
            << QByteArray("{\"folioChats\": 2, \"conversations\": []}")
            << QStringLiteral("chats.json: conversations file version 2, expected 1");
    }

    void refusesFilesItCannotRead() {
        QFETCH(QByteArray, json);
        QFETCH(QString, message);
        const QString error = errorOf(json);
        QVERIFY2(error.contains(message), qPrintable(error));
    }

    void cutsAConversationAtATurnItCannotRead_data() {
        QTest::addColumn<QString>("badTurn");
        QTest::addColumn<int>("kept");
        const QString good = QStringLiteral("{\"role\": \"user\", \"text\": \"q\"}");
        QTest::newRow("fine") << good << 4;
        QTest::newRow("unknown role") << QStringLiteral("{\"role\": \"system\", \"text\": \"q\"}") << 2;
        QTest::newRow("text not a string") << QStringLiteral("{\"role\": \"user\", \"text\": 5}") << 2;
        QTest::newRow("image not a PNG")
            << QStringLiteral("{\"role\": \"user\", \"text\": \"q\", \"images\": [\"AAAA\"]}") << 2;
        QTest::newRow("videos negative")
            << QStringLiteral("{\"role\": \"user\", \"text\": \"q\", \"videos_not_kept\": -1}") << 2;
        QTest::newRow("an answer in its place") << QStringLiteral(
                                                       "{\"role\": \"assistant\", \"text\": \"q\", "
                                                       "\"state\": \"done\"}")
                                                << 2;
        QTest::newRow("not an object") << QStringLiteral("\"q\"") << 2;
    }

    void cutsAConversationAtATurnItCannotRead() {
        QFETCH(QString, badTurn);
        QFETCH(int, kept);
        const QString json =
            QStringLiteral(
                "{\"folioChats\": 1, \"conversations\": [{\"document\": \"/a.pdf\", \"turns\": ["
                "{\"role\": \"user\", \"text\": \"first\"}, {\"role\": \"assistant\", \"text\": "
                "\"one\", \"state\": \"done\"}, %1, {\"role\": \"assistant\", \"text\": \"two\", "
                "\"state\": \"stopped\"}, {\"role\": \"user\", \"text\": \"unanswered\"}]}]}")
                .arg(badTurn);
        const ChatHistories read = parseChatsJson(json.toUtf8(), QStringLiteral("chats.json"));
        QCOMPARE(read.value(QStringLiteral("/a.pdf")).size(), kept);
        QCOMPARE(read.value(QStringLiteral("/a.pdf"))[1].text, QStringLiteral("one"));
    }

    void answersOfAStateItDoesNotKnowAreDropped() {
        const QByteArray json =
            "{\"folioChats\": 1, \"conversations\": [{\"document\": \"/a.pdf\", \"turns\": ["
            "{\"role\": \"user\", \"text\": \"q\"}, {\"role\": \"assistant\", \"text\": \"a\", \"state\": "
            "\"streaming\"}]}, {\"document\": 3, \"turns\": []}, {\"document\": \"/b.pdf\", \"turns\": ["
            "{\"role\": \"user\", \"text\": \"q\"}, {\"role\": \"assistant\", \"text\": \"a\", \"state\": "
            "\"done\", "
            "\"prompt_tokens\": 1.5}]}]}";
        QVERIFY(parseChatsJson(json, QStringLiteral("chats.json")).isEmpty());
    }

    void aConversationComesBackAfterARestart() {
        SettingsValues v = Settings::defaults(QStringLiteral("cpu"));
        v.maxNumSeqs = 4;
        v.maxNumBatchedTokens = 4096;
        EngineService service;
        service.load(Settings::serviceParams(v, kOcrDir, std::nullopt, 2, kLlamaDir));
        QCOMPARE(service.wait_loaded(120s), ServiceState::Ready);
        const QString path = dir_.filePath(QStringLiteral("chats.json"));
        const QString open = QStringLiteral("/docs/open.pdf");
        const QString closed = QStringLiteral("/docs/closed.pdf");
        const auto keeps = [open](const QString& key) { return key == open; };
        {
            ChatSession session(service);
            ChatStore store(session, path, keeps);
            session.setMaxNewTokens(6);
            QSignalSpy finished(&session, &ChatSession::answerFinished);
            for (const QString& document : {open, closed}) {
                session.setDocument(document);
                QVERIFY(session.send(QStringLiteral("What is in %1?").arg(document)));
                QTRY_COMPARE_WITH_TIMEOUT(finished.count(), document == open ? 1 : 2, 60000);
            }
            // Written a moment after the answer, without being asked.
            QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(path), 10000);
            store.writeNow();
        }
        ChatSession session(service);
        ChatStore store(session, path, keeps);
        QStringList problems;
        store.restore(&problems);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        QVERIFY(session.history(closed).isEmpty());
        const QList<ChatTurn> restored = session.history(open);
        QCOMPARE(restored.size(), 2);
        QCOMPARE(restored[0].text, QStringLiteral("What is in %1?").arg(open));
        QCOMPARE(restored[1].state, ChatTurn::State::Done);
        QVERIFY(restored[1].promptTokens > 0);

        // The panel shows it, and the conversation goes on from it.
        ChatPanel panel(service);
        panel.session()->restoreHistory(open, restored);
        panel.setDocument(open);
        QCOMPARE(panel.findChildren<ChatMessageView*>().size(), 2);
        panel.session()->setMaxNewTokens(6);
        QSignalSpy finished(panel.session(), &ChatSession::answerFinished);
        panel.setDraft(QStringLiteral("And more?"));
        panel.send();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const ChatTurn next = panel.session()->history().last();
        QVERIFY2(next.state == ChatTurn::State::Done, qPrintable(next.error));
        // The second question's prompt holds the first turn: longer than the first question's prompt.
        QVERIFY(next.promptTokens > restored[1].promptTokens);

        // An answer from the document read back links its citations to the document's blocks as they are.
        std::vector<PageResult> pages(2);
        BlockResult block;
        block.id = 7;
        block.label = QStringLiteral("text");
        block.content = QStringLiteral("The warranty lasts two years.");
        pages[1].blocks.push_back(block);
        ChatTurn cited = answer(QStringLiteral("Two years [p2.b1]."));
        cited.fromDocument = true;
        ChatPanel citing(service);
        citing.setDocumentContextProvider(
            [&pages] { return std::make_shared<const DocumentContext>(DocumentContext::fromPages(pages)); });
        ChatTurn withVideo = question(QStringLiteral("How long?"), {gradient()});
        withVideo.videosNotKept = 1;
        citing.session()->restoreHistory(closed, {withVideo, cited});
        citing.setDocument(closed);
        QCOMPARE(citing.messageViews().size(), 2);
        // The question shows its image and says its video was not kept.
        const QList<QLabel*> labels = citing.messageViews().first()->findChildren<QLabel*>();
        QVERIFY(std::any_of(labels.begin(), labels.end(), [](const QLabel* label) {
            return label->text() == QStringLiteral("video\nnot kept");
        }));
        citing.resize(420, 480);
        saveScreenshot(&citing, QStringLiteral("chat-restored"));
        QVERIFY(citing.messageViews().last()->shownText().contains(QStringLiteral("(folio-cite:p2.b1)")));
        QSignalSpy activated(&citing, &ChatPanel::citationActivated);
        Q_EMIT citing.messageViews().last()->citationClicked(QStringLiteral("p2.b1"));
        QCOMPARE(activated.count(), 1);
        QCOMPARE(activated[0][1].toInt(), 7);

        // A damaged file is said and leaves the conversations as they are.
        QFile damaged(path);
        QVERIFY(damaged.open(QIODevice::WriteOnly | QIODevice::Truncate));
        damaged.write("{\"folioChats\": ");
        damaged.close();
        ChatSession fresh(service);
        ChatStore again(fresh, path, keeps);
        again.restore(&problems);
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems[0].startsWith(path + QStringLiteral(": not JSON")), qPrintable(problems[0]));
        QVERIFY2(problems[0].endsWith(QStringLiteral("(kept as %1.unreadable)").arg(path)),
                 qPrintable(problems[0]));
        QVERIFY(fresh.histories().isEmpty());
        // Set aside, not written over by the next conversation.
        QVERIFY(!QFile::exists(path));
        QFile aside(path + QStringLiteral(".unreadable"));
        QVERIFY(aside.open(QIODevice::ReadOnly));
        QCOMPARE(aside.readAll(), QByteArray("{\"folioChats\": "));
    }
};

QTEST_MAIN(TestChatStore)
#include "test-chat-store.moc"
