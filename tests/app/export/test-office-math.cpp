// LaTeX to Office Math: each construct PaddleOCR-VL's formulas use as its OMML element, symbols as Unicode,
// what is not known kept as text, and inline formulas found in text as Pandoc finds them.
#include <QTest>

#include "app/export/office-math.h"

using folio::officeMathOutline;
using folio::splitInlineMath;

class TestOfficeMath : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void constructs_data() {
        QTest::addColumn<QString>("latex");
        QTest::addColumn<QString>("outline");
        QTest::newRow("letters and digits") << "E = m c^2"
                                            << "oMath(r(t:E=m),sSup(e(r(t:c)),sup(r(t:2))))";
        QTest::newRow("fraction") << "\\frac{a+1}{b}"
                                  << "oMath(f(num(r(t:a+1)),den(r(t:b))))";
        QTest::newRow("subscript and superscript") << "x_i^{2}"
                                                   << "oMath(sSubSup(e(r(t:x)),sub(r(t:i)),sup(r(t:2))))";
        QTest::newRow("superscript then subscript") << "x^{2}_{i}"
                                                    << "oMath(sSubSup(e(r(t:x)),sub(r(t:i)),sup(r(t:2))))";
        QTest::newRow("square root") << "\\sqrt{x}"
                                     << "oMath(rad(radPr(degHide=1),deg,e(r(t:x))))";
        QTest::newRow("cube root") << "\\sqrt[3]{x}"
                                   << "oMath(rad(deg(r(t:3)),e(r(t:x))))";
        QTest::newRow("sum with limits, its body up to the relation")
            << "\\sum_{i=1}^{n} x_i = S"
            << "oMath(nary(naryPr(chr=∑,limLoc=undOvr),sub(r(t:i=1)),sup(r(t:n)),e(sSub(e(r(t:x)),sub(r(t:i))"
               "))),"
               "r(t:=S))";
        QTest::newRow("integral, limits beside")
            << "\\int_0^1 f"
            << "oMath(nary(naryPr(chr=∫,limLoc=subSup),sub(r(t:0)),sup(r(t:1)),e(r(t:f))))";
        QTest::newRow("integral without limits")
            << "\\int f"
            << "oMath(nary(naryPr(chr=∫,limLoc=subSup,subHide=1,supHide=1),sub,sup,e(r(t:f))))";
        QTest::newRow("delimiters") << "\\left( x \\right]"
                                    << "oMath(d(dPr(begChr=(,endChr=]),e(r(t:x))))";
        QTest::newRow("no delimiter") << "\\left. x \\right|"
                                      << "oMath(d(dPr(begChr=,endChr=|),e(r(t:x))))";
        QTest::newRow("accent") << "\\hat{y}" << QString::fromUtf8("oMath(acc(accPr(chr=\u0302),e(r(t:y))))");
        QTest::newRow("overline") << "\\overline{AB}"
                                  << "oMath(bar(barPr(pos=top),e(r(t:AB))))";
        QTest::newRow("greek and operators") << "\\alpha \\leq \\beta \\times 2"
                                             << "oMath(r(t:α≤β×2))";
        QTest::newRow("function name upright") << "\\sin x"
                                               << "oMath(r(rPr(sty=p),t:sin),r(t:x))";
        QTest::newRow("bold") << "\\mathbf{v}"
                              << "oMath(r(rPr(sty=b),t:v))";
        QTest::newRow("double-struck") << "\\mathbb{R}"
                                       << "oMath(r(rPr(scr=double-struck,sty=p),t:R))";
        QTest::newRow("text keeps its spaces") << "x \\text{if } y"
                                               << "oMath(r(t:x),r(rPr(sty=p),t:if ),r(t:y))";
        QTest::newRow("pmatrix")
            << "\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}"
            << "oMath(d(dPr(begChr=(,endChr=)),e(m(mr(e(r(t:a)),e(r(t:b))),mr(e(r(t:c)),e(r(t:d)))))))";
        QTest::newRow("cases") << "f = \\begin{cases} 1 & x > 0 \\\\ 0 & \\text{otherwise} \\end{cases}"
                               << "oMath(r(t:f=),d(dPr(begChr={,endChr=),e(m(mr(e(r(t:1)),e(r(t:x>0))),"
                                  "mr(e(r(t:0)),e(r(rPr(sty=p),t:otherwise)))))))";
        QTest::newRow("binomial")
            << "\\binom{n}{k}"
            << "oMath(d(dPr(begChr=(,endChr=)),e(f(fPr(type=noBar),num(r(t:n)),den(r(t:k))))))";
        QTest::newRow("unknown command kept") << "\\foo{x}"
                                              << "oMath(r(rPr(sty=p),t:\\foo),r(t:x))";
        QTest::newRow("unbalanced brace kept") << "a}b"
                                               << "oMath(r(t:a),r(rPr(sty=p),t:}b))";
        QTest::newRow("unclosed group") << "\\frac{a"
                                        << "oMath(f(num(r(t:a)),den))";
        QTest::newRow("empty") << ""
                               << "oMath";
    }

    void constructs() {
        QFETCH(QString, latex);
        QFETCH(QString, outline);
        QCOMPARE(officeMathOutline(latex), outline);
    }

    // Nesting deeper than the reader follows ends as text, not as a stack overflow.
    void deepNestingEndsAsText() {
        const QString deep =
            QString(5000, QLatin1Char('{')) + QStringLiteral("x") + QString(5000, QLatin1Char('}'));
        const QString outline = officeMathOutline(deep);
        QVERIFY(outline.startsWith(QStringLiteral("oMath(")));
        QVERIFY(outline.contains(QStringLiteral("x")));
        const QString fractions = QStringLiteral("\\frac{").repeated(3000);
        QVERIFY(officeMathOutline(fractions).startsWith(QStringLiteral("oMath(")));
    }

    void inlineMath_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("segments");  // "m:" before a formula
        QTest::newRow("one formula") << "the mass $m_0$ rises" << QStringList{"the mass ", "m:m_0", " rises"};
        QTest::newRow("prices stay text") << "from $5 to $10 each" << QStringList{"from $5 to $10 each"};
        QTest::newRow("space inside stays text") << "a $ b $ c" << QStringList{"a $ b $ c"};
        QTest::newRow("parenthesised") << "so \\(x^2\\) holds" << QStringList{"so ", "m:x^2", " holds"};
        QTest::newRow("escaped dollar") << "costs \\$3" << QStringList{"costs $3"};
        QTest::newRow("two formulas") << "$a$ and $b$" << QStringList{"m:a", " and ", "m:b"};
        QTest::newRow("unclosed") << "just $x" << QStringList{"just $x"};
    }

    void inlineMath() {
        QFETCH(QString, text);
        QFETCH(QStringList, segments);
        QStringList got;
        for (const folio::InlineSegment& s : splitInlineMath(text)) {
            got << (s.math ? QStringLiteral("m:") + s.text : s.text);
        }
        QCOMPARE(got, segments);
    }
};

QTEST_GUILESS_MAIN(TestOfficeMath)
#include "test-office-math.moc"
