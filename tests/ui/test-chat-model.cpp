// The chat panel's model: with a chat model (the ERNIE-4.5-VL fixture) loaded beside the OCR model, questions
// go to it and its thought is split from the answer and folded above it; without one the OCR model answers
// and the panel offers to download a chat model. Images dropped on the panel are attached.
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QSignalSpy>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>
#include <QtTest>
#include <chrono>
#include <filesystem>

#include "app/chat/answer-stream.h"
#include "app/chat/chat-session.h"
#include "app/chat/document-context.h"
#include "app/documents/page-image.h"
#include "app/jobs/engine-host.h"
#include "app/settings/settings.h"
#include "engine/models/model-registry.h"
#include "engine/service/engine-service.h"
#include "engine/tokenizer/tokenizer.h"
#include "screenshot.h"
#include "ui/chat/chat-message-view.h"
#include "ui/chat/chat-panel.h"

using namespace folio;
using folio::test::saveScreenshot;
using namespace std::chrono_literals;

namespace {

const char* const kOcrDir = FOLIO_FIXTURES_ROOT "/paddleocr-vl/paddleocr-vl-tiny";
const char* const kChatDir = FOLIO_FIXTURES_ROOT "/ernie45-vl/ernie45-vl-tiny";
const char* const kLlamaDir = FOLIO_FIXTURES_ROOT "/llama/llama-tiny";

SettingsValues values() {
    SettingsValues v = Settings::defaults(QStringLiteral("cpu"));
    v.maxModelLen = 4096;
    v.maxNumSeqs = 4;
    v.maxNumBatchedTokens = 4096;
    return v;
}

int64_t tokensOf(const char* modelDir, const std::string& text) {
    const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::load(modelDir);
    return static_cast<int64_t>(tokenizer->encode(text, /*add_special_tokens=*/true).size());
}

// What the view shows of a streaming answer, as the panel feeds it.
void feed(ChatMessageView& view, const ChatTurn& turn, const AnswerStream::Delta& delta) {
    if (!delta.reasoning.isEmpty()) {
        view.appendReasoning(delta.reasoning, turn.reasoningTokens);
    }
    if (!delta.text.isEmpty()) {
        view.appendText(delta.text);
    }
}

}  // namespace

class TestChatModel : public QObject {
    Q_OBJECT

    EngineService ocrOnly_;
    EngineService withChat_;
    EngineService withLlama_;

private Q_SLOTS:
    void initTestCase() {
        // Loaded as the app loads them from its settings: the OCR model alone, and with the chat model.
        ocrOnly_.load(Settings::serviceParams(values(), kOcrDir, std::nullopt, 2));
        QCOMPARE(ocrOnly_.wait_loaded(120s), ServiceState::Ready);
        withChat_.load(Settings::serviceParams(values(), kOcrDir, std::nullopt, 2, kChatDir));
        QCOMPARE(withChat_.wait_loaded(120s), ServiceState::Ready);
        QCOMPARE(withChat_.models().size(), size_t{2});
        withLlama_.load(Settings::serviceParams(values(), kOcrDir, std::nullopt, 2, kLlamaDir));
        QCOMPARE(withLlama_.wait_loaded(120s), ServiceState::Ready);
    }

    void modelsImplyTheirReasoningParser() {
        QCOMPARE(ChatSession::reasoningFormatOf(describe_model(kChatDir)),
                 std::optional(ReasoningFormat::Ernie45Vl));
        QCOMPARE(ChatSession::reasoningFormatOf(describe_model(kOcrDir)), std::nullopt);
        QCOMPARE(ChatSession::reasoningFormatOf(describe_model(kLlamaDir)),
                 std::optional(ReasoningFormat::DeepSeekR1));
    }

    // A text chat model (DeepSeek-R1-Distill's layout): the question goes to it through its template,
    // tokenized as the reference tokenizes it, and the answer streams as thought (deepseek_r1: the prompt
    // opened it).
    void questionsGoToTheLlamaModel() {
        ChatPanel panel(withLlama_);
        panel.resize(420, 560);
        QCOMPARE(panel.session()->chatModel(), QString::fromStdString(describe_model(kLlamaDir).name));
        panel.session()->setMaxNewTokens(8);
        QSignalSpy thoughts(panel.session(), &ChatSession::reasoningDelta);
        QSignalSpy finished(panel.session(), &ChatSession::answerFinished);
        panel.setDraft(QStringLiteral("Hello there"));
        panel.send();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const ChatTurn answer = panel.session()->history()[1];
        QVERIFY2(answer.state == ChatTurn::State::Done, qPrintable(answer.error));
        // The reference's prompt ids for this question (tests/fixtures/llama/reference.json, "hello").
        const std::string prompt =
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n<think>\n";
        QCOMPARE(answer.promptTokens,
                 static_cast<int64_t>(Tokenizer::load(kLlamaDir)->encode(prompt, false).size()));
        QCOMPARE(answer.promptTokens, 27);
        QVERIFY(thoughts.count() >= 1);
        QVERIFY(!answer.reasoning.isEmpty());
        saveScreenshot(&panel, QStringLiteral("chat-llama"));

        // An image for a model that reads text only is refused with a message, before anything runs.
        ChatSession session(withLlama_);
        QVERIFY(!session.answersWith(Modality::Image));
        QSignalSpy failed(&session, &ChatSession::failed);
        QImage image(32, 32, QImage::Format_RGB888);
        image.fill(Qt::white);
        QVERIFY(!session.send(QStringLiteral("What is this?"), {image}));
        QCOMPARE(failed.count(), 1);
        QVERIFY2(failed[0][0].toString().contains(QStringLiteral("text only")),
                 qPrintable(failed[0][0].toString()));
        QVERIFY(session.history().isEmpty());
        QVERIFY(!session.busy());

        // The panel offers no attachments for it, says why, and refuses a dropped image.
        QVERIFY(!panel.findChild<QToolButton*>(QStringLiteral("attach"))->isEnabled());
        QVERIFY(panel.findChild<QLabel*>(QStringLiteral("placeholder"))
                    ->text()
                    .contains(QStringLiteral("Ask the document")));
        QMimeData data;
        data.setUrls({QUrl::fromLocalFile(QStringLiteral(FOLIO_FIXTURES_DIR "/images/small.png"))});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&panel, &enter);
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&panel, &drop);
        QVERIFY(panel.attachments().isEmpty());
        const QLabel* notice = panel.findChild<QLabel*>(QStringLiteral("notice"));
        QVERIFY2(notice->isVisibleTo(&panel), qPrintable(notice->text()));
        QVERIFY2(notice->text().contains(QStringLiteral("text only")), qPrintable(notice->text()));
    }

    void aPictureModelTakesAttachments() {
        ChatPanel withImages(withChat_);
        QVERIFY(withImages.session()->answersWith(Modality::Image));
        QVERIFY(withImages.findChild<QToolButton*>(QStringLiteral("attach"))->isEnabled());
        ChatPanel ocr(ocrOnly_);
        QVERIFY(ocr.session()->answersWith(Modality::Image));
        QVERIFY(ocr.findChild<QToolButton*>(QStringLiteral("attach"))->isEnabled());
    }

    void questionsGoToTheChatModel() {
        ChatPanel panel(withChat_);
        panel.resize(420, 560);
        const QString chatName = QString::fromStdString(describe_model(kChatDir).name);
        QCOMPARE(panel.session()->chatModel(), chatName);
        QVERIFY(!panel.modelNote()->isVisibleTo(&panel));
        panel.session()->setMaxNewTokens(12);
        QSignalSpy thoughts(panel.session(), &ChatSession::reasoningDelta);
        QSignalSpy deltas(panel.session(), &ChatSession::answerDelta);
        QSignalSpy finished(panel.session(), &ChatSession::answerFinished);
        panel.setDraft(QStringLiteral("Hello there"));
        panel.send();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const QList<ChatTurn> history = panel.session()->history();
        QCOMPARE(history.size(), 2);
        const ChatTurn& answer = history[1];
        QCOMPARE(answer.state, ChatTurn::State::Done);
        // The ERNIE template's prompt, which opens the thought: the request went to the chat model.
        const std::string prompt = "<|begin_of_sentence|>User: Hello there\nAssistant: <think>";
        QCOMPARE(answer.promptTokens, tokensOf(kChatDir, prompt));
        // The answer's start streams as thought (the ernie-45-vl parser) until "</think>" comes.
        QVERIFY(thoughts.count() >= 1);
        QString thought;
        for (const QList<QVariant>& delta : thoughts) {
            thought += delta.at(2).toString();
        }
        QString text;
        for (const QList<QVariant>& delta : deltas) {
            text += delta.at(2).toString();
        }
        if (answer.reasoning.isEmpty()) {
            QCOMPARE(answer.text, thought + text);  // ended without "</think>": all answer
        } else {
            QCOMPARE(answer.reasoning, thought);
            QCOMPARE(answer.text, text);
            QVERIFY(answer.reasoningTokens > 0 && answer.reasoningTokens <= 12);
        }
        ChatMessageView* view = panel.messageViews()[1];
        QCOMPARE(view->reasoning(), answer.reasoning);
        QCOMPARE(view->text(), answer.text);
        QCOMPARE(view->reasoningToggle()->isVisibleTo(view), !answer.reasoning.isEmpty());
        QVERIFY(!view->reasoningBody()->isVisibleTo(view));

        // The next request carries the answer without its thought.
        panel.setDraft(QStringLiteral("And then?"));
        panel.send();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        const QList<ChatTurn> both = panel.session()->history();
        QCOMPARE(both.size(), 4);
        const std::string second =
            "<|begin_of_sentence|>User: Hello there\nAssistant: " + both[1].text.trimmed().toStdString() +
            "<|end_of_sentence|>User: And then?\nAssistant: <think>";
        QCOMPARE(both[3].promptTokens, tokensOf(kChatDir, second));
        saveScreenshot(&panel, QStringLiteral("chat-model"));
    }

    // A video's sampled frames go to the chat model with the question; the OCR model does not take videos.
    void videosGoToTheChatModel() {
        Video video;
        video.fps = 2.0;
        for (int i = 0; i < 4; ++i) {
            QImage frame(56, 56, QImage::Format_RGB888);
            frame.fill(QColor(40 * i, 120, 200));
            video.frames.push_back(toEngineImage(frame));
        }
        ChatSession session(withChat_);
        session.setMaxNewTokens(2);
        QSignalSpy finished(&session, &ChatSession::answerFinished);
        QVERIFY(session.send(QStringLiteral("Hello there"), {}, {video}));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const QList<ChatTurn> history = session.history();
        QCOMPARE(history[0].videos.size(), 1);
        QVERIFY2(history[1].state == ChatTurn::State::Done, qPrintable(history[1].error));
        // The template's video markers and the frames' placeholders expanded, beyond the text's tokens.
        const std::string text =
            "<|begin_of_sentence|>User: Video 1:<|VIDEO_START|><|VIDEO_PLACEHOLDER|>"
            "<|VIDEO_END|>Hello there\nAssistant: <think>";
        QVERIFY2(history[1].promptTokens > tokensOf(kChatDir, text),
                 qPrintable(QString::number(history[1].promptTokens)));
        // The question shows the video's first frame.
        ChatMessageView view(history[0]);
        int videoThumbnails = 0;
        for (const QLabel* label : view.findChildren<QLabel*>()) {
            videoThumbnails += label->toolTip() == QStringLiteral("Video: 4 frames") ? 1 : 0;
        }
        QCOMPARE(videoThumbnails, 1);

        ChatSession ocr(ocrOnly_);
        QSignalSpy refused(&ocr, &ChatSession::failed);
        QVERIFY(!ocr.send(QStringLiteral("Hello there"), {}, {video}));
        QCOMPARE(refused.count(), 1);
        QVERIFY2(refused.first().at(0).toString().contains(QStringLiteral("does not take videos")),
                 qPrintable(refused.first().at(0).toString()));
        QVERIFY(ocr.history().isEmpty());
    }

    // A video file dropped on the panel: its sampled frames (a whole number of pairs) go with the question.
    void droppedVideoGoesToTheChatModel() {
        const QString file = QStringLiteral(FOLIO_FIXTURES_ROOT "/video/testsrc-64x48-10fps.mp4");
        ChatPanel panel(withChat_);
        panel.session()->setMaxNewTokens(2);
        QMimeData data;
        data.setUrls({QUrl::fromLocalFile(file)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&panel, &enter);
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&panel, &drop);
        QCOMPARE(panel.videosLoading(), 1);  // read in the background
        QTRY_COMPARE_WITH_TIMEOUT(panel.videoAttachments().size(), 1, 30000);
        QCOMPARE(panel.videosLoading(), 0);
        QCOMPARE(panel.attachments().size(), 0);
        const qsizetype n_frames = static_cast<qsizetype>(panel.videoAttachments()[0].frames.size());
        QVERIFY2(n_frames >= 16 && n_frames % 2 == 0, qPrintable(QString::number(n_frames)));
        QSignalSpy finished(panel.session(), &ChatSession::answerFinished);
        panel.setDraft(QStringLiteral("What happens?"));
        panel.resize(420, 560);
        saveScreenshot(&panel, QStringLiteral("chat-video-attached"));
        panel.send();
        QVERIFY(panel.videoAttachments().isEmpty());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const QList<ChatTurn> history = panel.session()->history();
        QCOMPARE(history[0].videos.size(), 1);
        QVERIFY2(history[1].state == ChatTurn::State::Done, qPrintable(history[1].error));
        saveScreenshot(&panel, QStringLiteral("chat-video-sent"));

        // The OCR model alone: the question stays, and the panel says why.
        ChatPanel ocr(ocrOnly_);
        ocr.attachFilePaths({file});
        QTRY_COMPARE_WITH_TIMEOUT(ocr.videoAttachments().size(), 1, 30000);
        ocr.setDraft(QStringLiteral("What happens?"));
        ocr.send();
        QVERIFY(ocr.session()->history().isEmpty());
        QCOMPARE(ocr.videoAttachments().size(), 1);
        QCOMPARE(ocr.draft(), QStringLiteral("What happens?"));
        // A file that is not a video is reported.
        ocr.clearAttachments();
        ocr.attachFilePaths({QStringLiteral(FOLIO_FIXTURES_ROOT "/video/not-a-video.mp4")});
        QTRY_COMPARE_WITH_TIMEOUT(ocr.videosLoading(), 0, 30000);
        QVERIFY(ocr.videoAttachments().isEmpty());
        // A panel closed while a video is read waits for it and takes nothing.
        {
            ChatPanel closing(ocrOnly_);
            closing.attachFilePaths({file});
        }
        QTest::qWait(50);
    }

    // Ask the document: the document's blocks go ahead of the first question, the answer is marked as from
    // the document, and the second question's prompt finds the document in the prefix cache, so that only
    // its new turn is computed.
    void askTheDocumentComputesOnlyTheNewTurn_data() {
        QTest::addColumn<bool>("llama");
        QTest::newRow("ERNIE-4.5-VL") << false;
        QTest::newRow("Llama") << true;
    }

    void askTheDocumentComputesOnlyTheNewTurn() {
        QFETCH(bool, llama);
        EngineService& service = llama ? withLlama_ : withChat_;
        const char* const chatDir = llama ? kLlamaDir : kChatDir;
        std::vector<PageResult> pages(2);
        for (int p = 0; p < 2; ++p) {
            for (int b = 0; b < 4; ++b) {
                BlockResult block;
                block.id = b;
                block.label = QStringLiteral("text");
                block.content =
                    QStringLiteral("Paragraph %1 of page %2: sales in the north grew by %3 units.")
                        .arg(b + 1)
                        .arg(p + 1)
                        .arg(10 * b + p);
                pages[p].blocks.push_back(block);
            }
        }
        const auto context = std::make_shared<const DocumentContext>(DocumentContext::fromPages(pages));
        ChatSession session(service);
        session.setMaxNewTokens(6);
        session.setDocumentContext(QString(), context);
        QSignalSpy finished(&session, &ChatSession::answerFinished);
        QVERIFY(session.send(QStringLiteral("Where did sales grow?"), {}, {}, true));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QVERIFY(session.send(QStringLiteral("By how much on page 2?"), {}, {}, true));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        // Not about the document: its context stays for the earlier answers' links, and this one has none.
        QVERIFY(session.send(QStringLiteral("Hello?")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 60000);
        QVERIFY(!session.history()[5].fromDocument);
        QVERIFY(session.documentContext(QString()));
        const QList<ChatTurn> history = session.history();
        QCOMPARE(history.size(), 6);
        const ChatTurn& first = history[1];
        const ChatTurn& second = history[3];
        QVERIFY2(first.state == ChatTurn::State::Done, qPrintable(first.error));
        QVERIFY2(second.state == ChatTurn::State::Done, qPrintable(second.error));
        QVERIFY(first.fromDocument && second.fromDocument);
        QVERIFY(first.pagesLeftOut.isEmpty());
        const int64_t document = tokensOf(chatDir, context->select(QString(), 1 << 30).text.toStdString());
        QVERIFY2(first.promptTokens > document, qPrintable(QString::number(first.promptTokens)));
        QCOMPARE(first.cachedTokens, 0);
        // The first prompt, the document with it, is in the cache but for its last partial block.
        const int64_t computed = second.promptTokens - second.cachedTokens;
        qInfo("second question: %lld prompt tokens, %lld computed (the first prompt had %lld)",
              static_cast<long long>(second.promptTokens), static_cast<long long>(computed),
              static_cast<long long>(first.promptTokens));
        QVERIFY(second.cachedTokens >= first.promptTokens - EngineConfig{}.block_size);
        QVERIFY(computed <= second.promptTokens - first.promptTokens + EngineConfig{}.block_size);
    }

    // The panel's switch sends questions with the document's blocks; a citation in the answer selects its
    // block, one the document lacks is said to be missing, and a document without text is refused.
    void askTheDocumentFromThePanel() {
        ChatPanel panel(withChat_);
        panel.session()->setMaxNewTokens(4);
        QVERIFY(!panel.askDocumentButton()->isEnabled());
        std::shared_ptr<const DocumentContext> context;
        panel.setDocumentContextProvider([&context] { return context; });
        QVERIFY(panel.askDocumentButton()->isEnabled());
        panel.askDocumentButton()->setChecked(true);
        QSignalSpy finished(panel.session(), &ChatSession::answerFinished);
        panel.setDraft(QStringLiteral("What is this?"));
        panel.send();
        QCOMPARE(finished.count(), 0);
        QVERIFY2(panel.session()->history().isEmpty(), "nothing to ask about: refused");
        QCOMPARE(panel.draft(), QStringLiteral("What is this?"));

        std::vector<PageResult> pages(2);
        BlockResult block;
        block.id = 7;
        block.label = QStringLiteral("text");
        block.content = QStringLiteral("The warranty lasts two years.");
        pages[1].blocks.push_back(block);
        context = std::make_shared<const DocumentContext>(DocumentContext::fromPages(pages));
        panel.send();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QVERIFY(panel.session()->history()[1].fromDocument);
        ChatMessageView* answer = panel.messageViews().last();
        QSignalSpy activated(&panel, &ChatPanel::citationActivated);
        // The model's answer is random; the view's citations are what the panel acts on.
        answer->setTurn([&] {
            ChatTurn turn = panel.session()->history()[1];
            turn.text = QStringLiteral("Two years [p2.b1], not [p5.b3].");
            return turn;
        }());
        QVERIFY(answer->shownText().contains(QStringLiteral("[p2.b1](folio-cite:p2.b1)")));
        auto* text = answer->findChild<QTextBrowser*>(QStringLiteral("text"));
        QVERIFY(text);
        Q_EMIT text->anchorClicked(QUrl(QStringLiteral("folio-cite:p2.b1")));
        QCOMPARE(activated.count(), 1);
        QCOMPARE(activated[0][0].toInt(), 1);
        QCOMPARE(activated[0][1].toInt(), 7);
        Q_EMIT answer->citationClicked(QStringLiteral("p5.b3"));
        QCOMPARE(activated.count(), 1);  // a block the document does not have selects nothing
        panel.resize(420, 480);
        saveScreenshot(&panel, QStringLiteral("chat-ask-the-document"));
    }

    void thoughtIsFoldedAboveTheAnswer() {
        // An ERNIE answer as the engine streams it, split as the session splits it.
        AnswerStream stream(ReasoningFormat::Ernie45Vl);
        ChatTurn turn;
        turn.role = ChatTurn::Role::Assistant;
        turn.state = ChatTurn::State::Streaming;
        // In a column as the panel stacks its messages.
        QWidget column;
        auto* layout = new QVBoxLayout(&column);
        auto* viewOwned = new ChatMessageView(turn, &column);
        ChatMessageView& view = *viewOwned;
        layout->addWidget(viewOwned);
        layout->addStretch(1);
        column.resize(400, 260);
        column.show();
        feed(view, turn, stream.push(turn, "The user asks about", 4, false, false));
        QCOMPARE(turn.reasoning, QStringLiteral("The user asks about"));
        QVERIFY(turn.text.isEmpty());
        QVERIFY(view.reasoningToggle()->isVisibleTo(&view));
        QCOMPARE(view.reasoningToggle()->text(), QStringLiteral("Thinking… (4 tokens)"));
        QVERIFY(!view.reasoningExpanded());
        QVERIFY(!view.reasoningBody()->isVisibleTo(&view));
        feed(view, turn, stream.push(turn, " the title.</thi", 4, false, false));  // the tag held back
        QCOMPARE(turn.reasoning, QStringLiteral("The user asks about the title."));
        feed(view, turn, stream.push(turn, "nk>\n\nThe title is **Report", 6, false, false));
        feed(view, turn, stream.push(turn, " page 1**.", 4, true, true));
        QCOMPARE(turn.reasoning, QStringLiteral("The user asks about the title."));
        QCOMPARE(turn.text, QStringLiteral("\n\nThe title is **Report page 1**."));
        QCOMPARE(turn.reasoningTokens, 14);  // the outputs up to the one that closed the thought
        QCOMPARE(view.reasoning(), turn.reasoning);
        QCOMPARE(view.text(), turn.text);
        turn.state = ChatTurn::State::Done;
        view.setTurn(turn);
        QCOMPARE(view.reasoningToggle()->text(), QStringLiteral("Thought for 14 tokens"));
        QVERIFY(!view.reasoningBody()->isVisibleTo(&view));
        saveScreenshot(&column, QStringLiteral("chat-reasoning-folded"));
        // A click unfolds the thought above the answer; another folds it again.
        view.reasoningToggle()->click();
        QVERIFY(view.reasoningExpanded());
        QVERIFY(view.reasoningBody()->isVisibleTo(&view));
        auto* body = qobject_cast<QTextEdit*>(view.reasoningBody());
        QVERIFY(body != nullptr);
        QCOMPARE(body->toPlainText(), turn.reasoning);
        // Above the answer's text.
        for (QTextEdit* text : view.findChildren<QTextEdit*>()) {
            if (text != body) {
                QCOMPARE(text->toPlainText(), QStringLiteral("The title is Report page 1."));
                QTRY_VERIFY(body->geometry().bottom() < text->geometry().top());
            }
        }
        saveScreenshot(&column, QStringLiteral("chat-reasoning-open"));
        view.reasoningToggle()->click();
        QVERIFY(!view.reasoningBody()->isVisibleTo(&view));

        // Without "</think>": an answer that ended by itself is all answer; one cut short keeps its thought.
        AnswerStream whole(ReasoningFormat::Ernie45Vl);
        ChatTurn plain;
        whole.push(plain, "Just an answer.", 4, true, true);
        QCOMPARE(plain.text, QStringLiteral("Just an answer."));
        QVERIFY(plain.reasoning.isEmpty());
        QCOMPARE(plain.reasoningTokens, 0);
        AnswerStream cut(ReasoningFormat::Ernie45Vl);
        ChatTurn unfinished;
        cut.push(unfinished, "Still thinking", 2, true, false);
        QCOMPARE(unfinished.reasoning, QStringLiteral("Still thinking"));
        QVERIFY(unfinished.text.isEmpty());
        // A model without reasoning: all text, "</think>" included.
        AnswerStream none;
        ChatTurn ocr;
        none.push(ocr, "a</think>b", 3, true, true);
        QCOMPARE(ocr.text, QStringLiteral("a</think>b"));
        QVERIFY(ocr.reasoning.isEmpty());
    }

    // A page longer than the model's context: its blocks holding the question's words are given, counted by
    // the model's tokenizer so that the prompt fits, and the answer says the page was given in part; with no
    // room for even one block the question is refused with a message that says why.
    void aPageLongerThanTheContextIsGivenInPart() {
        std::vector<PageResult> pages(1);
        for (int b = 0; b < 300; ++b) {
            BlockResult block;
            block.id = b;
            block.label = QStringLiteral("text");
            block.content = b == 123
                                ? QStringLiteral("The warranty of the pump lasts two years.")
                                : QStringLiteral("Paragraph %1 says nothing in particular at all.").arg(b);
            pages[0].blocks.push_back(block);
        }
        const auto context = std::make_shared<const DocumentContext>(DocumentContext::fromPages(pages));
        const int64_t whole = tokensOf(kChatDir, context->select(QString(), 1 << 30).text.toStdString());
        ChatSession session(withChat_);
        QVERIFY(!session.chatModel().isEmpty());
        const int64_t contextLen = withChat_.limits(session.chatModel().toStdString()).max_model_len;
        QVERIFY2(whole > contextLen, qPrintable(QString::number(whole)));
        session.setMaxNewTokens(6);
        session.setDocumentContext(QString(), context);
        QSignalSpy finished(&session, &ChatSession::answerFinished);
        QVERIFY(session.send(QStringLiteral("How long is the pump's warranty?"), {}, {}, true));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const ChatTurn answer = session.history()[1];
        QVERIFY2(answer.state == ChatTurn::State::Done, qPrintable(answer.error));
        QVERIFY(answer.fromDocument);
        QCOMPARE(answer.pagesInPart, (QList<int>{0}));
        QVERIFY(answer.pagesLeftOut.isEmpty());
        QVERIFY2(answer.promptTokens > contextLen / 2 && answer.promptTokens < contextLen,
                 qPrintable(QString::number(answer.promptTokens)));
        ChatMessageView view(answer);
        QVERIFY2(
            view.statusText().contains(QStringLiteral("of pages 1 only the blocks nearest the question")),
            qPrintable(view.statusText()));
        // Images attached to the question take their tokens from the document's part, not past the context.
        {
            ChatSession withImages(withChat_);
            withImages.setMaxNewTokens(6);
            withImages.setDocumentContext(QString(), context);
            QImage image(400, 400, QImage::Format_RGB888);
            image.fill(Qt::darkCyan);
            const std::vector<int64_t> perImage =
                withChat_.count_media(session.chatModel().toStdString(), {{MediaKind::Image, 400, 400, 1}});
            QCOMPARE(perImage.size(), size_t{1});
            QVERIFY(perImage[0] >= 32);
            QSignalSpy done(&withImages, &ChatSession::answerFinished);
            QVERIFY(withImages.send(QStringLiteral("How long is the pump's warranty?"), {image, image}, {},
                                    true));
            QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
            const ChatTurn withAnswer = withImages.history()[1];
            QVERIFY2(withAnswer.state == ChatTurn::State::Done, qPrintable(withAnswer.error));
            QCOMPARE(withAnswer.pagesInPart, (QList<int>{0}));
            // Two images' placeholders, less about as many of the document's tokens: the picture markers
            // and a block's rounding at most.
            const int64_t grown = withAnswer.promptTokens - answer.promptTokens;
            QVERIFY2(grown < perImage[0],
                     qPrintable(QStringLiteral("%1 more tokens, %2 an image").arg(grown).arg(perImage[0])));
        }
        // The passages and the frame were counted once, in the chat model's tokenizer; a panel counts them
        // ahead, in the background, when its switch goes on.
        const auto nCounted = static_cast<int64_t>(context->textsToCount().size());
        QVERIFY(session.countedTexts() >= nCounted);
        {
            ChatPanel panel(withChat_);
            panel.setDocumentContextProvider([context] { return context; });
            QCOMPARE(panel.session()->countedTexts(), 0);
            panel.askDocumentButton()->setChecked(true);
            QTRY_COMPARE_WITH_TIMEOUT(panel.session()->countedTexts(), nCounted, 30000);
        }

        session.setMaxNewTokens(contextLen);  // the answer's room: a quarter of the context
        QSignalSpy failed(&session, &ChatSession::failed);
        session.clearHistory();
        std::vector<PageResult> huge(1);
        BlockResult block;
        block.label = QStringLiteral("text");
        block.content = QStringLiteral("Long words without end. ").repeated(2000);
        huge[0].blocks.push_back(block);
        session.setDocumentContext(QString(),
                                   std::make_shared<const DocumentContext>(DocumentContext::fromPages(huge)));
        QVERIFY(!session.send(QStringLiteral("What does it say?"), {}, {}, true));
        QCOMPARE(failed.count(), 1);
        const QString message = failed.at(0).at(0).toString();
        QVERIFY2(message.contains(QStringLiteral("Not even one block")) &&
                     message.contains(QStringLiteral("longer context")) &&
                     !message.contains(QStringLiteral("new conversation")),
                 qPrintable(message));
    }

    void askingTheDocumentNeedsAChatModel() {
        ChatPanel panel(ocrOnly_);
        std::vector<PageResult> pages(1);
        BlockResult block;
        block.label = QStringLiteral("text");
        block.content = QStringLiteral("Some text.");
        pages[0].blocks.push_back(block);
        const auto context = std::make_shared<const DocumentContext>(DocumentContext::fromPages(pages));
        panel.setDocumentContextProvider([context] { return context; });
        panel.askDocumentButton()->setChecked(true);
        panel.setDraft(QStringLiteral("What does it say?"));
        panel.send();
        QVERIFY(panel.session()->history().isEmpty());
        QCOMPARE(panel.draft(), QStringLiteral("What does it say?"));
    }

    void withoutAChatModelTheOcrModelAnswersAndADownloadIsOffered() {
        ChatPanel panel(ocrOnly_);
        panel.resize(420, 560);
        QVERIFY(panel.session()->chatModel().isEmpty());
        QVERIFY(panel.modelNote()->isVisibleTo(&panel));
        QVERIFY(panel.modelNoteText().contains(QStringLiteral("No chat model")));
        QSignalSpy download(&panel, &ChatPanel::chatModelDownloadRequested);
        panel.downloadChatModelButton()->click();
        QCOMPARE(download.count(), 1);
        saveScreenshot(&panel, QStringLiteral("chat-no-model"));
        // The OCR model answers: its prompt, no thought.
        panel.session()->setMaxNewTokens(4);
        QSignalSpy thoughts(panel.session(), &ChatSession::reasoningDelta);
        QSignalSpy finished(panel.session(), &ChatSession::answerFinished);
        panel.setDraft(QStringLiteral("Hello there"));
        panel.send();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const ChatTurn answer = panel.session()->history()[1];
        QCOMPARE(answer.state, ChatTurn::State::Done);
        QCOMPARE(thoughts.count(), 0);
        QCOMPARE(answer.promptTokens,
                 tokensOf(kOcrDir, "<|begin_of_sentence|>User: Hello there\nAssistant: "));

        // An engine not loaded yet says nothing about the model.
        EngineService empty;
        ChatPanel idle(empty);
        QVERIFY(!idle.modelNote()->isVisibleTo(&idle));
    }

    // Where the memory plan cannot hold both models, the app says so, naming both and the memory, and the OCR
    // model loads alone. The device's free memory is set just above what the OCR model alone needs (found by
    // loading it with less and less), which leaves too little for the chat model's weights beside it.
    void theChatModelGivesWayWhenMemoryCannotHoldBoth() {
        const auto params = [](int64_t free, bool withChat) {
            ServiceParams p = Settings::serviceParams(
                values(), kOcrDir, std::nullopt, 2,
                withChat ? std::optional<std::filesystem::path>(kChatDir) : std::nullopt);
            p.device.free_memory = [free] { return free; };
            return p;
        };
        const auto loadsAlone = [&](int64_t free) {
            EngineService service;
            service.load(params(free, false));
            return service.wait_loaded(60s) == ServiceState::Ready;
        };
        int64_t low = 1 << 20;
        int64_t high = int64_t{1} << 30;
        QVERIFY(loadsAlone(high));
        QVERIFY(!loadsAlone(low));
        while (high - low > (64 << 10)) {
            const int64_t mid = (low + high) / 2;
            (loadsAlone(mid) ? high : low) = mid;
        }
        const int64_t free = high + (512 << 10);
        QVERIFY(loadsAlone(free));

        EngineHost host;
        ModelFolders folders;
        folders.recognition = QString::fromUtf8(kOcrDir);
        folders.description = QStringLiteral("PaddleOCR-VL tiny");
        folders.chat = QString::fromUtf8(kChatDir);
        folders.chatDescription = QStringLiteral("ERNIE-4.5-VL tiny");
        QSignalSpy dropped(&host, &EngineHost::chatModelDropped);
        QSignalSpy loaded(&host, &EngineHost::loaded);
        QSignalSpy failed(&host, &EngineHost::loadFailed);
        host.load(params(free, true), folders, QStringLiteral("CPU"));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 60000);
        QCOMPARE(failed.count(), 0);
        QCOMPARE(dropped.count(), 1);
        const QString message = dropped.first().at(0).toString();
        QVERIFY2(message.contains(QStringLiteral("ERNIE-4.5-VL tiny")) &&
                     message.contains(QStringLiteral("PaddleOCR-VL tiny")) &&
                     message.contains(QStringLiteral("not enough memory")) &&
                     message.contains(QStringLiteral("MiB")),
                 qPrintable(message));
        QVERIFY(host.models().chat.isEmpty());
        QCOMPARE(host.service().models().size(), size_t{1});
        ChatSession session(host.service());
        QVERIFY(session.chatModel().isEmpty());
    }

    void droppedImagesAreAttached() {
        ChatPanel panel(ocrOnly_);
        QMimeData data;
        data.setUrls({QUrl::fromLocalFile(QStringLiteral(FOLIO_FIXTURES_DIR "/images/small.png"))});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&panel, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&panel, &drop);
        QCOMPARE(panel.attachments().size(), 1);
        QCOMPARE(panel.attachments()[0].size(), QImage(FOLIO_FIXTURES_DIR "/images/small.png").size());
        // An image dragged from another application as pixels.
        QMimeData pixels;
        QImage red(30, 20, QImage::Format_RGB32);
        red.fill(Qt::red);
        pixels.setImageData(red);
        QDragEnterEvent enterPixels(QPoint(10, 10), Qt::CopyAction, &pixels, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&panel, &enterPixels);
        QVERIFY(enterPixels.isAccepted());
        QDropEvent dropPixels(QPointF(10, 10), Qt::CopyAction, &pixels, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&panel, &dropPixels);
        QCOMPARE(panel.attachments().size(), 2);
        QCOMPARE(panel.attachments()[1].size(), QSize(30, 20));
    }
};

QTEST_MAIN(TestChatModel)
#include "test-chat-model.moc"
