#include "app/documents/page-image.h"

#include <cstring>

#include "engine/common/error.h"

namespace folio {

Image toEngineImage(const QImage& image) {
    if (image.isNull()) {
        fail("page image: the image is null");
    }
    if (image.format() != QImage::Format_RGB888) {
        return toEngineImage(image.convertToFormat(QImage::Format_RGB888));
    }
    check_image_size(image.width(), image.height(), "page image");
    Image out;
    out.width = image.width();
    out.height = image.height();
    const auto rowBytes = static_cast<size_t>(out.width) * 3;
    const auto stride = static_cast<size_t>(image.bytesPerLine());
    out.rgb.resize(rowBytes * static_cast<size_t>(out.height));
    const uchar* bits = image.constBits();
    if (stride == rowBytes) {
        std::memcpy(out.rgb.data(), bits, out.rgb.size());
    } else {
        for (int y = 0; y < out.height; ++y) {
            std::memcpy(out.rgb.data() + rowBytes * static_cast<size_t>(y),
                        bits + stride * static_cast<size_t>(y), rowBytes);
        }
    }
    return out;
}

QImage toQImage(const Image& image) {
    check_image(image, "engine image");
    QImage out(image.width, image.height, QImage::Format_RGB888);
    if (out.isNull()) {
        fail("engine image: cannot allocate ", image.width, "x", image.height, " pixels");
    }
    const auto rowBytes = static_cast<size_t>(image.width) * 3;
    for (int y = 0; y < image.height; ++y) {
        std::memcpy(out.scanLine(y), image.rgb.data() + rowBytes * static_cast<size_t>(y), rowBytes);
    }
    return out;
}

}  // namespace folio
