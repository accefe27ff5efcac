#include "app/jobs/page-renderer.h"

#include "engine/common/error.h"

namespace folio {

QImage PageRenderer::render(const PageResult& page) {
    const std::pair<QString, int> key{page.inputPath, page.dpi};
    auto it = sources_.find(key);
    if (it == sources_.end()) {
        DocumentOptions options = options_;
        options.dpi = page.dpi > 0 ? page.dpi : kDefaultDpi;
        it = sources_.emplace(key, openDocument(page.inputPath, options)).first;
    }
    const int index = page.pageIndex < 0 ? 0 : page.pageIndex;
    QImage image = it->second->renderPage(index).image;
    if (image.width() != page.width || image.height() != page.height) {
        fail(page.inputPath.toStdString(), ", page ", index + 1, ": rendered again at ", image.width(), "x",
             image.height(), " pixels where it had ", page.width, "x", page.height,
             "; the file changed since it was read: run it again");
    }
    return image;
}

}  // namespace folio
