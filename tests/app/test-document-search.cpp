// Finding text in a document's results (app/document-model/document-search): what a block's searchable text
// is, the matches in page and reading order, and the current match as the user moves and the model changes.
#include <QSignalSpy>
#include <QTest>
#include <QTimer>

#include "app/document-model/document-model.h"
#include "app/document-model/document-search.h"

using namespace folio;

namespace {

BlockResult textBlock(int id, const QString& content, const QString& label = QStringLiteral("text")) {
    BlockResult b;
    b.id = id;
    b.label = label;
    b.content = content;
    b.order = id + 1;
    return b;
}

// A document of two pages: page 0 with a heading, a paragraph and a table; page 1 with a paragraph, an image
// and a formula.
int addDocument(DocumentModel& model) {
    const int doc = model.addDocument(QStringLiteral("/tmp/report.pdf"));
    model.setPageSizes(doc, {QSize(1000, 1400), QSize(1000, 1400)});
    PageResult p0;
    p0.pageIndex = 0;
    p0.blocks.push_back(textBlock(0, QStringLiteral("# Annual *report*"), QStringLiteral("doc_title")));
    p0.blocks.push_back(textBlock(1, QStringLiteral("The report covers revenue. Report pages follow.")));
    BlockResult table = textBlock(2, QStringLiteral("<table><tr><td>Revenue</td><td>1,200</td></tr></table>"),
                                  QStringLiteral("table"));
    table.table = TableGrid{2,
                            2,
                            {{0, 0, 1, 1, QStringLiteral("Region")},
                             {0, 1, 1, 1, QStringLiteral("Revenue")},
                             {1, 0, 1, 1, QStringLiteral("North &amp; South")},
                             {1, 1, 1, 1, QStringLiteral("1,200")}}};
    p0.blocks.push_back(table);
    model.pageFinished(doc, 0, p0);
    PageResult p1;
    p1.pageIndex = 1;
    p1.blocks.push_back(textBlock(0, QStringLiteral("Revenue grew; <b>costs</b> fell.")));
    BlockResult image = textBlock(1, QString(), QStringLiteral("image"));
    image.image = QImage(8, 8, QImage::Format_RGB32);
    image.rawText = QStringLiteral("revenue chart");
    p1.blocks.push_back(image);
    p1.blocks.push_back(
        textBlock(2, QStringLiteral("$$\\mathrm{revenue} = p q$$"), QStringLiteral("display_formula")));
    model.pageFinished(doc, 1, p1);
    return doc;
}

}  // namespace

class TestDocumentSearch : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void searchableText_data();
    void searchableText();
    void matchesInOrder_data();
    void matchesInOrder();
    void nextAndPreviousWrap();
    void queryStartsAtTheBlockInView();
    void followsTheModel();
    void noCurrentMatchInANewDocument();
    void followsStreamingText();
    void closedDocumentHasNoMatches();
};

void TestDocumentSearch::searchableText_data() {
    QTest::addColumn<BlockResult>("block");
    QTest::addColumn<QString>("text");
    QTest::newRow("markdown") << textBlock(0, QStringLiteral("## Results *in* **bold**"))
                              << QStringLiteral("Results in bold");
    QTest::newRow("html") << textBlock(0, QStringLiteral("A &amp; B<br>C")) << QStringLiteral("A & B\nC");
    BlockResult grid = textBlock(0, QStringLiteral("<table></table>"), QStringLiteral("table"));
    grid.table = TableGrid{2,
                           2,
                           {{0, 0, 1, 1, QStringLiteral("a")},
                            {0, 1, 1, 1, QStringLiteral("b")},
                            {1, 0, 1, 1, QStringLiteral("c")},
                            {1, 1, 1, 1, QStringLiteral("d")}}};
    QTest::newRow("table rows") << grid << QStringLiteral("a b\nc d");
    QTest::newRow("formula without delimiters")
        << textBlock(0, QStringLiteral("$$x^2$$"), QStringLiteral("display_formula"))
        << QStringLiteral("x^2");
    BlockResult image = textBlock(0, QString(), QStringLiteral("image"));
    image.image = QImage(4, 4, QImage::Format_RGB32);
    QTest::newRow("image") << image << QString();
}

void TestDocumentSearch::searchableText() {
    QFETCH(BlockResult, block);
    QFETCH(QString, text);
    QCOMPARE(folio::searchableText(block), text);
}

void TestDocumentSearch::matchesInOrder_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("matchCase");
    // (page, block, start) of each match.
    QTest::addColumn<QList<QList<int>>>("expected");
    QTest::newRow("any case") << QStringLiteral("report") << false
                              << QList<QList<int>>{{0, 0, 7}, {0, 1, 4}, {0, 1, 27}};
    QTest::newRow("match case") << QStringLiteral("Report") << true << QList<QList<int>>{{0, 1, 27}};
    QTest::newRow("over pages, table and formula")
        << QStringLiteral("revenue") << false
        << QList<QList<int>>{{0, 1, 18}, {0, 2, 7}, {1, 0, 0}, {1, 2, 8}};
    QTest::newRow("entity as its character")
        << QStringLiteral("North & South") << false << QList<QList<int>>{{0, 2, 15}};
    QTest::newRow("markup is not text") << QStringLiteral("<b>") << false << QList<QList<int>>{};
    QTest::newRow("not there") << QStringLiteral("profit") << false << QList<QList<int>>{};
    QTest::newRow("empty") << QString() << false << QList<QList<int>>{};
}

void TestDocumentSearch::matchesInOrder() {
    QFETCH(QString, text);
    QFETCH(bool, matchCase);
    QFETCH(QList<QList<int>>, expected);
    DocumentModel model;
    const int doc = addDocument(model);
    const std::vector<SearchMatch> matches =
        findMatches(model.document(doc), text, matchCase ? Qt::CaseSensitive : Qt::CaseInsensitive);
    QList<QList<int>> got;
    for (const SearchMatch& m : matches) {
        got.append({m.page, m.blockId, m.start});
        QCOMPARE(m.length, text.size());
    }
    QCOMPARE(got, expected);
}

void TestDocumentSearch::nextAndPreviousWrap() {
    DocumentModel model;
    const int doc = addDocument(model);
    DocumentSearch search(model);
    search.setDocument(doc);
    QSignalSpy moved(&search, &DocumentSearch::currentMoved);
    search.setQuery(QStringLiteral("revenue"), Qt::CaseInsensitive);
    QCOMPARE(search.count(), 4);
    QCOMPARE(search.currentIndex(), 0);
    QCOMPARE(moved.size(), 1);
    QCOMPARE(moved.last(), (QList<QVariant>{0, 1}));
    search.next();
    search.next();
    search.next();
    QCOMPARE(search.currentIndex(), 3);
    QCOMPARE(moved.last(), (QList<QVariant>{1, 2}));
    search.next();
    QCOMPARE(search.currentIndex(), 0);  // past the last, the first
    search.previous();
    QCOMPARE(search.currentIndex(), 3);  // before the first, the last
    QCOMPARE(moved.size(), 6);

    search.setQuery(QStringLiteral("profit"), Qt::CaseInsensitive);
    QCOMPARE(search.count(), 0);
    QCOMPARE(search.currentIndex(), -1);
    QVERIFY(search.current() == nullptr);
    search.next();  // nothing to go to
    QCOMPARE(moved.size(), 6);
}

void TestDocumentSearch::queryStartsAtTheBlockInView() {
    DocumentModel model;
    const int doc = addDocument(model);
    DocumentSearch search(model);
    search.setDocument(doc);
    search.setQuery(QStringLiteral("revenue"), Qt::CaseInsensitive, 1, 0);
    QCOMPARE(search.currentIndex(), 2);
    QCOMPARE(search.current()->page, 1);
    // Past the document's last match, the first.
    search.setQuery(QStringLiteral("report"), Qt::CaseInsensitive, 1, 2);
    QCOMPARE(search.currentIndex(), 0);
}

void TestDocumentSearch::followsTheModel() {
    DocumentModel model;
    const int doc = addDocument(model);
    DocumentSearch search(model);
    search.setDocument(doc);
    search.setQuery(QStringLiteral("revenue"), Qt::CaseInsensitive);
    search.next();
    search.next();
    QCOMPARE(search.currentIndex(), 2);  // page 1, block 0
    QSignalSpy moved(&search, &DocumentSearch::currentMoved);

    // An edit adds a match before the current one: the current one stays on its block.
    model.editBlockText(doc, 0, 0, QStringLiteral("# Revenue report"));
    QTRY_COMPARE(search.count(), 5);
    QCOMPARE(search.currentIndex(), 3);
    QCOMPARE(search.current()->page, 1);
    QCOMPARE(search.current()->blockId, 0);
    // Its own block loses the word: the next match becomes current. The model changing moves no view.
    model.editBlockText(doc, 1, 0, QStringLiteral("Costs fell."));
    QTRY_COMPARE(search.count(), 4);
    QCOMPARE(search.current()->page, 1);
    QCOMPARE(search.current()->blockId, 2);
    QCOMPARE(moved.size(), 0);
    // Undone: found again.
    model.undoStack(doc)->undo();
    QTRY_COMPARE(search.count(), 5);
    // A block deleted: later blocks' ids move down, and their matches with them.
    model.deleteBlock(doc, 1, 0);
    QTRY_COMPARE(search.count(), 4);
    QCOMPARE(search.matches().back().page, 1);
    QCOMPARE(search.matches().back().blockId, 1);
}

// Another document searched: its matches, none current until the user goes to one; the first or the last.
void TestDocumentSearch::noCurrentMatchInANewDocument() {
    DocumentModel model;
    const int first = addDocument(model);
    const int second = addDocument(model);
    DocumentSearch search(model);
    search.setDocument(first);
    search.setQuery(QStringLiteral("revenue"), Qt::CaseInsensitive);
    search.next();
    QCOMPARE(search.currentIndex(), 1);
    QSignalSpy moved(&search, &DocumentSearch::currentMoved);
    search.setDocument(second);
    QCOMPARE(search.count(), 4);
    QCOMPARE(search.currentIndex(), -1);
    QCOMPARE(moved.size(), 0);
    // A change to the document keeps none current.
    model.editBlockText(second, 1, 0, QStringLiteral("Costs fell."));
    QTRY_COMPARE(search.count(), 3);
    QCOMPARE(search.currentIndex(), -1);
    search.previous();
    QCOMPARE(search.currentIndex(), 2);
    search.setDocument(first);
    search.next();
    QCOMPARE(search.currentIndex(), 0);
    QCOMPARE(moved.size(), 2);
}

// A run streams a block's text a token at a time, faster than the refresh interval: the matches follow while
// it streams, not only once it stops.
void TestDocumentSearch::followsStreamingText() {
    DocumentModel model;
    const int doc = addDocument(model);
    DocumentSearch search(model);
    search.setDocument(doc);
    search.setQuery(QStringLiteral("streamed"), Qt::CaseInsensitive);
    QCOMPARE(search.count(), 0);
    QString text;
    int tokens = 0;
    QTimer stream;
    stream.setInterval(10);
    connect(&stream, &QTimer::timeout, this, [&] {
        text += QStringLiteral(" streamed");
        model.blockText(doc, 1, 0, text);
        if (++tokens == 300) {
            stream.stop();
        }
    });
    stream.start();
    QTRY_VERIFY_WITH_TIMEOUT(search.count() > 0, 2000);
    QVERIFY(stream.isActive());
    QTRY_COMPARE(search.count(), 300);
}

void TestDocumentSearch::closedDocumentHasNoMatches() {
    DocumentModel model;
    const int doc = addDocument(model);
    DocumentSearch search(model);
    search.setDocument(doc);
    search.setQuery(QStringLiteral("revenue"), Qt::CaseInsensitive);
    QCOMPARE(search.count(), 4);
    QSignalSpy changed(&search, &DocumentSearch::changed);
    model.closeDocument(doc);
    QCOMPARE(search.document(), -1);
    QCOMPARE(search.count(), 0);
    QVERIFY(changed.size() >= 1);
    search.setDocument(doc);  // closed: none
    QCOMPARE(search.document(), -1);
}

QTEST_GUILESS_MAIN(TestDocumentSearch)
#include "test-document-search.moc"
