// ImageDocument and openDocument on image files written by the test: every page of a multi-page TIFF, EXIF
// orientation, PNG, JPEG, BMP and WebP told by content rather than name, damaged and oversized files; and the
// conversions between QImage and the engine's images.
#include <QtTest>

#include <QTemporaryDir>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <vector>

#include "app/documents/document-source.h"
#include "app/documents/image-document.h"
#include "app/documents/page-image.h"
#include "app/images/image-loader.h"
#include "engine/common/error.h"
#include "error-of.h"
#include "test-pdf.h"

using folio::ImageDocument;

using folio::testing::errorOf;

namespace {

// An image of `width` x `height` whose left half is `left` and right half `right` (OpenCV's BGR order).
cv::Mat halves(int width, int height, cv::Scalar left, cv::Scalar right) {
    cv::Mat image(height, width, CV_8UC3, right);
    image(cv::Rect(0, 0, width / 2, height)).setTo(left);
    return image;
}

QByteArray encode(const char* extension, const cv::Mat& image, const std::vector<int>& params = {}) {
    std::vector<uchar> bytes;
    if (!cv::imencode(extension, image, bytes, params)) {
        throw std::runtime_error(std::string("cannot encode ") + extension);
    }
    return QByteArray(reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size()));
}

// A JPEG with an EXIF APP1 segment (big-endian TIFF, one IFD entry) giving `orientation`, after its SOI
// marker.
QByteArray withExifOrientation(const QByteArray& jpeg, int orientation) {
    QByteArray exif("Exif\0\0", 6);
    exif += QByteArray("MM\0\x2a\0\0\0\x08", 8);        // TIFF header, IFD0 at offset 8
    exif += QByteArray("\0\x01", 2);                    // one entry
    exif += QByteArray("\x01\x12\0\x03\0\0\0\x01", 8);  // Orientation, SHORT, count 1
    exif += static_cast<char>(0);
    exif += static_cast<char>(orientation);
    exif += QByteArray("\0\0", 2);      // value padding
    exif += QByteArray("\0\0\0\0", 4);  // no next IFD
    const auto length = static_cast<int>(exif.size() + 2);
    QByteArray segment("\xff\xe1", 2);
    segment += static_cast<char>(length >> 8);
    segment += static_cast<char>(length & 0xff);
    return jpeg.left(2) + segment + exif + jpeg.mid(2);
}

// A two-page little-endian greyscale TIFF written field by field: page 1 is 2 x 2 pixels (10, 20, 30, 40),
// page 2's header claims 50000 x 50000.
QByteArray tiffWithAnOversizedPage() {
    QByteArray tiff("II*\0", 4);
    const auto u16 = [&tiff](unsigned value) {
        tiff += static_cast<char>(value & 0xff);
        tiff += static_cast<char>((value >> 8) & 0xff);
    };
    const auto u32 = [&u16](unsigned value) {
        u16(value & 0xffff);
        u16(value >> 16);
    };
    const auto entry = [&u16, &u32](unsigned tag, unsigned type, unsigned value) {
        u16(tag);
        u16(type);
        u32(1);
        if (type == 3) {
            u16(value);
            u16(0);
        } else {
            u32(value);
        }
    };
    const unsigned ifdBytes = 2 + 9 * 12 + 4;
    const unsigned first = 8;
    const unsigned second = first + ifdBytes;
    const unsigned pixels = second + ifdBytes;
    u32(first);
    for (const unsigned side : {2U, 50000U}) {
        u16(9);
        entry(256, 4, side);    // ImageWidth
        entry(257, 4, side);    // ImageLength
        entry(258, 3, 8);       // BitsPerSample
        entry(259, 3, 1);       // Compression: none
        entry(262, 3, 1);       // PhotometricInterpretation: black is zero
        entry(273, 4, pixels);  // StripOffsets
        entry(277, 3, 1);       // SamplesPerPixel
        entry(278, 4, side);    // RowsPerStrip
        entry(279, 4, 4);       // StripByteCounts
        u32(side == 2 ? second : 0);
    }
    tiff += QByteArray::fromHex("0a141e28");
    return tiff;
}

bool near(QRgb pixel, int r, int g, int b, int tolerance = 24) {
    return std::abs(qRed(pixel) - r) <= tolerance && std::abs(qGreen(pixel) - g) <= tolerance &&
           std::abs(qBlue(pixel) - b) <= tolerance;
}

}  // namespace

class ImageDocumentTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir dir_;

    QString write(const QString& name, const QByteArray& bytes) const {
        const QString path = dir_.filePath(name);
        folio::test::writeFile(path, bytes);
        return path;
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void singleImages_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<int>("tolerance");
        // Red on the left, blue on the right (BGR scalars).
        const cv::Mat image = halves(64, 48, cv::Scalar(0, 0, 255), cv::Scalar(255, 0, 0));
        QTest::newRow("PNG") << "page.png" << encode(".png", image) << 0;
        QTest::newRow("JPEG") << "page.jpg" << encode(".jpg", image, {cv::IMWRITE_JPEG_QUALITY, 95}) << 24;
        QTest::newRow("BMP") << "page.bmp" << encode(".bmp", image) << 0;
        QTest::newRow("WebP lossless")
            << "page.webp" << encode(".webp", image, {cv::IMWRITE_WEBP_QUALITY, 101}) << 0;
        QTest::newRow("WebP lossy") << "lossy.webp" << encode(".webp", image, {cv::IMWRITE_WEBP_QUALITY, 90})
                                    << 24;
        QTest::newRow("TIFF") << "page.tif" << encode(".tiff", image) << 0;
        QTest::newRow("PNG named .jpg") << "misnamed.jpg" << encode(".png", image) << 0;
        QTest::newRow("PNG named .pdf") << "misnamed.pdf" << encode(".png", image) << 0;
        QTest::newRow("JPEG without a suffix") << "scan" << encode(".jpg", image) << 24;
    }

    void singleImages() {
        QFETCH(QString, name);
        QFETCH(QByteArray, bytes);
        QFETCH(int, tolerance);
        const QString path = write(name, bytes);
        const auto document = folio::openDocument(path);
        QCOMPARE(document->kind(), folio::DocumentKind::Image);
        QCOMPARE(document->pageCount(), 1);
        QCOMPARE(document->resultPageIndex(0), -1);
        QCOMPARE(document->pageSizeHint(0), QSize(64, 48));
        const folio::RenderedPage page = document->renderPage(0);
        QCOMPARE(page.dpi, 0);
        QCOMPARE(page.image.format(), QImage::Format_RGB888);
        QCOMPARE(page.image.size(), QSize(64, 48));
        QVERIFY(near(page.image.pixel(8, 24), 255, 0, 0, tolerance));
        QVERIFY(near(page.image.pixel(56, 24), 0, 0, 255, tolerance));
    }

    void multiPageTiffGivesEveryPage() {
        const std::vector<cv::Mat> pages = {cv::Mat(30, 40, CV_8UC3, cv::Scalar(0, 0, 255)),
                                            cv::Mat(50, 20, CV_8UC3, cv::Scalar(0, 255, 0)),
                                            cv::Mat(10, 70, CV_8UC3, cv::Scalar(255, 0, 0))};
        const QString path = dir_.filePath(QStringLiteral("scans.tiff"));
        QVERIFY(cv::imwritemulti(path.toStdString(), pages));

        const auto document = folio::openDocument(path);
        QCOMPARE(document->pageCount(), 3);
        const QList<QSize> sizes = {QSize(40, 30), QSize(20, 50), QSize(70, 10)};
        const QList<QRgb> colours = {qRgb(255, 0, 0), qRgb(0, 255, 0), qRgb(0, 0, 255)};
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(document->pageSizeHint(i), sizes[i]);
            QCOMPARE(document->resultPageIndex(i), i);
        }
        // Out of order, as a pipeline worker may ask.
        for (const int i : {2, 0, 1}) {
            const QImage image = document->renderPage(i).image;
            QCOMPARE(image.size(), sizes[i]);
            QCOMPARE(image.pixel(5, 5), colours[i]);
        }
        QCOMPARE(errorOf([&] { document->renderPage(3); }),
                 path + QStringLiteral(": page 4 does not exist (the document has 3 pages)"));

        const std::vector<folio::Image> decoded = folio::load_image_pages(path.toStdString());
        QCOMPARE(decoded.size(), size_t{3});
        QCOMPARE(decoded[1].width, 20);
        QCOMPARE(decoded[1].height, 50);
        QCOMPARE(decoded[1].rgb[1], uint8_t{255});
    }

    void oversizedTiffPageFailsAlone() {
        const QString path = write(QStringLiteral("mixed.tif"), tiffWithAnOversizedPage());
        const auto document = folio::openDocument(path);
        QCOMPARE(document->pageCount(), 2);
        QCOMPARE(document->pageSizeHint(0), QSize(2, 2));
        const QImage first = document->renderPage(0).image;
        QCOMPARE(first.size(), QSize(2, 2));
        QCOMPARE(first.pixel(0, 0), qRgb(10, 10, 10));
        QCOMPARE(first.pixel(1, 1), qRgb(40, 40, 40));
        QCOMPARE(
            errorOf([&] { document->renderPage(1); }),
            path + QStringLiteral(" page 2: image size 50000x50000 exceeds the limit of 268435456 pixels"));
    }

    void exifOrientationIsApplied_data() {
        QTest::addColumn<int>("orientation");
        QTest::addColumn<QSize>("size");
        QTest::addColumn<QPoint>("redAt");
        QTest::addColumn<QPoint>("blueAt");
        // Stored as 80 x 40, red left and blue right.
        QTest::newRow("1: as stored") << 1 << QSize(80, 40) << QPoint(10, 20) << QPoint(70, 20);
        QTest::newRow("3: turned 180") << 3 << QSize(80, 40) << QPoint(70, 20) << QPoint(10, 20);
        QTest::newRow("6: turned 90 clockwise") << 6 << QSize(40, 80) << QPoint(20, 10) << QPoint(20, 70);
        QTest::newRow("8: turned 90 counter-clockwise")
            << 8 << QSize(40, 80) << QPoint(20, 70) << QPoint(20, 10);
    }

    void exifOrientationIsApplied() {
        QFETCH(int, orientation);
        QFETCH(QSize, size);
        QFETCH(QPoint, redAt);
        QFETCH(QPoint, blueAt);
        const QByteArray jpeg = encode(".jpg", halves(80, 40, cv::Scalar(0, 0, 255), cv::Scalar(255, 0, 0)),
                                       {cv::IMWRITE_JPEG_QUALITY, 95});
        const QString path =
            write(QStringLiteral("exif-%1.jpg").arg(orientation), withExifOrientation(jpeg, orientation));
        ImageDocument document(path);
        QCOMPARE(document.format(), folio::ImageFormat::jpeg);
        QCOMPARE(document.pageSizeHint(0), size);
        const QImage image = document.renderPage(0).image;
        QCOMPARE(image.size(), size);
        QVERIFY(near(image.pixel(redAt), 255, 0, 0));
        QVERIFY(near(image.pixel(blueAt), 0, 0, 255));
    }

    void greyAndAlphaBecomeRgb() {
        cv::Mat grey(16, 16, CV_8UC1, cv::Scalar(100));
        const auto greyPage = folio::openDocument(write(QStringLiteral("grey.png"), encode(".png", grey)));
        QCOMPARE(greyPage->renderPage(0).image.pixel(3, 3), qRgb(100, 100, 100));
        cv::Mat rgba(16, 16, CV_8UC4, cv::Scalar(10, 20, 30, 0));  // transparent: the colour stays
        const auto alphaPage = folio::openDocument(write(QStringLiteral("alpha.png"), encode(".png", rgba)));
        QCOMPARE(alphaPage->renderPage(0).image.pixel(3, 3), qRgb(30, 20, 10));
    }

    void unsupportedFilesSayWhatTheyAre_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("message");
        QTest::newRow("text")
            << "notes.txt" << QByteArray("Hello, world\n")
            << ": unsupported file (not a PDF or an image); Folio reads PDF, PNG, JPEG, TIFF, BMP "
               "or WebP";
        QTest::newRow("GIF")
            << "anim.gif" << QByteArray("GIF89a\x10\x00\x10\x00", 10)
            << ": unsupported file (a GIF image); Folio reads PDF, PNG, JPEG, TIFF, BMP or WebP";
        QTest::newRow("empty PNG")
            << "empty.png" << QByteArray()
            << ": named .png but its content is not a PDF or a supported image (an empty "
               "file; a damaged or misnamed file?)";
    }

    void unsupportedFilesSayWhatTheyAre() {
        QFETCH(QString, name);
        QFETCH(QByteArray, bytes);
        QFETCH(QString, message);
        const QString path = write(name, bytes);
        QCOMPARE(errorOf([&] { folio::openDocument(path); }), path + message);
    }

    void truncatedImageFailsOnItsPage() {
        cv::Mat noise(200, 200, CV_8UC3);
        cv::randu(noise, cv::Scalar::all(0), cv::Scalar::all(255));
        const QByteArray png = encode(".png", noise);
        const QString path = write(QStringLiteral("cut.png"), png.left(png.size() / 2));
        const auto document = folio::openDocument(path);  // the header is intact
        QCOMPARE(document->pageSizeHint(0), QSize(200, 200));
        const QString error = errorOf([&] { document->renderPage(0); });
        QVERIFY2(error.startsWith(path + QStringLiteral(": cannot decode the image")), qPrintable(error));
    }

    void oversizedImageIsRefusedFromItsHeader() {
        QByteArray png = encode(".png", cv::Mat(8, 8, CV_8UC3, cv::Scalar(0, 0, 0)));
        // IHDR's width and height (big-endian at bytes 16 and 20): 50000 x 50000.
        const QByteArray side = QByteArray::fromHex("0000c350");
        png.replace(16, 4, side);
        png.replace(20, 4, side);
        const QString path = write(QStringLiteral("huge.png"), png);
        QCOMPARE(errorOf([&] { folio::openDocument(path); }),
                 path + QStringLiteral(": image size 50000x50000 exceeds the limit of 268435456 pixels"));
    }

    void missingImage() {
        const QString path = dir_.filePath(QStringLiteral("missing.png"));
        QCOMPARE(errorOf([&] { ImageDocument document(path); }),
                 path + QStringLiteral(": cannot open: No such file or directory"));
    }

    void toEngineImagePacksRows() {
        // 5 pixels of RGB888 are 15 bytes; QImage pads each row to 16.
        QImage image(5, 3, QImage::Format_RGB888);
        QCOMPARE(image.bytesPerLine(), 16);
        for (int y = 0; y < 3; ++y) {
            for (int x = 0; x < 5; ++x) {
                image.setPixel(x, y, qRgb(x * 10, y * 20, 7));
            }
        }
        const folio::Image engine = folio::toEngineImage(image);
        QCOMPARE(engine.width, 5);
        QCOMPARE(engine.height, 3);
        QCOMPARE(engine.rgb.size(), size_t{45});
        for (int y = 0; y < 3; ++y) {
            for (int x = 0; x < 5; ++x) {
                const size_t at = (static_cast<size_t>(y) * 5 + static_cast<size_t>(x)) * 3;
                QCOMPARE(engine.rgb[at], static_cast<uint8_t>(x * 10));
                QCOMPARE(engine.rgb[at + 1], static_cast<uint8_t>(y * 20));
                QCOMPARE(engine.rgb[at + 2], uint8_t{7});
            }
        }
        QCOMPARE(folio::toQImage(engine), image);
        // Other formats are converted first.
        const folio::Image fromArgb = folio::toEngineImage(image.convertToFormat(QImage::Format_ARGB32));
        QCOMPARE(fromArgb.rgb, engine.rgb);
        QVERIFY(errorOf([] { folio::toEngineImage(QImage()); }).contains(QStringLiteral("null")));
    }
};

QTEST_MAIN(ImageDocumentTest)
#include "test-image-document.moc"
