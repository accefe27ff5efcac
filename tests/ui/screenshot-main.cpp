// folio-screenshot OUTPUT.png: the main window after a run of the sample PDF with the fixture models
// (random weights, so the recognised text is noise; layout thresholds lowered so that boxes show), a block
// selected, grabbed to a PNG for the README. Needs a display (Xvfb) for Qt WebEngine.
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QListWidget>
#include <QScreen>
#include <QStandardPaths>
#include <QTimer>
#include <QWebEngineView>
#include <cstdio>
#include <memory>

#include "document-model.h"
#include "engine-status.h"
#include "fixture-engine.h"
#include "job-controller.h"
#include "main-window.h"
#include "page-view.h"
#include "result-view.h"

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

}  // namespace

int main(int argc, char** argv) {
    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    if (argc < 2) {
        std::fprintf(stderr, "usage: folio-screenshot OUTPUT.png\n");
        return 2;
    }
    const QString output = QString::fromLocal8Bit(argv[1]);

    DocumentModel model;
    EngineHost engine;
    engine.setStatsInterval(200);
    JobController jobs(engine.service(), model);
    jobs.setPipelineOptions(test::fixturePipelineOptions(true));
    auto window = std::make_unique<MainWindow>(model, jobs, engine);
    window->resize(1600, 960);
    window->show();

    bool loaded = false;
    QObject::connect(&engine, &EngineHost::loaded, [&] { loaded = true; });
    engine.load(test::fixtureParams(), test::fixtureFolders(), QStringLiteral("CPU"));
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
    window->showPage(doc, 0);
    // The largest block of the first page, selected.
    const auto& blocks = model.page(doc, 0).result.blocks;
    int chosen = -1;
    int64_t largest = 0;
    for (const BlockResult& block : blocks) {
        const int64_t area = static_cast<int64_t>(block.box.width()) * block.box.height();
        if (block.groupId < 0 && area > largest &&
            area < 0.5 * model.page(doc, 0).size.width() * model.page(doc, 0).size.height()) {
            largest = area;
            chosen = block.id;
        }
    }
    if (chosen >= 0) {
        window->selectBlock(0, chosen);
    }
    window->resultView()->flush();
    pause(1500);  // the web view typesets and paints
    const QPixmap shot = window->screen()->grabWindow(window->winId());
    const QPixmap image = shot.isNull() || shot.width() < 100 ? window->grab() : shot;
    QDir().mkpath(QFileInfo(output).absolutePath());
    if (!image.save(output)) {
        std::fprintf(stderr, "folio-screenshot: cannot write %s\n", qPrintable(output));
        return 1;
    }
    std::printf("%s\n", qPrintable(output));
    window.reset();
    return 0;
}
