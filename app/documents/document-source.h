// Pages from a document file, rendered or decoded one at a time when the pipeline asks for them (PDFs through
// poppler, images through OpenCV's codecs), so that a long document is read with bounded memory.
#pragma once

#include <QByteArray>
#include <QHash>
#include <QImage>
#include <QSize>
#include <QString>
#include <memory>

namespace folio {

// PDF pages are rendered at this resolution unless told otherwise.
inline constexpr int kDefaultDpi = 200;
inline constexpr int kMinDpi = 18;
inline constexpr int kMaxDpi = 2400;

struct DocumentOptions {
    int dpi = kDefaultDpi;  // PDF rendering resolution, kMinDpi..kMaxDpi
    QString password;       // opens encrypted PDFs; empty: none
    // Passwords given for single files (the desktop app asks for a file's when it is locked), by path; a
    // file's own comes before `password`.
    QHash<QString, QString> passwords;

    QString passwordFor(const QString& path) const { return passwords.value(path, password); }
};

enum class DocumentKind { Pdf, Image };

struct RenderedPage {
    QImage image;  // Format_RGB888
    int dpi = 0;   // PDF pages: the resolution rendered at (lower than asked for pages too large for it); 0
                   // for images
};

// One document's pages. Thread-compatible: a source may move between threads but is used by one at a time;
// different sources may be used from different threads at once.
class DocumentSource {
public:
    DocumentSource() = default;
    virtual ~DocumentSource() = default;
    DocumentSource(const DocumentSource&) = delete;
    DocumentSource& operator=(const DocumentSource&) = delete;

    virtual QString path() const = 0;
    virtual DocumentKind kind() const = 0;
    virtual int pageCount() const = 0;

    // The size renderPage(index) gives, in pixels, as far as it is known without rendering or decoding: exact
    // for PDF pages, from the headers for images; an invalid QSize where the headers do not say. Throws
    // folio::Error naming the file for an index out of range or a PDF page poppler cannot read.
    virtual QSize pageSizeHint(int index) = 0;

    // Page `index` (0-based) as RGB888. Throws folio::Error naming the file and the page where it cannot be
    // rendered or decoded; the other pages stay readable.
    virtual RenderedPage renderPage(int index) = 0;

    // The page's index as PageResult::pageIndex records it: -1 for a single image (PaddleOCR's null), the
    // index for PDF pages and the pages of a multi-page TIFF.
    int resultPageIndex(int index) const {
        return kind() == DocumentKind::Image && pageCount() == 1 ? -1 : index;
    }

protected:
    // Throws folio::Error naming the file where `index` is not one of its pages.
    void checkPageIndex(int index) const;
};

// Opens the file at `path` as a PDF or an image, by its first bytes. Throws folio::Error naming the file
// where it is missing, unreadable, not a supported type (saying what it is), damaged, or an encrypted PDF
// that the options' password does not open.
std::unique_ptr<DocumentSource> openDocument(const QString& path, const DocumentOptions& options = {});

}  // namespace folio
