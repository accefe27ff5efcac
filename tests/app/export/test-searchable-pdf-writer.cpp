// The searchable PDF read back with poppler: pages sized by their resolution, each block's words found inside
// its box and extracted from it, markup stripped, accents and Chinese kept, the text invisible over an image
// that renders as it came, pages on disk as they are added, and nothing left by abort() or a failed begin().
#include <poppler-qt6.h>

#include <QDir>
#include <QFile>
#include <QFontDatabase>
#include <QPainter>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <memory>

#include "app/export/searchable-pdf-writer.h"
#include "engine/common/error.h"

using namespace folio;

namespace {

constexpr int kA4Width = 1654;  // A4 at 200 pixels an inch
constexpr int kA4Height = 2339;

BlockResult block(const QString& label, const QRect& box, const QString& content) {
    BlockResult result;
    result.label = label;
    result.box = {box.left(), box.top(), box.left() + box.width(), box.top() + box.height()};
    result.content = content;
    result.task = content.isEmpty() ? QString() : QStringLiteral("OCR:");
    return result;
}

QRect rectOf(const BlockBox& box) {
    return QRect(box.x1, box.y1, box.width(), box.height());
}

// A page image showing each block's text in black, as a scan would.
PageResult scannedPage(const std::vector<BlockResult>& blocks, const QSize& size = {kA4Width, kA4Height},
                       int dpi = 0) {
    PageResult page;
    page.width = size.width();
    page.height = size.height();
    page.dpi = dpi;
    page.image = QImage(size, QImage::Format_RGB888);
    page.image.fill(Qt::white);
    QPainter painter(&page.image);
    QFont font(QStringLiteral("DejaVu Serif"));
    font.setPixelSize(34);
    painter.setFont(font);
    painter.setPen(Qt::black);
    for (const BlockResult& b : blocks) {
        if (b.content.isEmpty()) {
            painter.fillRect(rectOf(b.box), QColor(90, 140, 200));  // a figure
        } else {
            painter.drawText(rectOf(b.box), Qt::TextWordWrap, b.content);
        }
    }
    painter.end();
    page.blocks = blocks;
    return page;
}

// The page as a noisy scanner would give it.
PageResult noisy(PageResult page) {
    page.image = page.image.copy();
    QRandomGenerator random(7);
    for (int y = 0; y < page.image.height(); ++y) {
        uchar* line = page.image.scanLine(y);
        for (int x = 0; x < page.image.width() * 3; ++x) {
            line[x] =
                static_cast<uchar>(std::clamp(line[x] - 6 + static_cast<int>(random.bounded(12)), 0, 255));
        }
    }
    return page;
}

QRectF toPoints(const BlockBox& box, int dpi) {
    const qreal scale = 72.0 / dpi;
    return QRectF(box.x1 * scale, box.y1 * scale, box.width() * scale, box.height() * scale);
}

QString squeezed(QString text) {
    return text.replace(QLatin1Char('\n'), QLatin1Char(' ')).simplified();
}

struct Written {
    QString path;
    std::unique_ptr<Poppler::Document> document;
};

Written writeAndOpen(const QString& dir, const std::vector<PageResult>& pages) {
    SearchablePdfWriter writer(ExportOptions{dir, {}});
    writer.begin(DocumentInfo{QStringLiteral("/nonexistent/scan.png"), QStringLiteral("scan"),
                              static_cast<int>(pages.size())});
    for (const PageResult& page : pages) {
        writer.addPage(page);
    }
    writer.finish();
    Written written;
    written.path = QDir(dir).filePath(QStringLiteral("scan.searchable.pdf"));
    if (writer.files() == QStringList{written.path}) {
        written.document = Poppler::Document::load(written.path);
    }
    return written;
}

// Whether the word is found on the page with its match's centre inside the box, give or take a margin.
bool foundInside(const Poppler::Page& page, const QString& word, const QRectF& box) {
    const QRectF area = box.adjusted(-3, -3, 3, 3);
    for (const QRectF& hit : page.search(word)) {
        if (area.contains(hit.center())) {
            return true;
        }
    }
    return false;
}

QStringList filesIn(const QString& dir) {
    return QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot);
}

double meanDifference(const QImage& a, const QImage& b, const QRect& area) {
    const QImage x = a.convertToFormat(QImage::Format_RGB32);
    const QImage y = b.convertToFormat(QImage::Format_RGB32);
    double sum = 0;
    qint64 n = 0;
    for (int row = area.top(); row <= area.bottom(); ++row) {
        for (int column = area.left(); column <= area.right(); ++column) {
            const QRgb p = x.pixel(column, row);
            const QRgb q = y.pixel(column, row);
            sum +=
                std::abs(qRed(p) - qRed(q)) + std::abs(qGreen(p) - qGreen(q)) + std::abs(qBlue(p) - qBlue(q));
            n += 3;
        }
    }
    return n > 0 ? sum / static_cast<double>(n) : 0;
}

}  // namespace

class TestSearchablePdfWriter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void pagesTakeTheirSizeFromTheirResolution();
    void wordsAreFoundInsideTheirBlocks();
    void markupIsLeftOut();
    void accentsRoundTrip();
    void chineseRoundTrip();
    void verticalTextAndSpottedLines();
    void textIsInvisibleAndTheImageShows();
    void pagesGoToDiskAsTheyAreAdded();
    void sizePerPage();
    void noPagesWritesNoFile();
    void abortLeavesNothing();
    void unwritableFolderIsNamed();
    void refusesToOverwriteItsInput();
};

void TestSearchablePdfWriter::pagesTakeTheirSizeFromTheirResolution() {
    QTemporaryDir dir;
    PageResult a4 = scannedPage({block("text", QRect(200, 200, 600, 60), "first")});
    PageResult landscape =
        scannedPage({block("text", QRect(100, 100, 500, 60), "second")}, QSize(1500, 1000), 300);
    PageResult small = scannedPage({}, QSize(600, 450), 150);
    small.image = QImage();  // a page without an image keeps its size
    const Written written = writeAndOpen(dir.path(), {a4, landscape, small});
    QVERIFY(written.document);
    QCOMPARE(written.document->numPages(), 3);
    const QSizeF expected[] = {QSizeF(kA4Width * 72.0 / 200, kA4Height * 72.0 / 200), QSizeF(360, 240),
                               QSizeF(288, 216)};
    for (int i = 0; i < 3; ++i) {
        const QSizeF size = written.document->page(i)->pageSizeF();
        QVERIFY2(std::abs(size.width() - expected[i].width()) <= 0.5 &&
                     std::abs(size.height() - expected[i].height()) <= 0.5,
                 qPrintable(QStringLiteral("page %1: %2x%3 pt").arg(i).arg(size.width()).arg(size.height())));
    }
    // A4 at the default resolution stays A4 (595x842 pt) within the engine's whole points.
    QCOMPARE(written.document->page(0)->pageSizeF().toSize(), QSize(595, 842));
    QCOMPARE(squeezed(written.document->page(1)->text(QRectF())), QStringLiteral("second"));
}

void TestSearchablePdfWriter::wordsAreFoundInsideTheirBlocks() {
    QTemporaryDir dir;
    const QString paragraph = QStringLiteral(
        "Quarterly results improved across every region. The office reported efficient shipping, affluent "
        "customers and steady margins, while inventory fell for the third month in a row.");
    BlockResult table = block("table", QRect(150, 1100, 1200, 240), QString());
    table.task = QStringLiteral("Table Recognition:");
    table.content = QStringLiteral("<table><tr><td>Region</td><td>Units</td></tr></table>");
    table.table = TableGrid{3,
                            3,
                            {{0, 0, 1, 1, "Region"},
                             {0, 1, 1, 2, "Revenue"},
                             {1, 0, 1, 1, "North"},
                             {1, 1, 1, 1, "1,204"},
                             {1, 2, 1, 1, "17%"},
                             {2, 0, 1, 1, "South"},
                             {2, 1, 1, 1, "988"},
                             {2, 2, 1, 1, "9%"}}};
    std::vector<BlockResult> blocks = {
        block("doc_title", QRect(150, 120, 900, 70), "Annual Report Summary"),
        block("text", QRect(150, 260, 1350, 280), paragraph),
        block("display_formula", QRect(400, 620, 700, 90), "$$E = mc^2 \\\\ F = ma$$"),
        block("image", QRect(150, 800, 600, 250), QString()),
        table,
    };
    PageResult page = scannedPage(blocks);
    QPainter(&page.image).fillRect(rectOf(table.box), Qt::white);  // the grid's words, not the HTML, drawn
    const Written written = writeAndOpen(dir.path(), {page});
    QVERIFY(written.document);
    const std::unique_ptr<Poppler::Page> pdfPage = written.document->page(0);

    const struct {
        int block;
        QStringList words;
    } expected[] = {
        {0, {"Annual", "Report", "Summary"}},
        {1, {"Quarterly", "region", "office", "efficient", "affluent", "inventory", "row"}},
        {2, {"mc^2", "F", "ma"}},
        {4, {"Region", "Revenue", "North", "1,204", "17%", "South", "988", "9%"}},
    };
    for (const auto& [index, words] : expected) {
        const QRectF box = toPoints(blocks[static_cast<std::size_t>(index)].box, 200);
        const QString inside = squeezed(pdfPage->text(box));
        for (const QString& word : words) {
            QVERIFY2(foundInside(*pdfPage, word, box),
                     qPrintable(QStringLiteral("'%1' not found inside block %2").arg(word).arg(index)));
            QVERIFY2(inside.contains(word),
                     qPrintable(
                         QStringLiteral("'%1' not in block %2's text: %3").arg(word).arg(index).arg(inside)));
        }
    }
    // The paragraph reads back in order, ligature-prone words letter by letter.
    QCOMPARE(squeezed(pdfPage->text(toPoints(blocks[1].box, 200))), paragraph);
    QCOMPARE(squeezed(pdfPage->text(toPoints(blocks[2].box, 200))), QStringLiteral("E = mc^2 F = ma"));
    QCOMPARE(squeezed(pdfPage->text(toPoints(blocks[4].box, 200).adjusted(0, 0, 0, -58))),
             QStringLiteral("Region Revenue"));
    // The figure has no text.
    QCOMPARE(squeezed(pdfPage->text(toPoints(blocks[3].box, 200).adjusted(2, 2, -2, -2))), QString());
}

void TestSearchablePdfWriter::markupIsLeftOut() {
    QTemporaryDir dir;
    const BlockResult markdown = block(
        "text", QRect(150, 150, 1300, 60),
        "## **Bold** and _emphasis_ with [a link](http://example.com/x) and `code` &amp; $x^2$<br>next line");
    const Written written = writeAndOpen(dir.path(), {scannedPage({markdown})});
    QVERIFY(written.document);
    const QString text = squeezed(written.document->page(0)->text(QRectF()));
    QCOMPARE(text, QStringLiteral("Bold and emphasis with a link and code & x^2 next line"));
}

void TestSearchablePdfWriter::accentsRoundTrip() {
    QTemporaryDir dir;
    const BlockResult accents =
        block("text", QRect(150, 150, 1000, 60), "Café naïve Ærøskøbing Straße Ελλάδα");
    const Written written = writeAndOpen(dir.path(), {scannedPage({accents})});
    QVERIFY(written.document);
    const std::unique_ptr<Poppler::Page> page = written.document->page(0);
    QCOMPARE(squeezed(page->text(QRectF())), accents.content);
    QVERIFY(foundInside(*page, QStringLiteral("Ærøskøbing"), toPoints(accents.box, 200)));
}

void TestSearchablePdfWriter::chineseRoundTrip() {
    if (QFontDatabase::families(QFontDatabase::SimplifiedChinese).isEmpty()) {
        QSKIP(
            "no font with Chinese glyphs is installed (fonts-noto-cjk or fonts-wqy-microhei give one): the "
            "searchable PDF drops text no installed font can show");
    }
    QTemporaryDir dir;
    const BlockResult chinese = block("text", QRect(150, 150, 900, 60), "文档分析与表格识别");
    const BlockResult mixed = block("text", QRect(150, 300, 1100, 60), "PaddleOCR-VL 识别 99% 的文字");
    const Written written = writeAndOpen(dir.path(), {scannedPage({chinese, mixed})});
    QVERIFY(written.document);
    const std::unique_ptr<Poppler::Page> page = written.document->page(0);
    QCOMPARE(squeezed(page->text(toPoints(chinese.box, 200))).remove(QLatin1Char(' ')), chinese.content);
    QVERIFY(squeezed(page->text(toPoints(mixed.box, 200))).contains(QStringLiteral("PaddleOCR-VL")));
    QVERIFY(foundInside(*page, QStringLiteral("表格"), toPoints(chinese.box, 200)));
    QVERIFY(foundInside(*page, QStringLiteral("识别"), toPoints(mixed.box, 200)));
}

void TestSearchablePdfWriter::verticalTextAndSpottedLines() {
    QTemporaryDir dir;
    const BlockResult vertical = block("vertical_text", QRect(1400, 200, 70, 900), "VERTICAL COLUMN");
    PageResult page = scannedPage({vertical});
    const Written plain = writeAndOpen(dir.path(), {page});
    QVERIFY(plain.document);
    QVERIFY(foundInside(*plain.document->page(0), QStringLiteral("VERTICAL"), toPoints(vertical.box, 200)));

    // Spotted lines, one of them tilted, take the place of the blocks.
    PageResult spotted = scannedPage({});
    spotted.spotting = {
        {QStringLiteral("straight line"),
         QPolygonF({QPointF(200, 300), QPointF(700, 300), QPointF(700, 350), QPointF(200, 350)})},
        {QStringLiteral("tilted line"),
         QPolygonF({QPointF(200, 600), QPointF(600, 500), QPointF(612, 548), QPointF(212, 648)})},
        {QStringLiteral("slightly askew"),
         QPolygonF({QPointF(200, 800), QPointF(700, 786.9), QPointF(701.3, 836.9), QPointF(201.3, 850)})},
    };
    QTemporaryDir other;
    const Written lines = writeAndOpen(other.path(), {spotted});
    QVERIFY(lines.document);
    const std::unique_ptr<Poppler::Page> pdfPage = lines.document->page(0);
    QVERIFY(foundInside(*pdfPage, QStringLiteral("straight"), QRectF(72, 108, 180, 18)));
    QVERIFY(foundInside(*pdfPage, QStringLiteral("slightly askew"), QRectF(72, 283, 180, 23)));
    // Set straight over its bounding box, the steep line reads whole.
    QVERIFY(foundInside(*pdfPage, QStringLiteral("tilted line"), QRectF(72, 180, 148, 53)));
}

void TestSearchablePdfWriter::textIsInvisibleAndTheImageShows() {
    QTemporaryDir dir;
    const std::vector<BlockResult> blocks = {
        block("doc_title", QRect(150, 120, 900, 70), "A title in large letters"),
        block("text", QRect(150, 260, 1350, 400),
              "Many words laid over the box and never shown on the page."),
    };
    PageResult blank = scannedPage(blocks);
    blank.image.fill(Qt::white);
    PageResult scan = scannedPage(blocks);
    const Written written = writeAndOpen(dir.path(), {blank, scan});
    QVERIFY(written.document);
    written.document->setRenderHint(Poppler::Document::Antialiasing);

    // Over a white image, the text layer leaves every pixel white.
    const QImage white = written.document->page(0)->renderToImage(100, 100);
    QVERIFY(!white.isNull());
    const QImage gray = white.convertToFormat(QImage::Format_Grayscale8);
    int darkest = 255;
    for (int y = 0; y < gray.height(); ++y) {
        for (int x = 0; x < gray.width(); ++x) {
            darkest = std::min(darkest, static_cast<int>(gray.constScanLine(y)[x]));
        }
    }
    QVERIFY2(darkest >= 250, qPrintable(QStringLiteral("darkest pixel %1").arg(darkest)));
    QVERIFY(squeezed(written.document->page(0)->text(QRectF())).contains(QStringLiteral("never shown")));

    // The scan renders back as it went in.
    const QImage rendered = written.document->page(1)->renderToImage(200, 200);
    QVERIFY(std::abs(rendered.width() - kA4Width) <= 2 && std::abs(rendered.height() - kA4Height) <= 2);
    const QRect common = QRect(QPoint(0, 0), rendered.size()).intersected(scan.image.rect());
    const double whole = meanDifference(rendered, scan.image, common);
    const double title = meanDifference(rendered, scan.image, rectOf(blocks[0].box));
    QVERIFY2(whole < 2.0 && title < 8.0,
             qPrintable(QStringLiteral("mean differences %1, %2").arg(whole).arg(title)));
}

void TestSearchablePdfWriter::pagesGoToDiskAsTheyAreAdded() {
    QTemporaryDir dir;
    SearchablePdfWriter writer(ExportOptions{dir.path(), {}});
    writer.begin(DocumentInfo{QString(), QStringLiteral("stream"), 2});
    writer.addPage(noisy(scannedPage({block("text", QRect(150, 150, 900, 60), "first page")})));
    const QStringList during = filesIn(dir.path());
    QCOMPARE(during.size(), 1);
    QVERIFY2(during[0].startsWith(QLatin1String(".stream.searchable.pdf.")), qPrintable(during[0]));
    QVERIFY2(QFileInfo(QDir(dir.path()).filePath(during[0])).size() > 200'000,
             "the first page is not on disk");
    writer.addPage(scannedPage({block("text", QRect(150, 150, 900, 60), "second page")}));
    writer.finish();
    QCOMPARE(filesIn(dir.path()), QStringList{QStringLiteral("stream.searchable.pdf")});
    QCOMPARE(writer.files(), QStringList{QDir(dir.path()).filePath(QStringLiteral("stream.searchable.pdf"))});
}

void TestSearchablePdfWriter::sizePerPage() {
    // A dense A4 page at 200 pixels an inch, clean as a rendered PDF page, and the same page as a noisy scan.
    std::vector<BlockResult> blocks;
    for (int i = 0; i < 48; ++i) {
        blocks.push_back(
            block("text", QRect(150, 150 + i * 44, 1350, 42),
                  QStringLiteral("Line %1 of a dense page of text, as many words as a page holds.").arg(i)));
    }
    const PageResult clean = scannedPage(blocks);
    const PageResult scan = noisy(clean);
    qint64 sizes[2] = {};
    const PageResult* pages[2] = {&clean, &scan};
    for (int i = 0; i < 2; ++i) {
        QTemporaryDir dir;
        const Written written = writeAndOpen(dir.path(), {*pages[i]});
        QVERIFY(written.document);
        sizes[i] = QFileInfo(written.path).size();
    }
    qInfo("A4 at 200 dpi: %lld KiB a clean page, %lld KiB a noisy scan", sizes[0] / 1024, sizes[1] / 1024);
    QVERIFY2(sizes[0] < 1'000'000 && sizes[1] < 2'500'000, "page images are not compressed sensibly");
}

void TestSearchablePdfWriter::noPagesWritesNoFile() {
    QTemporaryDir dir;
    SearchablePdfWriter writer(ExportOptions{dir.path(), {}});
    writer.begin(DocumentInfo{QString(), QStringLiteral("empty"), 0});
    writer.finish();
    QVERIFY(writer.files().isEmpty());
    QVERIFY(filesIn(dir.path()).isEmpty());
}

void TestSearchablePdfWriter::abortLeavesNothing() {
    QTemporaryDir dir;
    const PageResult page = scannedPage({block("text", QRect(150, 150, 900, 60), "dropped")});
    {
        SearchablePdfWriter writer(ExportOptions{dir.path(), {}});
        writer.begin(DocumentInfo{QString(), QStringLiteral("aborted"), 1});
        writer.addPage(page);
        writer.abort();
        QVERIFY(writer.files().isEmpty());
        QVERIFY(filesIn(dir.path()).isEmpty());
    }
    {
        const std::unique_ptr<DocumentWriter> writer = makeSearchablePdfWriter(ExportOptions{dir.path(), {}});
        QCOMPARE(writer->format(), ExportFormat::SearchablePdf);
        writer->begin(DocumentInfo{QString(), QStringLiteral("dropped"), 1});
        writer->addPage(page);
    }  // destroyed without finish()
    QVERIFY(filesIn(dir.path()).isEmpty());
}

void TestSearchablePdfWriter::unwritableFolderIsNamed() {
    QTemporaryDir dir;
    QFile blocker(QDir(dir.path()).filePath(QStringLiteral("blocker")));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const QString output = QDir(dir.path()).filePath(QStringLiteral("blocker/out"));
    SearchablePdfWriter writer(ExportOptions{output, {}});
    try {
        writer.begin(DocumentInfo{QString(), QStringLiteral("doc"), 1});
        QFAIL("begin() wrote into a folder under a file");
    } catch (const Error& error) {
        QVERIFY2(QString::fromStdString(error.what()).contains(output), error.what());
    }
    QCOMPARE(filesIn(dir.path()), QStringList{QStringLiteral("blocker")});
}

void TestSearchablePdfWriter::refusesToOverwriteItsInput() {
    QTemporaryDir dir;
    const QString input = QDir(dir.path()).filePath(QStringLiteral("book.searchable.pdf"));
    QFile file(input);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("%PDF-1.4 input");
    file.close();
    SearchablePdfWriter writer(ExportOptions{dir.path(), {}});
    QVERIFY_THROWS_EXCEPTION(Error, writer.begin(DocumentInfo{input, QStringLiteral("book"), 1}));
    QCOMPARE(QFileInfo(input).size(), qint64(14));
}

QTEST_MAIN(TestSearchablePdfWriter)
#include "test-searchable-pdf-writer.moc"
