// The chat on the engine service with the small fixture model: an answer streams into the panel as it is
// written, Stop ends it and keeps its text, each document keeps its own conversation, a later question
// carries the earlier turns, an answer is copied, and questions the engine cannot take say why.
#include <QApplication>
#include <QClipboard>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <filesystem>

#include "app/chat/chat-session.h"
#include "app/settings/settings.h"
#include "engine/models/model-registry.h"
#include "engine/service/engine-service.h"
#include "engine/tokenizer/tokenizer.h"
#include "screenshot.h"
#include "ui/chat/chat-message-view.h"
#include "ui/chat/chat-panel.h"
#include "ui/chat/region-picker.h"

using namespace folio;
using folio::test::saveScreenshot;
using namespace std::chrono_literals;

namespace {

const char* const kModelDir = FOLIO_FIXTURES_DIR "/paddleocr-vl-tiny";

QImage page() {
    QImage image(FOLIO_FIXTURES_DIR "/images/small.png");
    return image.isNull() ? QImage(64, 64, QImage::Format_RGB888) : image;
}

}  // namespace

class TestChatPanel : public QObject {
    Q_OBJECT

    EngineService service_;

    static SettingsValues values() {
        SettingsValues v = Settings::defaults(QStringLiteral("cpu"));
        v.maxModelLen = 4096;
        v.maxNumSeqs = 4;
        v.maxNumBatchedTokens = 4096;
        return v;
    }

private Q_SLOTS:
    void initTestCase() {
        // Loaded as the app loads it from its settings.
        service_.load(Settings::serviceParams(values(), kModelDir, std::nullopt, 2));
        QCOMPARE(service_.wait_loaded(120s), ServiceState::Ready);
    }

    void answerStreamsIntoThePanel() {
        ChatPanel panel(service_);
        panel.resize(420, 560);
        panel.session()->setMaxNewTokens(12);
        panel.setPageProvider(page);
        panel.setDocument(QStringLiteral("/docs/a.pdf"));
        QSignalSpy deltas(panel.session(), &ChatSession::answerDelta);
        QSignalSpy finished(panel.session(), &ChatSession::answerFinished);
        panel.attachCurrentPage();
        QCOMPARE(panel.attachments().size(), 1);
        panel.setDraft(QStringLiteral("What does this page say?"));
        panel.send();
        QVERIFY(panel.session()->busy());
        QCOMPARE(panel.attachments().size(), 0);
        QCOMPARE(panel.draft(), QString());
        QCOMPARE(panel.messageViews().size(), 2);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QVERIFY(!panel.session()->busy());
        QVERIFY2(deltas.count() >= 2, "the answer arrives in pieces");
        const QList<ChatTurn> history = panel.session()->history();
        QCOMPARE(history.size(), 2);
        QCOMPARE(history[0].role, ChatTurn::Role::User);
        QCOMPARE(history[0].images.size(), 1);
        QCOMPARE(history[1].role, ChatTurn::Role::Assistant);
        QCOMPARE(history[1].state, ChatTurn::State::Done);
        QString streamed;
        for (const QList<QVariant>& delta : deltas) {
            streamed += delta.at(2).toString();
        }
        QCOMPARE(streamed, history[1].text);
        QVERIFY(!streamed.isEmpty());
        QCOMPARE(panel.messageViews()[1]->text(), history[1].text);
        // Copy puts the answer on the clipboard.
        panel.messageViews()[1]->copy();
        QCOMPARE(QApplication::clipboard()->text(), history[1].text);
        saveScreenshot(&panel, QStringLiteral("chat-panel"));

        // A second question carries the first turn; the conversation grows. The engine's second prompt is
        // the first one with the answer and the new question after it, as the model's chat template lays the
        // turns out: its tokens grow by exactly what that text adds (the image's tokens stay the same).
        panel.setDraft(QStringLiteral("And the title?"));
        panel.send();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        const QList<ChatTurn> both = panel.session()->history();
        QCOMPARE(both.size(), 4);
        QCOMPARE(panel.messageViews().size(), 4);
        const std::string firstPrompt =
            "<|begin_of_sentence|>User: <|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>"
            "What does this page say?\nAssistant: ";
        const std::string secondPrompt =
            firstPrompt + both[1].text.toStdString() + "<|end_of_sentence|>User: And the title?\nAssistant: ";
        const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::load(kModelDir);
        const auto n_text = [&](const std::string& text) {
            return static_cast<int64_t>(tokenizer->encode(text, /*add_special_tokens=*/true).size());
        };
        QVERIFY(both[1].promptTokens > n_text(firstPrompt));  // the image's placeholders expanded
        QCOMPARE(both[3].promptTokens - both[1].promptTokens, n_text(secondPrompt) - n_text(firstPrompt));
    }

    void stopEndsTheAnswerAndKeepsItsText() {
        ChatPanel panel(service_);
        panel.session()->setMaxNewTokens(3000);
        QSignalSpy deltas(panel.session(), &ChatSession::answerDelta);
        QSignalSpy finished(panel.session(), &ChatSession::answerFinished);
        panel.attachImage(page(), QStringLiteral("small.png"));
        panel.setDraft(QStringLiteral("Describe the image in detail."));
        panel.resize(420, 560);
        saveScreenshot(&panel, QStringLiteral("chat-panel-attached"));
        panel.send();
        QTRY_VERIFY_WITH_TIMEOUT(deltas.count() >= 2, 60000);
        saveScreenshot(&panel, QStringLiteral("chat-panel-streaming"));
        panel.stop();
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.first().at(2).value<ChatTurn::State>(), ChatTurn::State::Stopped);
        QVERIFY(!panel.session()->busy());
        const QString kept = panel.session()->history()[1].text;
        QVERIFY(!kept.isEmpty());
        // Nothing arrives after the stop.
        const int n = static_cast<int>(deltas.count());
        QTest::qWait(300);
        QCOMPARE(deltas.count(), n);
        QCOMPARE(panel.session()->history()[1].text, kept);
        QCOMPARE(panel.session()->history()[1].state, ChatTurn::State::Stopped);
        // The engine is free for the next question.
        panel.session()->setMaxNewTokens(4);
        panel.setDraft(QStringLiteral("Shorter, please."));
        panel.send();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        QCOMPARE(finished.last().at(2).value<ChatTurn::State>(), ChatTurn::State::Done);
    }

    void eachDocumentKeepsItsConversation() {
        ChatSession session(service_);
        session.setMaxNewTokens(3);
        QSignalSpy finished(&session, &ChatSession::answerFinished);
        session.setDocument(QStringLiteral("a.pdf"));
        QVERIFY(session.send(QStringLiteral("First document?")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        session.setDocument(QStringLiteral("b.pdf"));
        QCOMPARE(session.history().size(), 0);
        QVERIFY(session.send(QStringLiteral("Second document?")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        QCOMPARE(session.history().size(), 2);
        QCOMPARE(session.history(QStringLiteral("a.pdf")).size(), 2);
        QCOMPARE(session.history(QStringLiteral("a.pdf"))[0].text, QStringLiteral("First document?"));
        session.setDocument(QStringLiteral("a.pdf"));
        session.clearHistory();
        QCOMPARE(session.history().size(), 0);
        QCOMPARE(session.history(QStringLiteral("b.pdf")).size(), 2);
    }

    void panelShowsTheDocumentsConversation() {
        ChatPanel panel(service_);
        panel.session()->setMaxNewTokens(3);
        QSignalSpy finished(panel.session(), &ChatSession::answerFinished);
        panel.setDocument(QStringLiteral("x.pdf"));
        panel.setDraft(QStringLiteral("Hello"));
        panel.send();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        panel.setDocument(QStringLiteral("y.pdf"));
        QCOMPARE(panel.messageViews().size(), 0);
        panel.setDocument(QStringLiteral("x.pdf"));
        QCOMPARE(panel.messageViews().size(), 2);
    }

    void refusedQuestionsSayWhy() {
        // A question longer than max_model_len: the request is refused as it is built, and the answer says
        // why.
        ChatSession session(service_);
        QSignalSpy finished(&session, &ChatSession::answerFinished);
        QVERIFY(session.send(QStringLiteral("word ").repeated(6000)));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(session.history()[1].state, ChatTurn::State::Failed);
        QVERIFY2(session.history()[1].error.contains(QStringLiteral("max_model_len")),
                 qPrintable(session.history()[1].error));
        QVERIFY(!session.busy());
        // The failed pair is left out of the next request, which goes through.
        session.setMaxNewTokens(2);
        QVERIFY(session.send(QStringLiteral("Short one")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        QCOMPARE(session.history()[3].state, ChatTurn::State::Done);

        // An engine that is not loaded: the question is not sent.
        EngineService empty;
        ChatSession idle(empty);
        QSignalSpy idleFailed(&idle, &ChatSession::failed);
        QVERIFY(!idle.send(QStringLiteral("Anyone?")));
        QCOMPARE(idleFailed.count(), 1);
        QCOMPARE(idle.history().size(), 0);
    }

    void attachmentsFromRegionsAndFiles() {
        ChatPanel panel(service_);
        // A region dragged over the page is the page's pixels inside it.
        QImage pageImage(400, 300, QImage::Format_RGB888);
        pageImage.fill(Qt::white);
        pageImage.setPixelColor(150, 100, Qt::red);
        RegionPicker picker(pageImage);
        QVERIFY(picker.selectedImage().isNull());
        picker.setSelection(QRect(100, 50, 120, 80));
        const QImage region = picker.selectedImage();
        QCOMPARE(region.size(), QSize(120, 80));
        QCOMPARE(region.pixelColor(50, 50), QColor(Qt::red));
        picker.setSelection(QRect(350, 250, 200, 200));  // clipped to the page
        QCOMPARE(picker.selection(), QRect(350, 250, 50, 50));
        saveScreenshot(&picker, QStringLiteral("region-picker"));
        panel.attachImage(region, QStringLiteral("Region"));
        // Image files: those that cannot be read are reported, the others attached.
        panel.attachFilePaths({QStringLiteral(FOLIO_FIXTURES_DIR "/images/small.png"),
                               QStringLiteral(FOLIO_FIXTURES_DIR "/images/missing.png")});
        QCOMPARE(panel.attachments().size(), 2);
        QCOMPARE(panel.attachments()[1].size(), page().size());
        // Without a page provider there is no page to attach.
        panel.attachCurrentPage();
        QCOMPARE(panel.attachments().size(), 2);
        panel.clearAttachments();
        QVERIFY(panel.attachments().isEmpty());
    }

    void chatGoesOnAfterASettingsChangeReconfiguresTheEngine() {
        QTemporaryDir dir;
        Settings settings(dir.filePath(QStringLiteral("settings.ini")));
        QVERIFY(settings.apply(values(), 4096).isEmpty());
        QSignalSpy changed(&settings, &Settings::changed);
        SettingsValues v = values();
        v.maxNumSeqs = 2;
        v.enablePrefixCaching = false;
        QVERIFY(settings.apply(v, 4096).isEmpty());
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.first().at(1).value<EngineImpact>(), EngineImpact::Reconfigure);
        const ModelDescription model = describe_model(kModelDir);
        service_.reconfigure(Settings::engineOptions(settings.values(), model).engine);
        ChatSession session(service_);
        session.setMaxNewTokens(3);
        QSignalSpy finished(&session, &ChatSession::answerFinished);
        QVERIFY(session.send(QStringLiteral("Still there?"), {page()}));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(session.history()[1].state, ChatTurn::State::Done);
    }

    void destroyingTheSessionMidAnswerIsSafe() {
        auto session = std::make_unique<ChatSession>(service_);
        session->setMaxNewTokens(2000);
        QSignalSpy deltas(session.get(), &ChatSession::answerDelta);
        QVERIFY(session->send(QStringLiteral("Keep talking")));
        QTRY_VERIFY_WITH_TIMEOUT(deltas.count() >= 1, 60000);
        session.reset();
        QTest::qWait(100);
    }
};

QTEST_MAIN(TestChatPanel)
#include "test-chat-panel.moc"
