// Documents on disk as the pipeline reads them: a DocumentSource (PDF or image) with a page range.
#pragma once

#include <QStringList>

#include "document-source.h"
#include "page-input.h"
#include "page-range.h"

namespace folio {

// Opens each path with openDocument and the options, its pages narrowed to the range; notes about parts of
// the range beyond a document's last page go to `notes` when given (called on the pipeline's reading
// thread).
DocumentOpener sourceOpener(DocumentOptions options, PageRange range,
                            std::function<void(const QString&)> notes = {});

}  // namespace folio
