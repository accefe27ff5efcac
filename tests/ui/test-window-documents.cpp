// The main window's documents as they open, on the fixture models (run under Xvfb for Qt WebEngine): files
// dropped on the window open, a file that is missing or does not open goes to the problems panel and shows as
// itself, and a locked PDF asks for its password, again where the one given does not open it, runs once
// opened with it, and fails with the reason where the user declines.
#include <QApplication>
#include <QDropEvent>
#include <QFile>
#include <QListWidget>
#include <QMimeData>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <memory>
#include <optional>

#include "app/document-model/document-model.h"
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
        QStringList answers = {QStringLiteral("wrong"), QStringLiteral("secret")};
        window_->setPasswordPrompt([&](const QString& name, bool again) -> std::optional<QString> {
            asked << QStringLiteral("%1 %2").arg(name).arg(again);
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
        QTRY_COMPARE(window_->errorPanel()->count(), before + 1);
        QVERIFY(window_->errorPanel()->message(before).contains(QStringLiteral("needs a password")));
        window_->setPasswordPrompt({});
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
