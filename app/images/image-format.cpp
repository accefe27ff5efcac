#include "app/images/image-format.h"

#include <cstring>
#include <string_view>

namespace folio {

namespace {

bool starts_with(std::span<const uint8_t> bytes, size_t offset, std::string_view magic) {
    return bytes.size() >= offset + magic.size() &&
           std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

}  // namespace

std::optional<ImageFormat> sniff_image_format(std::span<const uint8_t> bytes) {
    if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n")) {
        return ImageFormat::png;
    }
    if (starts_with(bytes, 0, "\xff\xd8\xff")) {
        return ImageFormat::jpeg;
    }
    if (starts_with(bytes, 0, std::string_view("II*\0", 4)) ||
        starts_with(bytes, 0, std::string_view("MM\0*", 4))) {
        return ImageFormat::tiff;
    }
    if (starts_with(bytes, 0, "BM")) {
        return ImageFormat::bmp;
    }
    if (starts_with(bytes, 0, "RIFF") && starts_with(bytes, 8, "WEBP")) {
        return ImageFormat::webp;
    }
    return std::nullopt;
}

const char* image_format_name(ImageFormat format) {
    switch (format) {
        case ImageFormat::png:
            return "PNG";
        case ImageFormat::jpeg:
            return "JPEG";
        case ImageFormat::tiff:
            return "TIFF";
        case ImageFormat::bmp:
            return "BMP";
        case ImageFormat::webp:
            return "WebP";
    }
    return "image";
}

}  // namespace folio
