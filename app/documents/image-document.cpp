#include "app/documents/image-document.h"

#include <QFile>
#include <filesystem>
#include <limits>
#include <span>

#include "engine/common/error.h"
#include "engine/common/mapped-file.h"

namespace folio {

namespace {

std::filesystem::path nativePath(const QString& path) {
    return std::filesystem::path(QFile::encodeName(path).toStdString());
}

}  // namespace

ImageDocument::ImageDocument(const QString& path) : path_(path) {
    const std::filesystem::path file = nativePath(path);
    const MappedFile mapped(file);
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(mapped.data()), mapped.size());
    const ImageFileInfo info = probe_image(bytes, file.string());
    format_ = info.format;
    sizes_.reserve(info.pages.size());
    for (const ImageFileInfo::PageSize& page : info.pages) {
        const bool known = page.width > 0 && page.height > 0 &&
                           page.width <= std::numeric_limits<int>::max() &&
                           page.height <= std::numeric_limits<int>::max();
        sizes_.push_back(known ? QSize(static_cast<int>(page.width), static_cast<int>(page.height))
                               : QSize());
    }
}

QSize ImageDocument::pageSizeHint(int index) {
    checkPageIndex(index);
    return sizes_[static_cast<size_t>(index)];
}

RenderedPage ImageDocument::renderPage(int index) {
    checkPageIndex(index);
    QImage image;
    load_image_page_into(nativePath(path_), index, [this, &image, index](int width, int height) {
        image = QImage(width, height, QImage::Format_RGB888);
        if (image.isNull()) {
            fail(path_.toStdString(), ": page ", index + 1, ": cannot allocate ", width, "x", height,
                 " pixels");
        }
        return RgbTarget{image.bits(), static_cast<size_t>(image.bytesPerLine())};
    });
    return RenderedPage{std::move(image), 0};
}

}  // namespace folio
