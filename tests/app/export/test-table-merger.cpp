// Tables continued across pages: merged or not, header rows dropped, group ids, and when pages are held. The
// cases and their expected contents are PaddleX's merge_tables_across_pages run on the same pages
// (tests/fixtures/export/table-merge-cases.json).
#include <QTest>

#include "app/export/table-merger.h"
#include "export-test-pages.h"

namespace folio {

class TestTableMerger : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesReference_data();
    void matchesReference();
    void holdsOnlyWhatMayContinue();
    void mergedGrid();
};

void TestTableMerger::matchesReference_data() {
    QTest::addColumn<QJsonObject>("spec");
    for (const QJsonValue& c :
         test::readFixture(QStringLiteral("table-merge-cases.json"))[QStringLiteral("cases")].toArray()) {
        const QJsonObject spec = c.toObject();
        QTest::newRow(qPrintable(spec[QStringLiteral("name")].toString())) << spec;
    }
}

void TestTableMerger::matchesReference() {
    QFETCH(QJsonObject, spec);
    TableMerger merger;
    int index = 0;
    for (const QJsonValue& page : spec[QStringLiteral("pages")].toArray()) {
        merger.push(test::makePage(page.toArray(), index++));
    }
    merger.finish();
    const std::vector<PageResult> pages = merger.takeReady();
    const QJsonArray expected = spec[QStringLiteral("expected")].toArray();
    QCOMPARE(pages.size(), static_cast<size_t>(expected.size()));
    for (size_t p = 0; p < pages.size(); ++p) {
        const QJsonArray blocks = expected[static_cast<qsizetype>(p)].toArray();
        QCOMPARE(pages[p].blocks.size(), static_cast<size_t>(blocks.size()));
        for (size_t b = 0; b < pages[p].blocks.size(); ++b) {
            const QJsonObject want = blocks[static_cast<qsizetype>(b)].toObject();
            const BlockResult& got = pages[p].blocks[b];
            QCOMPARE(got.content, want[QStringLiteral("content")].toString());
            QCOMPARE(got.groupId, want[QStringLiteral("group")].toInt());
            if (got.label == QLatin1String("table")) {
                QCOMPARE(got.table.has_value(), !got.content.isEmpty());
            }
        }
    }
}

// A page is held only while its last table may continue on the next page.
void TestTableMerger::holdsOnlyWhatMayContinue() {
    const auto page = [](const char* json) { return test::makePage(QJsonDocument::fromJson(json).array()); };
    TableMerger merger;
    merger.push(page(R"([{"label": "table", "box": [0, 0, 500, 99], "text": "<fcel>a<nl>"},
                         {"label": "text", "box": [0, 100, 9, 109], "text": "after"}])"));
    QCOMPARE(merger.takeReady().size(), size_t{1});  // text after the table: nothing can continue it
    merger.push(page(R"([{"label": "table", "box": [0, 0, 500, 99], "text": "<fcel>a<nl>"},
                         {"label": "footer", "box": [0, 100, 9, 109], "text": "1"}])"));
    QCOMPARE(merger.takeReady().size(), size_t{0});  // held: the next page may continue the table
    merger.push(page(R"([{"label": "table", "box": [0, 0, 500, 99], "text": "<fcel>b<nl>"}])"));
    QCOMPARE(merger.takeReady().size(), size_t{0});  // merged, and may go on
    merger.push(page(R"([{"label": "text", "box": [0, 0, 9, 9], "text": "end"}])"));
    const std::vector<PageResult> ready = merger.takeReady();
    QCOMPARE(ready.size(), size_t{3});
    QCOMPARE(ready[0].blocks[0].content,
             QStringLiteral("<table><tr><td>a</td></tr><tr><td>b</td></tr></table>"));
    merger.finish();
    QCOMPARE(merger.takeReady().size(), size_t{0});
}

// The merged grid: rows of both parts, the continuation's repeated header dropped; a dropped header cell that
// spanned down leaves its positions empty.
void TestTableMerger::mergedGrid() {
    TableMerger merger;
    const QJsonArray box{0, 0, 400, 100};
    PageResult first;
    first.blocks.push_back(test::makeBlock(QStringLiteral("table"), box,
                                           QStringLiteral("<fcel>H<fcel>I<nl><fcel>a<fcel>b<nl>")));
    PageResult second;
    second.blocks.push_back(
        test::makeBlock(QStringLiteral("table"), box,
                        QStringLiteral("<fcel>H<fcel>I<nl><ucel><fcel>c<nl><fcel>d<fcel>e<nl>")));
    merger.push(std::move(first));
    merger.push(std::move(second));
    merger.finish();
    const std::vector<PageResult> pages = merger.takeReady();
    QCOMPARE(pages.size(), size_t{2});
    const TableGrid& grid = *pages[0].blocks[0].table;
    QCOMPARE(grid.nRows, 4);
    QCOMPARE(grid.nColumns, 2);
    QCOMPARE(grid.cells.size(), size_t{7});
    QCOMPARE(grid.cells[4].text, QStringLiteral("c"));
    QCOMPARE(grid.cells[4].row, 2);
    QCOMPARE(grid.cells[4].column, 1);
    QCOMPARE(
        pages[0].blocks[0].content,
        QStringLiteral("<table><tr><td>H</td><td>I</td></tr><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr>"
                       "<tr><td>d</td><td>e</td></tr></table>"));
    QVERIFY(!pages[1].blocks[0].table);
    QVERIFY(pages[1].blocks[0].content.isEmpty());
}

}  // namespace folio

QTEST_GUILESS_MAIN(folio::TestTableMerger)
#include "test-table-merger.moc"
