// The main window's actions on finished documents, with no engine (run under Xvfb for Qt WebEngine): Go to
// Page shows the page asked for, Copy Page Text copies the page's Markdown, Help > Keyboard Shortcuts lists
// every action's keys, and an export of some pages leaves the document's changes unsaved where a whole one
// saves them.
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QInputDialog>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QUndoStack>
#include <memory>

#include "app/document-model/document-model.h"
#include "finished-document.h"
#include "screenshot.h"
#include "ui/main-window/main-window.h"
#include "ui/main-window/shortcuts-dialog.h"

using namespace folio;
using folio::test::addFinishedDocument;

class TestWindowActions : public QObject {
    Q_OBJECT

    std::unique_ptr<test::IdleWindow> idle_;
    DocumentModel* model_ = nullptr;
    MainWindow* window_ = nullptr;
    QTemporaryDir tmp_;

    QAction* action(const char* name) const { return idle_->action(name); }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        idle_ = std::make_unique<test::IdleWindow>();
        model_ = &idle_->model;
        window_ = idle_->window.get();
        QVERIFY(idle_->show());
    }

    void cleanupTestCase() { idle_.reset(); }

    // Go to Page asks for a page number within the document's and shows that page.
    void goToPage() {
        const int doc = addFinishedDocument(
            *model_, QStringLiteral("/tmp/three-pages.pdf"),
            {{QStringLiteral("One")}, {QStringLiteral("Two")}, {QStringLiteral("Three")}});
        window_->showDocument(doc);
        QCOMPARE(window_->currentPage(), 0);
        QVERIFY(action("goToPage")->isEnabled());
        int maximum = 0;
        QTimer::singleShot(0, this, [&] {
            auto* dialog = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
            QVERIFY(dialog != nullptr);
            maximum = dialog->intMaximum();
            dialog->setIntValue(3);
            dialog->accept();
        });
        action("goToPage")->trigger();
        QCOMPARE(maximum, 3);
        QCOMPARE(window_->currentPage(), 2);
        // Cancelled: the page stays.
        QTimer::singleShot(0, this, [&] {
            auto* dialog = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
            QVERIFY(dialog != nullptr);
            dialog->setIntValue(1);
            dialog->reject();
        });
        action("goToPage")->trigger();
        QCOMPARE(window_->currentPage(), 2);
        model_->closeDocument(doc);
    }

    // Copy Page Text puts the page's Markdown on the clipboard, blocks in their order.
    void copyPageText() {
        const int doc =
            addFinishedDocument(*model_, QStringLiteral("/tmp/copy.pdf"),
                                {{QStringLiteral("First paragraph."), QStringLiteral("Second one.")},
                                 {QStringLiteral("Other page.")}});
        window_->showDocument(doc);
        QVERIFY(action("copyPage")->isEnabled());
        QApplication::clipboard()->clear();
        action("copyPage")->trigger();
        QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("First paragraph.\n\nSecond one.\n"));
        window_->showPage(doc, 1);
        action("copyPage")->trigger();
        QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("Other page.\n"));
        model_->closeDocument(doc);
    }

    // The list is read from the menus: every action with a key, the find bar's among them, and the keys of
    // single places; F1 opens it.
    void keyboardShortcutsListed() {
        const QList<ShortcutsDialog::Row> rows = ShortcutsDialog::rows(window_->menuBar());
        const auto has = [&](const QString& group, const QString& action, const QKeySequence& keys) {
            for (const ShortcutsDialog::Row& row : rows) {
                if (row.group == group && row.action == action &&
                    row.keys == keys.toString(QKeySequence::NativeText)) {
                    return true;
                }
            }
            return false;
        };
        QVERIFY(has(QStringLiteral("Edit"), QStringLiteral("Find…"), QKeySequence::Find));
        QVERIFY(has(QStringLiteral("Edit"), QStringLiteral("Find Next"), QKeySequence::FindNext));
        QVERIFY(has(QStringLiteral("File"), QStringLiteral("Open Files…"), QKeySequence::Open));
        QVERIFY(has(QStringLiteral("Block"), QStringLiteral("Edit Text…"), QKeySequence(Qt::Key_F2)));
        QVERIFY(has(QStringLiteral("Find bar"), QStringLiteral("Previous match"),
                    QKeySequence(Qt::ShiftModifier | Qt::Key_Return)));
        for (const ShortcutsDialog::Row& row : rows) {
            QVERIFY2(!row.action.contains(u'&') && !row.keys.isEmpty(), qPrintable(row.action));
        }
        // Actions without a key are left out: Choose Model Folder has none.
        for (const ShortcutsDialog::Row& row : rows) {
            QVERIFY(!row.action.startsWith(QStringLiteral("Choose Model")));
        }

        bool shown = false;
        bool undoListed = false;
        QTimer::singleShot(0, this, [&] {
            auto* dialog = qobject_cast<ShortcutsDialog*>(QApplication::activeModalWidget());
            shown = dialog != nullptr && dialog->table()->rowCount() == rows.size();
            // Undo is listed as itself, not as the command it would undo now ("Undo Edit block 2").
            const QString undoKeys = QKeySequence(QKeySequence::Undo).toString(QKeySequence::NativeText);
            for (int r = 0; dialog != nullptr && r < dialog->table()->rowCount(); ++r) {
                undoListed = undoListed || (dialog->table()->item(r, 1)->text() == QStringLiteral("Undo") &&
                                            dialog->table()->item(r, 2)->text() == undoKeys);
            }
            test::saveScreenshot(dialog, QStringLiteral("keyboard-shortcuts"));
            if (dialog != nullptr) {
                dialog->reject();
            }
        });
        action("shortcuts")->trigger();
        QVERIFY(shown);
        QVERIFY(undoListed);
    }

    // An export of some pages leaves the document's changes unsaved (closing it still asks); a whole one
    // saves them.
    void exportOfSomePagesKeepsChangesUnsaved() {
        const int doc = addFinishedDocument(*model_, tmp_.filePath(QStringLiteral("pages.pdf")),
                                            {{QStringLiteral("One")}, {QStringLiteral("Two")}});
        window_->showDocument(doc);
        model_->editBlockText(doc, 0, 0, QStringLiteral("One, edited"));
        QVERIFY(model_->hasUnsavedEdits(doc));
        QSignalSpy exported(window_, &MainWindow::exportFinished);
        const QString out = tmp_.filePath(QStringLiteral("out"));
        window_->exportDocument(doc, out, {ExportFormat::Markdown}, PageRange::parse("2"));
        QVERIFY(exported.wait(30000));
        QVERIFY(model_->hasUnsavedEdits(doc));
        window_->exportDocument(doc, out, {ExportFormat::Markdown});
        QVERIFY(exported.wait(30000));
        QVERIFY(!model_->hasUnsavedEdits(doc));
        model_->closeDocument(doc);
    }
};

QTEST_MAIN(TestWindowActions)
#include "test-window-actions.moc"
