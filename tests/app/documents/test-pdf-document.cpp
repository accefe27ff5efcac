// PdfDocument and openDocument on PDFs written by the test: page counts and sizes without rendering, exact
// pixel sizes at chosen resolutions, the rendered content, extractable text, the resolution fallback for huge
// pages, scanned pages at their scan's resolution, encrypted, damaged and non-PDF files.
#include <QtTest>

#include <QDir>
#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <QProcess>
#include <QTemporaryDir>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "app/documents/document-source.h"
#include "app/documents/page-image.h"
#include "app/documents/pdf-document.h"
#include "engine/common/error.h"
#include "error-of.h"
#include "test-pdf.h"

using folio::DocumentOptions;
using folio::PdfDocument;
using folio::test::TestPage;

using folio::testing::errorOf;

namespace {

const QSizeF kA4(595, 842);      // QPageSize's A4 in whole points, as QPdfWriter writes it
const QSizeF kLetter(612, 792);  // US Letter

bool isBlack(QRgb pixel) {
    return qRed(pixel) < 64 && qGreen(pixel) < 64 && qBlue(pixel) < 64;
}

bool isWhite(QRgb pixel) {
    return qRed(pixel) > 240 && qGreen(pixel) > 240 && qBlue(pixel) > 240;
}

// An A4 page with `pixels` of a grey-and-black image drawn over all of it, and, where `text` is not empty,
// that text and a 40x40 image in a corner.
void writeImagePage(const QString& path, QSize pixels, const QString& text = {}) {
    QPdfWriter writer(path);
    writer.setResolution(72);  // painter units are points
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
    QPainter painter(&writer);
    if (text.isEmpty()) {
        QImage image(pixels, QImage::Format_RGB32);
        image.fill(Qt::lightGray);
        QPainter(&image).fillRect(QRect(pixels.width() / 4, pixels.height() / 4, pixels.width() / 2, 10),
                                  Qt::black);
        painter.drawImage(QRectF(QPointF(0, 0), kA4), image);
    } else {
        painter.setFont(QFont(QStringLiteral("DejaVu Sans"), 12));
        painter.drawText(QPointF(36, 36), text);
        QImage small(40, 40, QImage::Format_RGB32);
        small.fill(Qt::darkGray);
        painter.drawImage(QRectF(400, 600, 100, 100), small);
    }
    painter.end();
}

// A Letter page drawing, with `content`, a 1275x1650 grey image (150 DPI over the page) named /Scan and a
// form /Form drawing it over the page.
QByteArray handBuiltScan(const QByteArray& content, const QByteArray& pageEntries = {}) {
    const QByteArray pixels = qCompress(QByteArray(1275 * 1650, '\xc0')).mid(4);  // a zlib stream
    const QByteArray form = "q 612 0 0 792 0 0 cm /Scan Do Q";
    return folio::test::buildPdf(
        "/MediaBox [0 0 612 792] " + pageEntries, content,
        {"<< /Type /XObject /Subtype /Image /Width 1275 /Height 1650 /ColorSpace /DeviceGray "
         "/BitsPerComponent 8 /Filter /FlateDecode /Length " +
             QByteArray::number(pixels.size()) + " >>\nstream\n" + pixels + "\nendstream",
         "<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /Scan 5 0 R >> >> "
         "/Length " +
             QByteArray::number(form.size()) + " >>\nstream\n" + form + "\nendstream",
         "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"},
        {}, "<< /XObject << /Scan 5 0 R /Form 6 0 R >> /Font << /F1 7 0 R >> >>");
}

}  // namespace

class PdfDocumentTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir dir_;
    QString twoPages_;

    QString path(const QString& name) const { return dir_.filePath(name); }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        twoPages_ = path(QStringLiteral("two-pages.pdf"));
        folio::test::writeTestPdf(twoPages_, {{kA4, QStringLiteral("Folio first page")},
                                              {kLetter, QStringLiteral("Second page text")}});
    }

    void pageCountAndSizesWithoutRendering() {
        PdfDocument document(twoPages_);
        QCOMPARE(document.pageCount(), 2);
        QCOMPARE(document.kind(), folio::DocumentKind::Pdf);
        QCOMPARE(document.path(), twoPages_);
        QCOMPARE(document.pageSizePoints(0), kA4);
        QCOMPARE(document.pageSizePoints(1), kLetter);
        QCOMPARE(document.resultPageIndex(0), 0);
    }

    void renderedSizes_data() {
        QTest::addColumn<int>("dpi");
        QTest::addColumn<int>("page");
        QTest::addColumn<QSize>("pixels");
        // round(points * dpi / 72) a side
        QTest::newRow("A4 at 200 DPI") << 200 << 0 << QSize(1653, 2339);
        QTest::newRow("A4 at 100 DPI") << 100 << 0 << QSize(826, 1169);
        QTest::newRow("Letter at 200 DPI") << 200 << 1 << QSize(1700, 2200);
        QTest::newRow("Letter at 100 DPI") << 100 << 1 << QSize(850, 1100);
        QTest::newRow("Letter at 72 DPI") << 72 << 1 << QSize(612, 792);
    }

    void renderedSizes() {
        QFETCH(int, dpi);
        QFETCH(int, page);
        QFETCH(QSize, pixels);
        PdfDocument document(twoPages_, DocumentOptions{dpi, {}, {}});
        QCOMPARE(document.pageSizeHint(page), pixels);
        QCOMPARE(document.renderDpi(page), dpi);
        const folio::RenderedPage rendered = document.renderPage(page);
        QCOMPARE(rendered.image.size(), pixels);
        QCOMPARE(rendered.image.format(), QImage::Format_RGB888);
        QCOMPARE(rendered.dpi, dpi);
    }

    void defaultResolutionIs200Dpi() {
        const auto document = folio::openDocument(twoPages_);
        QCOMPARE(document->kind(), folio::DocumentKind::Pdf);
        const folio::RenderedPage rendered = document->renderPage(0);
        QCOMPARE(rendered.dpi, 200);
        QCOMPARE(rendered.image.size(), QSize(1653, 2339));
    }

    void renderedContentIsWhereItWasDrawn() {
        PdfDocument document(twoPages_, DocumentOptions{100, {}, {}});
        const QImage image = document.renderPage(1).image;
        // The square covers 100..200 px at 100 DPI.
        QVERIFY(isBlack(image.pixel(150, 150)));
        QVERIFY(isBlack(image.pixel(105, 195)));
        QVERIFY(isWhite(image.pixel(95, 150)));
        QVERIFY(isWhite(image.pixel(150, 205)));
        QVERIFY(isWhite(image.pixel(600, 900)));
        // The engine's copy has the same pixels, rows packed.
        const folio::Image engine = folio::toEngineImage(image);
        QCOMPARE(engine.width, 850);
        QCOMPARE(engine.height, 1100);
        QCOMPARE(engine.rgb.size(), size_t{850} * 1100 * 3);
        const size_t at = (size_t{150} * 850 + 150) * 3;
        QVERIFY(engine.rgb[at] < 64 && engine.rgb[at + 1] < 64 && engine.rgb[at + 2] < 64);
        QCOMPARE(engine.rgb[(size_t{900} * 850 + 600) * 3], uint8_t{255});
    }

    void textIsExtractable() {
        PdfDocument document(twoPages_);
        // Compared in compatibility form: the font may join "fi" into a ligature.
        const QString first = document.pageText(0).normalized(QString::NormalizationForm_KC);
        QVERIFY2(first.contains(QStringLiteral("Folio first page")), qPrintable(first));
        QVERIFY(document.pageText(1).contains(QStringLiteral("Second page text")));
    }

    void hugePageFallsBackToTheLargestFittingDpi() {
        // 200 x 200 inches: 40000 px a side at 200 DPI; 16384 / 200 = 81.92, so 81 DPI (16200 px).
        const QString huge = path(QStringLiteral("huge.pdf"));
        folio::test::writeTestPdf(huge, {{QSizeF(14400, 14400), QStringLiteral("huge")}});
        PdfDocument document(huge);
        QCOMPARE(document.pageSizePoints(0), QSizeF(14400, 14400));
        QCOMPARE(document.renderDpi(0), 81);
        QCOMPARE(document.pageSizeHint(0), QSize(16200, 16200));
    }

    void longPageRendersAtTheFallbackDpi() {
        // 100 x 10 inches: 20000 px wide at 200 DPI; 163 DPI gives 16300 x 1630 pixels.
        const QString wide = path(QStringLiteral("wide.pdf"));
        folio::test::writeTestPdf(wide, {{QSizeF(7200, 720), QStringLiteral("wide")}});
        PdfDocument document(wide);
        const folio::RenderedPage rendered = document.renderPage(0);
        QCOMPARE(rendered.dpi, 163);
        QCOMPARE(rendered.image.size(), QSize(16300, 1630));
        QVERIFY(isBlack(rendered.image.pixel(200, 200)));  // the square at 163 DPI: 163..326 px
    }

    void fittingDpi_data() {
        QTest::addColumn<QSizeF>("points");
        QTest::addColumn<int>("dpi");
        QTest::addColumn<int>("expected");
        QTest::newRow("A4 keeps its DPI") << kA4 << 600 << 600;
        QTest::newRow("side limit") << QSizeF(14400, 720) << 200 << 81;
        QTest::newRow("exactly 16384 px") << QSizeF(16384 * 72.0 / 100, 72) << 100 << 100;
        QTest::newRow("just over 16384 px") << QSizeF(16385 * 72.0 / 100, 72) << 100 << 99;
        QTest::newRow("square at the pixel limit") << QSizeF(14400, 14400) << 2400 << 81;
        QTest::newRow("empty page") << QSizeF(0, 100) << 200 << 0;
        QTest::newRow("too large for 1 DPI") << QSizeF(72.0 * 20000, 72) << 200 << 0;
    }

    void fittingDpi() {
        QFETCH(QSizeF, points);
        QFETCH(int, dpi);
        QFETCH(int, expected);
        QCOMPARE(folio::fittingDpi(points, dpi), expected);
        if (expected > 0) {
            const QSize pixels = folio::pagePixelSize(points, expected);
            QVERIFY(pixels.width() <= folio::kMaxPageSide && pixels.height() <= folio::kMaxPageSide);
        }
    }

    void scanRenderDpi_data() {
        QTest::addColumn<double>("imageDpi");
        QTest::addColumn<int>("dpi");
        QTest::addColumn<int>("expected");
        QTest::newRow("no scan") << 0.0 << 200 << 200;
        QTest::newRow("scan finer than asked") << 300.0 << 200 << 200;
        QTest::newRow("150 DPI scan") << 150.0 << 200 << 150;
        QTest::newRow("just over 100 DPI") << 100.07 << 200 << 100;
        QTest::newRow("nearer the next") << 120.6 << 200 << 121;
        QTest::newRow("coarser than the least") << 10.0 << 200 << folio::kMinDpi;
        QTest::newRow("asked for less") << 100.0 << 72 << 72;
    }

    void scanRenderDpi() {
        QFETCH(double, imageDpi);
        QFETCH(int, dpi);
        QFETCH(int, expected);
        QCOMPARE(folio::scanRenderDpi(imageDpi, dpi), expected);
    }

    void scannedPageRendersAtItsScanResolution_data() {
        QTest::addColumn<QSize>("imagePixels");
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("dpi");
        QTest::addColumn<int>("expectedDpi");
        QTest::addColumn<QSize>("expectedPixels");
        // A4 is 595x842 pt, 8.26x11.69 in: 827x1169 pixels are 100 DPI.
        QTest::newRow("100 DPI scan") << QSize(827, 1169) << QString() << 200 << 100 << QSize(826, 1169);
        QTest::newRow("300 DPI scan") << QSize(2480, 3508) << QString() << 200 << 200 << QSize(1653, 2339);
        QTest::newRow("text and a small image")
            << QSize() << QStringLiteral("Vector text") << 200 << 200 << QSize(1653, 2339);
        QTest::newRow("100 DPI scan, 72 asked")
            << QSize(827, 1169) << QString() << 72 << 72 << QSize(595, 842);
    }

    void scannedPageRendersAtItsScanResolution() {
        QFETCH(QSize, imagePixels);
        QFETCH(QString, text);
        QFETCH(int, dpi);
        QFETCH(int, expectedDpi);
        QFETCH(QSize, expectedPixels);
        const QString file = path(QStringLiteral("image-page.pdf"));
        writeImagePage(file, imagePixels, text);
        PdfDocument document(file, DocumentOptions{dpi, {}, {}});
        if (text.isEmpty()) {
            // The image is stored at its own size: its resolution over the page is its pixels over A4.
            QVERIFY2(qAbs(document.scanDpi(0) - imagePixels.width() * 72.0 / kA4.width()) < 0.5,
                     qPrintable(QString::number(document.scanDpi(0))));
        } else {
            QCOMPARE(document.scanDpi(0), 0.0);
        }
        QCOMPARE(document.renderDpi(0), expectedDpi);
        QCOMPARE(document.pageSizeHint(0), expectedPixels);
        const folio::RenderedPage rendered = document.renderPage(0);
        QCOMPARE(rendered.dpi, expectedDpi);
        QCOMPARE(rendered.image.size(), expectedPixels);
    }

    void scanIsToldFromWhatThePageDraws_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QByteArray>("pageEntries");
        QTest::addColumn<int>("expectedDpi");
        const QByteArray scan = "q 612 0 0 792 0 0 cm /Scan Do Q";
        QTest::newRow("the scan alone") << scan << QByteArray() << 150;
        QTest::newRow("drawn upside down")
            << QByteArray("q -612 0 0 -792 612 792 cm /Scan Do Q") << QByteArray() << 150;
        QTest::newRow("through a form") << QByteArray("/Form Do") << QByteArray() << 150;
        QTest::newRow("a quarter turned page") << scan << QByteArray("/Rotate 90") << 150;
        QTest::newRow("invisible text over it")
            << scan + " BT 3 Tr /F1 12 Tf 72 700 Td (recognized) Tj ET" << QByteArray() << 150;
        QTest::newRow("visible text over it")
            << scan + " BT /F1 12 Tf 72 700 Td (printed) Tj ET" << QByteArray() << 200;
        QTest::newRow("over half the page")
            << QByteArray("q 612 0 0 396 0 0 cm /Scan Do Q") << QByteArray() << 200;
        QTest::newRow("turned 45 degrees")
            << QByteArray("q 433 433 -560 560 306 0 cm /Scan Do Q") << QByteArray() << 200;
        QTest::newRow("cropped to its middle") << scan << QByteArray("/CropBox [153 198 459 594]") << 150;
        QTest::newRow("nothing drawn") << QByteArray() << QByteArray() << 200;
    }

    void scanIsToldFromWhatThePageDraws() {
        QFETCH(QByteArray, content);
        QFETCH(QByteArray, pageEntries);
        QFETCH(int, expectedDpi);
        const QString file = path(QStringLiteral("hand-built-scan.pdf"));
        folio::test::writeFile(file, handBuiltScan(content, pageEntries));
        PdfDocument document(file);
        QCOMPARE(document.renderDpi(0), expectedDpi);
        const folio::RenderedPage rendered = document.renderPage(0);
        QCOMPARE(rendered.dpi, expectedDpi);
        QCOMPARE(rendered.image.size(), folio::pagePixelSize(document.pageSizePoints(0), expectedDpi));
    }

    void contentQpdfCannotReadRendersAtTheAskedDpi() {
        // The xref table points nowhere; poppler rebuilds it. Whatever qpdf makes of it, the page renders.
        const QString file = path(QStringLiteral("bad-xref-scan.pdf"));
        QByteArray bytes = handBuiltScan("q 612 0 0 792 0 0 cm /Scan Do Q");
        const qsizetype xref = bytes.lastIndexOf("xref\n");
        bytes.replace(xref + 5, 3, "0 9");  // a table of the wrong size
        folio::test::writeFile(file, bytes);
        PdfDocument document(file);
        const folio::RenderedPage rendered = document.renderPage(0);
        QVERIFY(rendered.dpi == 150 || rendered.dpi == 200);
        QCOMPARE(rendered.image.size(), folio::pagePixelSize(document.pageSizePoints(0), rendered.dpi));
    }

    void rotatedPageIsSizedAndRenderedUpright() {
        // A Letter page turned a quarter clockwise (/Rotate 90), a black square at x 72..144, y 500..572 pt
        // (PDF coordinates, from the bottom left); turned, it lies at x 500..572, y 72..144 from the top
        // left.
        const QString rotated = path(QStringLiteral("rotated.pdf"));
        folio::test::writeFile(
            rotated, folio::test::buildPdf("/MediaBox [0 0 612 792] /Rotate 90", "0 g 72 500 72 72 re f"));
        PdfDocument document(rotated, DocumentOptions{72, {}, {}});
        QCOMPARE(document.pageSizePoints(0), QSizeF(792, 612));
        QCOMPARE(document.pageSizeHint(0), QSize(792, 612));
        const QImage image = document.renderPage(0).image;
        QCOMPARE(image.size(), QSize(792, 612));
        QVERIFY(isBlack(image.pixel(536, 108)));
        QVERIFY(isWhite(image.pixel(108, 108)));
        QVERIFY(isWhite(image.pixel(108, 536)));
    }

    void encryptedPdfNeedsItsPassword() {
        const QString locked = path(QStringLiteral("locked.pdf"));
        folio::test::writeFile(locked, folio::test::encryptedPdf("secret"));
        QCOMPARE(errorOf([&] { PdfDocument document(locked); }),
                 locked + QStringLiteral(": the PDF is encrypted and needs a password to open"));
        QCOMPARE(errorOf([&] {
                     folio::openDocument(locked, DocumentOptions{200, QStringLiteral("wrong"), {}});
                 }),
                 locked + QStringLiteral(": the password does not open this encrypted PDF"));
        PdfDocument document(locked, DocumentOptions{100, QStringLiteral("secret"), {}});
        QCOMPARE(document.pageCount(), 1);
        const QImage image = document.renderPage(0).image;
        QCOMPARE(image.size(), QSize(850, 1100));
        QVERIFY(isWhite(image.pixel(425, 550)));
        // A file's own password comes before the one for every file.
        DocumentOptions options{100, QStringLiteral("wrong"), {{locked, QStringLiteral("secret")}}};
        QCOMPARE(folio::openDocument(locked, options)->pageCount(), 1);
        QCOMPARE(options.passwordFor(twoPages_), QStringLiteral("wrong"));
        QVERIFY(folio::isPasswordError(errorOf([&] { PdfDocument locked2(locked); })));
        QVERIFY(!folio::isPasswordError(locked + QStringLiteral(": cannot open the PDF")));
    }

    void truncatedPdfIsAnErrorNamingTheFile_data() {
        QTest::addColumn<int>("keep");  // bytes kept from the start
        QTest::newRow("header only") << 9;
        QTest::newRow("200 bytes") << 200;
        const int size = static_cast<int>(QFileInfo(twoPages_).size());
        QTest::newRow("half") << size / 2;
        QTest::newRow("all but the last 30 bytes") << size - 30;
    }

    void truncatedPdfIsAnErrorNamingTheFile() {
        QFETCH(int, keep);
        const QString truncated = path(QStringLiteral("truncated-%1.pdf").arg(keep));
        folio::test::writeFile(truncated, folio::test::readFile(twoPages_).left(keep));
        const QString error = errorOf([&] { folio::openDocument(truncated); });
        QVERIFY2(error.startsWith(truncated + QStringLiteral(": ")), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("damaged or truncated")), qPrintable(error));
    }

    void cutPdfNeverCrashes() {
        // Cut anywhere: either an error naming the file, or pages that render or fail with one.
        const QByteArray bytes = folio::test::readFile(twoPages_);
        for (const double fraction : {0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 0.995}) {
            const QString cut = path(QStringLiteral("cut.pdf"));
            folio::test::writeFile(cut, bytes.left(static_cast<qsizetype>(bytes.size() * fraction)));
            try {
                const auto document = folio::openDocument(cut, DocumentOptions{50, {}, {}});
                for (int i = 0; i < document->pageCount(); ++i) {
                    try {
                        QVERIFY(!document->renderPage(i).image.isNull());
                    } catch (const folio::Error& e) {
                        QVERIFY2(QString::fromStdString(e.what()).startsWith(cut), e.what());
                    }
                }
            } catch (const folio::Error& e) {
                QVERIFY2(QString::fromStdString(e.what()).startsWith(cut + QStringLiteral(": ")), e.what());
            }
        }
    }

    void damagedBodyIsAnErrorNamingTheFile() {
        // A PDF header followed by bytes that are no PDF at all.
        const QString damaged = path(QStringLiteral("damaged.pdf"));
        QByteArray bytes = "%PDF-1.7\n";
        for (int i = 0; i < 4096; ++i) {
            bytes += static_cast<char>((i * 7919 + 13) % 251);
        }
        folio::test::writeFile(damaged, bytes);
        const QString error = errorOf([&] { PdfDocument document(damaged); });
        QVERIFY2(error.startsWith(damaged + QStringLiteral(": ")), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("damaged")), qPrintable(error));
    }

    void notAPdf_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("message");
        QByteArray random;
        for (int i = 0; i < 2000; ++i) {
            random += static_cast<char>((i * 2654435761U) >> 24);
        }
        QTest::newRow("random bytes") << random
                                      << QStringLiteral(
                                             ": named .pdf but its content is not a PDF or a supported "
                                             "image (not a PDF or an image; a damaged or misnamed file?)");
        QTest::newRow("empty") << QByteArray()
                               << QStringLiteral(
                                      ": named .pdf but its content is not a PDF or a supported image "
                                      "(an empty file; a damaged or misnamed file?)");
        QTest::newRow("GIF") << QByteArray("GIF89a\x01\x00\x01\x00", 10)
                             << QStringLiteral(
                                    ": named .pdf but its content is not a PDF or a supported image "
                                    "(a GIF image; a damaged or misnamed file?)");
    }

    void notAPdf() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, message);
        const QString file = path(QStringLiteral("not-a-pdf.pdf"));
        folio::test::writeFile(file, bytes);
        QCOMPARE(errorOf([&] { folio::openDocument(file); }), file + message);
        QVERIFY(errorOf([&] {
                    PdfDocument document(file);
                }).startsWith(file + QStringLiteral(": not a PDF file (")));
    }

    void missingFile() {
        const QString missing = path(QStringLiteral("missing.pdf"));
        QCOMPARE(errorOf([&] { folio::openDocument(missing); }),
                 missing + QStringLiteral(": cannot open the file: it does not exist"));
    }

    void nonAsciiPath() {
        const QString file = path(QStringLiteral("Résumé 文档.pdf"));
        QVERIFY(QFile::copy(twoPages_, file));
        const auto document = folio::openDocument(file);
        QCOMPARE(document->pageCount(), 2);
        QCOMPARE(document->renderPage(1).image.size(), QSize(1700, 2200));
    }

    void pageIndexOutOfRange() {
        PdfDocument document(twoPages_);
        QCOMPARE(errorOf([&] { document.renderPage(2); }),
                 twoPages_ + QStringLiteral(": page 3 does not exist (the document has 2 pages)"));
        QCOMPARE(errorOf([&] { document.pageSizeHint(-1); }),
                 twoPages_ + QStringLiteral(": page 0 does not exist (the document has 2 pages)"));
    }

    void resolutionOutOfRange() {
        QCOMPARE(errorOf([&] {
                     PdfDocument document(twoPages_, DocumentOptions{5, {}, {}});
                 }),
                 twoPages_ + QStringLiteral(": a resolution of 5 DPI is outside 18..2400"));
    }

    void sourcesRenderOnSeveralThreadsAtOnce() {
        // One source a thread, as pipeline workers use them; each thread's pages match a render on this
        // thread.
        PdfDocument reference(twoPages_, DocumentOptions{72, {}, {}});
        const std::vector<QImage> expected = {reference.renderPage(0).image, reference.renderPage(1).image};
        std::vector<std::unique_ptr<folio::DocumentSource>> sources;
        for (int t = 0; t < 4; ++t) {
            sources.push_back(folio::openDocument(twoPages_, DocumentOptions{72, {}, {}}));
        }
        std::atomic<int> mismatches{0};
        std::vector<std::thread> threads;
        for (auto& source : sources) {
            threads.emplace_back([&source, &expected, &mismatches] {
                try {
                    for (int round = 0; round < 5; ++round) {
                        for (int page = 0; page < 2; ++page) {
                            if (source->renderPage(page).image != expected[static_cast<size_t>(page)]) {
                                ++mismatches;
                            }
                        }
                    }
                } catch (const folio::Error&) {
                    ++mismatches;
                }
            });
        }
        for (std::thread& thread : threads) {
            thread.join();
        }
        QCOMPARE(mismatches.load(), 0);
    }

    void sampleDocument() {
        // resources/samples/sample.pdf: two A4 pages of vector text.
        PdfDocument sample(QStringLiteral(FOLIO_SAMPLE_PDF));
        QCOMPARE(sample.pageCount(), 2);
        QCOMPARE(sample.pageSizePoints(0), kA4);
        QCOMPARE(sample.pageSizePoints(1), kA4);
        const QString first = sample.pageText(0).normalized(QString::NormalizationForm_KC);
        const QString second = sample.pageText(1).normalized(QString::NormalizationForm_KC);
        for (const char* text : {"Reading Pages in Their Natural Order", "1 Introduction", "2 Method", "(1)",
                                 "Folio sample document"}) {
            QVERIFY2(first.contains(QLatin1String(text)), text);
        }
        for (const char* text :
             {"3 Results", "Table 1:", "Kind of page", "Research paper", "Figure 1:", "5 Conclusion"}) {
            QVERIFY2(second.contains(QLatin1String(text)), text);
        }
        QVERIFY(first.trimmed().endsWith(QLatin1String("1")));
        QVERIFY(second.trimmed().endsWith(QLatin1String("2")));
        const QImage page = sample.renderPage(1).image;
        QCOMPARE(page.size(), QSize(1653, 2339));

        // folio-make-sample writes the same text.
        const QString written = path(QStringLiteral("sample.pdf"));
        QProcess tool;
        tool.start(QStringLiteral(FOLIO_MAKE_SAMPLE), {written});
        QVERIFY(tool.waitForFinished(60000));
        QCOMPARE(tool.exitCode(), 0);
        PdfDocument rewritten(written);
        QCOMPARE(rewritten.pageCount(), 2);
        QCOMPARE(rewritten.pageText(0), sample.pageText(0));
        QCOMPARE(rewritten.pageText(1), sample.pageText(1));
    }

    void longDocumentRendersOnePageAtATime() {
        // Pages are sized and rendered one at a time: the last of many pages without touching the others.
        const QString many = path(QStringLiteral("many.pdf"));
        std::vector<TestPage> pages;
        for (int i = 0; i < 300; ++i) {
            pages.push_back({i % 2 == 0 ? kA4 : kLetter, QStringLiteral("Page %1").arg(i + 1)});
        }
        folio::test::writeTestPdf(many, pages);
        const auto document = folio::openDocument(many, DocumentOptions{50, {}, {}});
        QCOMPARE(document->pageCount(), 300);
        QCOMPARE(document->pageSizeHint(299), QSize(425, 550));
        QCOMPARE(document->renderPage(299).image.size(), QSize(425, 550));
        QVERIFY(static_cast<PdfDocument&>(*document).pageText(299).contains(QStringLiteral("Page 300")));
    }
};

QTEST_MAIN(PdfDocumentTest)
#include "test-pdf-document.moc"
