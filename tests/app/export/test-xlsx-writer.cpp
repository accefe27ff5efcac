// The XLSX workbook read back by read-xlsx.py: one sheet a table in document order with unique names, cell
// values, numbers as numbers and number-like codes as text, merged ranges, a bold first row and fitted
// columns; no file for a document without tables; nothing left by abort() or a failure, and errors naming the
// file.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "app/export/cell-number.h"
#include "app/export/xlsx-writer.h"
#include "engine/common/error.h"

using namespace folio;

namespace {

BlockResult tableBlock(int nRows, int nColumns, std::vector<TableCell> cells) {
    BlockResult block;
    block.label = QStringLiteral("table");
    block.task = QStringLiteral("Table Recognition:");
    block.table = TableGrid{nRows, nColumns, std::move(cells)};
    return block;
}

BlockResult textBlock(const QString& text) {
    BlockResult block;
    block.label = QStringLiteral("text");
    block.content = text;
    return block;
}

PageResult page(int index, std::vector<BlockResult> blocks) {
    PageResult result;
    result.pageIndex = index;
    result.blocks = std::move(blocks);
    return result;
}

QStringList filesIn(const QString& dir) {
    return QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot);
}

// The workbook as read-xlsx.py prints it; empty, with a warning, when it cannot be read.
QJsonObject readWorkbook(const QString& path) {
    QProcess python;
    python.start(QStringLiteral(FOLIO_PYTHON3), {QStringLiteral(FOLIO_READ_XLSX), path});
    if (!python.waitForFinished(60'000) || python.exitStatus() != QProcess::NormalExit ||
        python.exitCode() != 0) {
        qWarning("read-xlsx.py failed: %s", python.readAllStandardError().constData());
        return {};
    }
    return QJsonDocument::fromJson(python.readAllStandardOutput()).object();
}

bool havePython() {
    return !QString(QStringLiteral(FOLIO_PYTHON3)).isEmpty();
}

constexpr const char* kNoPython =
    "python3 was not found when the build was configured: workbooks cannot be read back";

QStringList sheetNames(const QJsonObject& workbook) {
    QStringList names;
    for (const QJsonValue sheet : workbook[QStringLiteral("sheets")].toArray()) {
        names.append(sheet[QStringLiteral("name")].toString());
    }
    return names;
}

QJsonObject sheetCell(const QJsonObject& workbook, int sheet, const QString& cell) {
    return workbook[QStringLiteral("sheets")][sheet][QStringLiteral("cells")][cell].toObject();
}

}  // namespace

class TestXlsxWriter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void plainNumbers_data();
    void plainNumbers();
    void textThatLooksNumeric_data();
    void textThatLooksNumeric();
    void tablesBecomeSheets();
    void sheetNamesStayUnique();
    void documentWithoutTablesWritesNoFile();
    void abortLeavesNothing();
    void unwritableFolderIsNamed();
    void failureInFinishNamesTheFile();
};

void TestXlsxWriter::plainNumbers_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<double>("value");
    QTest::addColumn<QString>("format");
    QTest::newRow("integer") << "12" << 12.0 << "";
    QTest::newRow("zero") << "0" << 0.0 << "";
    QTest::newRow("decimals kept") << "3.50" << 3.5 << "0.00";
    QTest::newRow("negative") << "-0.25" << -0.25 << "0.00";
    QTest::newRow("unicode minus") << "\u22127" << -7.0 << "";
    QTest::newRow("spaces around") << " 42 " << 42.0 << "";
    QTest::newRow("grouped") << "1,234" << 1234.0 << "#,##0";
    QTest::newRow("grouped decimals") << "12,345,678.9" << 12345678.9 << "#,##0.0";
    QTest::newRow("no leading zero") << ".05" << 0.05 << "#.00";
    QTest::newRow("long integer") << "123456789012" << 123456789012.0 << "0";
}

void TestXlsxWriter::plainNumbers() {
    QFETCH(QString, text);
    QFETCH(double, value);
    QFETCH(QString, format);
    const std::optional<CellNumber> number = parseCellNumber(text);
    QVERIFY(number);
    QCOMPARE(number->value, value);
    QCOMPARE(number->format(), format);
}

void TestXlsxWriter::textThatLooksNumeric_data() {
    QTest::addColumn<QString>("text");
    for (const char* text : {"007", "00.5", "12%", "$5", "+5", "1 234", "3,14", "1,23,456", "1e5", "12a", "",
                             "-", ".", "-0", "1234567890123456", "(12)", "\uFF11\uFF12", "5.", "1.2.3"}) {
        QTest::newRow(text[0] ? text : "empty") << QString::fromUtf8(text);
    }
}

void TestXlsxWriter::textThatLooksNumeric() {
    QFETCH(QString, text);
    QVERIFY(!parseCellNumber(text));
}

void TestXlsxWriter::tablesBecomeSheets() {
    if (!havePython()) {
        QSKIP(kNoPython);
    }
    QTemporaryDir dir;
    const QString longText(70, QLatin1Char('w'));
    // Page 1: a table with a column span and a row span, then a small one; page 2 has no table; page 3 a
    // table without a grid (it keeps its number) and one with.
    const BlockResult merged = tableBlock(3, 3,
                                          {{0, 0, 1, 2, "Item"},
                                           {0, 2, 2, 1, "Total"},
                                           {1, 0, 1, 1, "Name"},
                                           {1, 1, 1, 1, "Code"},
                                           {2, 0, 1, 1, "Apple"},
                                           {2, 1, 1, 1, "007"},
                                           {2, 2, 1, 1, "1,234.50"}});
    const BlockResult small =
        tableBlock(2, 2, {{0, 0, 1, 1, "中文"}, {0, 1, 1, 1, "12%"}, {1, 0, 1, 1, "-3"}, {1, 1, 1, 1, "+5"}});
    BlockResult unparsed = textBlock(QStringLiteral("<fcel>broken"));
    unparsed.label = QStringLiteral("table");
    const BlockResult wide = tableBlock(1, 2, {{0, 0, 1, 1, longText}, {0, 1, 1, 1, "x"}});

    XlsxWriter writer(ExportOptions{dir.path(), {}});
    writer.begin(DocumentInfo{QStringLiteral("/in/report.pdf"), QStringLiteral("report"), 3});
    writer.addPage(page(0, {textBlock(QStringLiteral("intro")), merged, small}));
    writer.addPage(page(1, {textBlock(QStringLiteral("no tables here"))}));
    writer.addPage(page(2, {unparsed, wide}));
    writer.finish();
    const QString path = QDir(dir.path()).filePath(QStringLiteral("report.xlsx"));
    QCOMPARE(writer.files(), QStringList{path});
    QCOMPARE(filesIn(dir.path()), QStringList{QStringLiteral("report.xlsx")});

    const QJsonObject workbook = readWorkbook(path);
    QCOMPARE(sheetNames(workbook), (QStringList{QStringLiteral("p1 table 1"), QStringLiteral("p1 table 2"),
                                                QStringLiteral("p3 table 2")}));

    const auto expectText = [&](int sheet, const char* cell, const QString& text, bool bold) {
        const QJsonObject c = sheetCell(workbook, sheet, QString::fromLatin1(cell));
        QCOMPARE(c[QStringLiteral("type")].toString(), QStringLiteral("s"));
        QCOMPARE(c[QStringLiteral("value")].toString(), text);
        QCOMPARE(c[QStringLiteral("bold")].toBool(), bold);
    };
    const auto expectNumber = [&](int sheet, const char* cell, double value, const QString& format) {
        const QJsonObject c = sheetCell(workbook, sheet, QString::fromLatin1(cell));
        QCOMPARE(c[QStringLiteral("type")].toString(), QStringLiteral("n"));
        QCOMPARE(c[QStringLiteral("value")].toDouble(), value);
        QCOMPARE(c[QStringLiteral("format")].toString(), format);
    };
    expectText(0, "A1", QStringLiteral("Item"), true);
    expectText(0, "C1", QStringLiteral("Total"), true);
    expectText(0, "A2", QStringLiteral("Name"), false);
    expectText(0, "B2", QStringLiteral("Code"), false);
    expectText(0, "A3", QStringLiteral("Apple"), false);
    expectText(0, "B3", QStringLiteral("007"), false);
    expectNumber(0, "C3", 1234.5, QStringLiteral("#,##0.00"));
    const QJsonArray merges = workbook[QStringLiteral("sheets")][0][QStringLiteral("merges")].toArray();
    QCOMPARE(merges.size(), 2);
    QVERIFY(merges.contains(QStringLiteral("A1:B1")));
    QVERIFY(merges.contains(QStringLiteral("C1:C2")));

    expectText(1, "A1", QStringLiteral("中文"), true);
    expectText(1, "B1", QStringLiteral("12%"), true);
    expectNumber(1, "A2", -3, QStringLiteral("General"));
    expectText(1, "B2", QStringLiteral("+5"), false);

    expectText(2, "A1", longText, false);
    const QJsonArray columns = workbook[QStringLiteral("sheets")][2][QStringLiteral("columns")].toArray();
    QCOMPARE(columns.size(), 2);
    // The widest a column gets, the text wrapping in it (the file adds the cell padding to the width).
    QVERIFY(std::abs(columns[0][QStringLiteral("width")].toDouble() - 60.0) < 1.0);
    QVERIFY(columns[1][QStringLiteral("width")].toDouble() < 10.0);
}

void TestXlsxWriter::sheetNamesStayUnique() {
    if (!havePython()) {
        QSKIP(kNoPython);
    }
    QTemporaryDir dir;
    const BlockResult table = tableBlock(1, 1, {{0, 0, 1, 1, "a"}});
    XlsxWriter writer(ExportOptions{dir.path(), {}});
    writer.begin(DocumentInfo{QString(), QStringLiteral("images"), 2});
    // Single images have no page index: they count in the order they come.
    writer.addPage(page(-1, {table}));
    writer.addPage(page(-1, {table, table}));
    writer.addPage(page(0, {table}));  // the same page again
    writer.finish();
    const QJsonObject workbook = readWorkbook(writer.files().value(0));
    QCOMPARE(sheetNames(workbook), (QStringList{"p1 table 1", "p2 table 1", "p2 table 2", "p1 table 1 (2)"}));
}

void TestXlsxWriter::documentWithoutTablesWritesNoFile() {
    QTemporaryDir dir;
    XlsxWriter writer(ExportOptions{dir.path(), {}});
    writer.begin(DocumentInfo{QString(), QStringLiteral("prose"), 1});
    writer.addPage(page(0, {textBlock(QStringLiteral("only text"))}));
    writer.finish();
    QVERIFY(writer.files().isEmpty());
    QVERIFY(filesIn(dir.path()).isEmpty());
}

void TestXlsxWriter::abortLeavesNothing() {
    QTemporaryDir dir;
    const BlockResult table = tableBlock(1, 1, {{0, 0, 1, 1, "a"}});
    {
        const std::unique_ptr<DocumentWriter> writer = makeXlsxWriter(ExportOptions{dir.path(), {}});
        QCOMPARE(writer->format(), ExportFormat::Xlsx);
        writer->begin(DocumentInfo{QString(), QStringLiteral("aborted"), 1});
        writer->addPage(page(0, {table}));
        writer->abort();
        QVERIFY(writer->files().isEmpty());
        QVERIFY(filesIn(dir.path()).isEmpty());
        writer->begin(DocumentInfo{QString(), QStringLiteral("dropped"), 1});
        writer->addPage(page(0, {table}));
    }  // destroyed without finish()
    QVERIFY(filesIn(dir.path()).isEmpty());
}

void TestXlsxWriter::unwritableFolderIsNamed() {
    QTemporaryDir dir;
    QFile blocker(QDir(dir.path()).filePath(QStringLiteral("blocker")));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const QString output = QDir(dir.path()).filePath(QStringLiteral("blocker/out"));
    XlsxWriter writer(ExportOptions{output, {}});
    try {
        writer.begin(DocumentInfo{QString(), QStringLiteral("doc"), 1});
        QFAIL("begin() wrote into a folder under a file");
    } catch (const Error& error) {
        QVERIFY2(QString::fromStdString(error.what()).contains(output), error.what());
    }
}

void TestXlsxWriter::failureInFinishNamesTheFile() {
    QTemporaryDir dir;
    const QString output = QDir(dir.path()).filePath(QStringLiteral("gone"));
    XlsxWriter writer(ExportOptions{output, {}});
    writer.begin(DocumentInfo{QString(), QStringLiteral("doc"), 1});
    writer.addPage(page(0, {tableBlock(1, 1, {{0, 0, 1, 1, "a"}})}));
    QVERIFY(QDir(output).removeRecursively());  // the folder disappears before the workbook is written
    try {
        writer.finish();
        QFAIL("finish() wrote into a folder that is gone");
    } catch (const Error& error) {
        QVERIFY2(
            QString::fromStdString(error.what()).contains(QDir(output).filePath(QStringLiteral("doc.xlsx"))),
            error.what());
    }
    QVERIFY(writer.files().isEmpty());
    QVERIFY(!QFileInfo::exists(output));
}

QTEST_GUILESS_MAIN(TestXlsxWriter)
#include "test-xlsx-writer.moc"
