// The desktop app's logic without widgets, on the fixture models: documents opened with previews, a run
// through the job controller (pages laid out before their text, text streamed, pages finished in order),
// cancel and a run that goes on from there, runs that keep the user's pages, re-running a block with another
// task, a box drawn by hand, undo and redo of every block action, closing documents, export, and failures
// reported. The session file: test-session-file.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <map>

#include "app/document-model/document-model.h"
#include "app/document-model/edited-table.h"
#include "app/documents/page-range.h"
#include "app/export/html-writer.h"
#include "app/jobs/document-exporter.h"
#include "app/jobs/job-controller.h"
#include "app/jobs/preview-loader.h"
#include "fixture-engine.h"
#include "job-runs.h"

using namespace folio;
using namespace std::chrono_literals;

class TestDocumentJobs : public QObject {
    Q_OBJECT

    EngineService service_;
    QTemporaryDir tmp_;

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        service_.load(test::fixtureParams());
        QCOMPARE(service_.wait_loaded(120s), ServiceState::Ready);
    }

    void previewsShowPagesAtOnce() {
        DocumentModel model;
        PreviewLoader loader(model);
        const int doc = model.addDocument(QString::fromUtf8(test::kSamplePdf));
        QSignalSpy opened(&loader, &PreviewLoader::documentOpened);
        loader.load(doc);
        QVERIFY(opened.wait(20000));
        QCOMPARE(model.document(doc).pages.size(), size_t{2});
        QCOMPARE(model.document(doc).state, DocumentState::Idle);
        QVERIFY(model.page(doc, 0).size.isValid());
        QTRY_VERIFY_WITH_TIMEOUT(!model.page(doc, 1).preview.isNull(), 20000);
    }

    void runStreamsBlocksIntoTheModel() {
        DocumentModel model;
        JobController jobs(service_, model);
        test::useShortRuns(jobs);
        const int doc = model.addDocument(QString::fromUtf8(test::kSamplePdf));

        // Per page: laid out (boxes) before any of its text, and finished last.
        QStringList events;
        connect(&model, &DocumentModel::pageChanged, this, [&](int d, int p) {
            const PageState state = model.page(d, p).state;
            const QString e =
                QStringLiteral("%1 %2").arg(state == PageState::LaidOut ? "laid-out" : "page").arg(p);
            if (state == PageState::LaidOut || state == PageState::Done) {
                events << (state == PageState::Done ? QStringLiteral("done %1").arg(p) : e);
            }
        });
        connect(&model, &DocumentModel::blockChanged, this,
                [&](int, int p, int) { events << QStringLiteral("text %1").arg(p); });
        QSignalSpy progress(&jobs, &JobController::progressChanged);
        QSignalSpy running(&jobs, &JobController::runningChanged);

        const PipelineSummary summary = test::runAndWait(jobs, {doc});
        QCOMPARE(summary.pages, 2);
        QVERIFY(!summary.cancelled);
        QVERIFY(!jobs.isRunning());
        QCOMPARE(running.size(), 2);
        QVERIFY(!progress.isEmpty());
        QCOMPARE(model.document(doc).state, DocumentState::Done);
        QCOMPARE(model.document(doc).pagesDone, 2);
        for (int p = 0; p < 2; ++p) {
            const PageEntry& page = model.page(doc, p);
            QCOMPARE(page.state, PageState::Done);
            QVERIFY(!page.result.blocks.empty());
            QVERIFY(!page.result.image.isNull());
            QVERIFY(!page.preview.isNull());
            const int laidOut = events.indexOf(QStringLiteral("laid-out %1").arg(p));
            const int firstText = events.indexOf(QStringLiteral("text %1").arg(p));
            const int done = events.indexOf(QStringLiteral("done %1").arg(p));
            QVERIFY2(laidOut >= 0 && done > laidOut, qPrintable(events.join(", ")));
            QVERIFY2(firstText > laidOut && firstText < done, qPrintable(events.join(", ")));
        }
        QVERIFY(events.indexOf(QStringLiteral("done 0")) < events.indexOf(QStringLiteral("done 1")));
    }

    void cancelStopsTheRun() {
        const QString path = tmp_.filePath(QStringLiteral("long.pdf"));
        test::writeTestPdf(path, 30);
        DocumentModel model;
        JobController jobs(service_, model);
        PipelineOptions options = test::fixturePipelineOptions(false);
        options.maxPagesInFlight = 2;
        jobs.setPipelineOptions(options);
        DocumentOptions documentOptions;
        documentOptions.dpi = 72;
        jobs.setDocumentOptions(documentOptions);
        const int doc = model.addDocument(path);
        connect(&model, &DocumentModel::pageChanged, this, [&](int d, int p) {
            if (model.page(d, p).state == PageState::Done) {
                jobs.cancel();
            }
        });
        const PipelineSummary summary = test::runAndWait(jobs, {doc});
        QVERIFY(summary.cancelled);
        QVERIFY2(summary.pages < 30, qPrintable(QString::number(summary.pages)));
        QCOMPARE(model.document(doc).state, DocumentState::Cancelled);
        QVERIFY(model.document(doc).pagesDone < 30);
        QVERIFY(!jobs.isRunning());
    }

    // A cancelled run leaves its finished pages; Run with RunScope::Missing reads only the others, and the
    // finished ones keep their results untouched.
    void runAfterCancelKeepsFinishedPages() {
        const QString path = tmp_.filePath(QStringLiteral("eight.pdf"));
        test::writeTestPdf(path, 8);
        DocumentModel model;
        JobController jobs(service_, model);
        PipelineOptions options = test::fixturePipelineOptions(false);
        options.maxPagesInFlight = 2;
        jobs.setPipelineOptions(options);
        DocumentOptions documentOptions;
        documentOptions.dpi = 72;
        jobs.setDocumentOptions(documentOptions);
        const int doc = model.addDocument(path);
        QMetaObject::Connection stop = connect(&model, &DocumentModel::pageChanged, this, [&](int d, int p) {
            if (model.page(d, p).state == PageState::Done && model.document(d).pagesDone >= 2) {
                jobs.cancel();
            }
        });
        QVERIFY(test::runAndWait(jobs, {doc}).cancelled);
        disconnect(stop);
        QCOMPARE(model.document(doc).state, DocumentState::Cancelled);
        QCOMPARE(model.document(doc).pages.size(), size_t{8});
        std::map<int, std::pair<int, QString>> finished;  // page: generation, first block's content
        for (int p = 0; p < 8; ++p) {
            const PageEntry& page = model.page(doc, p);
            QVERIFY2(page.state != PageState::LaidOut, "a stopped run leaves no page recognising");
            if (page.state == PageState::Done) {
                QVERIFY(!page.result.blocks.empty());
                finished[p] = {page.generation, page.result.blocks.front().content};
            }
        }
        const int done = static_cast<int>(finished.size());
        QVERIFY2(done >= 2 && done < 8, qPrintable(QString::number(done)));
        QCOMPARE(model.document(doc).pagesDone, done);
        QCOMPARE(static_cast<int>(model.pagesToRun(doc, RunScope::Missing).size()), 8 - done);

        // Only the missing pages are laid out again.
        QList<int> laidOut;
        connect(&model, &DocumentModel::pageChanged, this, [&](int d, int p) {
            if (model.page(d, p).state == PageState::LaidOut && !laidOut.contains(p)) {
                laidOut << p;
            }
        });
        QSignalSpy finishedSpy(&jobs, &JobController::jobFinished);
        jobs.run({doc}, RunScope::Missing);
        QVERIFY(finishedSpy.wait(240000));
        QCOMPARE(finishedSpy.first().first().value<PipelineSummary>().pages, 8 - done);
        QCOMPARE(model.document(doc).state, DocumentState::Done);
        QCOMPARE(model.document(doc).pagesDone, 8);
        QCOMPARE(laidOut.size(), 8 - done);
        for (const auto& [p, kept] : finished) {
            QVERIFY2(!laidOut.contains(p), qPrintable(QString::number(p)));
            QCOMPARE(model.page(doc, p).generation, kept.first);
            QCOMPARE(model.page(doc, p).result.blocks.front().content, kept.second);
        }
        for (int p = 0; p < 8; ++p) {
            QCOMPARE(model.page(doc, p).state, PageState::Done);
        }
        // Nothing is missing now: a run of the missing pages queues nothing.
        jobs.run({doc}, RunScope::Missing);
        QVERIFY(!jobs.isRunning());
        QCOMPARE(model.document(doc).state, DocumentState::Done);
    }

    // RunScope::Unedited keeps the pages the user changed; RunScope::All replaces them too.
    void runsKeepEditedPages() {
        DocumentModel model;
        JobController jobs(service_, model);
        test::useShortRuns(jobs);
        const int doc = model.addDocument(QString::fromUtf8(test::kSamplePdf));
        test::runAndWait(jobs, {doc});
        QCOMPARE(model.document(doc).state, DocumentState::Done);
        model.editBlockText(doc, 0, 0, QStringLiteral("Mine"));
        QVERIFY(model.page(doc, 0).edited);
        QVERIFY(model.block(doc, 0, 0)->edited);
        QCOMPARE(model.editedPageCount(doc), 1);
        QVERIFY(!model.hasPagesToRun(doc, RunScope::Missing));
        QCOMPARE(model.pagesToRun(doc, RunScope::Unedited), std::vector<int>{1});

        const int generation0 = model.page(doc, 0).generation;
        const int generation1 = model.page(doc, 1).generation;
        QSignalSpy finished(&jobs, &JobController::jobFinished);
        jobs.run({doc}, RunScope::Unedited);
        QVERIFY(finished.wait(240000));
        QCOMPARE(finished.takeFirst().first().value<PipelineSummary>().pages, 1);
        QCOMPARE(model.block(doc, 0, 0)->content, QStringLiteral("Mine"));
        QCOMPARE(model.page(doc, 0).generation, generation0);
        QVERIFY(model.page(doc, 1).generation > generation1);
        QCOMPARE(model.document(doc).pagesDone, 2);
        QCOMPARE(model.document(doc).state, DocumentState::Done);

        jobs.run({doc}, RunScope::All);
        QVERIFY(finished.wait(240000));
        QCOMPARE(finished.takeFirst().first().value<PipelineSummary>().pages, 2);
        QVERIFY(model.block(doc, 0, 0)->content != QStringLiteral("Mine"));
        QVERIFY(!model.page(doc, 0).edited);
        QCOMPARE(model.editedPageCount(doc), 0);
        // The edit's undo command lapsed with the page it changed.
        QUndoStack* stack = model.undoStack(doc);
        if (stack->canUndo()) {
            stack->undo();
        }
        QVERIFY(model.block(doc, 0, 0)->content != QStringLiteral("Mine"));
        QCOMPARE(stack->count(), 0);
    }

    // Every block action goes through the document's undo stack: undo puts the page back as it was, redo as
    // the action left it.
    void undoAndRedoEveryBlockAction() {
        DocumentModel model;
        JobController jobs(service_, model);
        test::useShortRuns(jobs);
        const int doc = model.addDocument(QString::fromUtf8(test::kSamplePdf));
        test::runAndWait(jobs, {doc});
        QUndoStack* stack = model.undoStack(doc);
        QVERIFY(stack != nullptr);
        QVERIFY(stack->isClean());
        const auto contents = [&](int page) {
            QStringList out;
            for (const BlockResult& b : model.page(doc, page).result.blocks) {
                out << QStringLiteral("%1|%2|%3").arg(b.label, b.task, b.content);
            }
            return out;
        };
        const QStringList original = contents(0);
        QVERIFY(!original.isEmpty());
        QSignalSpy recognized(&jobs, &JobController::blockRecognized);

        // Edit.
        model.editBlockText(doc, 0, 0, QStringLiteral("Edited"));
        const QStringList edited = contents(0);
        QCOMPARE(stack->count(), 1);
        QVERIFY(!stack->isClean());
        QVERIFY(model.hasUnsavedEdits(doc));
        stack->undo();
        QCOMPARE(contents(0), original);
        QVERIFY(!model.page(doc, 0).edited);
        stack->redo();
        QCOMPARE(contents(0), edited);
        QVERIFY(model.block(doc, 0, 0)->edited);

        // Re-run as a table, to its end.
        jobs.rerunBlock(doc, 0, 0, QStringLiteral("Table Recognition:"));
        QVERIFY(recognized.wait(60000));
        const QStringList rerun = contents(0);
        QCOMPARE(model.block(doc, 0, 0)->label, QStringLiteral("table"));
        QVERIFY(!model.block(doc, 0, 0)->edited);
        stack->undo();
        QCOMPARE(contents(0), edited);
        stack->redo();
        QCOMPARE(contents(0), rerun);
        QCOMPARE(jobs.pendingBlockRequests(), 0);

        // A box drawn by hand.
        const int before = static_cast<int>(model.page(doc, 0).result.blocks.size());
        const int id = jobs.recognizeRegion(doc, 0, BlockBox{10, 10, 200, 80}, QStringLiteral("OCR:"));
        QCOMPARE(id, before);
        QVERIFY(model.block(doc, 0, id)->drawn);
        QVERIFY(recognized.wait(60000));
        const QStringList drawn = contents(0);
        QCOMPARE(drawn.size(), before + 1);
        stack->undo();
        QCOMPARE(contents(0), rerun);
        stack->redo();
        QCOMPARE(contents(0), drawn);

        // Delete.
        model.deleteBlock(doc, 0, 0);
        QCOMPARE(contents(0), drawn.mid(1));
        stack->undo();
        QCOMPARE(contents(0), drawn);
        stack->redo();
        QCOMPARE(contents(0), drawn.mid(1));

        // All the way back, and forward again.
        while (stack->canUndo()) {
            stack->undo();
        }
        QCOMPARE(contents(0), original);
        QVERIFY(stack->isClean());
        while (stack->canRedo()) {
            stack->redo();
        }
        QCOMPARE(contents(0), drawn.mid(1));
        QCOMPARE(stack->count(), 4);

        // A re-run undone while it runs stops its request; redo submits it again and it finishes.
        recognized.clear();
        jobs.rerunBlock(doc, 1, 0, QStringLiteral("OCR:"));
        QVERIFY(jobs.isRecognizing(doc, 1, 0));
        stack->undo();
        QCOMPARE(jobs.pendingBlockRequests(), 0);
        stack->redo();
        QVERIFY(jobs.isRecognizing(doc, 1, 0));
        QVERIFY(recognized.wait(60000));
        QCOMPARE(model.block(doc, 1, 0)->task, QStringLiteral("OCR:"));
        QVERIFY(model.block(doc, 1, 0)->nTokens >= 1);

        // A deletion while a drawn box is recognised keeps the request on its block, which moved.
        recognized.clear();
        const int box = jobs.recognizeRegion(doc, 1, BlockBox{20, 20, 220, 90}, QStringLiteral("OCR:"));
        QVERIFY(box >= 1);
        model.deleteBlock(doc, 1, 0);
        QVERIFY(jobs.isRecognizing(doc, 1, box - 1));
        QVERIFY(recognized.wait(60000));
        QCOMPARE(recognized.first().at(2).toInt(), box - 1);
        QVERIFY(model.block(doc, 1, box - 1)->nTokens >= 1);
        QCOMPARE(model.block(doc, 1, box - 1)->box.x1, 20);
        QVERIFY(!model.block(doc, 1, box - 1)->recognising);

        // An edit made while a drawn box is recognised, undone after its text came: the box keeps its text.
        recognized.clear();
        const int late = jobs.recognizeRegion(doc, 1, BlockBox{30, 120, 230, 190}, QStringLiteral("OCR:"));
        QVERIFY(model.block(doc, 1, late)->recognising);
        model.editBlockText(doc, 1, 0, QStringLiteral("Meanwhile"));
        QVERIFY(recognized.wait(60000));
        const QString text = model.block(doc, 1, late)->content;
        const int tokens = model.block(doc, 1, late)->nTokens;
        QVERIFY(tokens >= 1);
        stack->undo();
        QVERIFY(model.block(doc, 1, 0)->content != QStringLiteral("Meanwhile"));
        QVERIFY(!model.block(doc, 1, late)->recognising);
        QCOMPARE(model.block(doc, 1, late)->nTokens, tokens);
        QCOMPARE(model.block(doc, 1, late)->content, text);
        QCOMPARE(jobs.pendingBlockRequests(), 0);
    }

    // Closing a document frees its pages and stops its requests; closing one in a run stops the run, and the
    // run's other documents go on from where they were.
    void closingADocument() {
        DocumentModel model;
        JobController jobs(service_, model);
        test::useShortRuns(jobs);
        const int first = model.addDocument(QString::fromUtf8(test::kSamplePdf));
        test::runAndWait(jobs, {first});
        QVERIFY(model.pageImagesHeld() > 0);
        jobs.rerunBlock(first, 0, 0, QStringLiteral("OCR:"));
        QCOMPARE(jobs.pendingBlockRequests(), 1);
        QSignalSpy closed(&model, &DocumentModel::documentClosed);
        model.closeDocument(first);
        QCOMPARE(closed.size(), 1);
        QVERIFY(!model.isOpen(first));
        QCOMPARE(model.document(first).state, DocumentState::Closed);
        QVERIFY(model.document(first).pages.empty());
        QCOMPARE(model.pageImagesHeld(), 0);
        QCOMPARE(model.undoStack(first), nullptr);
        QCOMPARE(jobs.pendingBlockRequests(), 0);
        QCOMPARE(model.findDocument(QString::fromUtf8(test::kSamplePdf)), -1);

        // Two documents in one run; the first closes as soon as a page of it is laid out.
        const QString path = tmp_.filePath(QStringLiteral("four.pdf"));
        test::writeTestPdf(path, 4);
        const int a = model.addDocument(path);
        const int b = model.addDocument(QString::fromUtf8(test::kSamplePdf));
        QVERIFY(b != first);
        QMetaObject::Connection closer =
            connect(&model, &DocumentModel::pageChanged, this, [&](int d, int p) {
                if (d == a && model.isOpen(a) && model.page(d, p).state == PageState::LaidOut) {
                    model.closeDocument(a);
                }
            });
        QSignalSpy finished(&jobs, &JobController::jobFinished);
        jobs.run({a, b});
        QVERIFY(finished.wait(240000));
        disconnect(closer);
        QVERIFY(finished.first().first().value<PipelineSummary>().cancelled);
        QVERIFY(!model.isOpen(a));
        // b goes on in a run of its own.
        QTRY_COMPARE_WITH_TIMEOUT(model.document(b).state, DocumentState::Done, 240000);
        QCOMPARE(model.document(b).pagesDone, 2);
        QVERIFY(!jobs.isRunning());
    }

    // Cancel stops the block requests under way too; their blocks no longer wait for text.
    void cancelStopsBlockRequests() {
        DocumentModel model;
        JobController jobs(service_, model);
        test::useShortRuns(jobs);
        const int doc = model.addDocument(QString::fromUtf8(test::kSamplePdf));
        test::runAndWait(jobs, {doc});
        jobs.rerunBlock(doc, 0, 0, QStringLiteral("OCR:"));
        const int drawn = jobs.recognizeRegion(doc, 1, BlockBox{10, 10, 200, 80}, QStringLiteral("OCR:"));
        QCOMPARE(jobs.pendingBlockRequests(), 2);
        QVERIFY(model.block(doc, 0, 0)->recognising);
        jobs.cancel();
        QCOMPARE(jobs.pendingBlockRequests(), 0);
        QVERIFY(!model.block(doc, 0, 0)->recognising);
        QVERIFY(!model.block(doc, 1, drawn)->recognising);
        QSignalSpy recognized(&jobs, &JobController::blockRecognized);
        QVERIFY(!recognized.wait(500));  // their outputs are dropped
    }

    void blockActions() {
        DocumentModel model;
        JobController jobs(service_, model);
        test::useShortRuns(jobs);
        const int doc = model.addDocument(QString::fromUtf8(test::kSamplePdf));
        test::runAndWait(jobs, {doc});
        QCOMPARE(model.document(doc).state, DocumentState::Done);

        // Re-run block 0 as a table: its label follows the task, its text streams and is finished.
        QSignalSpy recognized(&jobs, &JobController::blockRecognized);
        QSignalSpy changed(&model, &DocumentModel::blockChanged);
        jobs.rerunBlock(doc, 0, 0, QStringLiteral("Table Recognition:"));
        QCOMPARE(model.block(doc, 0, 0)->label, QStringLiteral("table"));
        QVERIFY(recognized.wait(60000));
        const BlockResult* block = model.block(doc, 0, 0);
        QCOMPARE(block->task, QStringLiteral("Table Recognition:"));
        QVERIFY(block->nTokens >= 1);
        QVERIFY(block->error.isEmpty());
        QVERIFY(changed.size() >= 2);
        QCOMPARE(jobs.pendingBlockRequests(), 0);

        // A box drawn by hand becomes a new block, recognised as text.
        const int before = static_cast<int>(model.page(doc, 1).result.blocks.size());
        const int id = jobs.recognizeRegion(doc, 1, BlockBox{10, 10, 200, 80}, QStringLiteral("OCR:"));
        QCOMPARE(id, before);
        QVERIFY(recognized.wait(60000));
        QCOMPARE(static_cast<int>(model.page(doc, 1).result.blocks.size()), before + 1);
        QCOMPARE(model.block(doc, 1, id)->label, QStringLiteral("text"));
        QVERIFY(model.block(doc, 1, id)->nTokens >= 1);

        // Edit and delete.
        model.setBlockContent(doc, 1, id, QStringLiteral("Corrected text"));
        QCOMPARE(model.block(doc, 1, id)->content, QStringLiteral("Corrected text"));
        model.deleteBlock(doc, 1, 0);
        QCOMPARE(static_cast<int>(model.page(doc, 1).result.blocks.size()), before);
        QCOMPARE(model.block(doc, 1, id - 1)->content, QStringLiteral("Corrected text"));

        // Export writes every format.
        DocumentExporter exporter(model);
        QSignalSpy exported(&exporter, &DocumentExporter::finished);
        ExportOptions exportOptions;
        exportOptions.outputDir = tmp_.filePath(QStringLiteral("out"));
        exporter.exportDocument(doc,
                                {ExportFormat::Markdown, ExportFormat::Json, ExportFormat::Html,
                                 ExportFormat::SearchablePdf, ExportFormat::Xlsx},
                                exportOptions);
        QVERIFY(exported.wait(60000));
        const QStringList files = exported.first().at(1).toStringList();
        for (const char* name : {"sample.md", "sample.json", "sample.html", "sample.searchable.pdf"}) {
            const QString file = QDir(exportOptions.outputDir).filePath(QString::fromLatin1(name));
            QVERIFY2(files.contains(file), qPrintable(files.join(", ")));
            QVERIFY(QFile(file).size() > 0);
        }
        QFile markdown(QDir(exportOptions.outputDir).filePath(QStringLiteral("sample.md")));
        QVERIFY(markdown.open(QIODevice::ReadOnly));
        QVERIFY(QString::fromUtf8(markdown.readAll()).contains(QStringLiteral("Corrected text")));
    }

    // A long document keeps only the budget's page images; one let go of comes back rendered again, the same
    // pixels, when a view or a block request needs it, and export renders the others.
    void pageImagesStayWithinTheBudget() {
        const QString path = tmp_.filePath(QStringLiteral("six.pdf"));
        test::writeTestPdf(path, 6);
        DocumentModel model;
        model.setPageImageBudget(2);
        JobController jobs(service_, model);
        test::useShortRuns(jobs);
        PreviewLoader loader(model);
        loader.setDocumentOptions(jobs.documentOptions());
        connect(&jobs, &JobController::pageImageNeeded, &loader, &PreviewLoader::loadPageImage);
        const int doc = model.addDocument(path);
        QImage first;  // page 1's image as the pipeline rendered it
        connect(&model, &DocumentModel::pageChanged, this, [&](int d, int p) {
            if (d == doc && p == 0 && first.isNull()) {
                first = model.page(d, p).result.image;
            }
        });
        QCOMPARE(test::runAndWait(jobs, {doc}).pages, 6);
        QVERIFY(!first.isNull());

        QCOMPARE(model.pageImagesHeld(), 2);
        for (int p = 0; p < 6; ++p) {
            QCOMPARE(model.page(doc, p).result.image.isNull(), p < 4);
            QCOMPARE(model.needsPageImage(doc, p), p < 4);
        }

        // A block request on a page without its image waits for it, then runs.
        QVERIFY(!model.page(doc, 0).result.blocks.empty());
        QSignalSpy recognized(&jobs, &JobController::blockRecognized);
        jobs.rerunBlock(doc, 0, 0, QStringLiteral("OCR:"));
        QVERIFY(recognized.wait(60000));
        QCOMPARE(model.page(doc, 0).result.image, first);
        QCOMPARE(model.pageImagesHeld(), 2);

        // Export renders the pages it needs again, one at a time.
        DocumentExporter exporter(model);
        QSignalSpy exported(&exporter, &DocumentExporter::finished);
        ExportOptions options;
        options.outputDir = tmp_.filePath(QStringLiteral("six-export"));
        exporter.exportDocument(doc, {ExportFormat::SearchablePdf}, options);
        QVERIFY(exported.wait(60000));
        const QString pdf = QDir(options.outputDir).filePath(QStringLiteral("six.searchable.pdf"));
        QFile file(pdf);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(file.readAll().count("/Subtype /Image"), 6);  // every page's image, none left out
        QCOMPARE(model.pageImagesHeld(), 2);
    }

    // An export says which formats wrote nothing and why (an XLSX of a document without a table grid), and
    // what it wrote in a simpler form (an HTML page's formulas left as LaTeX where KaTeX is missing).
    void exportSaysWhatItSkipped() {
        PageResult page;
        page.inputPath = tmp_.filePath(QStringLiteral("plain.png"));
        page.width = 400;
        page.height = 300;
        BlockResult text;
        text.label = QStringLiteral("text");
        text.content = QStringLiteral("Hello");
        text.rawText = text.content;
        text.box = {10, 10, 200, 40};
        text.order = 1;
        page.blocks = {text};
        const DocumentInfo info{page.inputPath, QStringLiteral("plain"), 1};
        ExportOptions options;
        options.outputDir = tmp_.filePath(QStringLiteral("skips"));
        QStringList skipped;
        QStringList files = DocumentExporter::write(
            info, {page}, {ExportFormat::Markdown, ExportFormat::Xlsx}, options, {}, &skipped);
        QCOMPARE(files.size(), 1);
        QVERIFY(files.first().endsWith(QStringLiteral(".md")));
        QCOMPARE(skipped, QStringList{QStringLiteral("XLSX not written: no table was recognised as a grid")});

        BlockResult table = text;
        table.id = 1;
        table.order = 2;
        table.label = QStringLiteral("table");
        table.box = {10, 60, 300, 200};
        table.table = TableGrid{1, 2, {{0, 0, 1, 1, QStringLiteral("a")}, {0, 1, 1, 1, QStringLiteral("b")}}};
        table.content = QStringLiteral("<table><tr><td>a</td><td>b</td></tr></table>");
        page.blocks.push_back(table);
        skipped.clear();
        files = DocumentExporter::write(info, {page}, {ExportFormat::Xlsx}, options, {}, &skipped);
        QVERIFY(skipped.isEmpty());
        QCOMPARE(files.size(), 1);
        QVERIFY(files.first().endsWith(QStringLiteral(".xlsx")));

        // Without KaTeX (FOLIO_KATEX_DIR naming an empty folder) the HTML is written with its formulas as
        // LaTeX, and the export says so and why.
        BlockResult formula = text;
        formula.id = 2;
        formula.order = 3;
        formula.label = QStringLiteral("display_formula");
        formula.content = QStringLiteral("$$ E=mc^2 $$");
        page.blocks.push_back(formula);
        const QString nowhere = tmp_.filePath(QStringLiteral("no-katex"));
        QVERIFY(QDir().mkpath(nowhere));
        qputenv("FOLIO_KATEX_DIR", nowhere.toUtf8());
        skipped.clear();
        files = DocumentExporter::write(info, {page}, {ExportFormat::Html}, options, {}, &skipped);
        qunsetenv("FOLIO_KATEX_DIR");
        QCOMPARE(files.size(), 1);
        QCOMPARE(skipped,
                 QStringList{QStringLiteral("HTML: 1 formula left as LaTeX: KaTeX's files are not in "
                                            "%1 (Debian's libjs-katex)")
                                 .arg(nowhere)});
        QFile html(files.first());
        QVERIFY(html.open(QIODevice::ReadOnly));
        QVERIFY(html.readAll().contains("<span class=\"math display\">$$ E=mc^2 $$</span>"));
    }

    // Export of some pages: those of the range only, a part past the last page cut and said; a range with
    // none of the document's pages fails, saying so.
    void exportsAPageRange() {
        DocumentModel model;
        const QString path = tmp_.filePath(QStringLiteral("three.png"));
        const int doc = model.addDocument(path);
        model.setPageSizes(doc, std::vector<QSize>(3, QSize(400, 300)));
        for (int p = 0; p < 3; ++p) {
            PageResult page;
            page.inputPath = path;
            page.pageIndex = p;
            page.width = 400;
            page.height = 300;
            BlockResult text;
            text.label = QStringLiteral("text");
            text.content = QStringLiteral("Text of page %1").arg(p + 1);
            text.rawText = text.content;
            text.box = {10, 10, 200, 40};
            text.order = 1;
            page.blocks = {text};
            model.pageFinished(doc, p, page);
        }
        DocumentExporter exporter(model);
        QSignalSpy exported(&exporter, &DocumentExporter::finished);
        QSignalSpy failed(&exporter, &DocumentExporter::failed);
        ExportOptions options;
        options.outputDir = tmp_.filePath(QStringLiteral("range"));
        exporter.exportDocument(doc, {ExportFormat::Markdown}, options, PageRange::parse("2-3,9"));
        QVERIFY(exported.wait(30000));
        QFile markdown(QDir(options.outputDir).filePath(QStringLiteral("three.md")));
        QVERIFY(markdown.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(markdown.readAll());
        QVERIFY2(!text.contains(QStringLiteral("page 1")) && text.contains(QStringLiteral("page 2")) &&
                     text.contains(QStringLiteral("page 3")),
                 qPrintable(text));
        const QStringList notes = exported.first().at(2).toStringList();
        QCOMPARE(notes.size(), 1);
        QVERIFY2(notes.first().contains(QStringLiteral("9")), qPrintable(notes.first()));

        exporter.exportDocument(doc, {ExportFormat::Markdown}, options, PageRange::parse("7-9"));
        QVERIFY(failed.wait(30000));
        QVERIFY2(failed.first().at(1).toString().contains(path), qPrintable(failed.first().at(1).toString()));
        QCOMPARE(exported.size(), 1);
    }

    // A table edited as HTML or Markdown is read back into a grid; other text is no table.
    void editedTablesBecomeGrids_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("columns");
        QTest::addColumn<int>("cells");
        QTest::addColumn<QString>("lastCell");
        QTest::newRow("html") << "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>"
                              << 2 << 2 << 4 << "d";
        QTest::newRow("html spans and entities") << "<table>\n<tr><th colspan=\"2\">Head &amp; "
                                                    "more</th></tr>\n<tr><td rowspan=2>x</td><td>1</td></tr>"
                                                    "<tr><td>2<br>two</td></tr></table>"
                                                 << 3 << 2 << 4 << "2 two";
        QTest::newRow("html without closing cells")
            << "<TABLE><TR><TD>a<TD>b<TR><TD>c<TD>&lt;d&gt;</TABLE>" << 2 << 2 << 4 << "<d>";
        QTest::newRow("markdown") << "| Name | Value |\n|---|:---:|\n| a | 1 |\n| b | 2 |\n"
                                  << 3 << 2 << 6 << "2";
        QTest::newRow("markdown without edge pipes")
            << "Name | Value\n--- | ---\nx | y" << 2 << 2 << 4 << "y";
        QTest::newRow("text with a pipe") << "a | b, not a table" << 0 << 0 << 0 << "";
        QTest::newRow("plain text") << "Just a paragraph." << 0 << 0 << 0 << "";
    }

    void editedTablesBecomeGrids() {
        QFETCH(QString, text);
        QFETCH(int, rows);
        QFETCH(int, columns);
        QFETCH(int, cells);
        QFETCH(QString, lastCell);
        const std::optional<TableGrid> grid = parseEditedTable(text);
        QCOMPARE(grid.has_value(), rows > 0);
        if (!grid) {
            return;
        }
        QCOMPARE(grid->nRows, rows);
        QCOMPARE(grid->nColumns, columns);
        QCOMPARE(static_cast<int>(grid->cells.size()), cells);
        QCOMPARE(grid->cells.back().text, lastCell);
    }

    // An edited table block is a table everywhere: its HTML is the grid's (not its source, escaped), and the
    // XLSX has it.
    void anEditedTableIsATable() {
        DocumentModel model;
        const int doc = model.addDocument(tmp_.filePath(QStringLiteral("table.png")));
        model.setPageSizes(doc, {QSize(400, 300)});
        BlockResult block;
        block.label = QStringLiteral("table");
        block.box = {10, 10, 300, 200};
        const int id = model.addBlock(doc, 0, block);
        model.editBlockText(doc, 0, id, QStringLiteral("| A | B |\n|---|---|\n| 1 | 2 |"));
        const BlockResult* edited = model.block(doc, 0, id);
        QVERIFY(edited->table.has_value());
        QCOMPARE(edited->table->cells.size(), size_t{4});
        QVERIFY(edited->content.startsWith(QStringLiteral("<table>")));
        QVERIFY(edited->rawText.startsWith(QStringLiteral("| A | B |")));
        const QString html = htmlOfBlock(*edited, {}, 400);
        QVERIFY2(html.contains(QStringLiteral("<td>1</td>")) && !html.contains(QStringLiteral("&lt;")),
                 qPrintable(html));

        PageResult page = model.page(doc, 0).result;
        page.width = 400;
        page.height = 300;
        page.inputPath = model.document(doc).path;
        ExportOptions options;
        options.outputDir = tmp_.filePath(QStringLiteral("edited-table"));
        QStringList skipped;
        const QStringList files =
            DocumentExporter::write({page.inputPath, QStringLiteral("table"), 1}, {page},
                                    {ExportFormat::Xlsx}, options, {}, &skipped);
        QVERIFY(skipped.isEmpty());
        QCOMPARE(files.size(), 1);

        // Undo gives the block back as it was: no grid, no text.
        model.undoStack(doc)->undo();
        QVERIFY(!model.block(doc, 0, id)->table.has_value());
        QVERIFY(model.block(doc, 0, id)->content.isEmpty());
    }

    void failuresAreReported() {
        DocumentModel model;
        JobController jobs(service_, model);
        jobs.setPipelineOptions(test::fixturePipelineOptions(false));
        const QString broken = tmp_.filePath(QStringLiteral("broken.pdf"));
        QFile file(broken);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("%PDF-1.7\nnot really a PDF");
        file.close();
        const int doc = model.addDocument(broken);
        QSignalSpy errors(&jobs, &JobController::errorOccurred);
        const PipelineSummary summary = test::runAndWait(jobs, {doc});
        QCOMPARE(summary.documentsFailed, 1);
        QCOMPARE(model.document(doc).state, DocumentState::Failed);
        QVERIFY(!model.document(doc).error.isEmpty());
        QVERIFY(!errors.isEmpty());

        // A block action on a page that never ran is refused with a message.
        jobs.rerunBlock(doc, 0, 0, QStringLiteral("OCR:"));
        QVERIFY(errors.size() >= 2);
    }
};

QTEST_MAIN(TestDocumentJobs)
#include "test-document-jobs.moc"
