// What the document pipeline reads: documents opened one at a time, their pages rendered one at a time on
// the pipeline's reading thread, so that a long document is processed with bounded memory.
#pragma once

#include <QImage>
#include <QString>
#include <functional>
#include <memory>

namespace folio {

// One page as rendered or decoded.
struct PageInput {
    QImage image;        // RGB888
    int pageIndex = -1;  // 0-based page of a PDF or multi-page file; -1 for a single image
    int dpi = 0;         // what a PDF page was rendered at; 0 for images
    double renderMs = 0;
};

// One input document, used from one thread.
class DocumentInput {
public:
    virtual ~DocumentInput() = default;
    virtual QString path() const = 0;
    virtual int pageCount() const = 0;      // pages in the file
    virtual int selectedCount() const = 0;  // pages to process (after a page range)
    // The 0-based page in the file of the i-th selected page; -1 for a single image.
    virtual int pageIndex(int i) const = 0;
    // The i-th selected page; throws folio::Error naming the file and page when it cannot be read.
    virtual PageInput page(int i) = 0;
};

// Opens a document for the pipeline; throws folio::Error naming the file when it cannot be opened.
using DocumentOpener = std::function<std::unique_ptr<DocumentInput>(const QString& path)>;

}  // namespace folio
