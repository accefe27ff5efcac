#include "app/documents/document-source.h"

#include "engine/common/error.h"

namespace folio {

void DocumentSource::checkPageIndex(int index) const {
    if (index < 0 || index >= pageCount()) {
        fail(path().toStdString(), ": page ", index + 1, " does not exist (the document has ", pageCount(),
             pageCount() == 1 ? " page)" : " pages)");
    }
}

}  // namespace folio
