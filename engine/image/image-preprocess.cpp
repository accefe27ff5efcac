#include "engine/image/image-preprocess.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <string>

#include "engine/common/error.h"
#include "engine/image/preprocessor-config.h"

namespace folio {

namespace {

// Pillow's resampling (libImaging/Resample.c): separable passes with fixed-point weights of
// kPrecisionBits fractional bits, each pass rounding and clipping to 8 bits.
constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr int kBicubicSupport = 2;
constexpr int kPilBicubic = 3;

double bicubic_kernel(double x, double a) {
    if (x < 0.0) {
        x = -x;
    }
    if (x < 1.0) {
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    }
    if (x < 2.0) {
        return (((x - 5) * x + 8) * x - 4) * a;
    }
    return 0.0;
}

// For each output position along one axis: the first input index, the number of inputs it reads and
// their weights (stride `stride`).
struct Taps {
    int stride = 0;
    std::vector<int> first;
    std::vector<int> count;
    std::vector<int32_t> weights;
};

Taps bicubic_taps(int in_size, int out_size, const BicubicFilter& filter) {
    // Pillow passes the source extent as a float box.
    const double scale = static_cast<double>(static_cast<float>(in_size)) / out_size;
    // Without antialiasing the filter keeps its width when the image shrinks.
    const double filter_scale = filter.antialias ? std::max(scale, 1.0) : 1.0;
    const double support = kBicubicSupport * filter_scale;
    const double inv_filter_scale = 1.0 / filter_scale;

    Taps taps;
    taps.stride = static_cast<int>(std::ceil(support)) * 2 + 1;
    taps.first.resize(static_cast<size_t>(out_size));
    taps.count.resize(static_cast<size_t>(out_size));
    taps.weights.assign(static_cast<size_t>(out_size) * static_cast<size_t>(taps.stride), 0);
    std::vector<double> k(static_cast<size_t>(taps.stride));
    for (int out = 0; out < out_size; ++out) {
        const double center = (out + 0.5) * scale;
        const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
        const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
        const int n = hi - lo;
        double sum = 0.0;
        for (int i = 0; i < n; ++i) {
            const double w =
                bicubic_kernel((static_cast<double>(i + lo) - center + 0.5) * inv_filter_scale, filter.a);
            k[static_cast<size_t>(i)] = w;
            sum += w;
        }
        int32_t* weights = &taps.weights[static_cast<size_t>(out) * static_cast<size_t>(taps.stride)];
        for (int i = 0; i < n; ++i) {
            double w = k[static_cast<size_t>(i)];
            if (sum != 0.0) {
                w /= sum;
            }
            const double fixed = w * (1 << kPrecisionBits);
            weights[i] = static_cast<int32_t>(w < 0 ? -0.5 + fixed : 0.5 + fixed);
        }
        taps.first[static_cast<size_t>(out)] = lo;
        taps.count[static_cast<size_t>(out)] = n;
    }
    return taps;
}

uint8_t clip8(int32_t acc) {
    return static_cast<uint8_t>(std::clamp(acc >> kPrecisionBits, 0, 255));
}

// Horizontal pass over rows [row_begin, row_end) of src.
Image resample_horizontal(const Image& src, int row_begin, int row_end, int out_width,
                          const BicubicFilter& filter) {
    const Taps taps = bicubic_taps(src.width, out_width, filter);
    Image out = make_image(out_width, row_end - row_begin);
    const auto in_stride = static_cast<size_t>(src.width) * 3;
    const auto out_stride = static_cast<size_t>(out_width) * 3;
    for (int y = row_begin; y < row_end; ++y) {
        const uint8_t* in_row = &src.rgb[static_cast<size_t>(y) * in_stride];
        uint8_t* out_row = &out.rgb[static_cast<size_t>(y - row_begin) * out_stride];
        for (int x = 0; x < out_width; ++x) {
            const auto xs = static_cast<size_t>(x);
            const int32_t* weights = &taps.weights[xs * static_cast<size_t>(taps.stride)];
            const uint8_t* in = in_row + static_cast<size_t>(taps.first[xs]) * 3;
            int32_t acc[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1),
                              1 << (kPrecisionBits - 1)};
            for (int i = 0; i < taps.count[xs]; ++i) {
                acc[0] += in[i * 3 + 0] * weights[i];
                acc[1] += in[i * 3 + 1] * weights[i];
                acc[2] += in[i * 3 + 2] * weights[i];
            }
            out_row[xs * 3 + 0] = clip8(acc[0]);
            out_row[xs * 3 + 1] = clip8(acc[1]);
            out_row[xs * 3 + 2] = clip8(acc[2]);
        }
    }
    return out;
}

// Row loops run in blocks of this fixed length, which the compiler vectorizes at -O2, then the remainder.
constexpr size_t kBlock = 16;

void accumulate_row(int32_t* __restrict sums, const uint8_t* __restrict row, int32_t weight, size_t n) {
    size_t x = 0;
    for (; x + kBlock <= n; x += kBlock) {
        for (size_t j = 0; j < kBlock; ++j) {
            sums[x + j] += row[x + j] * weight;
        }
    }
    for (; x < n; ++x) {
        sums[x] += row[x] * weight;
    }
}

void store_row(uint8_t* __restrict out, const int32_t* __restrict sums, size_t n) {
    size_t x = 0;
    for (; x + kBlock <= n; x += kBlock) {
        for (size_t j = 0; j < kBlock; ++j) {
            out[x + j] = clip8(sums[x + j]);
        }
    }
    for (; x < n; ++x) {
        out[x] = clip8(sums[x]);
    }
}

// Vertical pass; `taps` index rows of the full source, src holds its rows from `row_offset` on. Sums
// run over whole rows at a time; integer sums give the same result in any order.
Image resample_vertical(const Image& src, const Taps& taps, int row_offset, int out_height) {
    Image out = make_image(src.width, out_height);
    const auto stride = static_cast<size_t>(src.width) * 3;
    std::vector<int32_t> sums(stride);
    for (int y = 0; y < out_height; ++y) {
        const auto ys = static_cast<size_t>(y);
        const int32_t* weights = &taps.weights[ys * static_cast<size_t>(taps.stride)];
        const uint8_t* in = &src.rgb[static_cast<size_t>(taps.first[ys] - row_offset) * stride];
        std::fill(sums.begin(), sums.end(), 1 << (kPrecisionBits - 1));
        for (int i = 0; i < taps.count[ys]; ++i) {
            accumulate_row(sums.data(), in + static_cast<size_t>(i) * stride, weights[i], stride);
        }
        store_row(&out.rgb[ys * stride], sums.data(), stride);
    }
    return out;
}

constexpr int64_t kMaxFactor = 1 << 16;
constexpr int kMaxTemporalPatch = 16;

std::string image_name(size_t index) {
    return "preprocess_images: image " + std::to_string(index);
}

void check_config(const PreprocessorConfig& cfg) {
    if (cfg.patch_size <= 0 || cfg.merge_size <= 0 || cfg.temporal_patch_size <= 0) {
        fail("preprocess_images: patch_size ", cfg.patch_size, ", merge_size ", cfg.merge_size,
             " and temporal_patch_size ", cfg.temporal_patch_size, " must be positive");
    }
    if (int64_t{cfg.patch_size} * cfg.merge_size > kMaxFactor ||
        cfg.temporal_patch_size > kMaxTemporalPatch) {
        fail("preprocess_images: patch_size ", cfg.patch_size, " * merge_size ", cfg.merge_size,
             " must be at most ", kMaxFactor, " and temporal_patch_size ", cfg.temporal_patch_size,
             " at most ", kMaxTemporalPatch);
    }
    if (cfg.do_resize && cfg.resample != kPilBicubic) {
        fail("preprocess_images: resample ", cfg.resample, " is not supported (only ", kPilBicubic,
             ", bicubic)");
    }
    if (cfg.do_normalize) {
        for (const float s : cfg.image_std) {
            if (!(std::isfinite(s) && s != 0.0f)) {
                fail("preprocess_images: image_std value ", s, " must be finite and non-zero");
            }
        }
    }
}

// Value of every 8-bit level of each channel after rescale and normalize, with the reference's
// arithmetic: the rescale in double rounded to float, the normalization in float.
ChannelLevels channel_levels(const PreprocessorConfig& cfg) {
    ChannelLevels levels{};
    for (size_t c = 0; c < 3; ++c) {
        for (size_t v = 0; v < 256; ++v) {
            float x = cfg.do_rescale ? static_cast<float>(static_cast<double>(v) * cfg.rescale_factor)
                                     : static_cast<float>(v);
            if (cfg.do_normalize) {
                x = (x - cfg.image_mean[c]) / cfg.image_std[c];
            }
            levels[c * 256 + v] = x;
        }
    }
    return levels;
}

}  // namespace

std::pair<int, int> smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels) {
    if (height <= 0 || width <= 0) {
        fail("smart_resize: image size ", width, "x", height, " is empty");
    }
    if (factor <= 0) {
        fail("smart_resize: factor ", factor, " must be positive");
    }
    if (min_pixels <= 0 || max_pixels < min_pixels) {
        fail("smart_resize: pixel bounds min_pixels ", min_pixels, ", max_pixels ", max_pixels,
             " must satisfy 0 < min_pixels <= max_pixels");
    }
    // Python's round(): to nearest, ties to even (the default floating-point rounding mode).
    const auto round_even = [](double x) { return static_cast<int64_t>(std::nearbyint(x)); };
    const int64_t f = factor;
    int64_t h = height;
    int64_t w = width;
    if (h < f) {
        w = round_even(static_cast<double>(w * f) / static_cast<double>(h));
        h = f;
    }
    if (w < f) {
        h = round_even(static_cast<double>(h * f) / static_cast<double>(w));
        w = f;
    }
    const double aspect = static_cast<double>(std::max(h, w)) / static_cast<double>(std::min(h, w));
    if (aspect > 200) {
        fail("smart_resize: image size ", width, "x", height, " has aspect ratio ", aspect,
             ", more than the limit of 200");
    }
    const auto area = static_cast<double>(h * w);
    int64_t h_bar = round_even(static_cast<double>(h) / static_cast<double>(f)) * f;
    int64_t w_bar = round_even(static_cast<double>(w) / static_cast<double>(f)) * f;
    if (h_bar * w_bar > max_pixels) {
        const double beta = std::sqrt(area / static_cast<double>(max_pixels));
        h_bar = std::max(
            f, static_cast<int64_t>(std::floor(static_cast<double>(h) / beta / static_cast<double>(f))) * f);
        w_bar = std::max(
            f, static_cast<int64_t>(std::floor(static_cast<double>(w) / beta / static_cast<double>(f))) * f);
    } else if (h_bar * w_bar < min_pixels) {
        const double beta = std::sqrt(static_cast<double>(min_pixels) / area);
        h_bar = static_cast<int64_t>(std::ceil(static_cast<double>(h) * beta / static_cast<double>(f))) * f;
        w_bar = static_cast<int64_t>(std::ceil(static_cast<double>(w) * beta / static_cast<double>(f))) * f;
    }
    if (h_bar > INT_MAX || w_bar > INT_MAX) {
        fail("smart_resize: image size ", width, "x", height, " resizes to ", w_bar, "x", h_bar,
             ", beyond the int range");
    }
    return {static_cast<int>(h_bar), static_cast<int>(w_bar)};
}

Image resize_bicubic(const Image& src, int width, int height, const BicubicFilter& filter) {
    check_image(src, "resize_bicubic: source");
    check_image_size(width, height, "resize_bicubic: target");
    if (width == src.width && height == src.height) {
        return src;
    }
    // Pillow resizes images more than 100 times taller than wide vertically first when it shrinks them.
    if (int64_t{src.height} > int64_t{src.width} * 100 && height < src.height) {
        const Image tall = resample_vertical(src, bicubic_taps(src.height, height, filter), 0, height);
        return width == src.width ? tall : resample_horizontal(tall, 0, height, width, filter);
    }
    if (height == src.height) {
        return resample_horizontal(src, 0, src.height, width, filter);
    }
    const Taps vertical = bicubic_taps(src.height, height, filter);
    if (width == src.width) {
        return resample_vertical(src, vertical, 0, height);
    }
    // Only the source rows that the vertical pass reads go through the horizontal pass.
    const int row_begin = vertical.first.front();
    const int row_end = vertical.first.back() + vertical.count.back();
    return resample_vertical(resample_horizontal(src, row_begin, row_end, width, filter), vertical, row_begin,
                             height);
}

int64_t PreprocessedImages::n_patches() const {
    int64_t n = 0;
    for (const ImageGrid& grid : grids) {
        n += grid.n_patches();
    }
    return n;
}

int64_t PreprocessedImages::patch_dim() const {
    const int64_t n = n_patches();
    return n == 0 ? 0 : static_cast<int64_t>(levels.empty() ? pixel_values.size() : levels.size()) / n;
}

std::pair<size_t, size_t> PreprocessedImages::image_range(size_t i) const {
    int64_t first = 0;
    for (size_t j = 0; j < i; ++j) {
        first += grids.at(j).n_patches();
    }
    return {static_cast<size_t>(first * patch_dim()),
            static_cast<size_t>(grids.at(i).n_patches() * patch_dim())};
}

std::span<const uint8_t> PreprocessedImages::image_levels(size_t i) const {
    const auto [first, count] = image_range(i);
    return levels.empty() ? std::span<const uint8_t>{} : std::span(levels).subspan(first, count);
}

std::span<const float> PreprocessedImages::image_pixel_values(size_t i) const {
    const auto [first, count] = image_range(i);
    return levels.empty() ? std::span(pixel_values).subspan(first, count) : std::span<const float>{};
}

std::span<const std::byte> PreprocessedImages::image_bytes(size_t i) const {
    return levels.empty() ? std::as_bytes(image_pixel_values(i)) : std::as_bytes(image_levels(i));
}

std::vector<float> PreprocessedImages::looked_up(std::span<const uint8_t> image_levels) const {
    // Images are whole patches, so an image's values start a patch.
    const int64_t channel = patch_dim() / 3;
    if (channel == 0 || patch_dim() % 3 != 0 ||
        patch_dim() * n_patches() != static_cast<int64_t>(levels.size())) {
        fail("preprocessed images: ", levels.size(), " levels are not ", n_patches(),
             " patches of three channels");
    }
    std::vector<float> out(image_levels.size());
    for (size_t e = 0; e < image_levels.size(); ++e) {
        const auto c = static_cast<size_t>(static_cast<int64_t>(e) % (3 * channel) / channel);
        out[e] = level_values[c * 256 + image_levels[e]];
    }
    return out;
}

std::vector<float> PreprocessedImages::image_values(size_t i) const {
    const std::span<const float> given = image_pixel_values(i);
    return levels.empty() ? std::vector<float>(given.begin(), given.end()) : looked_up(image_levels(i));
}

std::vector<float> PreprocessedImages::values() const {
    return levels.empty() ? pixel_values : looked_up(levels);
}

namespace {

// An image resized as the processor resizes it (smart_resize's size, or `size` where given), or the image
// itself where it already has that size.
const Image& resized_for(const Image& original, const PreprocessorConfig& cfg, std::pair<int, int> size,
                         Image& storage) {
    if (!cfg.do_resize || (size.first == original.height && size.second == original.width)) {
        return original;
    }
    storage = resize_bicubic(original, size.second, size.first);
    return storage;
}

// Cuts frames (grid.t * temporal_patch_size of them, all of one size) into the grid's patches after what
// out holds: patches in (t, row, column) order, each channel's temporal values one after another.
void append_patches(PreprocessedImages& out, std::span<const Image* const> frames, const ImageGrid& grid,
                    const PreprocessorConfig& cfg) {
    const int patch = cfg.patch_size;
    const auto n_temporal = static_cast<size_t>(cfg.temporal_patch_size);
    const size_t patch_area = static_cast<size_t>(patch) * static_cast<size_t>(patch);
    const auto row_stride = static_cast<size_t>(frames.front()->width) * 3;
    const size_t first = out.levels.size();
    out.levels.resize(first + static_cast<size_t>(grid.n_patches()) * 3 * n_temporal * patch_area);
    uint8_t* dst = &out.levels[first];
    for (int64_t gt = 0; gt < grid.t; ++gt) {
        for (int64_t gy = 0; gy < grid.h; ++gy) {
            for (int64_t gx = 0; gx < grid.w; ++gx) {
                const size_t corner =
                    static_cast<size_t>(gy * patch) * row_stride + static_cast<size_t>(gx * patch) * 3;
                for (size_t c = 0; c < 3; ++c) {
                    for (size_t t = 0; t < n_temporal; ++t) {
                        const Image& frame = *frames[static_cast<size_t>(gt) * n_temporal + t];
                        for (int py = 0; py < patch; ++py) {
                            const uint8_t* src =
                                &frame.rgb[corner + static_cast<size_t>(py) * row_stride + c];
                            for (int px = 0; px < patch; ++px) {
                                *dst++ = src[static_cast<size_t>(px) * 3];
                            }
                        }
                    }
                }
            }
        }
    }
    out.grids.push_back(grid);
}

// Marks the item just added as `kind`, keeping kinds empty while every item is an image.
void set_kind(PreprocessedImages& out, MediaKind kind) {
    if (kind == MediaKind::Image && out.kinds.empty()) {
        return;
    }
    out.kinds.resize(out.grids.size() - 1, MediaKind::Image);
    out.kinds.push_back(kind);
}

// {height, width} an image is resized to.
std::pair<int, int> target_size(int height, int width, const PreprocessorConfig& cfg) {
    if (!cfg.do_resize) {
        return {height, width};
    }
    return smart_resize(height, width, cfg.patch_size * cfg.merge_size, cfg.min_pixels, cfg.max_pixels);
}

// A video's frames resize within the video bounds where the processor has its own.
PreprocessorConfig video_config(const PreprocessorConfig& image_cfg) {
    PreprocessorConfig cfg = image_cfg;
    if (cfg.video_max_pixels > 0) {
        cfg.min_pixels = cfg.video_min_pixels;
        cfg.max_pixels = cfg.video_max_pixels;
    }
    return cfg;
}

}  // namespace

int64_t PreprocessedImages::n_videos() const {
    return std::count(kinds.begin(), kinds.end(), MediaKind::Video);
}

ImageGrid image_grid(int width, int height, const PreprocessorConfig& cfg, std::string_view what) {
    check_config(cfg);
    check_image_size(width, height, what);
    const auto [h, w] = target_size(height, width, cfg);
    if (w % cfg.patch_size != 0 || h % cfg.patch_size != 0) {
        fail(what, ": size ", w, "x", h, " is not a multiple of patch_size ", cfg.patch_size);
    }
    return {1, h / cfg.patch_size, w / cfg.patch_size};
}

ImageGrid video_grid(int width, int height, int64_t n_frames, const PreprocessorConfig& image_cfg,
                     std::string_view what) {
    const PreprocessorConfig cfg = video_config(image_cfg);
    check_config(cfg);
    if (n_frames < 1 || n_frames > kMaxVideoFrames) {
        fail(what, ": ", n_frames, " frames (1 to ", kMaxVideoFrames, " are taken)");
    }
    ImageGrid grid = image_grid(width, height, cfg, what);
    // Padded with copies of the last frame to whole temporal patches and the processor's frame multiple.
    const int64_t multiple = std::lcm(static_cast<int64_t>(cfg.temporal_patch_size),
                                      static_cast<int64_t>(std::max(cfg.video_frame_multiple, 1)));
    grid.t = (n_frames + multiple - 1) / multiple * multiple / cfg.temporal_patch_size;
    return grid;
}

void append_image(PreprocessedImages& out, const Image& original, const PreprocessorConfig& cfg,
                  std::string_view what) {
    check_image(original, what);
    const ImageGrid grid = image_grid(original.width, original.height, cfg, what);
    out.level_values = channel_levels(cfg);
    Image storage;
    const Image& image = resized_for(
        original, cfg, {static_cast<int>(grid.h) * cfg.patch_size, static_cast<int>(grid.w) * cfg.patch_size},
        storage);
    // An image fills every temporal value of its one temporal patch.
    const std::vector<const Image*> frames(static_cast<size_t>(cfg.temporal_patch_size), &image);
    append_patches(out, frames, grid, cfg);
    set_kind(out, MediaKind::Image);
}

void append_video(PreprocessedImages& out, const Video& video, const PreprocessorConfig& image_cfg,
                  std::string_view what) {
    const PreprocessorConfig cfg = video_config(image_cfg);
    if (video.frames.empty() || static_cast<int64_t>(video.frames.size()) > kMaxVideoFrames) {
        fail(what, ": ", video.frames.size(), " frames (1 to ", kMaxVideoFrames, " are taken)");
    }
    const Image& first = video.frames.front();
    for (size_t f = 0; f < video.frames.size(); ++f) {
        const Image& frame = video.frames[f];
        check_image(frame, std::string(what) + " frame " + std::to_string(f));
        if (frame.width != first.width || frame.height != first.height) {
            fail(what, ": frame ", f, " is ", frame.width, "x", frame.height, ", frame 0 ", first.width, "x",
                 first.height);
        }
    }
    const ImageGrid grid =
        video_grid(first.width, first.height, static_cast<int64_t>(video.frames.size()), image_cfg, what);
    out.level_values = channel_levels(cfg);
    const std::pair<int, int> size{static_cast<int>(grid.h) * cfg.patch_size,
                                   static_cast<int>(grid.w) * cfg.patch_size};
    std::vector<Image> storage(video.frames.size());
    std::vector<const Image*> frames;
    for (size_t f = 0; f < video.frames.size(); ++f) {
        frames.push_back(&resized_for(video.frames[f], cfg, size, storage[f]));
    }
    while (static_cast<int64_t>(frames.size()) < grid.t * cfg.temporal_patch_size) {
        frames.push_back(frames.back());
    }
    append_patches(out, frames, grid, cfg);
    set_kind(out, MediaKind::Video);
}

PreprocessedImages preprocess_images(std::span<const Image> images, const PreprocessorConfig& cfg) {
    check_config(cfg);
    PreprocessedImages out;
    out.level_values = channel_levels(cfg);
    out.grids.reserve(images.size());
    for (size_t index = 0; index < images.size(); ++index) {
        append_image(out, images[index], cfg, image_name(index));
    }
    return out;
}

}  // namespace folio
