// The main window's documents as they open, on the fixture models (run under Xvfb for Qt WebEngine): files
// dropped on the window open, a file that is missing or does not open goes to the problems panel and shows as
// itself, and a locked PDF asks for its password, again where the one given does not open it, runs once
// opened with it, and fails with the reason where the user declines; one the session brings back keeps its
// results and shows its page once the password is given.
#include <QApplication>
#include <QDropEvent>
#include <QFile>
#include <QFileInfo>
#include <QListWidget>
#include <QMimeData>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <memory>
#include <optional>

#include "app/document-model/document-model.h"
#include "app/document-model/session-file.h"
#include "app/jobs/job-controller.h"
#include "fixture-engine.h"
#include "tests/app/documents/test-pdf.h"
#include "ui/main-window/error-panel.h"
#include "ui/main-window/main-window.h"
#include "ui/page-view/page-view.h"

using namespace folio;

class TestWindowDocuments : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    DocumentModel* model_ = nullptr;
    EngineHost* engine_ = nullptr;
    JobController* jobs_ = nullptr;
    std::unique_ptr<MainWindow> window_;

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
        engine_->load(test::fixtureParams(1), test::fixtureFolders(), QStringLiteral("CPU"));
        QVERIFY(loaded.wait(120000));
    }

    void cleanupTestCase() {
        window_.reset();  // before the controller and the engine go
    }

    // Files dropped on the window open (URLs of local files); a drop of text is refused.
    void droppedFilesOpen() {
        window_->setRunOnOpen(false);
        const QString image = tmp_.filePath(QStringLiteral("dropped.png"));
        QImage page(400, 300, QImage::Format_RGB888);
        page.fill(Qt::white);
        QVERIFY(page.save(image));
        const int before = model_->documentCount();

        QMimeData text;
        text.setText(QStringLiteral("not a file"));
        QDragEnterEvent refused(QPoint(100, 100), Qt::CopyAction, &text, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(window_.get(), &refused);
        QVERIFY(!refused.isAccepted());

        QMimeData files;
        files.setUrls({QUrl::fromLocalFile(image)});
        QDragEnterEvent enter(QPoint(100, 100), Qt::CopyAction, &files, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(window_.get(), &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(100, 100), Qt::CopyAction, &files, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(window_.get(), &drop);
        QVERIFY(drop.isAccepted());
        QCOMPARE(model_->documentCount(), before + 1);
        QCOMPARE(model_->document(before).path, image);
        QCOMPARE(window_->currentDocument(), before);
        QTRY_COMPARE_WITH_TIMEOUT(model_->document(before).state, DocumentState::Idle, 20000);
        window_->setRunOnOpen(true);
    }

    void errorsGoToThePanel() {
        const int before = window_->errorPanel()->count();
        window_->errorPanel()->hide();
        window_->openFiles({tmp_.filePath(QStringLiteral("missing.pdf"))});
        QCOMPARE(window_->errorPanel()->count(), before + 1);
        // The panel opens for it, a few lines high.
        QVERIFY(window_->errorPanel()->isVisible());
        QTRY_VERIFY(window_->errorPanel()->height() < window_->height() / 4);
        QVERIFY(window_->errorPanel()->message(before).contains(QStringLiteral("missing.pdf")));

        // A file that does not open shows as itself, not with the page of the document shown before.
        const QString broken = tmp_.filePath(QStringLiteral("broken.pdf"));
        QFile file(broken);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("%PDF-1.7\nnot really a PDF");
        file.close();
        QVERIFY(window_->pageView()->blockItemCount() > 0 || window_->currentDocument() >= 0);
        window_->openFiles({broken});
        const int doc = window_->currentDocument();
        QCOMPARE(model_->document(doc).path, broken);
        QCOMPARE(window_->pageView()->currentDocument(), doc);
        QCOMPARE(window_->pageView()->blockItemCount(), 0);
        QTRY_COMPARE_WITH_TIMEOUT(model_->document(doc).state, DocumentState::Failed, 20000);
        QCOMPARE(window_->pageList()->count(), 0);
    }

    // A locked PDF asks for its password, again where the one given does not open it, and opens with it;
    // declining leaves it failed with the reason.
    void encryptedPdfAsksForItsPassword() {
        const QString locked = tmp_.filePath(QStringLiteral("locked.pdf"));
        test::writeFile(locked, test::encryptedPdf("secret"));
        QStringList asked;
        QList<DocumentState> states;
        QStringList answers = {QStringLiteral("wrong"), QStringLiteral("secret")};
        window_->setPasswordPrompt([&](const QString& name, bool again) -> std::optional<QString> {
            asked << QStringLiteral("%1 %2").arg(name).arg(again);
            // Shown as opening while its password is asked for.
            states << model_->document(model_->findDocument(tmp_.filePath(name))).state;
            if (answers.isEmpty()) {
                return std::nullopt;
            }
            return answers.takeFirst();
        });
        window_->openFiles({locked});
        const int doc = model_->findDocument(locked);
        QVERIFY(doc >= 0);
        QTRY_COMPARE_WITH_TIMEOUT(model_->document(doc).pages.size(), size_t{1}, 20000);
        QCOMPARE(asked, (QStringList{QStringLiteral("locked.pdf 0"), QStringLiteral("locked.pdf 1")}));
        QCOMPARE(states, (QList<DocumentState>{DocumentState::Opening, DocumentState::Opening}));
        QVERIFY(model_->document(doc).state != DocumentState::Failed);
        QCOMPARE(jobs_->documentOptions().passwordFor(locked), QStringLiteral("secret"));
        // Opened, it runs (the window runs what it opens) with the password.
        QTRY_COMPARE_WITH_TIMEOUT(model_->document(doc).state, DocumentState::Done, 120000);

        // Declined: the document fails, and says why.
        const QString other = tmp_.filePath(QStringLiteral("locked-too.pdf"));
        test::writeFile(other, test::encryptedPdf("other"));
        const int before = window_->errorPanel()->count();
        window_->openFiles({other});
        const int declined = model_->findDocument(other);
        QTRY_COMPARE_WITH_TIMEOUT(model_->document(declined).state, DocumentState::Failed, 20000);
        QCOMPARE(asked.size(), 3);
        QCOMPARE(states.last(), DocumentState::Opening);
        QTRY_COMPARE(window_->errorPanel()->count(), before + 1);
        QVERIFY(window_->errorPanel()->message(before).contains(QStringLiteral("needs a password")));
        window_->setPasswordPrompt({});
    }

    // A locked PDF brought back by the session asks for its password too, and keeps its results' state once
    // it opens with it.
    void aRestoredLockedPdfKeepsItsResults() {
        const QString locked = tmp_.filePath(QStringLiteral("restored.pdf"));
        test::writeFile(locked, test::encryptedPdf("secret"));
        const QString sessionFile = tmp_.filePath(QStringLiteral("restored-session.json"));
        {
            DocumentModel saved;
            PageEntry page;
            page.size = QSize(850, 1100);
            page.state = PageState::Done;
            page.result.inputPath = locked;
            page.result.width = 850;
            page.result.height = 1100;
            page.result.dpi = 100;
            saved.addRestoredDocument(locked, {page}, false, QFileInfo(locked).size(),
                                      QFileInfo(locked).lastModified().toUTC());
            SessionStore(saved, sessionFile).writeNow();
        }
        DocumentModel model;
        JobController jobs(engine_->service(), model);
        MainWindow window(model, jobs, *engine_);
        QList<DocumentState> states;
        window.setPasswordPrompt([&](const QString& name, bool) -> std::optional<QString> {
            states << model.document(model.findDocument(tmp_.filePath(name))).state;
            return QStringLiteral("secret");
        });
        window.setSessionFile(sessionFile);
        const int doc = model.findDocument(locked);
        QVERIFY(doc >= 0);
        QTRY_COMPARE_WITH_TIMEOUT(states.size(), 1, 20000);
        QCOMPARE(states.first(), DocumentState::Done);
        // Its page shows, rendered with the password, and nothing went to the problems panel.
        QTRY_VERIFY_WITH_TIMEOUT(!model.page(doc, 0).result.image.isNull(), 20000);
        QCOMPARE(model.page(doc, 0).result.image.size(), QSize(850, 1100));
        QCOMPARE(model.document(doc).state, DocumentState::Done);
        QCOMPARE(model.document(doc).pagesDone, 1);
        QCOMPARE(window.errorPanel()->count(), 0);
    }
};

int main(int argc, char** argv) {
    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);  // recent files in a settings file of the tests' own
    TestWindowDocuments test;
    return QTest::qExec(&test, argc, argv);
}

#include "test-window-documents.moc"
