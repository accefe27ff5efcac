// The Word document read back by python-docx (read-docx.py): the blocks Markdown writes in reading order with
// Word's built-in styles (Title, Heading N by the title's numbering, Caption), tables with their merged
// cells, pictures scaled to their share of the page, formulas as Word equations, a page break between pages;
// text XML cannot hold dropped; nothing left by abort(), and errors naming the file.
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <poppler-qt6.h>

#include "app/export/docx-writer.h"
#include "engine/common/error.h"
#include "export-test-pages.h"

using namespace folio;
using folio::test::makeBlock;
using folio::test::makePage;

namespace {

// The document as read-docx.py prints it; empty, with a warning, when it cannot be read.
QJsonObject readDocument(const QString& path) {
    QProcess python;
    python.start(QStringLiteral(FOLIO_SYSTEM_PYTHON3), {QStringLiteral(FOLIO_READ_DOCX), path});
    if (!python.waitForFinished(60'000) || python.exitStatus() != QProcess::NormalExit ||
        python.exitCode() != 0) {
        qWarning("read-docx.py failed: %s", python.readAllStandardError().constData());
        return {};
    }
    return QJsonDocument::fromJson(python.readAllStandardOutput()).object();
}

QJsonObject styled(const QString& style, const QString& text) {
    return {{QStringLiteral("style"), style}, {QStringLiteral("text"), text}};
}

QStringList filesIn(const QString& dir) {
    return QDir(dir).entryList(QDir::Files | QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot);
}

}  // namespace

class TestDocxWriter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void writesTheBlocksAsWordReadsThem() {
        QTemporaryDir dir;
        BlockResult table;
        table.label = QStringLiteral("table");
        table.task = QStringLiteral("Table Recognition:");
        // A header cell over two columns, a cell over two rows.
        table.table = TableGrid{3,
                                3,
                                {{0, 0, 1, 2, QStringLiteral("Name")},
                                 {0, 2, 1, 1, QStringLiteral("Total")},
                                 {1, 0, 2, 1, QStringLiteral("a")},
                                 {1, 1, 1, 1, QStringLiteral("x")},
                                 {1, 2, 1, 1, QStringLiteral("3")},
                                 {2, 1, 1, 1, QStringLiteral("y")},
                                 {2, 2, 1, 1, QStringLiteral("4")}}};
        BlockResult picture = makeBlock(QStringLiteral("image"), {100, 500, 600, 700}, QString());
        picture.image = QImage(200, 100, QImage::Format_RGB888);
        picture.image.fill(Qt::darkCyan);
        std::vector<BlockResult> first = {
            makeBlock(QStringLiteral("doc_title"), {0, 0, 900, 60}, QStringLiteral("A Study of Things")),
            makeBlock(QStringLiteral("header"), {0, 0, 900, 20}, QStringLiteral("Running head")),
            makeBlock(QStringLiteral("paragraph_title"), {0, 80, 900, 120}, QStringLiteral("1.2 Method")),
            makeBlock(QStringLiteral("text"), {0, 130, 900, 200},
                      QStringLiteral("First line.\nSecond line with a bell \a and more.")),
            table,
            makeBlock(QStringLiteral("display_formula"), {0, 400, 900, 450}, QStringLiteral("E = m c^2")),
            picture,
            makeBlock(QStringLiteral("figure_title"), {100, 710, 600, 740},
                      QStringLiteral("Figure 1: A cube")),
        };
        DocxWriter writer(ExportOptions{dir.path(), {}});
        writer.begin({QStringLiteral("/in/study.pdf"), QStringLiteral("study"), 2});
        writer.addPage(makePage(first, 0, 1000));
        writer.addPage(makePage(
            {makeBlock(QStringLiteral("text"), {0, 0, 500, 40}, QStringLiteral("Page two."))}, 1, 1000));
        writer.finish();
        const QString path = dir.filePath(QStringLiteral("study.docx"));
        QCOMPARE(writer.files(), QStringList{QFileInfo(path).absoluteFilePath()});
        QCOMPARE(filesIn(dir.path()), QStringList{QStringLiteral("study.docx")});
        QVERIFY(writer.notes().isEmpty());

        const QJsonObject read = readDocument(path);
        QVERIFY(!read.isEmpty());
        const QJsonArray body = read[QStringLiteral("body")].toArray();
        QCOMPARE(body.size(), 8);  // the picture's and the page break's paragraphs hold no text
        QCOMPARE(body[0].toObject(), styled(QStringLiteral("Title"), QStringLiteral("A Study of Things")));
        // "1.2 Method": one '.' in its numbering, a second-level heading as Markdown's "###".
        QCOMPARE(body[1].toObject(), styled(QStringLiteral("Heading 2"), QStringLiteral("1.2 Method")));
        QCOMPARE(body[2].toObject(), styled(QStringLiteral("Normal"), QStringLiteral("First line.")));
        QCOMPARE(body[3].toObject(),
                 styled(QStringLiteral("Normal"), QStringLiteral("Second line with a bell  and more.")));
        const QJsonObject grid = body[4].toObject()[QStringLiteral("table")].toObject();
        QCOMPARE(grid[QStringLiteral("rows")].toArray(),
                 QJsonDocument::fromJson(R"([["Name","Name","Total"],["a","x","3"],["a","y","4"]])").array());
        QCOMPARE(grid[QStringLiteral("merged")].toArray(),
                 QJsonDocument::fromJson(R"([[[0,0],[0,1]],[[1,0],[2,0]]])").array());
        // The formula as a Word equation: E=m then c with its superscript 2.
        QCOMPARE(body[5].toObject()[QStringLiteral("style")].toString(), QStringLiteral("Formula"));
        QCOMPARE(body[5].toObject()[QStringLiteral("math")].toArray(),
                 QJsonDocument::fromJson(R"([{"text": "E=mc2", "elements": ["r", "sSup"]}])").array());
        QCOMPARE(body[6].toObject(), styled(QStringLiteral("Caption"), QStringLiteral("Figure 1: A cube")));
        QCOMPARE(body[7].toObject(), styled(QStringLiteral("Normal"), QStringLiteral("Page two.")));
        QCOMPARE(read[QStringLiteral("page_breaks")].toInt(), 1);
        // Half the page's width of six inches, the image's proportions.
        QCOMPARE(read[QStringLiteral("pictures")].toArray(),
                 QJsonDocument::fromJson("[[2743200, 1371600]]").array());
        QCOMPARE(read[QStringLiteral("title")].toString(), QStringLiteral("study"));
    }

    // The labels asked for decide the blocks, as for Markdown.
    void keepsTheLabelsAskedFor() {
        QTemporaryDir dir;
        DocxWriter writer(ExportOptions{dir.path(), {QStringLiteral("header"), QStringLiteral("text")}});
        writer.begin({QStringLiteral("/in/a.png"), QStringLiteral("a"), 1});
        writer.addPage(
            makePage({makeBlock(QStringLiteral("header"), {0, 0, 900, 20}, QStringLiteral("Head")),
                      makeBlock(QStringLiteral("doc_title"), {0, 30, 900, 60}, QStringLiteral("T")),
                      makeBlock(QStringLiteral("text"), {0, 70, 900, 90}, QStringLiteral("Body"))}));
        writer.finish();
        const QJsonArray body =
            readDocument(dir.filePath(QStringLiteral("a.docx")))[QStringLiteral("body")].toArray();
        QCOMPARE(body.size(), 2);
        QCOMPARE(body[0].toObject(), styled(QStringLiteral("Normal"), QStringLiteral("Head")));
        QCOMPARE(body[1].toObject(), styled(QStringLiteral("Normal"), QStringLiteral("Body")));
        QVERIFY(writer.notes().isEmpty());
    }

    void abortLeavesNothing() {
        QTemporaryDir dir;
        DocxWriter writer(ExportOptions{dir.path(), {}});
        writer.begin({QStringLiteral("/in/a.pdf"), QStringLiteral("a"), 1});
        writer.addPage(makePage({makeBlock(QStringLiteral("text"), {0, 0, 900, 20}, QStringLiteral("x"))}));
        QVERIFY(!filesIn(dir.path()).isEmpty());  // the staging folder
        writer.abort();
        QCOMPARE(filesIn(dir.path()), QStringList{});
        QVERIFY(writer.files().isEmpty());
    }

    // Inline formulas in text become equations between the text's runs.
    void writesInlineFormulasAsEquations() {
        QTemporaryDir dir;
        DocxWriter writer(ExportOptions{dir.path(), {}});
        writer.begin({QStringLiteral("/in/a.png"), QStringLiteral("a"), 1});
        writer.addPage(makePage({makeBlock(QStringLiteral("text"), {0, 0, 900, 40},
                                           QStringLiteral("Energy $E=\\frac{1}{2}mv^2$ costs $5 or $6."))}));
        writer.finish();
        const QJsonArray body =
            readDocument(dir.filePath(QStringLiteral("a.docx")))[QStringLiteral("body")].toArray();
        QCOMPARE(body.size(), 1);
        const QJsonObject p = body[0].toObject();
        QCOMPARE(p[QStringLiteral("text")].toString(), QStringLiteral("Energy  costs $5 or $6."));
        QCOMPARE(
            p[QStringLiteral("math")].toArray(),
            QJsonDocument::fromJson(R"([{"text": "E=12mv2", "elements": ["r", "f", "r", "sSup"]}])").array());
    }

    // LibreOffice (Debian's, headless) opens the document and prints it to PDF; its text and the equation's
    // are in that PDF.
    void libreOfficeConvertsItToPdf() {
        const QString soffice = QStandardPaths::findExecutable(QStringLiteral("soffice"));
        if (soffice.isEmpty()) {
            QSKIP("skipped: LibreOffice (soffice) is not installed");
        }
        QTemporaryDir dir;
        DocxWriter writer(ExportOptions{dir.path(), {}});
        writer.begin({QStringLiteral("/in/paper.pdf"), QStringLiteral("paper"), 1});
        writer.addPage(makePage(
            {makeBlock(QStringLiteral("doc_title"), {0, 0, 900, 60}, QStringLiteral("Quarterly Findings")),
             makeBlock(QStringLiteral("text"), {0, 70, 900, 120},
                       QStringLiteral("Revenue grew in every region.")),
             makeBlock(QStringLiteral("display_formula"), {0, 130, 900, 180},
                       QStringLiteral("$$x=\\frac{a}{b}$$"))}));
        writer.finish();
        QProcess convert;
        // A profile of its own, so that the test neither needs nor touches the user's.
        convert.start(
            soffice,
            {QStringLiteral("-env:UserInstallation=file://") + dir.filePath(QStringLiteral("profile")),
             QStringLiteral("--headless"), QStringLiteral("--convert-to"), QStringLiteral("pdf"),
             QStringLiteral("--outdir"), dir.path(), dir.filePath(QStringLiteral("paper.docx"))});
        QVERIFY(convert.waitForFinished(180000));
        QVERIFY2(convert.exitCode() == 0, convert.readAllStandardError().constData());
        const std::unique_ptr<Poppler::Document> pdf(
            Poppler::Document::load(dir.filePath(QStringLiteral("paper.pdf"))));
        QVERIFY2(pdf && pdf->numPages() == 1, convert.readAllStandardError().constData());
        const std::unique_ptr<Poppler::Page> page(pdf->page(0));
        const QString text = page->text(QRectF());
        QVERIFY2(text.contains(QStringLiteral("Quarterly Findings")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Revenue grew in every region.")), qPrintable(text));
        QVERIFY2(text.contains(QLatin1Char('x')) && text.contains(QLatin1Char('a')) &&
                     text.contains(QLatin1Char('b')),
                 qPrintable(text));
    }

    void errorsNameTheFile() {
        QTemporaryDir dir;
        QFile blocker(dir.filePath(QStringLiteral("out")));
        QVERIFY(blocker.open(QIODevice::WriteOnly));  // a file where the output folder should be
        blocker.close();
        DocxWriter writer(ExportOptions{dir.filePath(QStringLiteral("out")), {}});
        try {
            writer.begin({QStringLiteral("/in/a.pdf"), QStringLiteral("a"), 1});
            QFAIL("no error for an output folder that is a file");
        } catch (const Error& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("out")), e.what());
        }
        QVERIFY_THROWS_EXCEPTION(Error, DocxWriter(ExportOptions{dir.path(), {}}).addPage(PageResult{}));
    }
};

QTEST_GUILESS_MAIN(TestDocxWriter)
#include "test-docx-writer.moc"
