// Image files to folio::Image: PNG, JPEG, TIFF (every page of a multi-page file), BMP and WebP through
// OpenCV's codecs, each image's size checked from its header before it is decoded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "app/images/image-format.h"
#include "engine/image/image.h"

namespace folio {

// Files larger than this are refused before they are read.
inline constexpr int64_t kMaxImageFileBytes = int64_t{1} << 30;

// Pages read from one multi-page TIFF file at most.
inline constexpr int kMaxImagePages = 65536;

// What an image file's headers say without decoding it.
struct ImageFileInfo {
    ImageFormat format = ImageFormat::png;
    struct PageSize {
        int64_t width = 0;  // 0 where the header could not be read; the decoder decides
        int64_t height = 0;
    };
    // One entry per page: every image (IFD) of a TIFF file, one for the other formats. Sizes are as
    // displayed: a JPEG's EXIF orientation that turns the image by 90 degrees swaps them.
    std::vector<PageSize> pages;
};

// Reads an image file's headers. Throws folio::Error naming the file for an empty, oversized or unsupported
// file, and for a single image of more than kMaxImagePixels pixels (the pages of a multi-page file are
// checked when they are decoded). A TIFF's chain of images is followed as far as it can be read.
ImageFileInfo probe_image(std::span<const uint8_t> bytes, std::string_view name);

// Where a decoder writes 8-bit RGB pixels: rows `stride` bytes apart from `data`.
struct RgbTarget {
    uint8_t* data = nullptr;
    size_t stride = 0;
};

// Called once a page's decoded size is known and checked; returns a buffer of that size (a QImage's, for
// example), so that the pixels are written where they are used without another copy.
using RgbAllocator = std::function<RgbTarget(int width, int height)>;

// Reads and decodes an image file into 8-bit RGB: grey is replicated, alpha dropped (as Pillow's
// convert("RGB") does), 16-bit samples reduced to their high byte, EXIF orientation applied; the first
// page or frame of multi-image files. Throws folio::Error naming the file for a missing, empty,
// oversized, unsupported or undecodable file, and for images of more than kMaxImagePixels pixels
// (refused from the header, before decoding, where the header can be read).
Image load_image(const std::filesystem::path& path);

// The same for a file already in memory; `name` identifies it in errors.
Image decode_image(std::span<const uint8_t> bytes, std::string_view name);

// decode_image into a buffer from `allocate`.
void decode_image_into(std::span<const uint8_t> bytes, std::string_view name, const RgbAllocator& allocate);

// Decodes page `page` (0-based) of a multi-page TIFF file as load_image decodes the first; the pages before
// it are skipped without decoding. Throws folio::Error naming the file and the page where it cannot be
// decoded.
void load_image_page_into(const std::filesystem::path& path, int page, const RgbAllocator& allocate);

// Every page of an image file, decoded as load_image decodes the first (one for single-page formats).
std::vector<Image> load_image_pages(const std::filesystem::path& path);

}  // namespace folio
