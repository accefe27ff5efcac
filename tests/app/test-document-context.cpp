// Ask the document, without a model: a document's blocks as referenced passages, the rule that cuts a
// document longer than the context, and citations in hand-written answers (valid, unknown, malformed).
#include <QtTest>

#include "app/chat/document-context.h"

using namespace folio;

namespace {

BlockResult block(int id, const QString& label, const QString& content) {
    BlockResult b;
    b.id = id;
    b.label = label;
    b.content = content;
    return b;
}

// Three pages: a title and a paragraph; a table, a figure kept as an image and a failed block; a formula.
std::vector<PageResult> pages() {
    std::vector<PageResult> out(3);
    out[0].blocks = {block(0, QStringLiteral("doc_title"), QStringLiteral("Annual report")),
                     block(1, QStringLiteral("text"), QStringLiteral("Revenue grew by **12%** in 2025."))};
    BlockResult figure = block(1, QStringLiteral("image"), QString());
    figure.image = QImage(4, 4, QImage::Format_RGB888);
    BlockResult failed = block(2, QStringLiteral("text"), QString());
    failed.error = QStringLiteral("out of memory");
    out[1].blocks = {block(0, QStringLiteral("table"),
                           QStringLiteral("<table><tr><td>Region</td><td>Sales</td></tr><tr><td>North</td>"
                                          "<td>40</td></tr></table>")),
                     figure, failed};
    out[2].blocks = {block(3, QStringLiteral("display_formula"), QStringLiteral("$$E = mc^2$$"))};
    return out;
}

}  // namespace

class TestDocumentContext : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void passagesAreTheBlocksWithTextInOrder() {
        const DocumentContext context = DocumentContext::fromPages(pages());
        QCOMPARE(context.passages().size(), size_t{4});
        QStringList refs;
        for (const DocumentPassage& p : context.passages()) {
            refs.append(p.ref);
        }
        QCOMPARE(refs, (QStringList{"p1.b1", "p1.b2", "p2.b1", "p3.b1"}));
        const DocumentPassage* revenue = context.find(QStringLiteral("p1.b2"));
        QVERIFY(revenue);
        QCOMPARE(revenue->page, 0);
        QCOMPARE(revenue->blockId, 1);
        QVERIFY2(!revenue->text.contains(QLatin1Char('*')), qPrintable(revenue->text));
        const DocumentPassage* formula = context.find(QStringLiteral("p3.b1"));
        QVERIFY(formula);
        QCOMPARE(formula->blockId, 3);  // the block's own id, for the page view
        QVERIFY(!context.find(QStringLiteral("p2.b2")));
        QVERIFY(DocumentContext::fromPages({}).empty());
    }

    void aDocumentThatFitsIsGivenWholeInPageOrder() {
        const DocumentContext context = DocumentContext::fromPages(pages());
        const DocumentSelection all = context.select(QStringLiteral("What were sales in the north?"), 100000);
        QCOMPARE(all.pages, (QList<int>{0, 1, 2}));
        QVERIFY(all.leftOut.isEmpty());
        QVERIFY(all.text.contains(QStringLiteral("[p1.b2] Revenue grew by 12% in 2025.")));
        QVERIFY(all.text.indexOf(QStringLiteral("[p1.b1]")) < all.text.indexOf(QStringLiteral("[p3.b1]")));
        QVERIFY(!all.text.contains(QStringLiteral("left out")));
        // Counted a passage at a time: at most one token more a passage (and the frame) than the whole.
        QVERIFY(all.estimatedTokens >= estimateTokens(all.text));
        QVERIFY(all.estimatedTokens <= estimateTokens(all.text) + 5);
        // The same document part whatever the question, so that a conversation's prefix stays the same.
        QCOMPARE(context.select(QStringLiteral("Which formula?"), 100000).text, all.text);
    }

    void aLongDocumentKeepsThePagesWithTheQuestionsWords() {
        std::vector<PageResult> long_pages(6);
        for (int p = 0; p < 6; ++p) {
            long_pages[p].blocks = {
                block(0, QStringLiteral("text"),
                      QStringLiteral("Page %1 says little of note. ").arg(p + 1).repeated(20))};
        }
        long_pages[4].blocks.push_back(
            block(1, QStringLiteral("text"), QStringLiteral("The warranty lasts two years.")));
        const DocumentContext context = DocumentContext::fromPages(long_pages);
        // The whole, and the room select() keeps for the note naming left-out pages.
        int64_t budget = context.select(QString(), 1 << 30).estimatedTokens + 64 + 8;  // 8: rounding
        for (const int p : {1, 2, 3, 5}) {
            budget -= estimateTokens(
                QStringLiteral("[p%1.b1] %2\n").arg(p + 1).arg(long_pages[p].blocks[0].content.trimmed()));
        }
        // Room for two pages: the page with "warranty" first, then the first page by page order.
        const DocumentSelection cut = context.select(QStringLiteral("How long is the WARRANTY?"), budget);
        QCOMPARE(cut.pages, (QList<int>{0, 4}));
        QCOMPARE(cut.leftOut, (QList<int>{1, 2, 3, 5}));
        QVERIFY2(cut.text.contains(QStringLiteral("pages 2-4, 6 are left out")),
                 qPrintable(cut.text.right(120)));
        QVERIFY(cut.text.contains(QStringLiteral("[p5.b2] The warranty lasts two years.")));
        // Not even one page: nothing, for the caller to say so.
        const DocumentSelection none = context.select(QStringLiteral("warranty"), 50);
        QVERIFY(none.text.isEmpty());
        QVERIFY(none.pages.isEmpty());
        QCOMPARE(none.leftOut.size(), 6);
    }

    void citations_data() {
        QTest::addColumn<QString>("answer");
        QTest::addColumn<QStringList>("refs");
        QTest::addColumn<QList<bool>>("known");
        QTest::addColumn<QString>("linked");
        QTest::newRow("one") << QStringLiteral("It grew 12% [p1.b2].") << QStringList{"p1.b2"}
                             << QList<bool>{true}
                             << QStringLiteral("It grew 12% \\[[p1.b2](folio-cite:p1.b2)\\].");
        QTest::newRow("several, any case and spacing")
            << QStringLiteral("See [ P2.B1 ,p3.b1 ].") << QStringList{"p2.b1", "p3.b1"}
            << QList<bool>{true, true}
            << QStringLiteral("See \\[[p2.b1](folio-cite:p2.b1), [p3.b1](folio-cite:p3.b1)\\].");
        QTest::newRow("unknown") << QStringLiteral("Per [p9.b9] and [p1.b1].")
                                 << QStringList{"p9.b9", "p1.b1"} << QList<bool>{false, true}
                                 << QStringLiteral(
                                        "Per \\[~~p9.b9~~\\] and \\[[p1.b1](folio-cite:p1.b1)\\].");
        QTest::newRow("malformed") << QStringLiteral("No [p1.b] nor [p1.2] nor [p1.b1 or [1] or p1.b1.")
                                   << QStringList{} << QList<bool>{}
                                   << QStringLiteral("No [p1.b] nor [p1.2] nor [p1.b1 or [1] or p1.b1.");
        QTest::newRow("text around a bracket") << QStringLiteral("[see p1.b1]") << QStringList{}
                                               << QList<bool>{} << QStringLiteral("[see p1.b1]");
    }

    void citations() {
        QFETCH(QString, answer);
        QFETCH(QStringList, refs);
        QFETCH(QList<bool>, known);
        QFETCH(QString, linked);
        const DocumentContext context = DocumentContext::fromPages(pages());
        QStringList found;
        QList<bool> foundKnown;
        for (const CitationSpan& span : findCitations(answer, context)) {
            QCOMPARE(answer.at(span.start), QLatin1Char('['));
            QCOMPARE(answer.at(span.start + span.length - 1), QLatin1Char(']'));
            found += span.refs;
            foundKnown += span.known;
        }
        QCOMPARE(found, refs);
        QCOMPARE(foundKnown, known);
        QCOMPARE(linkCitations(answer, context), linked);
    }
};

QTEST_GUILESS_MAIN(TestDocumentContext)
#include "test-document-context.moc"
