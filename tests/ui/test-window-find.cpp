// The main window's find bar (run under Xvfb for Qt WebEngine): Ctrl+F opens it with the keyboard in it,
// typing finds the text in the document's results and selects the first match's block in both views, Enter
// and F3 go on and Shift+Enter and Shift+F3 back, over pages and round, the bar says where it stands, and
// Escape closes it; the text is marked in the result view and its blocks outlined on the page. Another
// document in view is searched in its turn. The window's other actions: test-window-actions.
#include <QAction>
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>
#include <QToolButton>
#include <memory>

#include "app/document-model/document-model.h"
#include "app/document-model/document-search.h"
#include "finished-document.h"
#include "result-script.h"
#include "screenshot.h"
#include "ui/main-window/find-bar.h"
#include "ui/main-window/main-window.h"
#include "ui/page-view/block-item.h"
#include "ui/page-view/page-view.h"
#include "ui/result-view/result-view.h"

using namespace folio;
using folio::test::addFinishedDocument;

class TestWindowFind : public QObject {
    Q_OBJECT

    std::unique_ptr<test::IdleWindow> idle_;
    DocumentModel* model_ = nullptr;
    MainWindow* window_ = nullptr;

    QAction* action(const char* name) const { return idle_->action(name); }

private Q_SLOTS:
    void initTestCase() {
        idle_ = std::make_unique<test::IdleWindow>();
        model_ = &idle_->model;
        window_ = idle_->window.get();
        QVERIFY(idle_->show());
    }

    void cleanupTestCase() { idle_.reset(); }

    void findsOverPagesAndRound() {
        const int doc = addFinishedDocument(
            *model_, QStringLiteral("/tmp/annual-report.pdf"),
            {{QStringLiteral("# Annual report"), QStringLiteral("Revenue rose by a tenth."),
              QStringLiteral("Costs fell.")},
             {QStringLiteral("Outlook"), QStringLiteral("We expect **revenue** to rise again.")}});
        window_->showDocument(doc);
        QCOMPARE(window_->currentPage(), 0);
        FindBar* bar = window_->findBar();
        QVERIFY(!bar->isVisible());

        action("find")->trigger();
        QVERIFY(bar->isVisible());
        QTRY_VERIFY(bar->lineEdit()->hasFocus());
        QSignalSpy selected(window_, &MainWindow::blockSelected);
        QTest::keyClicks(bar->lineEdit(), QStringLiteral("revenue"));
        QCOMPARE(bar->statusLabel()->text(), QStringLiteral("1 of 2"));
        QCOMPARE(window_->currentPage(), 0);
        QCOMPARE(window_->selectedBlock(), 1);
        QCOMPARE(window_->pageView()->selectedBlock(), 1);
        QCOMPARE(window_->resultView()->highlightedBlock(), std::pair(0, 1));
        QVERIFY(!selected.isEmpty());
        QVERIFY(bar->nextButton()->isEnabled());
        // The word is marked where it stands in the rendered results, and in the Markdown tab beside the
        // block's range.
        ResultView* results = window_->resultView();
        QTRY_VERIFY(results->isReady());
        const QString marks = QStringLiteral(
            "Array.from(document.querySelectorAll('mark.find'))"
            ".map(function (m) { return m.textContent; }).join('|')");
        QTRY_COMPARE(test::evaluate(results, marks).toString(), QStringLiteral("Revenue|revenue"));
        // On the page, the block with the word is outlined, the others not.
        PageView* pages = window_->pageView();
        QVERIFY(pages->blockItem(1)->isFound());
        QVERIFY(!pages->blockItem(0)->isFound());
        QVERIFY(!pages->blockItem(2)->isFound());
        results->tabs()->setCurrentWidget(results->sourceView());
        QTRY_COMPARE(results->sourceView()->extraSelections().size(), 3);
        results->tabs()->setCurrentIndex(0);

        // Enter goes on to the next page.
        QTest::keyClick(bar->lineEdit(), Qt::Key_Return);
        QCOMPARE(bar->statusLabel()->text(), QStringLiteral("2 of 2"));
        QCOMPARE(window_->currentPage(), 1);
        QCOMPARE(window_->selectedBlock(), 1);
        QCOMPARE(window_->resultView()->highlightedBlock(), std::pair(1, 1));
        QVERIFY(pages->blockItem(1)->isFound());  // the new page's own
        QVERIFY(!pages->blockItem(0)->isFound());
        test::saveScreenshot(window_, QStringLiteral("find-bar"));
        // F3 past the last match: the first again; Shift+F3 back; Shift+Enter back.
        action("findNext")->trigger();
        QCOMPARE(bar->statusLabel()->text(), QStringLiteral("1 of 2"));
        QCOMPARE(window_->currentPage(), 0);
        action("findPrevious")->trigger();
        QCOMPARE(bar->statusLabel()->text(), QStringLiteral("2 of 2"));
        QCOMPARE(window_->currentPage(), 1);
        QTest::keyClick(bar->lineEdit(), Qt::Key_Return, Qt::ShiftModifier);
        QCOMPARE(bar->statusLabel()->text(), QStringLiteral("1 of 2"));
        QCOMPARE(window_->currentPage(), 0);

        // Match case: the lower-case word only, on page 2.
        bar->matchCase()->setChecked(true);
        QCOMPARE(bar->statusLabel()->text(), QStringLiteral("1 of 1"));
        QCOMPARE(window_->currentPage(), 1);
        bar->matchCase()->setChecked(false);

        // Nothing found: said, and nothing to go to.
        QTest::keyClicks(bar->lineEdit(), QStringLiteral("x"));
        QCOMPARE(bar->statusLabel()->text(), QStringLiteral("Not found"));
        QVERIFY(!bar->nextButton()->isEnabled());
        QVERIFY(!bar->previousButton()->isEnabled());
        const int page = window_->currentPage();
        action("findNext")->trigger();
        QCOMPARE(window_->currentPage(), page);

        // Escape closes the bar and takes the marks away; Ctrl+F opens it again with its text selected, to
        // type over.
        QTest::keyClick(bar->lineEdit(), Qt::Key_Escape);
        QVERIFY(!bar->isVisible());
        QTRY_COMPARE(test::evaluate(results, marks).toString(), QString());
        QCOMPARE(results->sourceView()->extraSelections().size(), 1);
        for (int b = 0; b < pages->blockItemCount(); ++b) {
            QVERIFY(!pages->blockItem(b)->isFound());
        }
        action("find")->trigger();
        QVERIFY(bar->isVisible());
        QCOMPARE(bar->lineEdit()->selectedText(), QStringLiteral("revenuex"));
        QTest::keyClicks(bar->lineEdit(), QStringLiteral("costs"));
        QCOMPARE(bar->statusLabel()->text(), QStringLiteral("1 of 1"));
        QCOMPARE(window_->currentPage(), 0);
        QCOMPARE(window_->selectedBlock(), 2);
        QTRY_COMPARE(test::evaluate(results, marks).toString(), QStringLiteral("Costs"));
        // Closed, F3 opens the bar again on its text, marked again.
        QTest::keyClick(bar->lineEdit(), Qt::Key_Escape);
        QTRY_COMPARE(test::evaluate(results, marks).toString(), QString());
        action("findNext")->trigger();
        QVERIFY(bar->isVisible());
        QTRY_COMPARE(test::evaluate(results, marks).toString(), QStringLiteral("Costs"));
        // A block whose text changes is marked again as it is shown.
        model_->editBlockText(window_->documentSearch()->document(), 0, 1,
                              QStringLiteral("Costs and costs."));
        QTRY_COMPARE(test::evaluate(results, marks).toString(), QStringLiteral("Costs|costs|Costs"));
        QTRY_COMPARE(bar->statusLabel()->text(), QStringLiteral("3 of 3"));  // still on its block
    }

    // Another document in view is searched for the same text; a closed one leaves nothing found.
    void searchesTheDocumentInView() {
        FindBar* bar = window_->findBar();
        const int doc =
            addFinishedDocument(*model_, QStringLiteral("/tmp/minutes.pdf"),
                                {{QStringLiteral("Minutes"), QStringLiteral("Costs were discussed."),
                                  QStringLiteral("Costs again.")}});
        window_->showDocument(doc);
        QCOMPARE(window_->documentSearch()->document(), doc);
        QTRY_COMPARE(bar->statusLabel()->text(), QStringLiteral("2 matches"));
        action("findNext")->trigger();
        QCOMPARE(window_->selectedBlock(), 1);
        action("findNext")->trigger();
        QCOMPARE(window_->selectedBlock(), 2);
        model_->closeDocument(doc);
        QTRY_VERIFY(window_->documentSearch()->document() != doc);
    }
};

QTEST_MAIN(TestWindowFind)
#include "test-window-find.moc"
