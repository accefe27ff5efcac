// The document writers: files only after finish(), nothing left after abort(), figures saved and linked, the
// JSON's keys and types field by field (PaddleOCR-VL's save_to_json, paddleocr_vl/result.py), the HTML page,
// and the factory.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QImageReader>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include "app/export/document-writer.h"
#include "app/export/html-writer.h"
#include "app/export/katex-typesetter.h"
#include "engine/common/error.h"
#include "export-test-pages.h"

namespace folio {
namespace {

QString readAll(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        return QString();
    }
    return QString::fromUtf8(file.readAll());
}

// Every file under the folder, relative to it.
QStringList filesUnder(const QString& dir) {
    QStringList files;
    QDir root(dir);
    const QFileInfoList entries =
        root.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden, QDir::Name);
    for (const QFileInfo& entry : entries) {
        if (entry.isDir()) {
            for (const QString& sub : filesUnder(entry.absoluteFilePath())) {
                files.push_back(entry.fileName() + QLatin1Char('/') + sub);
            }
        } else {
            files.push_back(entry.fileName());
        }
    }
    return files;
}

// Whether Debian's libjs-katex is where the HTML writer looks for it.
bool katexInstalled() {
    return QFileInfo::exists(QDir(katexDirectory()).filePath(QStringLiteral("katex.min.js")));
}

DocumentInfo document() {
    return {QStringLiteral("/in/doc.pdf"), QStringLiteral("doc"), 2};
}

// Page 1: a title, a figure and a table continued on page 2.
std::vector<PageResult> twoPages() {
    PageResult first = test::makePage({
        test::makeBlock("doc_title", {100, 50, 900, 100}, "Report <1> & \"more\""),
        test::makeBlock("image", {100, 120, 400, 420}, ""),
        test::makeBlock("text", {100, 430, 900, 480}, "Energy \\(E=mc^2\\) holds."),
        test::makeBlock("table", {100, 500, 900, 900}, "<fcel>k<fcel>v<nl><fcel>a<fcel>1<nl>"),
        test::makeBlock("footer", {0, 1300, 1000, 1350}, "1"),
    });
    first.blocks[0].order = 1;
    first.blocks[2].order = 2;
    first.blocks[1].image = QImage(300, 300, QImage::Format_RGB888);
    first.blocks[1].image.fill(Qt::red);
    first.blocks[1].polygon = QPolygonF({{100, 120}, {400, 120}, {400, 420}, {100, 420}});
    first.blocks[1].score = 0.5F;
    first.timings = {12.5, 25, 30, 4.5, 400};
    first.dpi = 144;
    PageResult second = test::makePage(
        {
            test::makeBlock("table", {100, 50, 905, 400}, "<fcel>k<fcel>v<nl><fcel>b<fcel>2<nl>"),
            test::makeBlock("text", {100, 430, 900, 480}, "End."),
        },
        1);
    second.blocks[1].order = 1;
    return {first, second};
}

}  // namespace

class TestWriters : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void finishWritesFiles_data();
    void finishWritesFiles();
    void abortLeavesNothing_data();
    void abortLeavesNothing();
    void markdownDocument();
    void singleImageMarkdown();
    void jsonFields();
    void htmlDocument();
    void htmlFormulasTypeset();
    void htmlFormulasWithoutKatex();
    void figureNamesStayApart();
    void factory();
    void unwritableFolder();
};

void TestWriters::finishWritesFiles_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<QStringList>("expected");
    const QString figure = QStringLiteral("imgs/doc/img_in_image_box_100_120_400_420.jpg");
    QTest::newRow("markdown") << static_cast<int>(ExportFormat::Markdown) << QStringList{"doc.md", figure};
    QTest::newRow("json") << static_cast<int>(ExportFormat::Json) << QStringList{"doc.json"};
    QTest::newRow("html") << static_cast<int>(ExportFormat::Html) << QStringList{"doc.html", figure};
}

// Nothing at the targets before finish(); afterwards exactly the files, no temporary file left.
void TestWriters::finishWritesFiles() {
    QFETCH(int, format);
    QFETCH(QStringList, expected);
    QTemporaryDir dir;
    const std::unique_ptr<DocumentWriter> writer =
        makeDocumentWriter(static_cast<ExportFormat>(format), {dir.path(), {}});
    writer->begin(document());
    for (const PageResult& page : twoPages()) {
        writer->addPage(page);
    }
    QVERIFY(!QFile::exists(QDir(dir.path()).filePath(expected.front())));
    writer->finish();
    QStringList files = filesUnder(dir.path());
    // KaTeX's stylesheet and fonts beside the HTML for its formula, shared by the folder's pages and so not
    // among the document's files.
    const QStringList katex = files.filter(QRegularExpression(QStringLiteral("^katex/")));
    for (const QString& file : katex) {
        files.removeAll(file);
    }
    QCOMPARE(!katex.isEmpty(), static_cast<ExportFormat>(format) == ExportFormat::Html && katexInstalled());
    QCOMPARE(files, expected);
    QStringList reported;
    for (const QString& path : writer->files()) {
        reported.push_back(QDir(dir.path()).relativeFilePath(path));
    }
    QCOMPARE(reported, expected);
    if (expected.size() > 1) {
        QImageReader image(QDir(dir.path()).filePath(expected[1]));
        QCOMPARE(image.format(), QByteArray("jpeg"));
        QCOMPARE(image.size(), QSize(300, 300));
    }
}

void TestWriters::abortLeavesNothing_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<bool>("afterFinish");
    for (const ExportFormat f : {ExportFormat::Markdown, ExportFormat::Json, ExportFormat::Html}) {
        const QString name = QString::number(static_cast<int>(f));
        QTest::newRow(qPrintable(name + QStringLiteral(" while writing"))) << static_cast<int>(f) << false;
        QTest::newRow(qPrintable(name + QStringLiteral(" after finish"))) << static_cast<int>(f) << true;
    }
}

void TestWriters::abortLeavesNothing() {
    QFETCH(int, format);
    QFETCH(bool, afterFinish);
    QTemporaryDir dir;
    const std::unique_ptr<DocumentWriter> writer =
        makeDocumentWriter(static_cast<ExportFormat>(format), {dir.path(), {}});
    writer->begin(document());
    for (const PageResult& page : twoPages()) {
        writer->addPage(page);
    }
    if (afterFinish) {
        writer->finish();
    }
    writer->abort();
    QCOMPARE(filesUnder(dir.path()), QStringList());
    QVERIFY(writer->files().isEmpty());
}

// Pages joined as concatenate_markdown_pages joins them; the continued table merged on page 1, written as an
// empty table on page 2.
void TestWriters::markdownDocument() {
    QTemporaryDir dir;
    const std::unique_ptr<DocumentWriter> writer =
        makeDocumentWriter(ExportFormat::Markdown, {dir.path(), {}});
    writer->begin(document());
    for (const PageResult& page : twoPages()) {
        writer->addPage(page);
    }
    writer->finish();
    const auto cell = [](const char* text) {
        return QStringLiteral("<td style='text-align: center; word-wrap: break-word;'>") +
               QLatin1String(text) + QStringLiteral("</td>");
    };
    const QString table =
        QStringLiteral("<table border=1 style='margin: auto; word-wrap: break-word;'><tr>") + cell("k") +
        cell("v") + QStringLiteral("</tr><tr>") + cell("a") + cell("1") + QStringLiteral("</tr><tr>") +
        cell("b") + cell("2") + QStringLiteral("</tr></table>");
    const QString expected =
        QStringLiteral(
            "\n\n# Report <1> & \"more\"\n\n"
            "<div style=\"text-align: center;\"><img src=\"imgs/doc/img_in_image_box_100_120_400_420.jpg\" "
            "alt=\"Image\" width=\"30%\" /></div>\n\n\n"
            "Energy  $ E=mc^2 $ holds.\n\n\n") +
        table + QStringLiteral("\n\n\n\n\nEnd.");
    QCOMPARE(readAll(QDir(dir.path()).filePath(QStringLiteral("doc.md"))), expected);
}

// A single image's page is written as save_to_markdown writes it, without the blank lines before it.
void TestWriters::singleImageMarkdown() {
    QTemporaryDir dir;
    const std::unique_ptr<DocumentWriter> writer =
        makeDocumentWriter(ExportFormat::Markdown, {dir.path(), {}});
    writer->begin({QStringLiteral("/in/scan.png"), QStringLiteral("scan"), 1});
    PageResult page = test::makePage({test::makeBlock("text", {0, 0, 9, 9}, "Hello")}, -1);
    writer->addPage(page);
    writer->finish();
    QCOMPARE(readAll(QDir(dir.path()).filePath(QStringLiteral("scan.md"))), QStringLiteral("Hello"));
}

void TestWriters::jsonFields() {
    QTemporaryDir dir;
    const std::unique_ptr<DocumentWriter> writer = makeDocumentWriter(ExportFormat::Json, {dir.path(), {}});
    writer->begin(document());
    for (const PageResult& page : twoPages()) {
        writer->addPage(page);
    }
    writer->finish();
    QJsonParseError error;
    const QJsonDocument json = QJsonDocument::fromJson(
        readAll(QDir(dir.path()).filePath(QStringLiteral("doc.json"))).toUtf8(), &error);
    QCOMPARE(error.error, QJsonParseError::NoError);
    QVERIFY(json.isArray());
    const QJsonArray pages = json.array();
    QCOMPARE(pages.size(), 2);

    const QJsonObject page = pages[0].toObject();
    QCOMPARE(page.keys(), (QStringList{"folio", "height", "input_path", "layout_det_res", "model_settings",
                                       "page_count", "page_index", "parsing_res_list", "width"}));
    QCOMPARE(page["input_path"].toString(), QStringLiteral("/in/doc.pdf"));
    QCOMPARE(page["page_index"].toInt(-1), 0);
    QCOMPARE(page["page_count"].toInt(), 3);
    QCOMPARE(page["width"].toInt(), 1000);
    QCOMPARE(page["height"].toInt(), 1400);

    const QJsonObject settings = page["model_settings"].toObject();
    for (const char* key : {"use_doc_preprocessor", "use_layout_detection", "use_chart_recognition",
                            "use_seal_recognition", "use_ocr_for_image_block", "format_block_content",
                            "merge_layout_blocks", "return_layout_polygon_points"}) {
        QVERIFY2(settings[QLatin1String(key)].isBool(), key);
    }
    QCOMPARE(
        settings["markdown_ignore_labels"].toArray(),
        (QJsonArray{"number", "footnote", "header", "header_image", "footer", "footer_image", "aside_text"}));

    const QJsonArray blocks = page["parsing_res_list"].toArray();
    QCOMPARE(blocks.size(), 5);
    const QJsonObject title = blocks[0].toObject();
    QCOMPARE(title.keys(), (QStringList{"block_bbox", "block_content", "block_id", "block_label",
                                        "block_order", "global_block_id", "global_group_id", "group_id"}));
    QCOMPARE(title["block_label"].toString(), QStringLiteral("doc_title"));
    QCOMPARE(title["block_content"].toString(), QStringLiteral("Report <1> & \"more\""));
    QCOMPARE(title["block_bbox"].toArray(), (QJsonArray{100, 50, 900, 100}));
    QVERIFY(title["block_bbox"].toArray()[0].isDouble());
    QCOMPARE(title["block_id"].toInt(-1), 0);
    QCOMPARE(title["block_order"].toInt(), 1);
    QCOMPARE(title["group_id"].toInt(-1), 0);
    QCOMPARE(title["global_block_id"].toInt(-1), 0);

    const QJsonObject image = blocks[1].toObject();
    QVERIFY(image["block_order"].isNull());
    QCOMPARE(image["block_content"].toString(), QString());
    QCOMPARE(
        image["block_polygon_points"].toArray(),
        (QJsonArray{QJsonArray{100, 120}, QJsonArray{400, 120}, QJsonArray{400, 420}, QJsonArray{100, 420}}));

    // The continued table: merged into page 1's, both parts in the group of page 1's table (global index 3).
    const QJsonObject table = blocks[3].toObject();
    QVERIFY(table["block_content"].toString().contains(QLatin1String("<td>b</td>")));
    QCOMPARE(table["group_id"].toInt(), 3);
    const QJsonObject continued = pages[1].toObject()["parsing_res_list"].toArray()[0].toObject();
    QCOMPARE(continued["block_content"].toString(), QString());
    QCOMPARE(continued["group_id"].toInt(), 3);
    QCOMPARE(continued["block_id"].toInt(), 0);
    QCOMPARE(continued["global_block_id"].toInt(), 5);

    const QJsonArray boxes = page["layout_det_res"].toObject()["boxes"].toArray();
    QCOMPARE(boxes.size(), 5);
    const QJsonObject box = boxes[1].toObject();
    QCOMPARE(box.keys(), (QStringList{"cls_id", "coordinate", "label", "score"}));
    QCOMPARE(box["cls_id"].toInt(), 14);  // image
    QCOMPARE(box["score"].toDouble(), 0.5);

    const QJsonObject folio = page["folio"].toObject();
    QCOMPARE(folio["dpi"].toInt(), 144);
    QCOMPARE(folio["timings"].toObject()["render_ms"].toDouble(), 12.5);
    QCOMPARE(folio["timings"].toObject()["layout_preprocess_ms"].toDouble(), 25.0);
    QCOMPARE(folio["timings"].toObject()["layout_ms"].toDouble(), 30.0);
    QCOMPARE(folio["timings"].toObject()["blocks_ms"].toDouble(), 4.5);
    QCOMPARE(folio["timings"].toObject()["recognition_ms"].toDouble(), 400.0);
    QCOMPARE(folio["blocks"].toArray().size(), 5);
    QVERIFY(folio["blocks"].toArray()[0].toObject()["error"].isNull());
}

void TestWriters::htmlDocument() {
    QTemporaryDir dir;
    const std::unique_ptr<DocumentWriter> writer = makeDocumentWriter(ExportFormat::Html, {dir.path(), {}});
    writer->begin(document());
    for (const PageResult& page : twoPages()) {
        writer->addPage(page);
    }
    writer->finish();
    const QString html = readAll(QDir(dir.path()).filePath(QStringLiteral("doc.html")));
    QVERIFY(html.startsWith(QLatin1String("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">")));
    QVERIFY(html.endsWith(QLatin1String("</body>\n</html>\n")));
    QVERIFY(html.contains(QLatin1String("<h1>Report &lt;1&gt; &amp; &quot;more&quot;</h1>")));
    if (katexInstalled()) {
        // Typeset as the page is written: KaTeX's HTML with the source in its MathML's annotation.
        QVERIFY(html.contains(QLatin1String("<p>Energy  <span class=\"katex\">")));
        QVERIFY(
            html.contains(QLatin1String("<annotation encoding=\"application/x-tex\">E=mc^2</annotation>")));
        QVERIFY(!html.contains(QLatin1String("<span class=\"math")));
    } else {
        QVERIFY(html.contains(
            QLatin1String("<p>Energy  <span class=\"math inline\">$ E=mc^2 $</span> holds.</p>")));
    }
    QVERIFY(html.contains(QLatin1String("<img src=\"imgs/doc/img_in_image_box_100_120_400_420.jpg\"")));
    QVERIFY(html.contains(QLatin1String("<td>b</td>")));
    QVERIFY(!html.contains(QLatin1String(">1</p>")));  // the footer is left out
    QCOMPARE(html.count(QLatin1String("<section class=\"page\"")), 2);
}

// Display and inline formulas typeset by KaTeX into HTML that needs no script: its stylesheet linked once,
// before the first page with a formula, and copied with every font it names into katex/ beside the page.
void TestWriters::htmlFormulasTypeset() {
    if (!katexInstalled()) {
        QSKIP("Debian's libjs-katex is not installed: formulas stay LaTeX (htmlFormulasWithoutKatex)");
    }
    QTemporaryDir dir;
    const std::unique_ptr<DocumentWriter> writer = makeDocumentWriter(ExportFormat::Html, {dir.path(), {}});
    writer->begin(document());
    writer->addPage(test::makePage({test::makeBlock("text", {0, 0, 900, 40}, "No formula here.")}));
    writer->addPage(test::makePage(
        {
            test::makeBlock("display_formula", {0, 0, 900, 90}, "\\[\\frac{a}{b} < \\sqrt{x}\\]"),
            test::makeBlock("text", {0, 100, 900, 140}, "Area \\(\\pi r^2\\) and \\(\\frac{1}{\\) here."),
        },
        1));
    writer->finish();
    QVERIFY(writer->notes().isEmpty());
    const QString html = readAll(QDir(dir.path()).filePath(QStringLiteral("doc.html")));
    QCOMPARE(html.count(QLatin1String("<link rel=\"stylesheet\" href=\"katex/katex.min.css\">")), 1);
    QVERIFY(html.indexOf(QLatin1String("<link rel=")) > html.indexOf(QLatin1String("id=\"page-1\"")));
    QVERIFY(html.indexOf(QLatin1String("<link rel=")) < html.indexOf(QLatin1String("id=\"page-2\"")));
    QCOMPARE(html.count(QLatin1String("<span class=\"katex-display\">")), 1);
    QVERIFY(html.contains(
        QLatin1String("<math xmlns=\"http://www.w3.org/1998/Math/MathML\" display=\"block\">")));
    // The escaped source reached KaTeX unescaped: "<" is KaTeX's own entity again in the annotation.
    QVERIFY(html.contains(QLatin1String("\\frac{a}{b} &lt; \\sqrt{x}</annotation>")));
    QVERIFY(html.contains(QLatin1String("\\pi r^2</annotation>")));
    // LaTeX KaTeX cannot parse is shown as KaTeX shows it: the source, marked.
    QVERIFY(html.contains(QLatin1String("class=\"katex-error\"")));
    QVERIFY(!html.contains(QLatin1String("<span class=\"math")));
    QVERIFY(!html.contains(QLatin1String("<script")));

    const QDir katex(QDir(dir.path()).filePath(QStringLiteral("katex")));
    const QString css = readAll(katex.filePath(QStringLiteral("katex.min.css")));
    QVERIFY(css.contains(QLatin1String(".katex")));
    const QRegularExpression font(QStringLiteral("url\\((fonts/[^)]+)\\)"));
    int fonts = 0;
    for (QRegularExpressionMatchIterator it = font.globalMatch(css); it.hasNext();) {
        const QString name = it.next().captured(1);
        if (QFileInfo::exists(QDir(katexDirectory()).filePath(name))) {
            QVERIFY2(QFileInfo(katex.filePath(name)).size() > 0, qPrintable(name));
            ++fonts;
        }
    }
    QVERIFY(fonts >= 20);  // KaTeX_Main-Regular, KaTeX_Math-Italic, ... in each format installed
    QCOMPARE(writer->files().size(), 1);  // the page; the shared folder is not the document's
}

// Without KaTeX the page keeps the LaTeX in its math spans, as before, and the writer says why.
void TestWriters::htmlFormulasWithoutKatex() {
    QTemporaryDir dir;
    QTemporaryDir nowhere;
    HtmlWriter writer({dir.path(), {}}, nowhere.path());
    writer.begin(document());
    for (const PageResult& page : twoPages()) {
        writer.addPage(page);
    }
    writer.finish();
    const QString html = readAll(QDir(dir.path()).filePath(QStringLiteral("doc.html")));
    QVERIFY(
        html.contains(QLatin1String("<p>Energy  <span class=\"math inline\">$ E=mc^2 $</span> holds.</p>")));
    QVERIFY(!html.contains(QLatin1String("katex")));
    QVERIFY(!QFileInfo::exists(QDir(dir.path()).filePath(QStringLiteral("katex"))));
    QCOMPARE(
        writer.notes(),
        QStringList{QStringLiteral("HTML: 1 formula left as LaTeX: KaTeX's files are not in %1 (Debian's "
                                   "libjs-katex)")
                        .arg(nowhere.path())});
    // A document without formulas needs no note.
    writer.begin({QStringLiteral("/in/plain.pdf"), QStringLiteral("plain"), 1});
    writer.addPage(test::makePage({test::makeBlock("text", {0, 0, 900, 40}, "Plain.")}));
    writer.finish();
    QVERIFY(writer.notes().isEmpty());
}

// A name used twice in a document gets a suffix; documents in one folder keep separate figure folders.
void TestWriters::figureNamesStayApart() {
    QTemporaryDir dir;
    PageResult page = test::makePage({test::makeBlock("image", {1, 2, 3, 4}, "")});
    page.blocks[0].image = QImage(2, 2, QImage::Format_RGB888);
    page.blocks[0].image.fill(Qt::blue);
    for (const char* stem : {"a b", "c"}) {
        const std::unique_ptr<DocumentWriter> writer =
            makeDocumentWriter(ExportFormat::Markdown, {dir.path(), {}});
        writer->begin({QStringLiteral("/in/x.pdf"), QLatin1String(stem), 2});
        writer->addPage(page);
        writer->addPage(page);
        writer->finish();
    }
    QCOMPARE(filesUnder(dir.path()),
             (QStringList{"a b.md", "c.md", "imgs/a b/img_in_image_box_1_2_3_4.jpg",
                          "imgs/a b/img_in_image_box_1_2_3_4_2.jpg", "imgs/c/img_in_image_box_1_2_3_4.jpg",
                          "imgs/c/img_in_image_box_1_2_3_4_2.jpg"}));
    const QString markdown = readAll(QDir(dir.path()).filePath(QStringLiteral("a b.md")));
    QVERIFY(markdown.contains(QLatin1String("src=\"imgs/a%20b/img_in_image_box_1_2_3_4.jpg\"")));
    QVERIFY(markdown.contains(QLatin1String("src=\"imgs/a%20b/img_in_image_box_1_2_3_4_2.jpg\"")));
}

void TestWriters::factory() {
    const ExportOptions options{QStringLiteral("/tmp"), {}};
    QCOMPARE(makeDocumentWriter(ExportFormat::Markdown, options)->format(), ExportFormat::Markdown);
    QCOMPARE(makeDocumentWriter(ExportFormat::Json, options)->format(), ExportFormat::Json);
    QCOMPARE(makeDocumentWriter(ExportFormat::Html, options)->format(), ExportFormat::Html);
    QCOMPARE(makeDocumentWriter(ExportFormat::SearchablePdf, options)->format(), ExportFormat::SearchablePdf);
    QCOMPARE(makeDocumentWriter(ExportFormat::Xlsx, options)->format(), ExportFormat::Xlsx);
}

void TestWriters::unwritableFolder() {
    QTemporaryDir dir;
    QFile blocker(QDir(dir.path()).filePath(QStringLiteral("file")));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const QString outputDir = blocker.fileName() + QStringLiteral("/out");  // a folder under a plain file
    const std::unique_ptr<DocumentWriter> writer = makeDocumentWriter(ExportFormat::Json, {outputDir, {}});
    try {
        writer->begin(document());
        QFAIL("begin() did not throw");
    } catch (const Error& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(outputDir), e.what());
    }
}

}  // namespace folio

QTEST_GUILESS_MAIN(folio::TestWriters)
#include "test-writers.moc"
