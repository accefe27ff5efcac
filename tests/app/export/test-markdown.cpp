// Markdown as PaddleOCR-VL writes it: title levels, abstract and reference headings, a whole page, label
// filtering. Expected values are what PaddleX's formatting functions (common/result/converter/
// markdown_format_funcs.py, paddleocr_vl/result.py) give for the same blocks; the page fixture records them.
#include <QTest>

#include "app/export/document-writer.h"
#include "app/export/markdown-block.h"
#include "app/export/markdown-writer.h"
#include "export-test-pages.h"

namespace folio {

class TestMarkdown : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void titleLevels_data();
    void titleLevels();
    void firstLineHeadings_data();
    void firstLineHeadings();
    void page();
    void labelFilter_data();
    void labelFilter();
    void defaultLabels();
    void imageWithoutFile();
};

void TestMarkdown::titleLevels_data() {
    QTest::addColumn<QString>("title");
    QTest::addColumn<QString>("markdown");
    QTest::newRow("1.2 Methods") << QStringLiteral("1.2 Methods") << QStringLiteral("### 1.2 Methods");
    QTest::newRow("Introduction") << QStringLiteral("Introduction") << QStringLiteral("## Introduction");
    QTest::newRow("3. Results.") << QStringLiteral("3. Results.") << QStringLiteral("### 3. Results");
    QTest::newRow("2.1.3Deep nesting")
        << QStringLiteral("2.1.3Deep nesting") << QStringLiteral("#### 2.1.3 Deep nesting");
    QTest::newRow("IV Results") << QStringLiteral("IV Results") << QStringLiteral("## IV Results");
    QTest::newRow("II. Methods") << QStringLiteral("II. Methods") << QStringLiteral("### II. Methods");
    QTest::newRow("Intro to v2.0") << QStringLiteral("Intro to v2.0") << QStringLiteral("### Intro to v2.0");
    QTest::newRow("（二）方法") << QStringLiteral("（二）方法") << QStringLiteral("## （二） 方法");
    QTest::newRow("一、引言") << QStringLiteral("一、引言") << QStringLiteral("## 一、 引言");
    QTest::newRow("(3) Case") << QStringLiteral("(3) Case") << QStringLiteral("## (3) Case");
    QTest::newRow("10 Conclusion") << QStringLiteral("10 Conclusion") << QStringLiteral("## 10 Conclusion");
    QTest::newRow("0.5 mm") << QStringLiteral("0.5 mm") << QStringLiteral("### 0.5 mm");
    QTest::newRow("Intro-\nduction") << QStringLiteral("Intro-\nduction")
                                     << QStringLiteral("## Introduction");
    QTest::newRow("I am") << QStringLiteral("I am") << QStringLiteral("## I am");
    QTest::newRow("  7  Spaces  ") << QStringLiteral("  7  Spaces  ") << QStringLiteral("## 7 Spaces  ");
}

void TestMarkdown::titleLevels() {
    QFETCH(QString, title);
    QFETCH(QString, markdown);
    BlockResult block;
    block.label = QStringLiteral("paragraph_title");
    block.content = title;
    QCOMPARE(markdownOfBlock(block, QString(), 1000), markdown);
}

void TestMarkdown::firstLineHeadings_data() {
    QTest::addColumn<QString>("label");
    QTest::addColumn<QString>("content");
    QTest::addColumn<QString>("markdown");
    QTest::newRow("abstract: Abstract This paper shows")
        << QStringLiteral("abstract") << QStringLiteral("Abstract This paper shows")
        << QStringLiteral("## Abstract\n This paper shows");
    QTest::newRow("abstract: ABSTRACT\nText")
        << QStringLiteral("abstract") << QStringLiteral("ABSTRACT\nText") << QStringLiteral("ABSTRACT\nText");
    QTest::newRow("abstract: 摘要 本文")
        << QStringLiteral("abstract") << QStringLiteral("摘要 本文") << QStringLiteral("## 摘要\n 本文");
    QTest::newRow("abstract:   Abstract  x") << QStringLiteral("abstract") << QStringLiteral("  Abstract  x")
                                             << QStringLiteral("  ## Abstract\n  x");
    QTest::newRow("reference: References\n[1] A.\n[2] B.")
        << QStringLiteral("reference") << QStringLiteral("References\n[1] A.\n[2] B.")
        << QStringLiteral("## References\n[1] A.\n[2] B.");
    QTest::newRow("reference: 参考文献\n[1] 甲")
        << QStringLiteral("reference") << QStringLiteral("参考文献\n[1] 甲")
        << QStringLiteral("## 参考文献\n[1] 甲");
    QTest::newRow("reference: \nREFERENCES\n[1] x")
        << QStringLiteral("reference") << QStringLiteral("\nREFERENCES\n[1] x")
        << QStringLiteral("\n## REFERENCES\n[1] x");
    QTest::newRow("reference: [1] only")
        << QStringLiteral("reference") << QStringLiteral("[1] only") << QStringLiteral("[1] only");
}

void TestMarkdown::firstLineHeadings() {
    QFETCH(QString, label);
    QFETCH(QString, content);
    QFETCH(QString, markdown);
    BlockResult block;
    block.label = label;
    block.content = content;
    QCOMPARE(markdownOfBlock(block, QString(), 1000), markdown);
}

// A page of every kind of block: header, footer and formula_number left out by default.
void TestMarkdown::page() {
    const QJsonObject fixture = test::readFixture(QStringLiteral("markdown-page.json"));
    const QJsonArray blocks = fixture[QStringLiteral("blocks")].toArray();
    const PageResult page = test::makePage(blocks, 0, fixture[QStringLiteral("width")].toInt());
    std::vector<QString> links(page.blocks.size());
    for (qsizetype i = 0; i < blocks.size(); ++i) {
        if (blocks[i].toObject()[QStringLiteral("image")].toBool()) {
            const BlockBox& b = page.blocks[static_cast<size_t>(i)].box;
            links[static_cast<size_t>(i)] = QStringLiteral("imgs/doc/img_in_image_box_%1_%2_%3_%4.jpg")
                                                .arg(b.x1)
                                                .arg(b.y1)
                                                .arg(b.x2)
                                                .arg(b.y2);
        }
    }
    QCOMPARE(markdownOfPage(page, defaultMarkdownLabels(), links),
             fixture[QStringLiteral("markdown")].toString());
}

void TestMarkdown::labelFilter_data() {
    QTest::addColumn<QStringList>("labels");
    QTest::addColumn<QString>("markdown");
    QTest::newRow("default") << QStringList() << QStringLiteral("## Title\n\nbody");
    QTest::newRow("with header and footer") << QStringList{"header", "paragraph_title", "text", "footer"}
                                            << QStringLiteral("Head\n\n## Title\n\nbody\n\n3");
    QTest::newRow("text only") << QStringList{"text"} << QStringLiteral("body");
    QTest::newRow("formula_number never") << QStringList{"formula_number", "text"} << QStringLiteral("body");
    QTest::newRow("nothing matches") << QStringList{"table"} << QString();
}

void TestMarkdown::labelFilter() {
    QFETCH(QStringList, labels);
    QFETCH(QString, markdown);
    const PageResult page = test::makePage(QJsonDocument::fromJson(R"json([
        {"label": "header", "box": [0, 0, 10, 10], "text": "Head"},
        {"label": "paragraph_title", "box": [0, 20, 10, 30], "text": "Title"},
        {"label": "formula_number", "box": [0, 30, 10, 40], "text": "(1)"},
        {"label": "text", "box": [0, 40, 10, 50], "text": "body"},
        {"label": "footer", "box": [0, 90, 10, 99], "text": "3"}])json")
                                               .array());
    ExportOptions options;
    options.markdownLabels = QSet<QString>(labels.begin(), labels.end());
    QCOMPARE(markdownOfPage(page, effectiveMarkdownLabels(options), {}), markdown);
}

void TestMarkdown::defaultLabels() {
    const QSet<QString> labels = defaultMarkdownLabels();
    for (const char* left : {"number", "footnote", "header", "header_image", "footer", "footer_image",
                             "aside_text", "formula_number"}) {
        QVERIFY2(!labels.contains(QLatin1String(left)), left);
    }
    for (const char* kept :
         {"doc_title", "paragraph_title", "text", "table", "image", "chart", "seal", "display_formula",
          "inline_formula", "abstract", "reference", "reference_content", "algorithm", "content",
          "figure_title", "vision_footnote", "vertical_text"}) {
        QVERIFY2(labels.contains(QLatin1String(kept)), kept);
    }
}

// An image block without a saved file: PaddleOCR writes an empty centred div.
void TestMarkdown::imageWithoutFile() {
    BlockResult block;
    block.label = QStringLiteral("image");
    QCOMPARE(markdownOfBlock(block, QString(), 1000),
             QStringLiteral("<div style=\"text-align: center;\"></div>\n"));
}

}  // namespace folio

QTEST_GUILESS_MAIN(folio::TestMarkdown)
#include "test-markdown.moc"
