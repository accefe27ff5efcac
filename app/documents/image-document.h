// Image files as documents: PNG, JPEG, BMP and WebP as one page, TIFF with a page per image in the file. The
// headers are read when the document opens; each page is decoded when it is asked for.
#pragma once

#include <QSize>
#include <QString>
#include <vector>

#include "app/documents/document-source.h"
#include "app/images/image-loader.h"

namespace folio {

class ImageDocument final : public DocumentSource {
public:
    // Reads the file's headers. Throws folio::Error naming the file where it cannot be read, is not a
    // supported image, or is a single image over the engine's pixel limit (such a page of a multi-page file
    // fails alone, when it is rendered).
    explicit ImageDocument(const QString& path);

    QString path() const override { return path_; }
    DocumentKind kind() const override { return DocumentKind::Image; }
    int pageCount() const override { return static_cast<int>(sizes_.size()); }
    QSize pageSizeHint(int index) override;
    RenderedPage renderPage(int index) override;

    ImageFormat format() const { return format_; }

private:
    QString path_;
    ImageFormat format_ = ImageFormat::png;
    std::vector<QSize> sizes_;  // from the headers; invalid where they do not say
};

}  // namespace folio
