#include "app/documents/pdf-document.h"

#include <poppler-qt6.h>
#include <qpdf/QPDF.hh>
#include <qpdf/QPDFObjectHandle.hh>
#include <qpdf/QPDFPageDocumentHelper.hh>
#include <qpdf/QPDFPageObjectHelper.hh>

#include <QFile>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QStringList>
#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "app/documents/file-type.h"
#include "engine/common/error.h"
#include "engine/image/image.h"

namespace folio {

namespace {

constexpr const char* kNeedsPassword = ": the PDF is encrypted and needs a password to open";
constexpr const char* kWrongPassword = ": the password does not open this encrypted PDF";

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

// Bounds on the work of looking through a page's content for its images: operators read (forms included),
// content bytes, form nesting, saved graphics states. A page past them is taken for no scan.
constexpr int kMaxOperators = 20000;
constexpr size_t kMaxContentBytes = size_t{4} << 20;
constexpr int kMaxFormDepth = 4;
constexpr size_t kMaxSavedStates = 256;

// An affine transformation as PDF writes it: x' = a x + c y + e, y' = b x + d y + f.
struct Affine {
    double a = 1, b = 0, c = 0, d = 1, e = 0, f = 0;

    // `first` applied, then this (PDF's `first × this`).
    Affine after(const Affine& first) const {
        return {first.a * a + first.b * c, first.a * b + first.b * d,     first.c * a + first.d * c,
                first.c * b + first.d * d, first.e * a + first.f * c + e, first.e * b + first.f * d + f};
    }
};

std::optional<Affine> affineOf(const std::vector<QPDFObjectHandle>& operands, size_t from) {
    if (operands.size() < from + 6) {
        return std::nullopt;
    }
    double v[6];
    for (size_t i = 0; i < 6; ++i) {
        QPDFObjectHandle operand = operands[from + i];
        if (!operand.isNumber()) {
            return std::nullopt;
        }
        v[i] = operand.getNumericValue();
    }
    return Affine{v[0], v[1], v[2], v[3], v[4], v[5]};
}

// What a page's content draws, as far as telling a scan goes.
struct PageDrawing {
    double imageDpi = 0;        // the highest of the images' resolutions
    bool otherContent = false;  // visible text, an image not covering the page, or content not looked through
    int operators = 0;
};

// Follows one content stream's graphics state, images and text; forms it draws are followed in turn.
class ContentScanner final : public QPDFObjectHandle::ParserCallbacks {
public:
    ContentScanner(PageDrawing& drawing, QPDFObjectHandle resources, Affine ctm,
                   const QPDFObjectHandle::Rectangle& cropBox, int depth)
        : drawing_(drawing), resources_(std::move(resources)), cropBox_(cropBox), depth_(depth) {
        state_.ctm = ctm;
    }

    void contentSize(size_t bytes) override {
        if (bytes > kMaxContentBytes) {
            drawing_.otherContent = true;  // the first object read ends the parse
        }
    }

    using QPDFObjectHandle::ParserCallbacks::handleObject;
    void handleObject(QPDFObjectHandle object) override {
        if (drawing_.otherContent) {
            terminateParsing();
            return;
        }
        if (object.isInlineImage()) {
            giveUp();  // its resolution is not read here
            return;
        }
        if (!object.isOperator()) {
            if (operands_.size() >= 16) {
                operands_.erase(operands_.begin());
            }
            operands_.push_back(std::move(object));
            return;
        }
        if (++drawing_.operators > kMaxOperators) {
            giveUp();
            return;
        }
        apply(object.getOperatorValue());
        operands_.clear();
    }

    void handleEOF() override {}

private:
    struct State {
        Affine ctm;
        int textMode = 0;  // Tr; 3 draws nothing
    };

    void giveUp() {
        drawing_.otherContent = true;
        terminateParsing();
    }

    void apply(const std::string& op) {
        if (op == "q") {
            if (saved_.size() >= kMaxSavedStates) {
                giveUp();
                return;
            }
            saved_.push_back(state_);
        } else if (op == "Q") {
            if (!saved_.empty()) {
                state_ = saved_.back();
                saved_.pop_back();
            }
        } else if (op == "cm") {
            if (const auto m = affineOf(operands_, operands_.size() < 6 ? 0 : operands_.size() - 6)) {
                state_.ctm = state_.ctm.after(*m);
            }
        } else if (op == "Tr") {
            if (!operands_.empty() && operands_.back().isInteger()) {
                state_.textMode = operands_.back().getIntValueAsInt();
            }
        } else if (op == "Tj" || op == "TJ" || op == "'" || op == "\"") {
            if (state_.textMode != 3) {
                giveUp();
            }
        } else if (op == "Do") {
            if (!operands_.empty() && operands_.back().isName()) {
                draw(operands_.back().getName());
            }
        }
    }

    void draw(const std::string& name) {
        QPDFObjectHandle xobject =
            resources_.isDictionary() ? resources_.getKey("/XObject") : QPDFObjectHandle();
        xobject = xobject.isDictionary() ? xobject.getKey(name) : QPDFObjectHandle();
        if (!xobject.isStream()) {
            return;  // nothing drawn
        }
        QPDFObjectHandle dict = xobject.getDict();
        QPDFObjectHandle subtype = dict.getKey("/Subtype");
        if (subtype.isNameAndEquals("/Image")) {
            drawImage(dict);
        } else if (subtype.isNameAndEquals("/Form")) {
            if (depth_ >= kMaxFormDepth) {
                giveUp();
                return;
            }
            Affine ctm = state_.ctm;
            if (QPDFObjectHandle matrix = dict.getKey("/Matrix"); matrix.isArray()) {
                if (const auto m = affineOf(matrix.getArrayAsVector(), 0)) {
                    ctm = ctm.after(*m);
                }
            }
            QPDFObjectHandle resources = dict.getKey("/Resources");
            ContentScanner form(drawing_, resources.isDictionary() ? resources : resources_, ctm, cropBox_,
                                depth_ + 1);
            xobject.parseAsContents(&form);
        }
    }

    // An image fills the unit square mapped by the CTM: it counts towards a scan where it lies square to the
    // page and covers most of it.
    void drawImage(QPDFObjectHandle dict) {
        QPDFObjectHandle width = dict.getKey("/Width");
        QPDFObjectHandle height = dict.getKey("/Height");
        const Affine& m = state_.ctm;
        const double across = std::hypot(m.a, m.b);  // the image's width on the page, in points
        const double down = std::hypot(m.c, m.d);
        const bool square = (std::abs(m.b) <= 0.01 * across && std::abs(m.c) <= 0.01 * down) ||
                            (std::abs(m.a) <= 0.01 * across && std::abs(m.d) <= 0.01 * down);
        if (!width.isInteger() || !height.isInteger() || width.getIntValue() < 1 ||
            height.getIntValue() < 1 || !(across > 0) || !(down > 0) || !square) {
            giveUp();
            return;
        }
        const double left = std::max(std::min({m.e, m.e + m.a, m.e + m.c, m.e + m.a + m.c}), cropBox_.llx);
        const double right = std::min(std::max({m.e, m.e + m.a, m.e + m.c, m.e + m.a + m.c}), cropBox_.urx);
        const double bottom = std::max(std::min({m.f, m.f + m.b, m.f + m.d, m.f + m.b + m.d}), cropBox_.lly);
        const double top = std::min(std::max({m.f, m.f + m.b, m.f + m.d, m.f + m.b + m.d}), cropBox_.ury);
        const double page = (cropBox_.urx - cropBox_.llx) * (cropBox_.ury - cropBox_.lly);
        if (right <= left || top <= bottom || (right - left) * (top - bottom) < kScanCoverage * page) {
            giveUp();
            return;
        }
        const double dpi = std::max(static_cast<double>(width.getIntValue()) * 72.0 / across,
                                    static_cast<double>(height.getIntValue()) * 72.0 / down);
        drawing_.imageDpi = std::max(drawing_.imageDpi, dpi);
    }

    PageDrawing& drawing_;
    QPDFObjectHandle resources_;
    QPDFObjectHandle::Rectangle cropBox_;
    int depth_;
    State state_;
    std::vector<State> saved_;
    std::vector<QPDFObjectHandle> operands_;
};

// The resolution of the page's scan, 0 where it is no scan. Throws what qpdf throws.
double pageScanDpi(QPDFPageObjectHelper& page) {
    QPDFObjectHandle::Rectangle box = page.getCropBox().getArrayAsRectangle();
    box = {std::min(box.llx, box.urx), std::min(box.lly, box.ury), std::max(box.llx, box.urx),
           std::max(box.lly, box.ury)};
    if (!(box.urx - box.llx > 0) || !(box.ury - box.lly > 0)) {
        return 0;
    }
    PageDrawing drawing;
    ContentScanner scanner(drawing, page.getAttribute("/Resources", false), Affine{}, box, 0);
    page.parseContents(&scanner);
    return drawing.otherContent ? 0 : drawing.imageDpi;
}

}  // namespace

bool isPasswordError(const QString& message) {
    return message.endsWith(QLatin1String(kNeedsPassword)) || message.endsWith(QLatin1String(kWrongPassword));
}

int scanRenderDpi(double imageDpi, int dpi) {
    if (!(imageDpi > 0) || imageDpi >= dpi) {
        return dpi;
    }
    // The nearest whole DPI, or the next one up where the nearest loses more than 1% of the scan's pixels.
    double wanted = std::round(imageDpi);
    if (wanted < imageDpi * 0.99) {
        wanted = std::ceil(imageDpi);
    }
    return std::clamp(static_cast<int>(wanted), std::min(kMinDpi, dpi), dpi);
}

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

struct PdfDocument::Scans {
    std::unique_ptr<QPDF> qpdf;  // null where qpdf cannot read the file
    std::vector<QPDFPageObjectHelper> pages;
    std::vector<double> dpis;  // each page's scan DPI; negative: not looked at yet
};

PdfDocument::PdfDocument(const QString& path, const DocumentOptions& options)
    : path_(path), dpi_(options.dpi), password_(options.passwordFor(path)) {
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
        if (password_.isEmpty()) {
            fail(name, kNeedsPassword);
        }
        // Older encryption takes Latin-1 passwords, AES-256 takes UTF-8.
        const QByteArray utf8 = password_.toUtf8();
        const QByteArray latin1 = password_.toLatin1();
        // unlock() answers whether the document is still locked.
        const bool locked =
            document_->unlock(utf8, utf8) && (latin1 == utf8 || document_->unlock(latin1, latin1));
        if (locked || document_->isLocked()) {
            fail(name, kWrongPassword);
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

double PdfDocument::scanDpi(int index) {
    checkPageIndex(index);
    if (!scans_) {
        // Opened once; where qpdf cannot read what poppler did, every page is taken for no scan.
        scans_ = std::make_unique<Scans>();
        const QByteArray file = QFile::encodeName(path_);
        std::vector<QByteArray> passwords = {password_.toUtf8()};
        if (password_.toLatin1() != passwords.front()) {
            passwords.push_back(password_.toLatin1());
        }
        for (const QByteArray& password : passwords) {
            try {
                auto qpdf = std::make_unique<QPDF>();
                qpdf->setSuppressWarnings(true);
                qpdf->processFile(file.constData(), password.constData());
                std::vector<QPDFPageObjectHelper> pages = QPDFPageDocumentHelper(*qpdf).getAllPages();
                if (pages.size() == static_cast<size_t>(pageCount_)) {
                    scans_->qpdf = std::move(qpdf);
                    scans_->pages = std::move(pages);
                }
                break;
            } catch (const std::exception&) {
            }
        }
        scans_->dpis.assign(static_cast<size_t>(pageCount_), scans_->qpdf ? -1.0 : 0.0);
    }
    double& dpi = scans_->dpis[static_cast<size_t>(index)];
    if (dpi < 0) {
        try {
            dpi = pageScanDpi(scans_->pages[static_cast<size_t>(index)]);
        } catch (const std::exception&) {
            dpi = 0;
        }
    }
    return dpi;
}

int PdfDocument::wantedDpi(int index) {
    return scanRenderDpi(scanDpi(index), dpi_);
}

int PdfDocument::renderDpi(const Poppler::Page& page, int index) {
    const QSizeF points = page.pageSizeF();
    const int dpi = fittingDpi(points, wantedDpi(index));
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
    const int dpi = fittingDpi(points, wantedDpi(index));
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
