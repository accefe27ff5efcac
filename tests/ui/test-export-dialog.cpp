// The export dialog's pages field: empty is every page, a range of the document's pages is taken, and text
// that is not one, or names none of the document's pages, keeps the dialog open with what is wrong.
#include <QLabel>
#include <QLineEdit>
#include <QTest>

#include "ui/main-window/export-dialog.h"

using namespace folio;

class TestExportDialog : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void pages_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("accepted");
        QTest::addColumn<QString>(
            "range");  // PageRange::toString() of what was taken, or a word of the error
        QTest::newRow("empty") << QString() << true << QStringLiteral("all");
        QTest::newRow("a range") << QStringLiteral(" 2-3, 5 ") << true << QStringLiteral("2-3,5");
        QTest::newRow("open end") << QStringLiteral("4-") << true << QStringLiteral("4-");
        QTest::newRow("past the end, cut") << QStringLiteral("4-9") << true << QStringLiteral("4-9");
        QTest::newRow("not a range") << QStringLiteral("2-x") << false << QStringLiteral("position 3");
        QTest::newRow("no page of it") << QStringLiteral("7-9") << false << QStringLiteral("the document");
    }

    void pages() {
        QFETCH(QString, text);
        QFETCH(bool, accepted);
        QFETCH(QString, range);
        ExportDialog dialog(QStringLiteral("/tmp"), {ExportFormat::Markdown}, 5);
        dialog.show();
        QVERIFY(dialog.pagesField()->placeholderText().contains(u'5'));
        dialog.pagesField()->setText(text);
        dialog.accept();
        QCOMPARE(dialog.result() == QDialog::Accepted, accepted);
        QCOMPARE(dialog.isVisible(), !accepted);
        // A document whose pages are not known yet takes every page; the export then says why nothing was
        // written.
        ExportDialog opening(QStringLiteral("/tmp"), {ExportFormat::Markdown}, 0);
        opening.accept();
        QCOMPARE(opening.result(), QDialog::Accepted);
        QVERIFY(opening.pages().isAll());
        if (accepted) {
            QCOMPARE(QString::fromStdString(dialog.pages().toString()), range);
            QVERIFY(dialog.pagesError()->isHidden());
        } else {
            QVERIFY(!dialog.pagesError()->isHidden());
            QVERIFY2(dialog.pagesError()->text().contains(range), qPrintable(dialog.pagesError()->text()));
            // Typing again takes the message away.
            dialog.pagesField()->setText(QStringLiteral("1"));
            QVERIFY(dialog.pagesError()->isHidden());
        }
    }
};

QTEST_MAIN(TestExportDialog)
#include "test-export-dialog.moc"
