// Block content after recognition: runaway repetition cut, LaTeX delimiters, finalizeBlock. Expected values
// come from PaddleX's truncate_repetitive_content and the pipeline's delimiter replacement
// (paddleocr_vl/uilts.py, paddleocr_vl/pipeline.py), run on the same inputs.
#include <QTest>

#include "app/pipeline/block-content.h"
#include "app/pipeline/formula-text.h"
#include "app/pipeline/repetition-trim.h"

namespace folio {
namespace {

const QString kUnit = QStringLiteral("abcdefgh");  // an 8-character unit

QString rep(const QString& s, int n) {
    return s.repeated(n);
}

}  // namespace

class TestBlockContent : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void trimsRepetition_data();
    void trimsRepetition();
    void minLengthByLabel();
    void convertsFormulaDelimiters_data();
    void convertsFormulaDelimiters();
    void finalizesBlocks_data();
    void finalizesBlocks();
    void finalizeKeepsUnparsedTableText();
};

void TestBlockContent::trimsRepetition_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("minLength");
    QTest::addColumn<QString>("expected");  // null: unchanged

    const QString z21 = rep(QStringLiteral("Z"), 21);
    // Rule 1: a line over 100 ending in a unit of 8+ repeated 5+ times, more than half the line.
    QTest::newRow("suffix: the largest unit wins")
        << QStringLiteral("Intro: ") + rep(kUnit, 15) << 50 << QStringLiteral("Intro: ");
    QTest::newRow("suffix: just over half")
        << rep(QStringLiteral("x"), 71) + rep(kUnit, 9) << 50 << rep(QStringLiteral("x"), 71);
    QTest::newRow("suffix: exactly half kept")
        << rep(QStringLiteral("x"), 72) + rep(kUnit, 9) << 50 << QString();
    QTest::newRow("suffix: 4 copies kept")
        << rep(QStringLiteral("p"), 100) + rep(kUnit, 4) << 50 << QString();
    QTest::newRow("suffix: 7-character unit kept")
        << rep(QStringLiteral("q"), 60) + rep(QStringLiteral("abcdefg"), 9) << 50 << QString();
    QTest::newRow("suffix: line of 101") << z21 + rep(kUnit, 10) << 50 << z21;
    QTest::newRow("suffix: line of 100 kept")
        << rep(QStringLiteral("Z"), 20) + rep(kUnit, 10) << 50 << QString();
    QTest::newRow("suffix: two lines kept")
        << QStringLiteral("title\n") + rep(QStringLiteral("w"), 20) + rep(kUnit, 12) << 50 << QString();
    QTest::newRow("suffix: stripped first")
        << QStringLiteral("  \n") + z21 + rep(kUnit, 10) + QStringLiteral(" \n") << 50 << z21;
    // Rule 2: a line over 10 that is one unit repeated 10+ times.
    QTest::newRow("whole: 10 copies")
        << rep(QStringLiteral("ab"), 10) + QStringLiteral("  ") << 10 << QStringLiteral("ab");
    QTest::newRow("whole: 9 copies kept") << rep(QStringLiteral("abc"), 9) << 10 << QString();
    QTest::newRow("whole: code points")
        << rep(QStringLiteral("\U0001F600\u91CD"), 30) << 50 << QStringLiteral("\U0001F600\u91CD");
    QTest::newRow("whole: line of 10 kept") << rep(QStringLiteral("a"), 10) << 5 << QString();
    // Rule 3: 10+ non-blank lines, one of them 80% or more.
    QTest::newRow("lines: 10 of 10") << rep(QStringLiteral("same line\n"), 10) << 50
                                     << QStringLiteral("same line");
    QTest::newRow("lines: 9 kept") << rep(QStringLiteral("same line\n"), 9) << 50 << QString();
    QTest::newRow("lines: 12 of 15") << rep(QStringLiteral("row\n"), 12) + QStringLiteral("a\nb\nc\n") << 50
                                     << QStringLiteral("row");
    QTest::newRow("lines: 11 of 14 kept")
        << rep(QStringLiteral("row\n"), 11) + QStringLiteral("a\nb\nc\n") << 50 << QString();
    QTest::newRow("lines: stripped, blank lines not counted")
        << rep(QStringLiteral("  same  \n\n\t same\r\n"), 6) << 50 << QStringLiteral("same");
    // The length gate, in code points.
    QTest::newRow("gate: short kept") << rep(QStringLiteral("ab"), 20) << 50 << QString();
    QTest::newRow("gate: 40 code points in 80 UTF-16 units kept")
        << rep(QStringLiteral("\U0001F600"), 40) << 50 << QString();
    QTest::newRow("gate: table under 5000 kept") << rep(QStringLiteral("<fcel>x"), 600) << 5000 << QString();
    QTest::newRow("gate: table over 5000")
        << QStringLiteral("<nl>") + rep(QStringLiteral("<fcel>x<ecel>"), 500) << 5000
        << QStringLiteral("<nl>");
    QTest::newRow("blank kept") << rep(QStringLiteral(" \n\t "), 20) << 50 << QString();
}

void TestBlockContent::trimsRepetition() {
    QFETCH(QString, text);
    QFETCH(int, minLength);
    QFETCH(QString, expected);
    QCOMPARE(trimRepetition(text, minLength), expected.isNull() ? text : expected);
}

void TestBlockContent::minLengthByLabel() {
    QCOMPARE(repetitionMinLength(QStringLiteral("table")), 5000);
    QCOMPARE(repetitionMinLength(QStringLiteral("text")), 50);
    QCOMPARE(repetitionMinLength(QStringLiteral("display_formula")), 50);
}

void TestBlockContent::convertsFormulaDelimiters_data() {
    QTest::addColumn<QString>("label");
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");

    QTest::newRow("inline in text") << "text"
                                    << R"(Let \(x^2\) be $5.)"
                                    << "Let  $ x^2 $ be 5.";
    QTest::newRow("display formula") << "display_formula"
                                     << R"(\[ \frac{a}{b} \])"
                                     << " $$  \\frac{a}{b}  $$ ";
    QTest::newRow("doubled display delimiters") << "display_formula"
                                                << R"(\[\[x\]\])"
                                                << " $$ x $$ ";
    QTest::newRow("inline formula block") << "inline_formula"
                                          << R"(\(a+b\))"
                                          << " $ a+b $";
    QTest::newRow("formula number loses $") << "formula_number"
                                            << R"(\((1)\))"
                                            << "  (1) ";
    QTest::newRow("one delimiter alone unchanged") << "text"
                                                   << R"(costs $5 \( only)"
                                                   << R"(costs $5 \( only)";
    QTest::newRow("mixed pairs: \\( with \\]") << "text"
                                               << R"(\( a \])"
                                               << R"(\( a \])";
    QTest::newRow("no delimiters") << "text"
                                   << "plain $x$"
                                   << "plain $x$";
    QTest::newRow("display and inline") << "text"
                                        << R"(\(a\) and \[b\])"
                                        << " $ a $ and  $$ b $$ ";
}

void TestBlockContent::convertsFormulaDelimiters() {
    QFETCH(QString, label);
    QFETCH(QString, text);
    QFETCH(QString, expected);
    QCOMPARE(convertFormulaDelimiters(text, label), expected);
}

void TestBlockContent::finalizesBlocks_data() {
    QTest::addColumn<QString>("label");
    QTest::addColumn<QString>("rawText");
    QTest::addColumn<QString>("trimmed");
    QTest::addColumn<QString>("content");
    QTest::addColumn<int>("rows");  // -1: no grid

    QTest::newRow("text") << "text"
                          << "Hello\nworld"
                          << "Hello\nworld"
                          << "Hello\nworld" << -1;
    // The largest unit ending the stripped line has 21 characters; its 5 copies follow the first 14.
    QTest::newRow("text with runaway") << "text" << rep(QStringLiteral("ha "), 40) << "ha ha ha ha ha"
                                       << "ha ha ha ha ha" << -1;
    QTest::newRow("formula") << "display_formula"
                             << R"(\[x\])"
                             << R"(\[x\])"
                             << " $$ x $$ " << -1;
    QTest::newRow("table with formula cell") << "table"
                                             << R"(<fcel>\(x^2\)<fcel>$5<nl>)"
                                             << R"(<fcel>\(x^2\)<fcel>$5<nl>)"
                                             << "<table><tr><td>$ x^2 $</td><td>5</td></tr></table>" << 1;
    QTest::newRow("table not OTSL") << "table"
                                    << "a | b"
                                    << "a | b"
                                    << "a | b" << -1;
    QTest::newRow("image without recognition") << "image"
                                               << ""
                                               << ""
                                               << "" << -1;
}

void TestBlockContent::finalizesBlocks() {
    QFETCH(QString, label);
    QFETCH(QString, rawText);
    QFETCH(QString, trimmed);
    QFETCH(QString, content);
    QFETCH(int, rows);
    BlockResult block;
    block.label = label;
    block.rawText = rawText;
    block.table = TableGrid{};  // stale: replaced or cleared
    finalizeBlock(block);
    QCOMPARE(block.rawText, trimmed);
    QCOMPARE(block.content, content);
    QCOMPARE(block.table.has_value(), rows >= 0);
    if (rows >= 0) {
        QCOMPARE(block.table->nRows, rows);
    }
}

void TestBlockContent::finalizeKeepsUnparsedTableText() {
    // Merge tags without any cell: PaddleOCR's converter returns "" and the text stays as it is.
    BlockResult block;
    block.label = QStringLiteral("table");
    block.rawText = QStringLiteral("<lcel><ucel><nl>");
    finalizeBlock(block);
    QCOMPARE(block.content, QStringLiteral("<lcel><ucel><nl>"));
    QVERIFY(!block.table);
}

}  // namespace folio

QTEST_GUILESS_MAIN(folio::TestBlockContent)
#include "test-block-content.moc"
