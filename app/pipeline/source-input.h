// Documents on disk as the pipeline reads them: a DocumentSource (PDF or image) with a page range.
#pragma once

#include <QStringList>

#include "app/documents/document-source.h"
#include "app/documents/page-range.h"
#include "app/pipeline/page-input.h"

namespace folio {

// Opens a file as a DocumentSource; throws folio::Error naming the file when it cannot.
using SourceOpen = std::function<std::unique_ptr<DocumentSource>(const QString& path)>;

// Opens each path with `open`, its pages narrowed to the range; notes about parts of the range beyond a
// document's last page go to `notes` when given (called on the pipeline's reading thread).
DocumentOpener sourceOpener(SourceOpen open, PageRange range, std::function<void(const QString&)> notes = {});

// The same with openDocument and the options: PDFs and images (the caller links folio-documents).
inline DocumentOpener sourceOpener(DocumentOptions options, PageRange range,
                                   std::function<void(const QString&)> notes = {}) {
    return sourceOpener(
        [options = std::move(options)](const QString& path) { return openDocument(path, options); },
        std::move(range), std::move(notes));
}

}  // namespace folio
