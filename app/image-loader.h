// Image files to folio::Image: PNG, JPEG, TIFF, BMP and WebP through OpenCV's codecs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "image.h"

namespace folio {

// Files larger than this are refused before they are read.
inline constexpr int64_t kMaxImageFileBytes = int64_t{1} << 30;

// Reads and decodes an image file into 8-bit RGB: grey is replicated, alpha dropped (as Pillow's
// convert("RGB") does), 16-bit samples reduced to their high byte, EXIF orientation applied; the first
// page or frame of multi-image files. Throws folio::Error naming the file for a missing, empty,
// oversized, unsupported or undecodable file, and for images of more than kMaxImagePixels pixels
// (refused from the header, before decoding, where the header can be read).
Image load_image(const std::filesystem::path& path);

// The same for a file already in memory; `name` identifies it in errors.
Image decode_image(std::span<const uint8_t> bytes, std::string_view name);

}  // namespace folio
