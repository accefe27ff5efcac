// PDF documents through poppler-qt6: pages counted and sized without rendering, each page rendered on demand
// at the chosen resolution, or at the largest that keeps it within the engine's image limits.
//
// A scanned page renders at its scan's own resolution where that is lower than the chosen one: more pixels
// than the scan has add no information, only recognition time. qpdf reads what the page's content draws
// (forms included): the page is a scan where it draws one or more images, every one of them covering most of
// the page (kScanCoverage of the crop box), and no visible text (invisible text, as OCR layers write it, does
// not count). Its image resolution is the highest of the images' pixels over their drawn size in inches, on
// either axis; the page renders at the whole DPI nearest that (the next one up where the nearest is more than
// 1% below it), never above the chosen DPI, never below kMinDpi, and within the engine's image limits like
// every page. Any other page, and any page qpdf cannot read (a damaged file poppler repairs, a content stream
// too large to look through), renders at the chosen DPI.
#pragma once

#include <QSize>
#include <QSizeF>
#include <QString>
#include <memory>

#include "app/documents/document-source.h"

namespace Poppler {
class Document;
class Page;
}  // namespace Poppler

namespace folio {

// Longest side of a rendered page, in pixels (the engine's image limit is this squared).
inline constexpr int kMaxPageSide = 16384;

// The share of a page's crop box each image of a scanned page covers.
inline constexpr double kScanCoverage = 0.85;

// The size in pixels of a page of `points` (1/72 inch) rendered at `dpi`, rounded as poppler sizes its
// output.
QSize pagePixelSize(QSizeF points, int dpi);

// `dpi`, or the largest lower whole DPI at which a page of `points` stays within kMaxPageSide a side and
// kMaxImagePixels; 0 where even 1 DPI does not.
int fittingDpi(QSizeF points, int dpi);

// Whether an error opening a PDF says it is locked: it needs a password, or the one given does not open it.
bool isPasswordError(const QString& message);

// The DPI a scanned page renders at for a requested `dpi`, its scan having `imageDpi` (0: no scan), before
// the engine's image limits.
int scanRenderDpi(double imageDpi, int dpi);

class PdfDocument final : public DocumentSource {
public:
    // Opens and checks the PDF at `path`. Throws folio::Error naming the file where it cannot be read, is not
    // a PDF, is damaged beyond repair, has no pages, or is encrypted and the options' password does not open
    // it.
    explicit PdfDocument(const QString& path, const DocumentOptions& options = {});
    ~PdfDocument() override;

    QString path() const override { return path_; }
    DocumentKind kind() const override { return DocumentKind::Pdf; }
    int pageCount() const override { return pageCount_; }
    QSize pageSizeHint(int index) override;
    RenderedPage renderPage(int index) override;

    // The page's size in points as displayed (its rotation applied). Throws folio::Error for a page poppler
    // cannot read.
    QSizeF pageSizePoints(int index);

    // The resolution renderPage(index) uses: the options' DPI, or lower for a scanned page whose scan has
    // less, or for a page too large for it.
    int renderDpi(int index);

    // The resolution of the page's scan in DPI (see the rule above), unrounded; 0 where the page is no scan
    // or qpdf cannot read it. Throws folio::Error for an index out of range.
    double scanDpi(int index);

    // The text poppler extracts from the page (for checks; the pipeline reads pages as images).
    QString pageText(int index);

private:
    // Throws folio::Error naming the file where poppler cannot read the page.
    std::unique_ptr<Poppler::Page> page(int index);
    int renderDpi(const Poppler::Page& page, int index);
    // The options' DPI, or the lower one the page's scan has.
    int wantedDpi(int index);

    struct Scans;  // qpdf's view of the document, opened on first use, and the pages' scan DPIs found

    QString path_;
    int dpi_ = kDefaultDpi;
    QString password_;
    int pageCount_ = 0;
    std::unique_ptr<Poppler::Document> document_;
    std::unique_ptr<Scans> scans_;
};

}  // namespace folio
