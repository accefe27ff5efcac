// folio-screenshot OUTPUT.png [CHAT.png]: the main window after a run of the sample PDF with the fixture
// models (random weights, so the recognised text is noise; layout thresholds lowered so that boxes show), a
// block selected, grabbed to a PNG for the README; then, where CHAT.png is named, the window with its chat
// panel docked after a question about the page. Needs a display (Xvfb) for Qt WebEngine.
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QListWidget>
#include <QScreen>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTimer>
#include <QWebEngineView>
#include <cstdio>
#include <memory>

#include "app/chat/chat-session.h"
#include "app/document-model/document-model.h"
#include "app/jobs/job-controller.h"
#include "fixture-engine.h"
#include "ui/chat/chat-message-view.h"
#include "ui/chat/chat-panel.h"
#include "ui/main-window/engine-status.h"
#include "ui/main-window/main-window.h"
#include "ui/page-view/page-view.h"
#include "ui/result-view/result-view.h"

using namespace folio;

namespace {

void waitFor(const std::function<bool()>& done, int timeoutMs) {
    QElapsedTimer timer;
    timer.start();
    while (!done() && timer.elapsed() < timeoutMs) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    }
}

void pause(int ms) {
    waitFor([] { return false; }, ms);
}

bool save(QWidget& window, const QString& output) {
    const QPixmap shot = window.screen()->grabWindow(window.winId());
    const QPixmap image = shot.isNull() || shot.width() < 100 ? window.grab() : shot;
    QDir().mkpath(QFileInfo(output).absolutePath());
    if (!image.save(output)) {
        std::fprintf(stderr, "folio-screenshot: cannot write %s\n", qPrintable(output));
        return false;
    }
    std::printf("%s\n", qPrintable(output));
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    if (argc < 2) {
        std::fprintf(stderr, "usage: folio-screenshot OUTPUT.png [CHAT.png]\n");
        return 2;
    }
    const QString output = QString::fromLocal8Bit(argv[1]);

    DocumentModel model;
    EngineHost engine;
    engine.setStatsInterval(200);
    JobController jobs(engine.service(), model);
    // Lowered layout thresholds (every candidate of the random layout model counts before PaddleOCR's rules).
    const PipelineOptions options = test::fixturePipelineOptions(true);
    jobs.setPipelineOptions(options);
    auto window = std::make_unique<MainWindow>(model, jobs, engine);
    window->resize(1600, 960);
    window->show();

    bool loaded = false;
    QObject::connect(&engine, &EngineHost::loaded, [&] { loaded = true; });
    // The chat panel's model beside them: the ERNIE-4.5-VL fixture.
    engine.load(test::fixtureParams(2, true), test::fixtureFolders(true), QStringLiteral("CPU"));
    waitFor([&] { return loaded && window->resultView()->isReady(); }, 120000);
    if (!loaded) {
        std::fprintf(stderr, "folio-screenshot: the fixture models did not load\n");
        return 1;
    }
    bool finished = false;
    QObject::connect(&jobs, &JobController::jobFinished, [&] { finished = true; });
    window->openFiles({QString::fromUtf8(test::kSamplePdf)});
    waitFor([&] { return finished; }, 300000);
    if (!finished) {
        std::fprintf(stderr, "folio-screenshot: the run did not finish\n");
        return 1;
    }
    const int doc = window->currentDocument();
    std::fprintf(stderr, "folio-screenshot: %zu and %zu blocks\n", model.page(doc, 0).result.blocks.size(),
                 model.page(doc, 1).result.blocks.size());
    window->showPage(doc, 0);
    // The random layout model finds one meaningless box a page; on page 1 it is deleted and the page's parts
    // are drawn by hand as a user does with Draw Box, each recognised by the fixture model (its text is
    // noise).
    while (!model.page(doc, 0).result.blocks.empty()) {
        model.deleteBlock(doc, 0, 0);
    }
    struct Part {
        double x1, y1, x2, y2;
        const char* task;
    };
    const Part parts[] = {
        {0.19, 0.083, 0.81, 0.113, "OCR:"},
        {0.30, 0.114, 0.70, 0.133, "OCR:"},
        {0.15, 0.150, 0.85, 0.226, "OCR:"},
        {0.115, 0.242, 0.31, 0.266, "OCR:"},
        {0.115, 0.268, 0.885, 0.345, "OCR:"},
        {0.115, 0.347, 0.885, 0.447, "OCR:"},
        {0.115, 0.460, 0.26, 0.483, "OCR:"},
        {0.115, 0.485, 0.885, 0.561, "OCR:"},
        {0.33, 0.571, 0.74, 0.598, "Formula Recognition:"},
        {0.115, 0.602, 0.885, 0.653, "OCR:"},
    };
    const QSize size = model.page(doc, 0).size;
    int recognized = 0;
    QObject::connect(&jobs, &JobController::blockRecognized, [&] { ++recognized; });
    for (const Part& part : parts) {
        jobs.recognizeRegion(
            doc, 0,
            BlockBox{static_cast<int>(part.x1 * size.width()), static_cast<int>(part.y1 * size.height()),
                     static_cast<int>(part.x2 * size.width()), static_cast<int>(part.y2 * size.height())},
            QString::fromLatin1(part.task));
    }
    waitFor([&] { return recognized == static_cast<int>(std::size(parts)); }, 120000);
    window->selectBlock(0, 2);
    window->resultView()->flush();
    pause(1500);  // the web view typesets and paints
    if (!save(*window, output)) {
        return 1;
    }

    if (argc >= 3) {
        // The chat panel docked beside the page, a question about it answered by the chat model (noise from
        // the random model, streamed as its thought).
        auto* dock = new QDockWidget(QObject::tr("Chat"), window.get());
        dock->setObjectName(QStringLiteral("chatPanel"));
        auto* chat = new ChatPanel(engine.service(), dock);
        dock->setWidget(chat);
        window->addPanel(dock);
        chat->setPageProvider([&window] { return window->currentPageImage(); });
        chat->setDocument(model.document(doc).path);
        chat->session()->setMaxNewTokens(24);
        QSignalSpy answered(chat->session(), &ChatSession::answerFinished);
        chat->attachCurrentPage();
        chat->setDraft(QStringLiteral("What is this page about?"));
        chat->send();
        waitFor([&] { return !answered.isEmpty(); }, 120000);
        // The answer's thought unfolded above it.
        if (!chat->messageViews().isEmpty()) {
            chat->messageViews().last()->setReasoningExpanded(true);
        }
        chat->setDraft(QStringLiteral("Which formula does it give?"));
        pause(800);
        if (!save(*window, QString::fromLocal8Bit(argv[2]))) {
            return 1;
        }
    }
    window.reset();
    return 0;
}
