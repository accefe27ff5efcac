// OTSL tables: grids, spans, padding, escaping and bounds. The HTML of the reference rows is what PaddleX's
// convert_otsl_to_html (paddleocr_vl/uilts.py) gives for the same input; the rows after it check where Folio
// departs from it on malformed input, as otsl-table.h documents.
#include <QTest>

#include "app/pipeline/otsl-table.h"
#include "app/pipeline/table-html.h"

namespace folio {

class TestOtslTable : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesReferenceHtml_data();
    void matchesReferenceHtml();
    void notATable_data();
    void notATable();
    void gridSpans();
    void gridCoversEveryPosition_data();
    void gridCoversEveryPosition();
    void departsOnMalformedInput_data();
    void departsOnMalformedInput();
    void bounds();
    void rowHtmlAndKeptQuotes();
};

void TestOtslTable::matchesReferenceHtml_data() {
    QTest::addColumn<QString>("otsl");
    QTest::addColumn<QString>("html");

    QTest::newRow("plain")
        << QStringLiteral("<fcel>a<fcel>b<nl><fcel>c<fcel>d<nl>")
        << QStringLiteral("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>");
    QTest::newRow("colspan")
        << QStringLiteral("<fcel>Name<lcel><fcel>X<nl><fcel>a<fcel>b<fcel>c<nl>")
        << QStringLiteral(
               "<table><tr><td "
               "colspan=\"2\">Name</td><td>X</td></tr><tr><td>a</td><td>b</td><td>c</td></tr></table>");
    QTest::newRow("rowspan") << QStringLiteral("<fcel>k<fcel>v1<nl><ucel><fcel>v2<nl><fcel>z<fcel>w<nl>")
                             << QStringLiteral(
                                    "<table><tr><td "
                                    "rowspan=\"2\">k</td><td>v1</td></tr><tr><td>v2</td></tr><tr><td>z</"
                                    "td><td>w</td></tr></table>");
    QTest::newRow("block-span")
        << QStringLiteral("<fcel>T<lcel><fcel>c<nl><ucel><xcel><fcel>d<nl><fcel>e<fcel>f<fcel>g<nl>")
        << QStringLiteral(
               "<table><tr><td rowspan=\"2\" "
               "colspan=\"2\">T</td><td>c</td></tr><tr><td>d</td></tr><tr><td>e</td><td>f</td><td>g</td></"
               "tr></table>");
    QTest::newRow("ragged-padded")
        << QStringLiteral("<fcel>a<fcel>b<fcel>c<nl><fcel>d<nl>")
        << QStringLiteral(
               "<table><tr><td>a</td><td>b</td><td>c</td></tr><tr><td>d</td><td></td><td></td></tr></table>");
    QTest::newRow("long-row-cut")
        << QStringLiteral("<fcel>a<nl><fcel>b<nl><ecel><ecel><ecel><ecel><nl>")
        << QStringLiteral("<table><tr><td>a</td></tr><tr><td>b</td></tr><tr><td></td></tr></table>");
    QTest::newRow("escaped")
        << QStringLiteral("<fcel>a<b & \"c\" 'd'<fcel>x>y<nl>")
        << QStringLiteral(
               "<table><tr><td>a&lt;b &amp; &quot;c&quot; &#x27;d&#x27;</td><td>x&gt;y</td></tr></table>");
    QTest::newRow("stray-text-dropped")
        << QStringLiteral("junk<fcel>a<nl>more<fcel>b<nl>")
        << QStringLiteral("<table><tr><td>a</td></tr><tr><td>b</td></tr></table>");
    QTest::newRow("empty-rows-skipped")
        << QStringLiteral("<fcel>a<nl><nl>  <nl><fcel>b<nl>")
        << QStringLiteral("<table><tr><td>a</td></tr><tr><td>b</td></tr></table>");
    QTest::newRow("orphan-merge-tag")
        << QStringLiteral("<ucel><fcel>a<nl><fcel>b<lcel><nl>")
        << QStringLiteral("<table><tr><td></td><td>a</td></tr><tr><td colspan=\"2\">b</td></tr></table>");
    QTest::newRow("no-newline") << QStringLiteral("<fcel>a<fcel>b")
                                << QStringLiteral("<table><tr><td>a</td><td>b</td></tr></table>");
    QTest::newRow("ecel-spans")
        << QStringLiteral("<ecel><lcel><fcel>x<nl><fcel>y<fcel>z<fcel>w<nl>")
        << QStringLiteral(
               "<table><tr><td "
               "colspan=\"2\"></td><td>x</td></tr><tr><td>y</td><td>z</td><td>w</td></tr></table>");
    QTest::newRow("unicode")
        << QStringLiteral("  <fcel> 名称 <fcel>ＡＢＣ\u3000<nl><fcel>😀<ecel><nl>  ")
        << QStringLiteral("<table><tr><td>名称</td><td>ＡＢＣ</td></tr><tr><td>😀</td><td></td></tr></table>");
    QTest::newRow("whitespace-cells") << QStringLiteral("<fcel>  a  b  <fcel>\tc\n<nl>")
                                      << QStringLiteral("<table><tr><td>a  b</td><td>c</td></tr></table>");
    QTest::newRow("trailing-lcel-at-edge")
        << QStringLiteral("<fcel>a<lcel><lcel><nl><fcel>b<fcel>c<fcel>d<nl>")
        << QStringLiteral(
               "<table><tr><td colspan=\"3\">a</td></tr><tr><td>b</td><td>c</td><td>d</td></tr></table>");
    QTest::newRow("width-tie") << QStringLiteral("<fcel>a<fcel>b<nl><fcel>c<fcel>d<fcel>e<fcel>f<nl>")
                               << QStringLiteral(
                                      "<table><tr><td>a</td><td>b</td><td></td><td></td></tr><tr><td>c</"
                                      "td><td>d</td><td>e</td><td>f</td></tr></table>");
    QTest::newRow("mixed-ampersand") << QStringLiteral("<fcel>&amp;<fcel>&lt;<nl>")
                                     << QStringLiteral(
                                            "<table><tr><td>&amp;amp;</td><td>&amp;lt;</td></tr></table>");
}

void TestOtslTable::matchesReferenceHtml() {
    QFETCH(QString, otsl);
    QFETCH(QString, html);
    const std::optional<TableGrid> grid = parseOtslTable(otsl);
    QVERIFY(grid);
    QCOMPARE(tableHtml(*grid), html);
}

void TestOtslTable::notATable_data() {
    QTest::addColumn<QString>("otsl");
    QTest::newRow("no tags") << QStringLiteral("just text");
    QTest::newRow("empty") << QString();
    QTest::newRow("merge tags only") << QStringLiteral("<lcel><ucel><nl>");
    QTest::newRow("rows without tags") << QStringLiteral("a<nl>b<nl>");
    QTest::newRow("broken tags") << QStringLiteral("<fce l>x<n l><fcel");
}

void TestOtslTable::notATable() {
    QFETCH(QString, otsl);
    QVERIFY(!parseOtslTable(otsl));
}

void TestOtslTable::gridSpans() {
    const std::optional<TableGrid> grid = parseOtslTable(
        QStringLiteral("<fcel>T<lcel><fcel>c<nl><ucel><xcel><fcel>d<nl><fcel>e<fcel>f<fcel>g<nl>"));
    QVERIFY(grid);
    QCOMPARE(grid->nRows, 3);
    QCOMPARE(grid->nColumns, 3);
    QCOMPARE(grid->cells.size(), size_t{6});
    const TableCell& t = grid->cells[0];
    QCOMPARE(t.text, QStringLiteral("T"));
    QCOMPARE(t.row, 0);
    QCOMPARE(t.column, 0);
    QCOMPARE(t.rowSpan, 2);
    QCOMPARE(t.columnSpan, 2);
    QCOMPARE(grid->cells[2].text, QStringLiteral("d"));
    QCOMPARE(grid->cells[2].row, 1);
    QCOMPARE(grid->cells[2].column, 2);
    QCOMPARE(grid->cells[5].text, QStringLiteral("g"));
    QCOMPARE(grid->cells[5].column, 2);
}

void TestOtslTable::gridCoversEveryPosition_data() {
    QTest::addColumn<QString>("otsl");
    QTest::newRow("ragged") << QStringLiteral("<fcel>a<fcel>b<fcel>c<nl><fcel>d<nl><ecel><fcel>e<nl>");
    QTest::newRow("orphan merge tags") << QStringLiteral("<ucel><lcel><fcel>a<nl><xcel><fcel>b<ucel><nl>");
    QTest::newRow("overlapping spans") << QStringLiteral("<fcel>A<lcel><nl><ucel><fcel>B<nl>");
    QTest::newRow("crossing spans") << QStringLiteral("<fcel>C<fcel>A<lcel><nl><fcel>D<xcel><xcel><nl>");
    QTest::newRow("one cell") << QStringLiteral("<ecel>");
}

// Every position is held by exactly one cell, cells are row-major and inside the grid.
void TestOtslTable::gridCoversEveryPosition() {
    QFETCH(QString, otsl);
    const std::optional<TableGrid> grid = parseOtslTable(otsl);
    QVERIFY(grid);
    std::vector<int> held(static_cast<size_t>(grid->nRows * grid->nColumns), 0);
    int previous = -1;
    for (const TableCell& cell : grid->cells) {
        const int position = cell.row * grid->nColumns + cell.column;
        QVERIFY(position > previous);
        previous = position;
        QVERIFY(cell.rowSpan >= 1 && cell.columnSpan >= 1);
        QVERIFY(cell.row + cell.rowSpan <= grid->nRows && cell.column + cell.columnSpan <= grid->nColumns);
        for (int r = cell.row; r < cell.row + cell.rowSpan; ++r) {
            for (int c = cell.column; c < cell.column + cell.columnSpan; ++c) {
                ++held[static_cast<size_t>(r * grid->nColumns + c)];
            }
        }
    }
    for (const int n : held) {
        QCOMPARE(n, 1);
    }
}

void TestOtslTable::departsOnMalformedInput_data() {
    QTest::addColumn<QString>("otsl");
    QTest::addColumn<QString>("html");
    // PaddleX takes the next tag's name as the text of an <fcel> without text (here "&lt;lcel&gt;"); Folio
    // leaves the cell empty and still spans it over the <lcel>.
    QTest::newRow("blank fcel") << QStringLiteral("<fcel> <lcel><fcel>x<nl>")
                                << QStringLiteral(
                                       "<table><tr><td colspan=\"2\"></td><td>x</td></tr></table>");
    // PaddleX looks for the span after the dropped text of an <ecel>; Folio looks at the next tag.
    QTest::newRow("text after ecel") << QStringLiteral("<ecel>junk<lcel><nl>")
                                     << QStringLiteral("<table><tr><td colspan=\"2\"></td></tr></table>");
    // A cell inside another's span: PaddleX writes both spans whole; Folio cuts the earlier cell to the
    // rectangle it still holds and leaves the rest as an empty cell.
    QTest::newRow("cell inside a span")
        << QStringLiteral("<fcel>A<lcel><nl><ucel><fcel>B<nl>")
        << QStringLiteral("<table><tr><td colspan=\"2\">A</td></tr><tr><td></td><td>B</td></tr></table>");
    // No <nl> at all: PaddleX keeps text before the first tag and misreads the cells after it.
    QTest::newRow("text before the only row")
        << QStringLiteral("hello<fcel>a") << QStringLiteral("<table><tr><td>a</td></tr></table>");
}

void TestOtslTable::departsOnMalformedInput() {
    QFETCH(QString, otsl);
    QFETCH(QString, html);
    const std::optional<TableGrid> grid = parseOtslTable(otsl);
    QVERIFY(grid);
    QCOMPARE(tableHtml(*grid), html);
}

void TestOtslTable::bounds() {
    const QString wideRow = QStringLiteral("<fcel>x").repeated(kMaxTableColumns);
    QVERIFY(parseOtslTable(wideRow + QStringLiteral("<nl>")));
    QVERIFY(!parseOtslTable(wideRow + QStringLiteral("<fcel>y<nl>")));
    QVERIFY(parseOtslTable(QStringLiteral("<fcel>x<nl>").repeated(kMaxTableRows)));
    QVERIFY(!parseOtslTable(QStringLiteral("<fcel>x<nl>").repeated(kMaxTableRows + 1)));
    const int columns = kMaxTablePositions / kMaxTableRows + 1;
    QVERIFY(!parseOtslTable(
        (QStringLiteral("<fcel>x").repeated(columns) + QStringLiteral("<nl>")).repeated(kMaxTableRows)));
    // Many tags in one row, far past the widest table: refused without building it.
    QVERIFY(!parseOtslTable(QStringLiteral("<ecel>").repeated(100000)));
}

void TestOtslTable::rowHtmlAndKeptQuotes() {
    const std::optional<TableGrid> grid = parseOtslTable(QStringLiteral("<fcel>\"a\" & 'b'<nl><fcel>c<nl>"));
    QVERIFY(grid);
    QCOMPARE(tableRowHtml(*grid, 0), QStringLiteral("<tr><td>&quot;a&quot; &amp; &#x27;b&#x27;</td></tr>"));
    QCOMPARE(tableHtml(*grid, HtmlQuotes::Kept),
             QStringLiteral("<table><tr><td>\"a\" &amp; 'b'</td></tr><tr><td>c</td></tr></table>"));
}

}  // namespace folio

QTEST_GUILESS_MAIN(folio::TestOtslTable)
#include "test-otsl-table.moc"
