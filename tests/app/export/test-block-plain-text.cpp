// Blocks' plain text for the searchable PDF's text layer: Markdown and HTML markup removed, tables row by
// row, formulas as LaTeX lines, nothing for images and failed blocks.
#include <QtTest>

#include "app/export/block-plain-text.h"

using namespace folio;

namespace {

BlockResult block(const QString& label, const QString& content) {
    BlockResult result;
    result.label = label;
    result.content = content;
    return result;
}

}  // namespace

class TestBlockPlainText : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void stripsMarkup_data();
    void stripsMarkup();
    void tablesGiveTheirRows();
    void formulasGiveTheirLatex();
    void imagesAndFailuresGiveNothing();
};

void TestBlockPlainText::stripsMarkup_data() {
    QTest::addColumn<QString>("markup");
    QTest::addColumn<QString>("plain");
    QTest::newRow("heading") << "## 1.2 Methods"
                             << "1.2 Methods";
    QTest::newRow("emphasis") << "**bold**, *italic*, __strong__ and _em_"
                              << "bold, italic, strong and em";
    QTest::newRow("words kept") << "snake_case_name and 2 * 3 * 4"
                                << "snake_case_name and 2 * 3 * 4";
    QTest::newRow("link and image") << "see [the site](http://x.org) ![fig](a.png)"
                                    << "see the site";
    QTest::newRow("code") << "call `run()` now"
                          << "call run() now";
    QTest::newRow("inline math") << "where $x_i$ and \\(y\\) hold"
                                 << "where x_i and y hold";
    QTest::newRow("money is not math") << "costs $5 and $10"
                                       << "costs $5 and $10";
    QTest::newRow("bullets") << "- one\n* two\n1. three"
                             << "one\ntwo\n1. three";
    QTest::newRow("quote") << "> quoted"
                           << "quoted";
    QTest::newRow("escapes") << "a \\* b \\_c\\_ \\$5 \\`x\\`"
                             << "a * b _c_ $5 `x`";
    QTest::newRow("escaped pipe") << "| a \\| b | c |"
                                  << "a | b c";
    QTest::newRow("html") << "line<br>next<p>para</p><b>bold</b> a &lt; b &amp; c&#x4E2D;"
                          << "line\nnext\npara\nbold a < b & c\u4E2D";
    QTest::newRow("comparison kept") << "a < b and c > d"
                                     << "a < b and c > d";
    QTest::newRow("markdown table") << "| a | b |\n|---|:-:|\n| 1 | 2 |"
                                    << "a b\n1 2";
    QTest::newRow("html table") << "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td></tr></table>"
                                << "a b\n1";
    QTest::newRow("rule and blanks") << "above\n\n---\n   \nbelow"
                                     << "above\nbelow";
    QTest::newRow("spaces") << "  many    spaces\there  "
                            << "many spaces here";
}

void TestBlockPlainText::stripsMarkup() {
    QFETCH(QString, markup);
    QFETCH(QString, plain);
    QCOMPARE(stripMarkup(markup), plain);
}

void TestBlockPlainText::tablesGiveTheirRows() {
    BlockResult table = block(QStringLiteral("table"), QStringLiteral("<table>ignored</table>"));
    table.table = TableGrid{2,
                            3,
                            {{1, 1, 1, 1, "<b>y</b>"},
                             {0, 0, 1, 2, "head"},
                             {0, 2, 1, 1, "c"},
                             {1, 0, 1, 1, "x"},
                             {1, 2, 1, 1, ""}}};
    QCOMPARE(blockPlainLines(table), (QStringList{"head c", "x y"}));
    // Without a grid, the HTML's rows.
    table.table.reset();
    table.content = QStringLiteral("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>");
    QCOMPARE(blockPlainLines(table), (QStringList{"a b", "c"}));
}

void TestBlockPlainText::formulasGiveTheirLatex() {
    QCOMPARE(
        blockPlainLines(block(QStringLiteral("display_formula"), QStringLiteral("$$\\frac{a}{b} = c$$"))),
        QStringList{"\\frac{a}{b} = c"});
    QCOMPARE(blockPlainLines(block(QStringLiteral("inline_formula"), QStringLiteral("$x^2$"))),
             QStringList{"x^2"});
    QCOMPARE(blockPlainLines(block(QStringLiteral("display_formula"),
                                   QStringLiteral("$$\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}$$"))),
             (QStringList{"\\begin{aligned} a &= b", "c &= d \\end{aligned}"}));
    BlockResult raw = block(QStringLiteral("display_formula"), QString());
    raw.rawText = QStringLiteral("\\[ E = mc^2 \\]");
    QCOMPARE(blockPlainLines(raw), QStringList{"E = mc^2"});
}

void TestBlockPlainText::imagesAndFailuresGiveNothing() {
    BlockResult image = block(QStringLiteral("image"), QString());
    image.image = QImage(4, 4, QImage::Format_RGB888);
    QVERIFY(blockPlainLines(image).isEmpty());
    BlockResult failed = block(QStringLiteral("text"), QString());
    failed.error = QStringLiteral("out of memory");
    QVERIFY(blockPlainLines(failed).isEmpty());
    QCOMPARE(blockPlainLines(block(QStringLiteral("text"), QStringLiteral("a\n\nb"))),
             (QStringList{"a", "b"}));
}

QTEST_GUILESS_MAIN(TestBlockPlainText)
#include "test-block-plain-text.moc"
