// Image preprocessing for PaddleOCR-VL, identical to transformers' PIL image processor
// (PaddleOCRVLImageProcessorPil): smart_resize, Pillow's bicubic resampling, rescale, normalize, patches.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "image.h"

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

// Pillow's Image.resize(..., BICUBIC) on an RGB image, bit for bit (Pillow 12.3).
Image resize_bicubic(const Image& src, int width, int height);

struct PreprocessedImages {
    // [n_patches, 3 * temporal_patch_size, patch_size, patch_size], images one after another, each image's
    // patches in row-major grid order.
    std::vector<float> pixel_values;
    std::vector<ImageGrid> grids;

    int64_t n_patches() const;
};

// Resizes, rescales, normalizes and cuts the images into patches as the reference processor does.
PreprocessedImages preprocess_images(std::span<const Image> images, const PreprocessorConfig& cfg);

}  // namespace folio
