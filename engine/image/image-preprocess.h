// Image preprocessing for PaddleOCR-VL, identical to transformers' PIL image processor
// (PaddleOCRVLImageProcessorPil): smart_resize, Pillow's bicubic resampling, rescale, normalize, patches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/image/image.h"

namespace folio {

struct PreprocessorConfig;

// Patch grid of one image: temporal, height and width in patches.
struct ImageGrid {
    int64_t t = 0;
    int64_t h = 0;
    int64_t w = 0;

    int64_t n_patches() const { return t * h * w; }
    bool operator==(const ImageGrid&) const = default;
};

// Target {height, width}: multiples of `factor` near the original aspect ratio with an area between
// min_pixels and max_pixels (sides below `factor` are first scaled up to it). Throws folio::Error for
// empty sizes, a bad factor or pixel bounds, and aspect ratios above 200.
std::pair<int, int> smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels);

// A bicubic filter of separable fixed-point resampling: the kernel's a, and whether the kernel widens by
// the scale when the image shrinks (antialiasing).
struct BicubicFilter {
    double a = -0.5;
    bool antialias = true;
};
// Pillow's filter; torch's uint8 resize without antialiasing (torchvision's resize of 8-bit images, as
// the layout models' image processors call it) uses a = -0.75 and keeps the kernel's width.
inline constexpr BicubicFilter kPillowBicubic{};
inline constexpr BicubicFilter kTorchBicubicNoAntialias{-0.75, false};

// Pillow's Image.resize(..., BICUBIC) on an RGB image, bit for bit (Pillow 12.3), or the same resampling with
// another filter.
Image resize_bicubic(const Image& src, int width, int height, const BicubicFilter& filter = kPillowBicubic);

// The value each 8-bit level of each channel stands for after rescale and normalize: level v of channel c is
// levels[c * 256 + v].
using ChannelLevels = std::array<float, 3 * 256>;

// What an item of PreprocessedImages is: an image, or a video whose frames make its temporal grid.
enum class MediaKind : uint8_t { Image, Video };

// Images and videos made ready for a vision encoder, one grid each, in the order the prompt places them.
struct PreprocessedImages {
    // The resized images' 8-bit levels [n_patches, 3 * temporal_patch_size, patch_size, patch_size], images
    // one after another, each image's patches in row-major grid order; a patch's first third is red, then
    // green, then blue. A quarter of the bytes of the float values they stand for.
    std::vector<uint8_t> levels;
    ChannelLevels level_values{};
    // The patches as float values instead, in the same layout, for pixels that come from elsewhere (another
    // processor's output); used when levels is empty.
    std::vector<float> pixel_values;
    std::vector<ImageGrid> grids;
    // Each grid's kind; empty: all images.
    std::vector<MediaKind> kinds;

    MediaKind kind(size_t i) const { return kinds.empty() ? MediaKind::Image : kinds.at(i); }
    int64_t n_videos() const;
    int64_t n_patches() const;
    // Values of one patch (0 without patches).
    int64_t patch_dim() const;
    // Image i's levels, empty where the images are given as float values.
    std::span<const uint8_t> image_levels(size_t i) const;
    // Image i's given float values, empty where the images are given as levels.
    std::span<const float> image_pixel_values(size_t i) const;
    // Bytes of image i's pixels as stored: its levels, or its float values.
    std::span<const std::byte> image_bytes(size_t i) const;
    // The float values of image i, and of every patch: pixel_values, or each level looked up in level_values.
    std::vector<float> image_values(size_t i) const;
    std::vector<float> values() const;

private:
    // Image i's first value and its number of values.
    std::pair<size_t, size_t> image_range(size_t i) const;
    std::vector<float> looked_up(std::span<const uint8_t> image_levels) const;
};

// The grid an image of width x height takes (smart_resize's size in patches), or a video of n_frames such
// frames (padded as append_video pads them), without resizing a pixel: what append_image and append_video
// give it. Throws folio::Error, naming `what`, for a size or frame count they would refuse.
ImageGrid image_grid(int width, int height, const PreprocessorConfig& cfg, std::string_view what);
ImageGrid video_grid(int width, int height, int64_t n_frames, const PreprocessorConfig& image_cfg,
                     std::string_view what);

// Resizes, rescales, normalizes and cuts the images into patches as the reference processor does.
PreprocessedImages preprocess_images(std::span<const Image> images, const PreprocessorConfig& cfg);

// The same for one image or one video after what `out` holds (its level values set from cfg). A video's
// frames are resized to the size smart_resize gives its first frame and padded with copies of the last up to
// a multiple of temporal_patch_size; frames t * temporal_patch_size ... of each temporal patch fill its
// temporal values, giving a grid of n_frames / temporal_patch_size. `what` names the item in errors.
void append_image(PreprocessedImages& out, const Image& image, const PreprocessorConfig& cfg,
                  std::string_view what);
void append_video(PreprocessedImages& out, const Video& video, const PreprocessorConfig& cfg,
                  std::string_view what);

}  // namespace folio
