#include "app/images/image-loader.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/mapped-file.h"

namespace folio {

namespace {

struct Size {
    int64_t width = 0;
    int64_t height = 0;
};

bool starts_with(std::span<const uint8_t> bytes, size_t offset, std::string_view magic) {
    return bytes.size() >= offset + magic.size() &&
           std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

// Bounds-checked little- and big-endian reads; nullopt past the end.
std::optional<uint32_t> read_uint(std::span<const uint8_t> bytes, size_t offset, size_t n_bytes,
                                  bool big_endian) {
    if (offset > bytes.size() || bytes.size() - offset < n_bytes) {
        return std::nullopt;
    }
    uint32_t value = 0;
    for (size_t i = 0; i < n_bytes; ++i) {
        const uint32_t byte = bytes[offset + (big_endian ? i : n_bytes - 1 - i)];
        value = (value << 8) | byte;
    }
    return value;
}

std::optional<Size> make_size(std::optional<uint32_t> width, std::optional<uint32_t> height) {
    if (!width || !height) {
        return std::nullopt;
    }
    return Size{*width, *height};
}

std::optional<Size> png_size(std::span<const uint8_t> bytes) {
    if (!starts_with(bytes, 12, "IHDR")) {
        return std::nullopt;
    }
    return make_size(read_uint(bytes, 16, 4, true), read_uint(bytes, 20, 4, true));
}

// EXIF orientation (1..8) from an APP1 segment's payload; nullopt where it has none.
std::optional<int> exif_orientation(std::span<const uint8_t> app1) {
    if (!starts_with(app1, 0, std::string_view("Exif\0\0", 6))) {
        return std::nullopt;
    }
    const auto tiff = app1.subspan(6);
    bool big_endian = false;
    if (starts_with(tiff, 0, "MM")) {
        big_endian = true;
    } else if (!starts_with(tiff, 0, "II")) {
        return std::nullopt;
    }
    const auto ifd = read_uint(tiff, 4, 4, big_endian);
    const auto n_entries = ifd ? read_uint(tiff, *ifd, 2, big_endian) : std::nullopt;
    if (!n_entries) {
        return std::nullopt;
    }
    for (uint32_t i = 0; i < *n_entries; ++i) {
        const size_t entry = size_t{*ifd} + 2 + size_t{i} * 12;
        const auto tag = read_uint(tiff, entry, 2, big_endian);
        if (!tag) {
            return std::nullopt;
        }
        if (*tag == 0x0112) {
            const auto value = read_uint(tiff, entry + 8, 2, big_endian);
            if (value && *value >= 1 && *value <= 8) {
                return static_cast<int>(*value);
            }
            return std::nullopt;
        }
    }
    return std::nullopt;
}

struct JpegHeader {
    std::optional<Size> size;  // as stored, before orientation
    int orientation = 1;
};

JpegHeader jpeg_header(std::span<const uint8_t> bytes) {
    JpegHeader header;
    size_t pos = 2;
    while (pos < bytes.size()) {
        if (bytes[pos] != 0xff) {
            return header;
        }
        while (pos < bytes.size() && bytes[pos] == 0xff) {
            ++pos;
        }
        if (pos >= bytes.size()) {
            return header;
        }
        const uint8_t marker = bytes[pos++];
        if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
            continue;  // markers without a payload
        }
        const auto length = read_uint(bytes, pos, 2, true);
        if (!length || *length < 2) {
            return header;
        }
        const bool start_of_frame =
            marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
        if (start_of_frame) {
            const auto size =
                make_size(read_uint(bytes, pos + 5, 2, true), read_uint(bytes, pos + 3, 2, true));
            // A height of 0 is defined later in the stream (DNL); leave it to the decoder.
            if (size && size->height > 0) {
                header.size = size;
            }
            return header;
        }
        if (marker == 0xd9 || marker == 0xda) {
            return header;
        }
        if (marker == 0xe1 && pos + *length <= bytes.size()) {
            if (const auto orientation = exif_orientation(bytes.subspan(pos + 2, *length - 2))) {
                header.orientation = *orientation;
            }
        }
        pos += *length;
    }
    return header;
}

std::optional<Size> jpeg_size(std::span<const uint8_t> bytes) {
    return jpeg_header(bytes).size;
}

std::optional<Size> bmp_size(std::span<const uint8_t> bytes) {
    const auto header_bytes = read_uint(bytes, 14, 4, false);
    if (!header_bytes) {
        return std::nullopt;
    }
    if (*header_bytes == 12) {
        return make_size(read_uint(bytes, 18, 2, false), read_uint(bytes, 20, 2, false));
    }
    const auto width = read_uint(bytes, 18, 4, false);
    const auto height = read_uint(bytes, 22, 4, false);
    if (!width || !height) {
        return std::nullopt;
    }
    // Signed 32-bit fields; a negative height marks a top-down bitmap.
    const auto as_signed = [](uint32_t v) {
        return static_cast<int64_t>(v) - (v >= 0x80000000u ? (int64_t{1} << 32) : 0);
    };
    const int64_t h = as_signed(*height);
    return Size{as_signed(*width), h < 0 ? -h : h};
}

std::optional<Size> webp_size(std::span<const uint8_t> bytes) {
    if (starts_with(bytes, 12, "VP8X")) {
        const auto width = read_uint(bytes, 24, 3, false);
        const auto height = read_uint(bytes, 27, 3, false);
        if (!width || !height) {
            return std::nullopt;
        }
        return Size{int64_t{*width} + 1, int64_t{*height} + 1};
    }
    if (starts_with(bytes, 12, "VP8L")) {
        const auto bits = read_uint(bytes, 21, 4, false);
        if (!bits || !starts_with(bytes, 20, "\x2f")) {
            return std::nullopt;
        }
        return Size{int64_t{*bits & 0x3fff} + 1, int64_t{(*bits >> 14) & 0x3fff} + 1};
    }
    if (starts_with(bytes, 12, "VP8 ")) {
        if (!starts_with(bytes, 23, "\x9d\x01\x2a")) {
            return std::nullopt;
        }
        const auto width = read_uint(bytes, 26, 2, false);
        const auto height = read_uint(bytes, 28, 2, false);
        if (!width || !height) {
            return std::nullopt;
        }
        return Size{*width & 0x3fff, *height & 0x3fff};
    }
    return std::nullopt;
}

struct TiffImage {
    std::optional<Size> size;
    std::optional<uint32_t> next;  // the next image's offset; nullopt or 0 at the end of the chain
};

// One image (IFD) of a classic TIFF file at `ifd`; nullopt where its entry count lies outside the file.
std::optional<TiffImage> tiff_image(std::span<const uint8_t> bytes, uint32_t ifd, bool big_endian) {
    const auto n_entries = read_uint(bytes, ifd, 2, big_endian);
    if (!n_entries) {
        return std::nullopt;
    }
    std::optional<uint32_t> width;
    std::optional<uint32_t> height;
    for (uint32_t i = 0; i < *n_entries; ++i) {
        const size_t entry = size_t{ifd} + 2 + size_t{i} * 12;
        const auto tag = read_uint(bytes, entry, 2, big_endian);
        const auto type = read_uint(bytes, entry + 2, 2, big_endian);
        if (!tag || !type) {
            return TiffImage{};
        }
        if (*tag > 257) {
            break;  // entries are sorted by tag
        }
        if (*tag != 256 && *tag != 257) {
            continue;
        }
        std::optional<uint32_t> value;
        if (*type == 3) {
            value = read_uint(bytes, entry + 8, 2, big_endian);
        } else if (*type == 4) {
            value = read_uint(bytes, entry + 8, 4, big_endian);
        }
        (*tag == 256 ? width : height) = value;
    }
    return TiffImage{make_size(width, height),
                     read_uint(bytes, size_t{ifd} + 2 + size_t{*n_entries} * 12, 4, big_endian)};
}

// Sizes of a classic TIFF file's images, following the chain of IFDs until it ends, loops, leaves the file
// or reaches kMaxImagePages; the decoder reports what is wrong with a page that cannot be read.
std::vector<std::optional<Size>> tiff_sizes(std::span<const uint8_t> bytes) {
    const bool big_endian = bytes[0] == 'M';
    std::vector<std::optional<Size>> sizes;
    std::set<uint32_t> seen;
    auto offset = read_uint(bytes, 4, 4, big_endian);
    while (offset && *offset != 0 && sizes.size() < static_cast<size_t>(kMaxImagePages)) {
        if (!seen.insert(*offset).second) {
            break;
        }
        const auto image = tiff_image(bytes, *offset, big_endian);
        if (!image) {
            break;
        }
        sizes.push_back(image->size);
        offset = image->next;
    }
    return sizes;
}

// Size of the first image (IFD) of a classic TIFF file.
std::optional<Size> tiff_size(std::span<const uint8_t> bytes) {
    const auto offset = read_uint(bytes, 4, 4, bytes[0] == 'M');
    if (!offset) {
        return std::nullopt;
    }
    const auto image = tiff_image(bytes, *offset, bytes[0] == 'M');
    return image ? image->size : std::nullopt;
}

std::optional<Size> header_size(ImageFormat format, std::span<const uint8_t> bytes) {
    switch (format) {
        case ImageFormat::png:
            return png_size(bytes);
        case ImageFormat::jpeg:
            return jpeg_size(bytes);
        case ImageFormat::tiff:
            return tiff_size(bytes);
        case ImageFormat::bmp:
            return bmp_size(bytes);
        case ImageFormat::webp:
            return webp_size(bytes);
    }
    return std::nullopt;
}

void check_file_bytes(std::span<const uint8_t> bytes, std::string_view name) {
    if (bytes.empty()) {
        fail(name, ": the file is empty");
    }
    if (static_cast<int64_t>(bytes.size()) > kMaxImageFileBytes) {
        fail(name, ": ", bytes.size(), " bytes is more than the limit of ", kMaxImageFileBytes,
             " bytes for an image file");
    }
}

ImageFormat checked_format(std::span<const uint8_t> bytes, std::string_view name) {
    check_file_bytes(bytes, name);
    const auto format = sniff_image_format(bytes);
    if (!format) {
        fail(name, ": not a supported image file (PNG, JPEG, TIFF, BMP or WebP)");
    }
    return *format;
}

// Converts OpenCV's decoded BGR pixels into the caller's buffer.
void write_rgb(const cv::Mat& decoded, std::string_view name, const RgbAllocator& allocate) {
    if (decoded.type() != CV_8UC3) {
        fail(name, ": the decoder returned pixels of OpenCV type ", decoded.type(), ", expected 8-bit BGR");
    }
    check_image_size(decoded.cols, decoded.rows, name);
    const RgbTarget target = allocate(decoded.cols, decoded.rows);
    if (target.data == nullptr || target.stride < static_cast<size_t>(decoded.cols) * 3) {
        fail(name, ": no buffer for ", decoded.cols, "x", decoded.rows, " pixels");
    }
    cv::Mat rgb(decoded.rows, decoded.cols, CV_8UC3, target.data, target.stride);
    cv::cvtColor(decoded, rgb, cv::COLOR_BGR2RGB);
    if (rgb.data != target.data) {
        fail(name, ": the colour conversion did not write into the target buffer");
    }
}

RgbAllocator image_allocator(Image& image) {
    return [&image](int width, int height) {
        image = make_image(width, height);
        return RgbTarget{image.rgb.data(), static_cast<size_t>(width) * 3};
    };
}

std::vector<uint8_t> read_image_file(const std::filesystem::path& path) {
    const std::string name = path.string();
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (error || !std::filesystem::exists(status)) {
        fail(name, ": cannot open the file: ", error ? error.message() : "it does not exist");
    }
    if (!std::filesystem::is_regular_file(status)) {
        fail(name, ": not a regular file");
    }
    const auto n_bytes = std::filesystem::file_size(path, error);
    if (error) {
        fail(name, ": cannot read the file size: ", error.message());
    }
    if (n_bytes == 0) {
        fail(name, ": the file is empty");
    }
    if (n_bytes > static_cast<uintmax_t>(kMaxImageFileBytes)) {
        fail(name, ": ", n_bytes, " bytes is more than the limit of ", kMaxImageFileBytes,
             " bytes for an image file");
    }
    std::ifstream file(path, std::ios::binary);
    std::vector<uint8_t> bytes(static_cast<size_t>(n_bytes));
    if (!file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()))) {
        fail(name, ": cannot read the file (", n_bytes, " bytes expected)");
    }
    return bytes;
}

}  // namespace

ImageFileInfo probe_image(std::span<const uint8_t> bytes, std::string_view name) {
    ImageFileInfo info;
    info.format = checked_format(bytes, name);
    std::vector<std::optional<Size>> sizes;
    if (info.format == ImageFormat::tiff) {
        sizes = tiff_sizes(bytes);
    }
    if (sizes.empty()) {
        sizes.push_back(header_size(info.format, bytes));
    }
    const bool turned = info.format == ImageFormat::jpeg && jpeg_header(bytes).orientation >= 5;
    for (size_t i = 0; i < sizes.size(); ++i) {
        ImageFileInfo::PageSize page;
        if (const auto& size = sizes[i]) {
            // A page of a multi-page file is checked when it is decoded, so that the others stay readable.
            if (sizes.size() == 1) {
                check_image_size(size->width, size->height, name);
            }
            page = turned ? ImageFileInfo::PageSize{size->height, size->width}
                          : ImageFileInfo::PageSize{size->width, size->height};
        }
        info.pages.push_back(page);
    }
    return info;
}

void decode_image_into(std::span<const uint8_t> bytes, std::string_view name, const RgbAllocator& allocate) {
    const ImageFormat format = checked_format(bytes, name);
    if (const auto size = header_size(format, bytes)) {
        check_image_size(size->width, size->height, name);
    }

    cv::Mat decoded;
    try {
        const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<uint8_t*>(bytes.data()));
        decoded = cv::imdecode(buffer, cv::IMREAD_COLOR);
    } catch (const cv::Exception& e) {
        fail(name, ": cannot decode the image: ", e.what());
    }
    if (decoded.empty()) {
        fail(name, ": cannot decode the image (damaged or truncated file, or an unsupported variant)");
    }
    write_rgb(decoded, name, allocate);
}

Image decode_image(std::span<const uint8_t> bytes, std::string_view name) {
    Image image;
    decode_image_into(bytes, name, image_allocator(image));
    return image;
}

Image load_image(const std::filesystem::path& path) {
    const std::vector<uint8_t> bytes = read_image_file(path);
    return decode_image(bytes, path.string());
}

void load_image_page_into(const std::filesystem::path& path, int page, const RgbAllocator& allocate) {
    const std::string name = path.string();
    if (page < 0) {
        fail(name, ": page ", page, " does not exist");
    }
    const MappedFile file(path);
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(file.data()), file.size());
    const ImageFileInfo info = probe_image(bytes, name);
    if (static_cast<size_t>(page) >= info.pages.size()) {
        fail(name, ": page ", page + 1, " does not exist (the file has ", info.pages.size(),
             info.pages.size() == 1 ? " page)" : " pages)");
    }
    if (info.pages.size() == 1) {
        decode_image_into(bytes, name, allocate);
        return;
    }
    const std::string page_name = name + " page " + std::to_string(page + 1);
    const ImageFileInfo::PageSize& size = info.pages[static_cast<size_t>(page)];
    if (size.width != 0 || size.height != 0) {
        check_image_size(size.width, size.height, page_name);
    }
    std::vector<cv::Mat> decoded;
    try {
        if (!cv::imreadmulti(name, decoded, page, 1, cv::IMREAD_COLOR)) {
            decoded.clear();
        }
    } catch (const cv::Exception& e) {
        fail(page_name, ": cannot decode the image: ", e.what());
    }
    if (decoded.size() != 1 || decoded[0].empty()) {
        fail(page_name, ": cannot decode the image (damaged or truncated file, or an unsupported variant)");
    }
    write_rgb(decoded[0], page_name, allocate);
}

std::vector<Image> load_image_pages(const std::filesystem::path& path) {
    size_t n_pages = 0;
    {
        const MappedFile file(path);
        const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(file.data()), file.size());
        n_pages = probe_image(bytes, path.string()).pages.size();
    }
    std::vector<Image> pages(n_pages);
    for (size_t i = 0; i < n_pages; ++i) {
        load_image_page_into(path, static_cast<int>(i), image_allocator(pages[i]));
    }
    return pages;
}

}  // namespace folio
