#include "pdf-document.h"

#include <poppler-qt6.h>

#include <QFile>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QStringList>
#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>

#include "error.h"
#include "file-type.h"
#include "image.h"

namespace folio {

namespace {

Q_LOGGING_CATEGORY(lcPoppler, "folio.poppler", QtWarningMsg)

// Poppler reports problems through one process-wide function. Folio's routes them to the "folio.poppler"
// logging category (debug level, off by default) instead of stderr, and hands them to the PopplerMessages
// collecting on the calling thread, so that an error can say what poppler found.
constexpr qsizetype kMessagesKept = 4;
thread_local QStringList* collectedMessages = nullptr;

void routePopplerMessage(const QString& message, const QVariant& /*closure*/) {
    const QString trimmed = message.trimmed();
    if (collectedMessages != nullptr && collectedMessages->size() < kMessagesKept &&
        !collectedMessages->contains(trimmed)) {
        collectedMessages->append(trimmed);
    }
    qCDebug(lcPoppler).noquote() << message;
}

class PopplerMessages {
public:
    PopplerMessages() : previous_(collectedMessages) {
        static std::once_flag once;
        std::call_once(once, [] { Poppler::setDebugErrorFunction(routePopplerMessage, QVariant()); });
        collectedMessages = &messages_;
    }
    ~PopplerMessages() { collectedMessages = previous_; }
    PopplerMessages(const PopplerMessages&) = delete;
    PopplerMessages& operator=(const PopplerMessages&) = delete;

    // " (poppler: first message; second ...)", or nothing where poppler said nothing.
    std::string suffix() const {
        if (messages_.isEmpty()) {
            return {};
        }
        return " (poppler: " + messages_.join(QStringLiteral("; ")).toStdString() + ")";
    }

private:
    QStringList messages_;
    QStringList* previous_;
};

bool fits(QSize pixels) {
    return pixels.width() <= kMaxPageSide && pixels.height() <= kMaxPageSide &&
           int64_t{pixels.width()} * pixels.height() <= kMaxImagePixels;
}

}  // namespace

QSize pagePixelSize(QSizeF points, int dpi) {
    // Poppler scales the page by dpi / 72 and rounds each side to the nearest pixel.
    const double scale = dpi / 72.0;
    const auto side = [scale](double length) {
        const double pixels = scale * length + 0.5;
        return pixels >= 2147483647.0 ? 2147483647 : static_cast<int>(pixels);
    };
    return QSize(side(points.width()), side(points.height()));
}

int fittingDpi(QSizeF points, int dpi) {
    if (!(points.width() > 0) || !(points.height() > 0) || dpi < 1) {
        return 0;
    }
    const double inchesW = points.width() / 72.0;
    const double inchesH = points.height() / 72.0;
    const double bound =
        std::min({static_cast<double>(dpi), (kMaxPageSide + 0.5) / inchesW, (kMaxPageSide + 0.5) / inchesH,
                  std::sqrt(static_cast<double>(kMaxImagePixels) / (inchesW * inchesH)) + 1.0});
    int candidate = static_cast<int>(std::min(bound, static_cast<double>(dpi)));
    while (candidate >= 1 && !fits(pagePixelSize(points, candidate))) {
        --candidate;
    }
    return std::max(candidate, 0);
}

PdfDocument::PdfDocument(const QString& path, const DocumentOptions& options)
    : path_(path), dpi_(options.dpi) {
    const std::string name = path.toStdString();
    if (options.dpi < kMinDpi || options.dpi > kMaxDpi) {
        fail(name, ": a resolution of ", options.dpi, " DPI is outside ", kMinDpi, "..", kMaxDpi);
    }
    const DetectedType type = detectFileType(path);
    if (type.type != FileType::Pdf) {
        fail(name, ": not a PDF file (", type.description.toStdString(), ")");
    }

    PopplerMessages messages;
    document_ = Poppler::Document::load(path);
    if (!document_) {
        fail(name, ": cannot open the PDF: the file is damaged or truncated", messages.suffix());
    }
    if (document_->isLocked()) {
        if (options.password.isEmpty()) {
            fail(name, ": the PDF is encrypted and needs a password to open");
        }
        // Older encryption takes Latin-1 passwords, AES-256 takes UTF-8.
        const QByteArray utf8 = options.password.toUtf8();
        const QByteArray latin1 = options.password.toLatin1();
        // unlock() answers whether the document is still locked.
        const bool locked =
            document_->unlock(utf8, utf8) && (latin1 == utf8 || document_->unlock(latin1, latin1));
        if (locked || document_->isLocked()) {
            fail(name, ": the password does not open this encrypted PDF");
        }
    }
    pageCount_ = document_->numPages();
    if (pageCount_ <= 0) {
        fail(name, ": the PDF has no pages (the file may be damaged or truncated)", messages.suffix());
    }
    document_->setRenderHint(Poppler::Document::Antialiasing, true);
    document_->setRenderHint(Poppler::Document::TextAntialiasing, true);
}

PdfDocument::~PdfDocument() = default;

std::unique_ptr<Poppler::Page> PdfDocument::page(int index) {
    checkPageIndex(index);
    PopplerMessages messages;
    std::unique_ptr<Poppler::Page> page = document_->page(index);
    if (!page) {
        fail(path_.toStdString(), ": page ", index + 1, " cannot be read (damaged PDF)", messages.suffix());
    }
    return page;
}

int PdfDocument::renderDpi(const Poppler::Page& page, int index) const {
    const QSizeF points = page.pageSizeF();
    const int dpi = fittingDpi(points, dpi_);
    if (dpi == 0) {
        fail(path_.toStdString(), ": page ", index + 1, " of ", points.width(), "x", points.height(),
             " points cannot be rendered within ", kMaxPageSide, " pixels a side");
    }
    const QSize pixels = pagePixelSize(points, dpi);
    if (pixels.width() < 1 || pixels.height() < 1) {
        fail(path_.toStdString(), ": page ", index + 1, " of ", points.width(), "x", points.height(),
             " points is empty at ", dpi, " DPI");
    }
    return dpi;
}

QSizeF PdfDocument::pageSizePoints(int index) {
    return page(index)->pageSizeF();
}

int PdfDocument::renderDpi(int index) {
    return renderDpi(*page(index), index);
}

QSize PdfDocument::pageSizeHint(int index) {
    const QSizeF points = pageSizePoints(index);
    const int dpi = fittingDpi(points, dpi_);
    const QSize pixels = dpi == 0 ? QSize() : pagePixelSize(points, dpi);
    return pixels.isEmpty() ? QSize() : pixels;
}

RenderedPage PdfDocument::renderPage(int index) {
    const std::unique_ptr<Poppler::Page> pdfPage = page(index);
    const int dpi = renderDpi(*pdfPage, index);
    PopplerMessages messages;
    QImage image = pdfPage->renderToImage(dpi, dpi);
    if (image.isNull()) {
        fail(path_.toStdString(), ": page ", index + 1, " cannot be rendered at ", dpi, " DPI",
             messages.suffix());
    }
    image = std::move(image).convertToFormat(QImage::Format_RGB888);
    if (image.isNull()) {
        fail(path_.toStdString(), ": page ", index + 1, ": out of memory converting the rendered page");
    }
    return RenderedPage{std::move(image), dpi};
}

QString PdfDocument::pageText(int index) {
    return page(index)->text(QRectF());
}

}  // namespace folio
