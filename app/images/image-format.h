// Image file formats Folio decodes, told from a file's first bytes without decoding it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace folio {

enum class ImageFormat { png, jpeg, tiff, bmp, webp };

// The format of an image file from its first bytes; nullopt for anything else.
std::optional<ImageFormat> sniff_image_format(std::span<const uint8_t> bytes);

// "PNG", "JPEG", "TIFF", "BMP" or "WebP".
const char* image_format_name(ImageFormat format);

}  // namespace folio
