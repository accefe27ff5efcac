// 8-bit RGB images as the engine receives them: decoded by the application, checked here.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace folio {

// Largest image the engine accepts, in pixels (16384 x 16384); decoders refuse anything larger.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

// Pixels interleaved as R, G, B, rows from the top.
struct Image {
    int width = 0;
    int height = 0;
    std::vector<uint8_t> rgb;

    int64_t n_pixels() const { return int64_t{width} * height; }
};

// Most frames of one video the engine takes.
inline constexpr int64_t kMaxVideoFrames = 1024;

// A video as the engine receives it: its frames in order, decoded and sampled by the application (all of one
// size), and the rate they were sampled at.
struct Video {
    std::vector<Image> frames;
    double fps = 0.0;  // frames a second as sampled; 0 where unknown
};

// Throws folio::Error naming `what` if width or height is not positive or the image would have more
// than kMaxImagePixels pixels.
void check_image_size(int64_t width, int64_t height, std::string_view what);

// A black image of the given size; throws folio::Error for sizes that check_image_size rejects.
Image make_image(int width, int height);

// Throws folio::Error naming `what` if the image has non-positive dimensions, more than
// kMaxImagePixels pixels, or a pixel buffer whose size is not width * height * 3.
void check_image(const Image& image, std::string_view what);

}  // namespace folio
