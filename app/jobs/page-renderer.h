// A page image rendered again from its document, for pages whose image the app let go of to bound its memory:
// a PDF page at the resolution it was first rendered at (PageResult::dpi, which the renderer's own limits
// never lower further), an image decoded again. The result has the size the page had, so that its boxes still
// fit. Used on one thread at a time.
#pragma once

#include <QImage>
#include <QString>
#include <map>
#include <memory>

#include "app/documents/document-source.h"
#include "app/documents/page-result.h"

namespace folio {

class PageRenderer {
public:
    // options: the passwords of encrypted PDFs (its DPI is each page's own).
    explicit PageRenderer(DocumentOptions options = {}) : options_(std::move(options)) {}

    // The page's image; throws folio::Error naming the file and the page where it cannot be rendered again or
    // comes out at another size (the file changed since it was read).
    QImage render(const PageResult& page);

private:
    DocumentOptions options_;
    std::map<std::pair<QString, int>, std::unique_ptr<DocumentSource>> sources_;  // by path and DPI
};

}  // namespace folio
