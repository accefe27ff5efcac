#include "image-loader.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "error.h"

namespace folio {

namespace {

enum class Format { png, jpeg, tiff, bmp, webp };

struct Size {
    int64_t width = 0;
    int64_t height = 0;
};

bool starts_with(std::span<const uint8_t> bytes, size_t offset, std::string_view magic) {
    return bytes.size() >= offset + magic.size() &&
           std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

std::optional<Format> sniff_format(std::span<const uint8_t> bytes) {
    if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n")) {
        return Format::png;
    }
    if (starts_with(bytes, 0, "\xff\xd8\xff")) {
        return Format::jpeg;
    }
    if (starts_with(bytes, 0, std::string_view("II*\0", 4)) ||
        starts_with(bytes, 0, std::string_view("MM\0*", 4))) {
        return Format::tiff;
    }
    if (starts_with(bytes, 0, "BM")) {
        return Format::bmp;
    }
    if (starts_with(bytes, 0, "RIFF") && starts_with(bytes, 8, "WEBP")) {
        return Format::webp;
    }
    return std::nullopt;
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

std::optional<Size> jpeg_size(std::span<const uint8_t> bytes) {
    size_t pos = 2;
    while (pos < bytes.size()) {
        if (bytes[pos] != 0xff) {
            return std::nullopt;
        }
        while (pos < bytes.size() && bytes[pos] == 0xff) {
            ++pos;
        }
        if (pos >= bytes.size()) {
            return std::nullopt;
        }
        const uint8_t marker = bytes[pos++];
        if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
            continue;  // markers without a payload
        }
        const auto length = read_uint(bytes, pos, 2, true);
        if (!length || *length < 2) {
            return std::nullopt;
        }
        const bool start_of_frame =
            marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
        if (start_of_frame) {
            const auto size =
                make_size(read_uint(bytes, pos + 5, 2, true), read_uint(bytes, pos + 3, 2, true));
            // A height of 0 is defined later in the stream (DNL); leave it to the decoder.
            return size && size->height > 0 ? size : std::nullopt;
        }
        if (marker == 0xd9 || marker == 0xda) {
            return std::nullopt;
        }
        pos += *length;
    }
    return std::nullopt;
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

// Size of the first image (IFD) of a classic TIFF file.
std::optional<Size> tiff_size(std::span<const uint8_t> bytes) {
    const bool big_endian = bytes[0] == 'M';
    const auto ifd = read_uint(bytes, 4, 4, big_endian);
    if (!ifd) {
        return std::nullopt;
    }
    const auto n_entries = read_uint(bytes, *ifd, 2, big_endian);
    if (!n_entries) {
        return std::nullopt;
    }
    std::optional<uint32_t> width;
    std::optional<uint32_t> height;
    for (uint32_t i = 0; i < *n_entries; ++i) {
        const size_t entry = size_t{*ifd} + 2 + size_t{i} * 12;
        const auto tag = read_uint(bytes, entry, 2, big_endian);
        const auto type = read_uint(bytes, entry + 2, 2, big_endian);
        if (!tag || !type) {
            return std::nullopt;
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
    return make_size(width, height);
}

std::optional<Size> header_size(Format format, std::span<const uint8_t> bytes) {
    switch (format) {
        case Format::png:
            return png_size(bytes);
        case Format::jpeg:
            return jpeg_size(bytes);
        case Format::tiff:
            return tiff_size(bytes);
        case Format::bmp:
            return bmp_size(bytes);
        case Format::webp:
            return webp_size(bytes);
    }
    return std::nullopt;
}

}  // namespace

Image decode_image(std::span<const uint8_t> bytes, std::string_view name) {
    if (bytes.empty()) {
        fail(name, ": the file is empty");
    }
    if (static_cast<int64_t>(bytes.size()) > kMaxImageFileBytes) {
        fail(name, ": ", bytes.size(), " bytes is more than the limit of ", kMaxImageFileBytes,
             " bytes for an image file");
    }
    const auto format = sniff_format(bytes);
    if (!format) {
        fail(name, ": not a supported image file (PNG, JPEG, TIFF, BMP or WebP)");
    }
    if (const auto size = header_size(*format, bytes)) {
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
    if (decoded.type() != CV_8UC3) {
        fail(name, ": the decoder returned pixels of OpenCV type ", decoded.type(), ", expected 8-bit BGR");
    }
    check_image_size(decoded.cols, decoded.rows, name);

    Image image = make_image(decoded.cols, decoded.rows);
    cv::Mat rgb(image.height, image.width, CV_8UC3, image.rgb.data());
    cv::cvtColor(decoded, rgb, cv::COLOR_BGR2RGB);
    return image;
}

Image load_image(const std::filesystem::path& path) {
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
    return decode_image(bytes, name);
}

}  // namespace folio
