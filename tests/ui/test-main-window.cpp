// The main window on the fixture models, with Qt WebEngine (run under Xvfb): a PDF opened runs at once, the
// page view has one overlay per block, clicking a box highlights its result and clicking a result selects
// its box, export writes the files, a session file brings documents back with their results, keys act on the
// focused widget (Delete, undo and redo), Run after a cancel goes on, Run and Re-run As ask before replacing
// the user's changes, the result view follows the page, script messages stay out of the terminal, the
// window's layout is kept and fitted to the screen, the window has its icon, overlays stay on the page, an
// idle engine shows no rate, the exported HTML shows its formulas typeset with no script and offline, and
// the GUI thread never stalls for 100 ms while a 50-page PDF runs. Documents as they open:
// test-window-documents.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QInputDialog>
#include <QListWidget>
#include <QMap>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <QWebEngineSettings>
#include <QWebEngineView>
#include <algorithm>
#include <memory>

#include "app/document-model/document-model.h"
#include "app/document-model/session-file.h"
#include "app/jobs/document-exporter.h"
#include "app/jobs/job-controller.h"
#include "app/settings/error-setting.h"
#include "engine/models/model-registry.h"
#include "fixture-engine.h"
#include "result-script.h"
#include "screenshot.h"
#include "ui/main-window/engine-status.h"
#include "ui/main-window/error-panel.h"
#include "ui/main-window/main-window.h"
#include "ui/page-view/block-item.h"
#include "ui/page-view/page-view.h"
#include "ui/result-view/result-view.h"

using namespace folio;
using folio::test::evaluate;
using folio::test::evaluateBeside;

namespace {

// Milliseconds the calling thread has spent ready to run but waiting for a CPU.
qint64 runQueueWaitMs() {
    QFile file(QStringLiteral("/proc/thread-self/schedstat"));
    if (!file.open(QIODevice::ReadOnly)) {
        return 0;
    }
    const QList<QByteArray> fields = file.readAll().split(' ');
    return fields.size() >= 2 ? fields[1].toLongLong() / 1000000 : 0;
}

// The application, counting the events it delivers on the GUI thread between two watchdog turns so that a
// long step can be explained: which receivers and event types filled it.
class CountingApplication : public QApplication {
public:
    using QApplication::QApplication;

    bool notify(QObject* receiver, QEvent* event) override {
        if (!counting_ || QThread::currentThread() != thread()) {
            return QApplication::notify(receiver, event);
        }
        QElapsedTimer timer;
        timer.start();
        const QString key = QStringLiteral("%1/%2")
                                .arg(QString::fromLatin1(receiver->metaObject()->className()))
                                .arg(static_cast<int>(event->type()));
        const bool result = QApplication::notify(receiver, event);
        Tally& tally = tallies_[key];
        tally.count += 1;
        tally.us += timer.nsecsElapsed() / 1000;
        return result;
    }

    void setCounting(bool on) {
        counting_ = on;
        tallies_.clear();
    }

    // The receivers and event types since the last call with their counts and time (nested events counted
    // in their parents too), the costliest first; the tally starts again.
    QString takeSummary() {
        QList<std::pair<QString, Tally>> entries;
        for (auto it = tallies_.constBegin(); it != tallies_.constEnd(); ++it) {
            entries.append({it.key(), it.value()});
        }
        std::sort(entries.begin(), entries.end(),
                  [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
        QStringList parts;
        for (qsizetype i = 0; i < std::min<qsizetype>(entries.size(), 4); ++i) {
            parts << QStringLiteral("%1 x%2 %3 ms")
                         .arg(entries[i].first)
                         .arg(entries[i].second.count)
                         .arg(entries[i].second.us / 1000);
        }
        tallies_.clear();
        return parts.join(QStringLiteral(", "));
    }

private:
    struct Tally {
        qint64 count = 0;
        qint64 us = 0;
    };
    bool counting_ = false;
    QMap<QString, Tally> tallies_;
};

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    DocumentModel* model_ = nullptr;
    EngineHost* engine_ = nullptr;
    JobController* jobs_ = nullptr;
    std::unique_ptr<MainWindow> window_;
    int doc_ = -1;

    // Answers the next message box, once it shows, with its button of this object name (empty: Cancel);
    // saved as the screenshot `name` first where one is given.
    void answerNextBox(const QString& button, const QString& name = {}) {
        QTimer::singleShot(0, this, [button, name] {
            QTRY_VERIFY(qobject_cast<QMessageBox*>(QApplication::activeModalWidget()) != nullptr);
            auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
            const QString dir = qEnvironmentVariable("FOLIO_SCREENSHOT_DIR");
            if (!name.isEmpty() && !dir.isEmpty()) {
                QDir().mkpath(dir);
                box->grab().save(QDir(dir).filePath(name + QStringLiteral(".png")));
            }
            QAbstractButton* chosen =
                button.isEmpty() ? box->button(QMessageBox::Cancel) : box->findChild<QPushButton*>(button);
            QVERIFY(chosen != nullptr);
            chosen->click();
        });
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        model_ = new DocumentModel(this);
        engine_ = new EngineHost(this);
        jobs_ = new JobController(engine_->service(), *model_, this);
        jobs_->setPipelineOptions(test::fixturePipelineOptions(true));
        DocumentOptions documentOptions;
        documentOptions.dpi = 100;
        jobs_->setDocumentOptions(documentOptions);
        window_ = std::make_unique<MainWindow>(*model_, *jobs_, *engine_);
        window_->show();
        QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
        QSignalSpy loaded(engine_, &EngineHost::loaded);
        // One engine thread: the GUI thread keeps a core of its own on small machines.
        engine_->load(test::fixtureParams(1), test::fixtureFolders(), QStringLiteral("CPU"));
        QVERIFY(loaded.wait(120000));
        QTRY_VERIFY_WITH_TIMEOUT(window_->resultView()->isReady(), 30000);
        // KaTeX came from the local files, in standards mode.
        QCOMPARE(evaluate(window_->resultView(), QStringLiteral("typeof katex")).toString(),
                 QStringLiteral("object"));
        QCOMPARE(evaluate(window_->resultView(), QStringLiteral("document.compatMode")).toString(),
                 QStringLiteral("CSS1Compat"));
    }

    void cleanupTestCase() {
        window_.reset();  // before the controller and the engine go
    }

    void openRunsAndOverlaysMatchBlocks() {
        QSignalSpy finished(jobs_, &JobController::jobFinished);
        window_->openFiles({QString::fromUtf8(test::kSamplePdf)});
        doc_ = window_->currentDocument();
        QVERIFY(doc_ >= 0);
        // Pages show at once, before layout.
        QTRY_COMPARE_WITH_TIMEOUT(window_->pageList()->count(), 2, 20000);
        QVERIFY(finished.wait(240000));
        QCOMPARE(model_->document(doc_).state, DocumentState::Done);
        for (int p = 0; p < 2; ++p) {
            window_->showPage(doc_, p);
            const auto& blocks = model_->page(doc_, p).result.blocks;
            QVERIFY(!blocks.empty());
            QCOMPARE(window_->pageView()->blockItemCount(), static_cast<int>(blocks.size()));
            for (const BlockResult& block : blocks) {
                const BlockItem* item = window_->pageView()->blockItem(block.id);
                QVERIFY(item != nullptr);
                QCOMPARE(item->label(), block.label);
                QVERIFY(item->toolTip().contains(QStringLiteral("score")));
            }
        }
        window_->showPage(doc_, 0);
        window_->resultView()->flush();
        const int rendered = evaluate(window_->resultView(),
                                      QStringLiteral("document.querySelectorAll('#page-0 .block').length"))
                                 .toInt();
        QCOMPARE(rendered, static_cast<int>(model_->page(doc_, 0).result.blocks.size()));
    }

    void clickingABoxHighlightsItsResult() {
        PageView* view = window_->pageView();
        const auto& blocks = model_->page(doc_, 0).result.blocks;
        // A block read on its own (not a follower of a stacked group).
        int target = -1;
        for (const BlockResult& block : blocks) {
            if (block.groupId < 0) {
                target = block.id;
            }
        }
        QVERIFY(target >= 0);
        view->fitWidth();
        view->selectBlock(target);  // scrolled into view
        view->selectBlock(-1);
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->blockViewportPoint(target));
        QCOMPARE(view->selectedBlock(), target);
        QCOMPARE(window_->selectedBlock(), target);
        QCOMPARE(window_->resultView()->highlightedBlock(), std::make_pair(0, target));
        QTRY_COMPARE_WITH_TIMEOUT(
            evaluate(window_->resultView(), QStringLiteral("folio.highlighted()")).toString(),
            QStringLiteral("b-0-%1").arg(target), 10000);
    }

    void clickingAResultSelectsItsBox() {
        const auto& blocks = model_->page(doc_, 1).result.blocks;
        const int target = blocks.front().groupId >= 0 ? blocks.front().groupId : blocks.front().id;
        window_->showPage(doc_, 1);
        window_->resultView()->flush();
        evaluate(window_->resultView(),
                 QStringLiteral("document.getElementById('b-1-%1').click(); true").arg(target));
        QTRY_COMPARE_WITH_TIMEOUT(window_->currentPage(), 1, 10000);
        QTRY_COMPARE_WITH_TIMEOUT(window_->pageView()->selectedBlock(), target, 10000);
        QCOMPARE(window_->selectedBlock(), target);
    }

    void exportWritesTheFiles() {
        const QString out = tmp_.filePath(QStringLiteral("export"));
        QSignalSpy exported(window_.get(), &MainWindow::exportFinished);
        window_->exportDocument(doc_, out,
                                {ExportFormat::Markdown, ExportFormat::Json, ExportFormat::Html,
                                 ExportFormat::SearchablePdf, ExportFormat::Xlsx});
        QVERIFY(exported.wait(60000));
        for (const char* name : {"sample.md", "sample.json", "sample.html", "sample.searchable.pdf"}) {
            QVERIFY2(QFile::exists(QDir(out).filePath(QString::fromLatin1(name))), name);
        }
    }

    // Editing a block's text through its dialog changes the model and the rendered result.
    void editingABlockChangesItsText() {
        window_->showPage(doc_, 0);
        const int target = model_->page(doc_, 0).result.blocks.front().id;
        window_->selectBlock(0, target);
        QVERIFY(window_->action(QStringLiteral("editBlock"))->isEnabled());
        bool edited = false;
        QTimer::singleShot(0, this, [&] {
            QTRY_VERIFY(qobject_cast<QInputDialog*>(QApplication::activeModalWidget()) != nullptr);
            auto* dialog = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
            dialog->setTextValue(QStringLiteral("An edited paragraph."));
            dialog->accept();
            edited = true;
        });
        window_->action(QStringLiteral("editBlock"))->trigger();
        QVERIFY(edited);
        QCOMPARE(model_->block(doc_, 0, target)->content, QStringLiteral("An edited paragraph."));
        window_->resultView()->flush();
        QTRY_VERIFY_WITH_TIMEOUT(
            evaluate(window_->resultView(),
                     QStringLiteral("document.getElementById('b-0-%1').innerText").arg(target))
                .toString()
                .contains(QStringLiteral("An edited paragraph.")),
            10000);
    }

    // With a session file, the documents open now come back in a new window with their results and the
    // user's edits, shown at once without a run.
    void sessionBringsDocumentsBack() {
        const QString file = tmp_.filePath(QStringLiteral("settings/session.json"));
        window_->showDocument(doc_);
        model_->editBlockText(doc_, 0, 0, QStringLiteral("Kept across launches"));
        window_->setSessionFile(file);
        window_->sessionStore()->writeNow();
        QVERIFY(QFile::exists(file));

        DocumentModel model;
        JobController jobs(engine_->service(), model);
        MainWindow window(model, jobs, *engine_);
        window.setRunOnOpen(false);
        window.setSessionFile(file);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const int doc = model.findDocument(model_->document(doc_).path);
        QVERIFY(doc >= 0);
        QVERIFY(!jobs.isRunning());
        QCOMPARE(model.document(doc).state, DocumentState::Done);
        QCOMPARE(model.block(doc, 0, 0)->content, QStringLiteral("Kept across launches"));
        QVERIFY(model.block(doc, 0, 0)->edited);
        window.showPage(doc, 0);
        QCOMPARE(window.pageView()->blockItemCount(),
                 static_cast<int>(model.page(doc, 0).result.blocks.size()));
        // The page's image comes back rendered again, and the thumbnails from the file.
        QTRY_VERIFY_WITH_TIMEOUT(!model.page(doc, 0).result.image.isNull(), 20000);
        QTRY_VERIFY_WITH_TIMEOUT(!model.page(doc, 1).preview.isNull(), 20000);
    }

    // After a cancel each page shows its real state (done, partly recognised, not run), and Run goes on with
    // the pages not done, keeping the others.
    void runAfterCancelGoesOn() {
        const QString path = tmp_.filePath(QStringLiteral("twelve.pdf"));
        test::writeTestPdf(path, 12);
        PipelineOptions options = test::fixturePipelineOptions(false);
        options.maxPagesInFlight = 2;
        jobs_->setPipelineOptions(options);
        QSignalSpy finished(jobs_, &JobController::jobFinished);
        QMetaObject::Connection stop = connect(model_, &DocumentModel::pageChanged, this, [&](int d, int) {
            if (model_->document(d).path == path && model_->document(d).pagesDone >= 3) {
                window_->cancelJobs();
            }
        });
        window_->openFiles({path});
        const int doc = window_->currentDocument();
        QVERIFY(finished.wait(240000));
        disconnect(stop);
        finished.clear();
        QCOMPARE(model_->document(doc).state, DocumentState::Cancelled);
        const int done = model_->document(doc).pagesDone;
        QVERIFY2(done >= 3 && done < 12, qPrintable(QString::number(done)));
        QStringList states;
        for (int p = 0; p < 12; ++p) {
            const QString tip = window_->pageList()->item(p)->toolTip();
            const PageState state = model_->page(doc, p).state;
            QVERIFY(state != PageState::LaidOut);
            QVERIFY2(tip.contains(state == PageState::Done      ? QStringLiteral("done")
                                  : state == PageState::Partial ? QStringLiteral("partly recognised")
                                                                : QStringLiteral("not run")),
                     qPrintable(tip));
            states << tip;
        }
        window_->resultView()->flush();
        QTest::qWait(300);
        test::saveScreenshot(window_.get(), QStringLiteral("after-cancel"));
        const QString firstDone = model_->page(doc, 0).result.blocks.empty()
                                      ? QString()
                                      : model_->page(doc, 0).result.blocks.front().content;
        const int generation = model_->page(doc, 0).generation;

        window_->action(QStringLiteral("run"))->trigger();
        QVERIFY(finished.wait(240000));
        QCOMPARE(finished.first().first().value<PipelineSummary>().pages, 12 - done);
        QCOMPARE(model_->document(doc).pagesDone, 12);
        QCOMPARE(model_->page(doc, 0).generation, generation);
        if (!firstDone.isNull()) {
            QCOMPARE(model_->page(doc, 0).result.blocks.front().content, firstDone);
        }
        jobs_->setPipelineOptions(test::fixturePipelineOptions(true));
    }

    // The result view follows the page view's page (Page Down, thumbnails) to that page's results.
    void resultViewFollowsThePage() {
        const QString path = tmp_.filePath(QStringLiteral("twelve.pdf"));
        const int doc = model_->findDocument(path);
        QVERIFY(doc >= 0);
        ResultView* view = window_->resultView();
        const QString inView = QStringLiteral(
            "(function () { var r = document.getElementById('page-%1').getBoundingClientRect();"
            " return r.top >= 0 && r.top < window.innerHeight; })()");
        window_->showDocument(doc);
        window_->showPage(doc, 0);
        QTRY_VERIFY_WITH_TIMEOUT(evaluate(view, inView.arg(0)).toBool(), 10000);
        window_->showPage(doc, 11);
        QTRY_VERIFY_WITH_TIMEOUT(evaluate(view, QStringLiteral("window.scrollY")).toInt() > 0, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(evaluate(view, inView.arg(11)).toBool(), 10000);
        // Page Up back to the first page: the results scroll back with it.
        for (int p = 10; p >= 0; --p) {
            window_->action(QStringLiteral("previousPage"))->trigger();
            QCOMPARE(window_->currentPage(), p);
        }
        QTRY_VERIFY_WITH_TIMEOUT(evaluate(view, QStringLiteral("window.scrollY")).toInt() < 40, 10000);
        QVERIFY(evaluate(view, inView.arg(0)).toBool());
    }

    // The page's console messages (KaTeX's warnings) are counted, not printed; a script error is said in the
    // problems panel once.
    void scriptMessagesStayOutOfTheTerminal() {
        ResultView* view = window_->resultView();
        QSignalSpy errors(view, &ResultView::scriptError);
        const int before = view->consoleMessages();
        evaluate(view, QStringLiteral("console.warn('No character metrics for x'); true"));
        QTRY_COMPARE_WITH_TIMEOUT(view->consoleMessages(), before + 1, 5000);
        QVERIFY(errors.isEmpty());
        evaluate(view, QStringLiteral("console.error('broken'); console.error('broken'); true"));
        QTRY_COMPARE_WITH_TIMEOUT(view->consoleMessages(), before + 3, 5000);
        QCOMPARE(errors.size(), 1);
        QVERIFY(errors.first().first().toString().contains(QStringLiteral("broken")));
    }

    // The window keeps its size and panels between launches, and a layout larger than the screen is fitted.
    void windowLayoutIsKeptAndFitsTheScreen() {
        const QRect room = window_->screen()->availableGeometry();
        QVERIFY(window_->frameGeometry().width() <= room.width());
        window_->resize(1000, 700);
        QTRY_COMPARE(window_->size(), QSize(1000, 700));
        window_->saveLayout();
        {
            MainWindow other(*model_, *jobs_, *engine_);
            other.restoreLayout();
            QCOMPARE(other.size(), QSize(1000, 700));
        }
        window_->resize(room.width() + 600, room.height() + 400);
        QTRY_VERIFY(window_->width() > room.width());
        window_->saveLayout();
        {
            MainWindow other(*model_, *jobs_, *engine_);
            other.restoreLayout();
            QVERIFY2(other.width() <= room.width() && other.height() <= room.height(),
                     qPrintable(QStringLiteral("%1x%2").arg(other.width()).arg(other.height())));
        }
        window_->resize(1480, 920);
    }

    // Keys act on the widget that has the focus: Delete in the page view deletes the selected block (undone
    // with Ctrl+Z, redone with Ctrl+Shift+Z); Delete in the document list closes the document, asking first
    // while it has changes not exported, and leaves its blocks alone.
    void keysActOnTheFocusedWidget() {
        const QString path = tmp_.filePath(QStringLiteral("keys.pdf"));
        QVERIFY(QFile::copy(QString::fromUtf8(test::kSamplePdf), path));
        QSignalSpy finished(jobs_, &JobController::jobFinished);
        window_->openFiles({path});
        const int doc = window_->currentDocument();
        QCOMPARE(model_->document(doc).path, path);
        QVERIFY(finished.wait(240000));
        window_->showPage(doc, 0);
        const int blocks = static_cast<int>(model_->page(doc, 0).result.blocks.size());
        QVERIFY(blocks >= 1);
        window_->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(window_.get()));

        window_->selectBlock(0, 0);
        window_->pageView()->setFocus();
        QTest::keyClick(window_->pageView(), Qt::Key_Delete);
        QCOMPARE(static_cast<int>(model_->page(doc, 0).result.blocks.size()), blocks - 1);
        QTest::keyClick(window_->pageView(), Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(static_cast<int>(model_->page(doc, 0).result.blocks.size()), blocks);
        QTest::keyClick(window_->pageView(), Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
        QCOMPARE(static_cast<int>(model_->page(doc, 0).result.blocks.size()), blocks - 1);
        QVERIFY(model_->hasUnsavedEdits(doc));

        // In the list, with a block selected on the page: the document is asked about, not the block deleted.
        window_->selectBlock(0, 0);
        window_->documentList()->setFocus();
        const int listed = window_->documentList()->count();
        answerNextBox(QString(), QStringLiteral("close-document"));  // Cancel
        QTest::keyClick(window_->documentList(), Qt::Key_Delete);
        QVERIFY(model_->isOpen(doc));
        QCOMPARE(static_cast<int>(model_->page(doc, 0).result.blocks.size()), blocks - 1);
        answerNextBox(QStringLiteral("closeDocument"));
        window_->documentList()->setFocus();
        QTest::keyClick(window_->documentList(), Qt::Key_Delete);
        QVERIFY(!model_->isOpen(doc));
        QCOMPARE(window_->documentList()->count(), listed - 1);
        QVERIFY(window_->currentDocument() != doc);
        QVERIFY(model_->isOpen(window_->currentDocument()));
    }

    // Run on a finished document whose pages have the user's changes asks first: the other pages only, or
    // every page; Re-run As on an edited block asks too.
    void runAsksBeforeReplacingEdits() {
        const QString path = tmp_.filePath(QStringLiteral("ask.pdf"));
        QVERIFY(QFile::copy(QString::fromUtf8(test::kSamplePdf), path));
        QSignalSpy finished(jobs_, &JobController::jobFinished);
        window_->openFiles({path});
        const int doc = window_->currentDocument();
        QVERIFY(finished.wait(240000));
        finished.clear();
        model_->editBlockText(doc, 0, 0, QStringLiteral("Kept by the user"));

        // Re-run As on the edited block: cancelled, nothing runs.
        window_->showPage(doc, 0);
        window_->selectBlock(0, 0);
        answerNextBox(QString(), QStringLiteral("rerun-edited-block"));
        window_->findChild<QAction*>(QStringLiteral("rerunText"))->trigger();
        QCOMPARE(jobs_->pendingBlockRequests(), 0);
        QCOMPARE(model_->block(doc, 0, 0)->content, QStringLiteral("Kept by the user"));

        // Run: the question; Cancel runs nothing.
        answerNextBox(QString(), QStringLiteral("run-again"));
        window_->action(QStringLiteral("run"))->trigger();
        QVERIFY(!jobs_->isRunning());
        // The other pages only.
        answerNextBox(QStringLiteral("runUnedited"));
        window_->action(QStringLiteral("run"))->trigger();
        QVERIFY(jobs_->isRunning());
        QVERIFY(finished.wait(240000));
        QCOMPARE(finished.takeFirst().first().value<PipelineSummary>().pages, 1);
        QCOMPARE(model_->block(doc, 0, 0)->content, QStringLiteral("Kept by the user"));
        // Every page.
        answerNextBox(QStringLiteral("runAll"));
        window_->action(QStringLiteral("run"))->trigger();
        QVERIFY(finished.wait(240000));
        QCOMPARE(finished.takeFirst().first().value<PipelineSummary>().pages, 2);
        QVERIFY(model_->block(doc, 0, 0)->content != QStringLiteral("Kept by the user"));
        // No changes of the user's now: Run replaces the pages without asking.
        window_->action(QStringLiteral("run"))->trigger();
        QVERIFY(jobs_->isRunning());
        QVERIFY(finished.wait(240000));
    }

    void guiThreadStaysResponsiveOn50Pages() {
        const QString path = tmp_.filePath(QStringLiteral("fifty.pdf"));
        test::writeTestPdf(path, 50);
        jobs_->setPipelineOptions(test::fixturePipelineOptions(false));

        // The longest gap between two turns of the event loop while the document runs: the GUI thread's own
        // time (running, or blocked waiting), that is the wall-clock gap less the time the thread was ready
        // but waited for a CPU held by other processes (the kernel's schedstat), so that a busy machine does
        // not count against it. Both are reported.
        QElapsedTimer clock;
        qint64 last = 0;
        qint64 lastQueued = 0;
        qint64 longest = 0;
        qint64 longestWall = 0;
        QString longestEvents;  // what the GUI thread delivered in the longest step
        auto* app = static_cast<CountingApplication*>(QCoreApplication::instance());
        QTimer watchdog;
        watchdog.setInterval(5);
        connect(&watchdog, &QTimer::timeout, this, [&] {
            const qint64 now = clock.elapsed();
            const qint64 queued = runQueueWaitMs();
            longestWall = std::max(longestWall, now - last);
            const QString events = app->takeSummary();
            if (now - last - (queued - lastQueued) > longest) {
                longest = now - last - (queued - lastQueued);
                longestEvents = events;
            }
            last = now;
            lastQueued = queued;
        });
        QSignalSpy finished(jobs_, &JobController::jobFinished);
        clock.start();
        lastQueued = runQueueWaitMs();
        app->setCounting(true);
        watchdog.start();
        window_->openFiles({path});
        const int doc = window_->currentDocument();
        QVERIFY(finished.wait(400000));
        watchdog.stop();
        app->setCounting(false);
        QCOMPARE(model_->document(doc).pagesDone, 50);
        qInfo("longest step on the GUI thread: %lld ms (wall clock %lld ms) over %lld ms; its events: %s",
              longest, longestWall, clock.elapsed(), qPrintable(longestEvents));
        QVERIFY2(longest < 100, qPrintable(QStringLiteral("%1 ms").arg(longest)));
    }

    // The window has Folio's icon (the icon theme's, else the one built in, at every size).
    void windowHasItsIcon() {
        QVERIFY(!window_->windowIcon().isNull());
        QVERIFY(!QIcon(QStringLiteral(":/icons/org.folio.Folio-256.png")).pixmap(256).isNull());
        QVERIFY(window_->windowIcon().availableSizes().contains(QSize(256, 256)) ||
                !QIcon::themeName().isEmpty());
    }

    // A box reaching past the page is drawn to the page's edge; a box being drawn stays on the page while its
    // task is chosen.
    void overlaysStayOnThePage() {
        window_->showDocument(doc_);
        window_->showPage(doc_, 1);
        PageView* view = window_->pageView();
        const QSize size = model_->page(doc_, 1).size;
        BlockResult wide;
        wide.label = QStringLiteral("text");
        wide.box = {size.width() - 100, 20, size.width() + 400, 120};
        const int id = model_->addBlock(doc_, 1, wide);
        QVERIFY(view->blockItem(id) != nullptr);
        QVERIFY(view->blockItem(id)->outlineRect().right() <= size.width());
        QVERIFY(view->blockItem(id)->outlineRect().width() > 90);
        model_->removeBlock(doc_, 1, id);

        window_->action(QStringLiteral("drawBox"))->setChecked(true);
        bool shown = false;
        QTimer::singleShot(0, this, [&] {
            QTRY_VERIFY(QApplication::activePopupWidget() != nullptr);
            for (QGraphicsItem* item : view->scene()->items()) {
                shown = shown || (item->type() == QGraphicsRectItem::Type && item->zValue() == 10);
            }
            QApplication::activePopupWidget()->close();
        });
        const QPoint from = view->mapFromScene(QPointF(40, 40));
        const QPoint to = view->mapFromScene(QPointF(200, 140));
        QTest::mousePress(view->viewport(), Qt::LeftButton, {}, from);
        QTest::mouseMove(view->viewport(), to);
        QTest::mouseRelease(view->viewport(), Qt::LeftButton, {}, to);
        QVERIFY(shown);
        for (QGraphicsItem* item : view->scene()->items()) {
            QVERIFY(!(item->type() == QGraphicsRectItem::Type && item->zValue() == 10));
        }
        window_->action(QStringLiteral("drawBox"))->setChecked(false);
    }

    // The status bar's rate is the engine's while it works, and nothing once it is idle.
    void idleEngineShowsNoRate() {
        ServiceStats stats;
        stats.tokens_per_second = 31.0;
        stats.n_running[0] = 1;
        window_->engineStatus()->setStats(stats);
        QVERIFY2(window_->engineStatus()->text().contains(QStringLiteral("31 tok/s")),
                 qPrintable(window_->engineStatus()->text()));
        stats.n_running[0] = 0;
        window_->engineStatus()->setStats(stats);
        QVERIFY2(window_->engineStatus()->text().contains(QStringLiteral("0 tok/s")) &&
                     !window_->engineStatus()->text().contains(QStringLiteral("31 tok/s")),
                 qPrintable(window_->engineStatus()->text()));
    }

    // The exported HTML shows its formulas typeset with the page's scripts off: KaTeX's HTML in the file, its
    // stylesheet and fonts loaded from katex/ beside it.
    void exportedFormulasShowOffline() {
        PageResult page;
        page.inputPath = tmp_.filePath(QStringLiteral("formulas.png"));
        page.width = 1000;
        page.height = 1400;
        const auto block = [](int id, const char* label, const char* content) {
            BlockResult b;
            b.id = id;
            b.order = id + 1;
            b.label = QString::fromLatin1(label);
            b.content = QString::fromUtf8(content);
            b.rawText = b.content;
            b.box = {10, 10 + 100 * id, 900, 90 + 100 * id};
            return b;
        };
        page.blocks = {block(0, "paragraph_title", "Formulas"),
                       block(1, "display_formula", "$$ \\int_0^1 x^2\\,dx = \\frac{1}{3} $$"),
                       block(2, "text", "The area of a circle is $ \\pi r^2 $ for its radius $ r $.")};
        const QString out = tmp_.filePath(QStringLiteral("formulas"));
        QStringList notes;
        const QStringList files =
            DocumentExporter::write({page.inputPath, QStringLiteral("formulas"), 1}, {page},
                                    {ExportFormat::Html}, {out, {}}, {}, &notes);
        QVERIFY2(notes.isEmpty(), qPrintable(notes.join(QLatin1Char('\n'))));
        QCOMPARE(files.size(), 1);

        QWebEngineView view;
        view.settings()->setAttribute(QWebEngineSettings::JavascriptEnabled, false);
        view.resize(760, 420);
        QSignalSpy loaded(&view, &QWebEngineView::loadFinished);
        view.load(QUrl::fromLocalFile(files.first()));
        view.show();
        QVERIFY(loaded.wait(30000));
        QVERIFY(loaded.first().at(0).toBool());
        QCOMPARE(evaluateBeside(&view, QStringLiteral("document.querySelectorAll('.katex').length")).toInt(),
                 3);
        QCOMPARE(evaluateBeside(&view, QStringLiteral("document.querySelectorAll('.katex-display').length"))
                     .toInt(),
                 1);
        QVERIFY(evaluateBeside(&view, QStringLiteral("getComputedStyle(document.querySelector('.katex'))"
                                                     ".fontFamily"))
                    .toString()
                    .contains(QStringLiteral("KaTeX_Main")));
        // The fonts the formulas use came from katex/fonts beside the page.
        const QString loadedFonts = QStringLiteral(
            "Array.from(document.fonts).filter(f => f.status === 'loaded').map(f => f.family).join(',')");
        QTRY_VERIFY_WITH_TIMEOUT(
            evaluateBeside(&view, loadedFonts).toString().contains(QStringLiteral("KaTeX_Main")), 10000);
        QVERIFY(evaluateBeside(&view, loadedFonts).toString().contains(QStringLiteral("KaTeX_Math")));
        QVERIFY(!evaluateBeside(&view,
                                QStringLiteral("Array.from(document.fonts).some(f => f.status === 'error')"))
                     .toBool());
        QTest::qWait(200);
        test::saveScreenshot(&view, QStringLiteral("exported-formulas"));
    }
};

int main(int argc, char** argv) {
    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
    CountingApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);  // recent files in a settings file of the tests' own
    TestMainWindow test;
    return QTest::qExec(&test, argc, argv);
}

#include "test-main-window.moc"
