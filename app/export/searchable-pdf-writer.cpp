#include "app/export/searchable-pdf-writer.h"

#include <QBuffer>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QImageWriter>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <cstring>
#include <utility>

#include "app/export/block-plain-text.h"
#include "app/export/staged-file.h"
#include "app/export/text-layer.h"
#include "engine/common/error.h"

namespace folio {

namespace {

// The JPEG quality Qt's PDF engine encodes images at; it offers no other.
constexpr int kQtPdfJpegQuality = 94;
// Bands of rows sampled over the page to compare the two encodings.
constexpr int kSampleBands = 12;
constexpr int kSampleBandRows = 16;  // a whole number of JPEG blocks

// A4 at the default resolution, for a page that has neither pixels nor an image.
constexpr QSize kBlankPagePixels(1654, 2339);

QSizeF pagePixels(const PageResult& page) {
    if (page.width > 0 && page.height > 0) {
        return QSizeF(page.width, page.height);
    }
    if (!page.image.isNull()) {
        return QSizeF(page.image.size());
    }
    return QSizeF(kBlankPagePixels);
}

// The image without transparency, in the format the PDF engine writes without converting.
QImage opaque(const QImage& image) {
    if (image.format() == QImage::Format_RGB32) {
        return image;
    }
    if (!image.hasAlphaChannel()) {
        return image.convertToFormat(QImage::Format_RGB32);
    }
    QImage flat(image.size(), QImage::Format_RGB32);
    flat.fill(Qt::white);
    QPainter painter(&flat);
    painter.drawImage(0, 0, image);
    return flat;
}

// Whether Flate (lossless) makes the page image no larger than JPEG does: true of rendered and clean pages
// with flat backgrounds, false of photographs and noisy scans. Both encodings are tried on bands of the
// image.
bool preferLossless(const QImage& image) {
    if (!QImageWriter::supportedImageFormats().contains("jpeg")) {
        return true;
    }
    QImage sample;
    if (image.height() <= 2 * kSampleBands * kSampleBandRows) {
        sample = image;
    } else {
        sample = QImage(image.width(), kSampleBands * kSampleBandRows, QImage::Format_RGB32);
        const int span = image.height() - kSampleBandRows;
        for (int band = 0; band < kSampleBands; ++band) {
            const int top = span * band / (kSampleBands - 1);
            for (int row = 0; row < kSampleBandRows; ++row) {
                std::memcpy(sample.scanLine(band * kSampleBandRows + row), image.constScanLine(top + row),
                            static_cast<std::size_t>(image.width()) * 4);
            }
        }
    }
    QByteArray jpeg;
    QBuffer buffer(&jpeg);
    QImageWriter writer(&buffer, "jpeg");
    writer.setQuality(kQtPdfJpegQuality);
    if (!writer.write(sample)) {
        return true;
    }
    // The engine's lossless form: 8-bit RGB, deflated.
    QByteArray rgb;
    rgb.reserve(static_cast<qsizetype>(sample.width()) * sample.height() * 3);
    for (int y = 0; y < sample.height(); ++y) {
        const auto* pixels = reinterpret_cast<const QRgb*>(sample.constScanLine(y));
        for (int x = 0; x < sample.width(); ++x) {
            rgb.append(static_cast<char>(qRed(pixels[x])));
            rgb.append(static_cast<char>(qGreen(pixels[x])));
            rgb.append(static_cast<char>(qBlue(pixels[x])));
        }
    }
    return qCompress(rgb).size() <= jpeg.size();
}

QRectF blockRect(const BlockBox& box, const QSizeF& page) {
    return QRectF(box.x1, box.y1, box.width(), box.height()).intersected(QRectF(QPointF(0, 0), page));
}

bool hasGrid(const BlockResult& block) {
    return block.table && block.table->nRows > 0 && block.table->nColumns > 0 && !block.table->cells.empty();
}

}  // namespace

// The document being written: the staged file, the PDF engine on it and its painter, destroyed in reverse.
struct SearchablePdfWriter::Output {
    explicit Output(const QString& target) : file(target) {}

    StagedFile file;
    std::unique_ptr<QPdfWriter> pdf;
    std::unique_ptr<QPainter> painter;
    std::unique_ptr<TextLayer> text;
    int nPages = 0;
};

SearchablePdfWriter::SearchablePdfWriter(ExportOptions options) : m_options(std::move(options)) {}

SearchablePdfWriter::~SearchablePdfWriter() {
    discard();
}

QSizeF SearchablePdfWriter::pageSizePoints(const PageResult& page) {
    const int dpi = page.dpi > 0 ? page.dpi : kDefaultDpi;
    return pagePixels(page) * 72.0 / dpi;
}

void SearchablePdfWriter::begin(const DocumentInfo& document) {
    discard();
    m_files.clear();
    const QString stem = document.stem.isEmpty() ? QStringLiteral("document") : document.stem;
    m_target = QDir(m_options.outputDir).absoluteFilePath(stem + exportSuffix(ExportFormat::SearchablePdf));
    if (!qGuiApp) {
        fail("cannot write \"", m_target.toStdString(), "\": the text layer's fonts need a QGuiApplication");
    }
    const QString input = QFileInfo(document.inputPath).canonicalFilePath();
    if (!input.isEmpty() && input == QFileInfo(m_target).canonicalFilePath()) {
        fail("cannot write \"", m_target.toStdString(), "\": it is the document's input");
    }
    m_output = std::make_unique<Output>(m_target);
    m_output->pdf = std::make_unique<QPdfWriter>(&m_output->file.file());
    m_output->pdf->setCreator(QStringLiteral("Folio"));
    m_output->pdf->setTitle(stem);
}

void SearchablePdfWriter::addPage(const PageResult& page) {
    if (!m_output) {
        fail("searchable PDF: a page added outside begin() and finish()");
    }
    Output& out = *m_output;
    const QSizeF pixels = pagePixels(page);
    const QPageLayout layout(
        QPageSize(pageSizePoints(page), QPageSize::Point, QString(), QPageSize::ExactMatch),
        QPageLayout::Portrait, QMarginsF());
    if (!out.pdf->setPageLayout(layout)) {
        fail("cannot write \"", m_target.toStdString(), "\": page ", out.nPages + 1, " has no valid size");
    }
    if (!out.painter) {
        out.painter = std::make_unique<QPainter>();
        if (!out.painter->begin(out.pdf.get())) {
            fail("cannot write \"", m_target.toStdString(),
                 "\": ", out.file.file().errorString().toStdString());
        }
        out.text = std::make_unique<TextLayer>(out.pdf.get());
    } else if (!out.pdf->newPage()) {
        fail("cannot write \"", m_target.toStdString(), "\": page ", out.nPages + 1, " not started");
    }
    ++out.nPages;

    // Page pixels onto the page as the engine sized it (in whole points).
    QPainter& painter = *out.painter;
    const QSizeF device =
        QSizeF(out.pdf->pageLayout().fullRectPoints().size()) * out.pdf->resolution() / 72.0;
    painter.resetTransform();
    painter.scale(device.width() / pixels.width(), device.height() / pixels.height());

    if (!page.image.isNull()) {
        const QImage image = opaque(page.image);
        painter.setRenderHint(QPainter::LosslessImageRendering, preferLossless(image));
        painter.drawImage(QRectF(QPointF(0, 0), pixels), image);
    }

    // A fully transparent pen: the engine still writes the glyphs as text, which viewers extract but never
    // show.
    painter.setPen(QPen(QColor(0, 0, 0, 0)));
    painter.setBrush(Qt::NoBrush);
    if (!page.spotting.empty()) {
        for (const SpottedLine& line : page.spotting) {
            const QString text = stripMarkup(line.text).replace(QLatin1Char('\n'), QLatin1Char(' '));
            if (!text.isEmpty()) {
                out.text->drawLine(painter, text, line.quad);
            }
        }
    } else {
        for (const BlockResult& block : page.blocks) {
            const QRectF box = blockRect(block.box, pixels);
            if (box.isEmpty()) {
                continue;
            }
            if (hasGrid(block)) {
                out.text->drawTable(painter, *block.table, box);
                continue;
            }
            const QStringList lines = blockPlainLines(block);
            if (!lines.isEmpty()) {
                const auto flow = block.label == QLatin1String("vertical_text") ? TextLayer::Flow::Vertical
                                                                                : TextLayer::Flow::Horizontal;
                out.text->drawParagraphs(painter, lines, box, flow);
            }
        }
    }
    if (out.file.file().error() != QFileDevice::NoError) {
        fail("cannot write \"", m_target.toStdString(), "\": ", out.file.file().errorString().toStdString());
    }
}

void SearchablePdfWriter::finish() {
    if (!m_output) {
        return;
    }
    try {
        Output& out = *m_output;
        if (out.nPages > 0) {
            if (!out.painter->end()) {
                fail("cannot write \"", m_target.toStdString(), "\": the PDF could not be completed");
            }
            out.painter.reset();
            out.pdf.reset();
            out.file.commit();
            m_files = {m_target};
        }
        discard();
    } catch (...) {
        discard();
        throw;
    }
}

void SearchablePdfWriter::abort() {
    discard();
    m_files.clear();
}

QStringList SearchablePdfWriter::files() const {
    return m_files;
}

void SearchablePdfWriter::discard() {
    if (!m_output) {
        return;
    }
    if (m_output->painter && m_output->painter->isActive()) {
        m_output->painter->end();
    }
    m_output.reset();
}

std::unique_ptr<DocumentWriter> makeSearchablePdfWriter(const ExportOptions& options) {
    return std::make_unique<SearchablePdfWriter>(options);
}

}  // namespace folio
