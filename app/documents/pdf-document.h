// PDF documents through poppler-qt6: pages counted and sized without rendering, each page rendered on demand
// at the chosen resolution, or at the largest that keeps it within the engine's image limits.
#pragma once

#include <QSize>
#include <QSizeF>
#include <QString>
#include <memory>

#include "document-source.h"

namespace Poppler {
class Document;
class Page;
}  // namespace Poppler

namespace folio {

// Longest side of a rendered page, in pixels (the engine's image limit is this squared).
inline constexpr int kMaxPageSide = 16384;

// The size in pixels of a page of `points` (1/72 inch) rendered at `dpi`, rounded as poppler sizes its
// output.
QSize pagePixelSize(QSizeF points, int dpi);

// `dpi`, or the largest lower whole DPI at which a page of `points` stays within kMaxPageSide a side and
// kMaxImagePixels; 0 where even 1 DPI does not.
int fittingDpi(QSizeF points, int dpi);

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

    // The resolution renderPage(index) uses: the options' DPI, or lower for a page too large for it.
    int renderDpi(int index);

    // The text poppler extracts from the page (for checks; the pipeline reads pages as images).
    QString pageText(int index);

private:
    // Throws folio::Error naming the file where poppler cannot read the page.
    std::unique_ptr<Poppler::Page> page(int index);
    int renderDpi(const Poppler::Page& page, int index) const;

    QString path_;
    int dpi_ = kDefaultDpi;
    int pageCount_ = 0;
    std::unique_ptr<Poppler::Document> document_;
};

}  // namespace folio
