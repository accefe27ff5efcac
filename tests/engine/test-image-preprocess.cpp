// Image preprocessing against the reference processor's output, smart_resize, Pillow-exact bicubic
// resampling, and the image loader on good and bad files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "app/images/image-loader.h"
#include "engine/common/error.h"
#include "engine/image/image-preprocess.h"
#include "engine/image/preprocessor-config.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = FOLIO_FIXTURES_DIR;

// The fixtures' processor: paddleocr-vl-tiny/preprocessor_config.json.
PreprocessorConfig fixture_config() {
    PreprocessorConfig cfg;
    cfg.min_pixels = 3136;
    cfg.max_pixels = 50176;
    return cfg;
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(file.good()) << path;
}

// A minimal safetensors reader: 8-byte little-endian header length, JSON header, then the data.
struct RefTensor {
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
};

std::map<std::string, RefTensor> read_safetensors(const fs::path& path) {
    const std::vector<uint8_t> bytes = read_bytes(path);
    EXPECT_GE(bytes.size(), 8u);
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) {
        header_bytes = (header_bytes << 8) | bytes[static_cast<size_t>(i)];
    }
    EXPECT_LE(8 + header_bytes, bytes.size());
    const auto header =
        nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(header_bytes));
    const size_t data_begin = 8 + header_bytes;
    std::map<std::string, RefTensor> tensors;
    for (const auto& [name, info] : header.items()) {
        if (name == "__metadata__") {
            continue;
        }
        RefTensor tensor;
        tensor.dtype = info.at("dtype").get<std::string>();
        tensor.shape = info.at("shape").get<std::vector<int64_t>>();
        const auto offsets = info.at("data_offsets").get<std::array<size_t, 2>>();
        EXPECT_LE(data_begin + offsets[1], bytes.size()) << name;
        tensor.data.assign(bytes.begin() + static_cast<int64_t>(data_begin + offsets[0]),
                           bytes.begin() + static_cast<int64_t>(data_begin + offsets[1]));
        tensors.emplace(name, std::move(tensor));
    }
    return tensors;
}

template <typename T>
std::vector<T> values(const RefTensor& tensor) {
    std::vector<T> out(tensor.data.size() / sizeof(T));
    std::memcpy(out.data(), tensor.data.data(), out.size() * sizeof(T));
    return out;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    float diff = 0.0f;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        diff = std::max(diff, std::fabs(a[i] - b[i]));
    }
    return diff;
}

TEST(ImagePreprocess, MatchesReferenceProcessor) {
    const auto reference = read_safetensors(kFixtures / "reference.safetensors");
    const PreprocessorConfig cfg = fixture_config();
    for (const std::string name : {"tall", "wide", "small"}) {
        SCOPED_TRACE(name);
        const Image image = load_image(kFixtures / "images" / (name + ".png"));
        const PreprocessedImages out = preprocess_images(std::span(&image, 1), cfg);

        const RefTensor& grid = reference.at("grid_thw." + name);
        ASSERT_EQ(grid.dtype, "I64");
        const auto thw = values<int64_t>(grid);
        ASSERT_EQ(out.grids.size(), 1u);
        EXPECT_EQ(out.grids[0], (ImageGrid{thw[0], thw[1], thw[2]}));

        const RefTensor& pixels = reference.at("pixel_values." + name);
        ASSERT_EQ(pixels.dtype, "F32");
        ASSERT_EQ(pixels.shape, (std::vector<int64_t>{out.n_patches(), 3, 14, 14}));
        const float diff = max_abs_diff(out.values(), values<float>(pixels));
        std::cout << "pixel_values." << name << ": " << image.width << "x" << image.height << " -> grid "
                  << out.grids[0].h << "x" << out.grids[0].w << ", max abs diff " << diff << "\n";
        RecordProperty("max_abs_diff_" + name, std::to_string(diff));
        EXPECT_LE(diff, 1e-5f);
    }
}

TEST(ImagePreprocess, SeveralImagesAreTheConcatenationOfEach) {
    const auto reference = read_safetensors(kFixtures / "reference.safetensors");
    const PreprocessorConfig cfg = fixture_config();
    const std::vector<Image> images = {load_image(kFixtures / "images" / "wide.png"),
                                       load_image(kFixtures / "images" / "small.png")};
    const PreprocessedImages both = preprocess_images(images, cfg);
    const PreprocessedImages wide = preprocess_images(std::span(&images[0], 1), cfg);
    const PreprocessedImages small = preprocess_images(std::span(&images[1], 1), cfg);

    ASSERT_EQ(both.grids.size(), 2u);
    EXPECT_EQ(both.grids[0], wide.grids[0]);
    EXPECT_EQ(both.grids[1], small.grids[0]);
    EXPECT_EQ(both.n_patches(), wide.n_patches() + small.n_patches());
    std::vector<uint8_t> joined = wide.levels;
    joined.insert(joined.end(), small.levels.begin(), small.levels.end());
    EXPECT_EQ(both.levels, joined);
    EXPECT_EQ(both.level_values, wide.level_values);
    EXPECT_TRUE(both.pixel_values.empty());
    // Each image's own levels and values are its part of the whole.
    EXPECT_TRUE(std::ranges::equal(both.image_levels(1), small.levels));
    EXPECT_EQ(both.image_values(0), wide.values());
    EXPECT_EQ(both.image_values(1), small.values());
    EXPECT_EQ(both.image_bytes(1).size(), small.levels.size());

    std::vector<float> expected = values<float>(reference.at("pixel_values.wide"));
    const auto small_ref = values<float>(reference.at("pixel_values.small"));
    expected.insert(expected.end(), small_ref.begin(), small_ref.end());
    EXPECT_LE(max_abs_diff(both.values(), expected), 1e-5f);
}

// Levels that do not fill whole patches of three channels cannot be looked up: an error, not a guess.
TEST(ImagePreprocess, LevelsOutOfShapeAreRefused) {
    PreprocessedImages images = preprocess_images(
        std::vector<Image>{load_image(kFixtures / "images" / "small.png")}, fixture_config());
    PreprocessedImages no_grids = images;
    no_grids.grids.clear();
    EXPECT_THROW(no_grids.values(), Error);
    PreprocessedImages one_short = images;
    one_short.levels.pop_back();
    EXPECT_THROW(one_short.values(), Error);
    EXPECT_EQ(images.values().size(), images.levels.size());
}

TEST(ImagePreprocess, NoImagesGiveNothing) {
    const PreprocessedImages out = preprocess_images({}, fixture_config());
    EXPECT_TRUE(out.levels.empty());
    EXPECT_TRUE(out.values().empty());
    EXPECT_TRUE(out.grids.empty());
    EXPECT_EQ(out.n_patches(), 0);
}

TEST(ImagePreprocess, RescaleAndNormalizeFollowTheFlags) {
    Image image = make_image(28, 28);
    for (size_t i = 0; i < image.rgb.size(); ++i) {
        image.rgb[i] = static_cast<uint8_t>(i % 251);
    }
    PreprocessorConfig cfg = fixture_config();
    cfg.min_pixels = 28 * 28;
    cfg.do_rescale = false;
    cfg.do_normalize = false;
    const PreprocessedImages raw = preprocess_images(std::span(&image, 1), cfg);
    ASSERT_EQ(raw.grids[0], (ImageGrid{1, 2, 2}));
    // Patch (0, 0), channel 1, row 0, column 5: pixel (5, 0) green.
    EXPECT_EQ(raw.values()[1 * 196 + 5], static_cast<float>(image.rgb[5 * 3 + 1]));
    // Patch (1, 1) starts at pixel (14, 14); channel 2, row 1, column 2: pixel (16, 15) blue.
    const size_t pixel = (15 * 28 + 16) * 3 + 2;
    EXPECT_EQ(raw.values()[3 * 588 + 2 * 196 + 14 + 2], static_cast<float>(image.rgb[pixel]));

    cfg.do_rescale = true;
    cfg.do_normalize = true;
    const PreprocessedImages normalized = preprocess_images(std::span(&image, 1), cfg);
    const float expected =
        (static_cast<float>(image.rgb[pixel] * cfg.rescale_factor) - cfg.image_mean[2]) / cfg.image_std[2];
    EXPECT_EQ(normalized.values()[3 * 588 + 2 * 196 + 14 + 2], expected);
    // The same levels either way: only what they stand for differs.
    EXPECT_EQ(normalized.levels, raw.levels);
    EXPECT_EQ(normalized.levels[3 * 588 + 2 * 196 + 14 + 2], image.rgb[pixel]);
}

TEST(ImagePreprocess, RejectsBadConfigAndImages) {
    const Image image = make_image(30, 30);
    PreprocessorConfig cfg = fixture_config();
    cfg.resample = 2;
    EXPECT_THROW(preprocess_images(std::span(&image, 1), cfg), Error);
    cfg = fixture_config();
    cfg.patch_size = 0;
    EXPECT_THROW(preprocess_images(std::span(&image, 1), cfg), Error);
    cfg = fixture_config();
    cfg.image_std[1] = 0.0f;
    EXPECT_THROW(preprocess_images(std::span(&image, 1), cfg), Error);
    cfg = fixture_config();
    cfg.do_resize = false;  // 30 is no multiple of the 14-pixel patch
    EXPECT_THROW(preprocess_images(std::span(&image, 1), cfg), Error);

    Image broken = make_image(4, 4);
    broken.rgb.pop_back();
    EXPECT_THROW(preprocess_images(std::span(&broken, 1), fixture_config()), Error);
    const Image empty;
    EXPECT_THROW(preprocess_images(std::span(&empty, 1), fixture_config()), Error);
}

// The grid counted from a size alone is the grid the pixels are cut into, for images of every shape within
// both the image and the video bounds, and for videos whose frame counts need padding.
TEST(ImagePreprocess, GridFromTheSizeAloneIsThePreprocessedGrid) {
    PreprocessorConfig cfg = fixture_config();
    cfg.video_min_pixels = 784;
    cfg.video_max_pixels = 6272;
    cfg.video_frame_multiple = 4;
    int n_smaller = 0;  // videos resized within their own, smaller bounds
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> side(4, 700);  // aspect ratios within 200
    for (int i = 0; i < 40; ++i) {
        const int width = side(rng), height = std::max(4, side(rng) / (i % 3 + 1));
        const Image image = make_image(width, height);
        PreprocessedImages out;
        append_image(out, image, cfg, "image");
        EXPECT_EQ(image_grid(width, height, cfg, "image"), out.grids.back()) << width << "x" << height;
        for (const int64_t n_frames : {1, 2, 3, 5, 8}) {
            Video video;
            for (int64_t f = 0; f < n_frames; ++f) {
                video.frames.push_back(image);
            }
            PreprocessedImages as_video;
            append_video(as_video, video, cfg, "video");
            const ImageGrid grid = video_grid(width, height, n_frames, cfg, "video");
            EXPECT_EQ(grid, as_video.grids.back()) << width << "x" << height << ", " << n_frames << " frames";
            EXPECT_EQ(grid.t % 2, 0) << "padded to the frame multiple of 4, two frames a temporal patch";
            n_smaller += grid.h * grid.w < out.grids.back().h * out.grids.back().w ? 1 : 0;
        }
    }
    EXPECT_GT(n_smaller, 100) << "the video bounds used for videos";
    EXPECT_THROW(image_grid(0, 10, cfg, "image"), Error);
    EXPECT_THROW(video_grid(10, 10, 0, cfg, "video"), Error);
    EXPECT_THROW(video_grid(10, 10, kMaxVideoFrames + 1, cfg, "video"), Error);
    cfg.do_resize = false;  // 30 is no multiple of the 14-pixel patch
    EXPECT_THROW(image_grid(30, 28, cfg, "image"), Error);
    EXPECT_EQ(image_grid(56, 28, cfg, "image"), (ImageGrid{1, 2, 4}));
}

struct SmartResizeCase {
    int height, width;
    int64_t min_pixels, max_pixels;
    int expected_height, expected_width;
};

// Expected sizes worked out from the reference formula (factor 28). Fixture bounds 3136..50176 (56^2..224^2),
// default bounds 147456..2359296 (384^2..1536^2).
TEST(SmartResize, Table) {
    const SmartResizeCase cases[] = {
        // 1x1: the height goes to 28 and the width to round(1*28/1) = 28; 784 < 3136, so
        // beta = sqrt(3136/784) = 2 and both become ceil(28*2/28)*28 = 56.
        {1, 1, 3136, 50176, 56, 56},
        // Default bounds: beta = sqrt(147456/784) = 13.71, ceil(13.71) = 14 -> 392.
        {1, 1, 147456, 2359296, 392, 392},
        // 20000x200: 19992*196 > 50176, beta = sqrt(4e6/50176) = 8.93; 20000/beta/28 = 80 -> 2240,
        // 200/beta/28 = 0.8 -> floor 0, held at 28.
        {20000, 200, 3136, 50176, 2240, 28},
        {200, 20000, 3136, 50176, 28, 2240},
        // Default bounds: beta = sqrt(4e6/2359296) = 1.302; 548.6 -> 548*28, 5.49 -> 5*28.
        {20000, 200, 147456, 2359296, 15344, 140},
        // 27x5000: the height becomes 28 and the width round(5000*28/27) = 5185; aspect 185 is allowed.
        // 28*5180 > 50176, beta = sqrt(28*5185/50176) = 1.701; 0.59 -> 28, 108.9 -> 108*28.
        {27, 5000, 3136, 50176, 28, 3024},
        {5000, 27, 3136, 50176, 3024, 28},
        // 1x200: 28x5600, aspect exactly 200 is allowed; beta = sqrt(3.125) = 1.768, 113.1 -> 113*28.
        {1, 200, 3136, 50176, 28, 3164},
        // Below min_pixels: 40x30 rounds to 28x28; beta = sqrt(3136/1200) = 1.617; 2.31 -> 3, 1.73 -> 2.
        {40, 30, 3136, 50176, 84, 56},
        // Above max_pixels: 130x900 rounds to 140x896; beta = sqrt(117000/50176) = 1.527; 3.04 -> 3, 21.05
        // -> 21.
        {130, 900, 3136, 50176, 84, 588},
        // Within bounds: 400x90 rounds to 392x84 (14.29 -> 14, 3.21 -> 3).
        {400, 90, 3136, 50176, 392, 84},
        {56, 56, 3136, 50176, 56, 56},
        // 70/28 = 2.5 rounds half to even: 2 -> 56 (half up would give 84); 56*56 = min_pixels is kept.
        {70, 56, 3136, 50176, 56, 56},
        // 42/28 = 1.5 rounds to 2 -> 56.
        {42, 56, 3136, 50176, 56, 56},
        // 3000x2000 with default bounds: 2996*1988 > 2359296, beta = sqrt(6e6/2359296) = 1.595;
        // 67.19 -> 67*28, 44.79 -> 44*28.
        {3000, 2000, 147456, 2359296, 1876, 1232},
        // 8x3: the width becomes round(3*28/8 = 10.5) = 10 (half to even), then the height round(78.4) = 78
        // with width 28; 84*28 < 3136, beta = sqrt(3136/2184) = 1.198; 3.34 -> 4, 1.20 -> 2.
        {8, 3, 3136, 50176, 112, 56},
    };
    for (const SmartResizeCase& c : cases) {
        SCOPED_TRACE(std::to_string(c.height) + "x" + std::to_string(c.width));
        const auto [h, w] = smart_resize(c.height, c.width, 28, c.min_pixels, c.max_pixels);
        EXPECT_EQ(h, c.expected_height);
        EXPECT_EQ(w, c.expected_width);
    }
}

TEST(SmartResize, RejectsExtremeAspectAndEmptySizes) {
    // 10x2500: the height becomes 28 and the width 7000, aspect 250.
    EXPECT_THROW(smart_resize(10, 2500, 28, 3136, 50176), Error);
    EXPECT_THROW(smart_resize(2500, 10, 28, 3136, 50176), Error);
    // 1x201: 28x5628, aspect 201.
    EXPECT_THROW(smart_resize(1, 201, 28, 3136, 50176), Error);
    EXPECT_THROW(smart_resize(20000, 99, 28, 3136, 50176), Error);
    EXPECT_THROW(smart_resize(0, 10, 28, 3136, 50176), Error);
    EXPECT_THROW(smart_resize(10, 0, 28, 3136, 50176), Error);
    EXPECT_THROW(smart_resize(-5, 10, 28, 3136, 50176), Error);
    EXPECT_THROW(smart_resize(10, 10, 0, 3136, 50176), Error);
    EXPECT_THROW(smart_resize(10, 10, 28, 50176, 3136), Error);
    EXPECT_THROW(smart_resize(10, 10, 28, 0, 3136), Error);
    try {
        smart_resize(10, 2500, 28, 3136, 50176);
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("aspect ratio 250"), std::string::npos) << e.what();
    }
}

// The same byte sequence as the generator of the Pillow checksums below: xorshift32 from seed 12345,
// top byte of each state.
Image noise_image(int width, int height) {
    Image image = make_image(width, height);
    uint32_t state = 12345;
    for (uint8_t& byte : image.rgb) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        byte = static_cast<uint8_t>(state >> 24);
    }
    return image;
}

uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (const uint8_t byte : bytes) {
        hash = (hash ^ byte) * 0x100000001b3ULL;
    }
    return hash;
}

struct PillowCase {
    int width, height, out_width, out_height;
    uint64_t fnv;
};

// FNV-1a of Image.frombytes("RGB", noise).resize(out, BICUBIC).tobytes() with Pillow; the two 20x2500
// cases take Pillow 12.3's vertical-first path for images over 100 times taller than wide.
TEST(ResizeBicubic, MatchesPillow) {
    const PillowCase cases[] = {
        {90, 400, 84, 392, 0x5742a52ce00bdb68ULL},  {37, 23, 200, 150, 0x318b12c379821a1aULL},
        {500, 60, 41, 9, 0x7c72b70e18546e67ULL},    {64, 64, 64, 17, 0xf6216c2e8b43d512ULL},
        {64, 64, 19, 64, 0x0889f6ce2ab18124ULL},    {20, 2500, 28, 1000, 0xa592c8398be51561ULL},
        {20, 2500, 10, 300, 0x9baa86f8aa3595bbULL}, {1, 1, 56, 56, 0xaae0bb0ece342a25ULL},
        {3, 200, 1, 1, 0x9d6a0c196c9e45b6ULL},
    };
    for (const PillowCase& c : cases) {
        SCOPED_TRACE(std::to_string(c.width) + "x" + std::to_string(c.height) + " -> " +
                     std::to_string(c.out_width) + "x" + std::to_string(c.out_height));
        const Image out = resize_bicubic(noise_image(c.width, c.height), c.out_width, c.out_height);
        ASSERT_EQ(out.width, c.out_width);
        ASSERT_EQ(out.height, c.out_height);
        EXPECT_EQ(fnv1a(out.rgb), c.fnv);
    }
}

TEST(ResizeBicubic, IdentityWhenSizeUnchanged) {
    const Image image = noise_image(33, 17);
    const Image out = resize_bicubic(image, 33, 17);
    EXPECT_EQ(out.width, 33);
    EXPECT_EQ(out.height, 17);
    EXPECT_EQ(out.rgb, image.rgb);
}

TEST(ResizeBicubic, ConstantImageStaysConstant) {
    Image image = make_image(50, 7);
    std::fill(image.rgb.begin(), image.rgb.end(), uint8_t{200});
    for (const auto& [w, h] : {std::pair{13, 90}, std::pair{300, 2}, std::pair{1, 1}}) {
        const Image out = resize_bicubic(image, w, h);
        EXPECT_TRUE(std::all_of(out.rgb.begin(), out.rgb.end(), [](uint8_t v) { return v == 200; }));
    }
}

TEST(ResizeBicubic, RejectsBadSizes) {
    const Image image = noise_image(8, 8);
    EXPECT_THROW(resize_bicubic(image, 0, 8), Error);
    EXPECT_THROW(resize_bicubic(image, 8, -1), Error);
    EXPECT_THROW(resize_bicubic(image, 1 << 15, 1 << 15), Error);
    EXPECT_THROW(resize_bicubic(Image{}, 8, 8), Error);
}

// A temporary folder for the files one test writes.
class ImageLoader : public ::testing::Test {
protected:
    void SetUp() override {
        std::random_device random;
        dir_ = fs::temp_directory_path() / ("folio-test-image-" + std::to_string(random()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path write(const std::string& name, const std::vector<uint8_t>& bytes) {
        const fs::path path = dir_ / name;
        write_bytes(path, bytes);
        return path;
    }

    static std::vector<uint8_t> encode(const std::string& ext, const cv::Mat& mat) {
        std::vector<uint8_t> bytes;
        EXPECT_TRUE(cv::imencode(ext, mat, bytes)) << ext;
        return bytes;
    }

    // The error message load_image gives for `path`, or "" if it loads.
    static std::string load_error(const fs::path& path) {
        try {
            load_image(path);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    }

    fs::path dir_;
};

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST_F(ImageLoader, DecodesColorFormats) {
    cv::Mat bgr(5, 7, CV_8UC3);
    for (int y = 0; y < bgr.rows; ++y) {
        for (int x = 0; x < bgr.cols; ++x) {
            bgr.at<cv::Vec3b>(y, x) =
                cv::Vec3b(static_cast<uint8_t>(10 * x), static_cast<uint8_t>(20 * y), 99);
        }
    }
    std::vector<std::string> formats = {".png", ".bmp", ".tiff"};
    if (cv::haveImageWriter(".webp")) {
        formats.push_back(".webp");
    }
    for (const std::string& ext : formats) {
        SCOPED_TRACE(ext);
        std::vector<uint8_t> bytes;
        const std::vector<int> lossless =
            ext == ".webp" ? std::vector<int>{cv::IMWRITE_WEBP_QUALITY, 101} : std::vector<int>{};
        ASSERT_TRUE(cv::imencode(ext, bgr, bytes, lossless));
        const Image image = load_image(write("color" + ext, bytes));
        ASSERT_EQ(image.width, 7);
        ASSERT_EQ(image.height, 5);
        // Pixel (x 3, y 2): B 30, G 40, R 99 -> RGB (99, 40, 30).
        const size_t at = (2 * 7 + 3) * 3;
        EXPECT_EQ(image.rgb[at + 0], 99);
        EXPECT_EQ(image.rgb[at + 1], 40);
        EXPECT_EQ(image.rgb[at + 2], 30);
    }
    const Image jpeg = load_image(write("color.jpg", encode(".jpg", bgr)));
    EXPECT_EQ(jpeg.width, 7);
    EXPECT_EQ(jpeg.height, 5);
    EXPECT_NEAR(jpeg.rgb[(2 * 7 + 3) * 3], 99, 12);
}

TEST_F(ImageLoader, GreyIsReplicated) {
    cv::Mat grey(3, 4, CV_8UC1);
    for (int i = 0; i < 12; ++i) {
        grey.at<uint8_t>(i / 4, i % 4) = static_cast<uint8_t>(20 * i);
    }
    const Image image = load_image(write("grey.png", encode(".png", grey)));
    ASSERT_EQ(image.width, 4);
    ASSERT_EQ(image.height, 3);
    for (size_t i = 0; i < 12; ++i) {
        EXPECT_EQ(image.rgb[i * 3 + 0], 20 * i);
        EXPECT_EQ(image.rgb[i * 3 + 1], 20 * i);
        EXPECT_EQ(image.rgb[i * 3 + 2], 20 * i);
    }
}

TEST_F(ImageLoader, AlphaIsDropped) {
    cv::Mat bgra(2, 2, CV_8UC4);
    bgra.at<cv::Vec4b>(0, 0) = cv::Vec4b(1, 2, 3, 255);
    bgra.at<cv::Vec4b>(0, 1) = cv::Vec4b(4, 5, 6, 0);
    bgra.at<cv::Vec4b>(1, 0) = cv::Vec4b(7, 8, 9, 128);
    bgra.at<cv::Vec4b>(1, 1) = cv::Vec4b(250, 251, 252, 1);
    const Image image = load_image(write("rgba.png", encode(".png", bgra)));
    ASSERT_EQ(image.width, 2);
    ASSERT_EQ(image.height, 2);
    EXPECT_EQ(image.rgb, (std::vector<uint8_t>{3, 2, 1, 6, 5, 4, 9, 8, 7, 252, 251, 250}));
}

TEST_F(ImageLoader, SixteenBitKeepsTheHighByte) {
    cv::Mat grey(1, 2, CV_16UC1);
    grey.at<uint16_t>(0, 0) = 0x12ff;
    grey.at<uint16_t>(0, 1) = 0xff00;
    const Image g = load_image(write("grey16.png", encode(".png", grey)));
    EXPECT_EQ(g.rgb, (std::vector<uint8_t>{0x12, 0x12, 0x12, 0xff, 0xff, 0xff}));

    cv::Mat bgr(1, 1, CV_16UC3);
    bgr.at<cv::Vec3w>(0, 0) = cv::Vec3w(0x1000, 0x2000, 0x3000);
    const Image c = load_image(write("color16.png", encode(".png", bgr)));
    EXPECT_EQ(c.rgb, (std::vector<uint8_t>{0x30, 0x20, 0x10}));
}

TEST_F(ImageLoader, NonAsciiPath) {
    const fs::path folder = dir_ / fs::path(u8"图像 ü");
    fs::create_directories(folder);
    const fs::path path = folder / fs::path(u8"页 1.png");
    write_bytes(path, encode(".png", cv::Mat(6, 9, CV_8UC3, cv::Scalar(1, 2, 3))));
    const Image image = load_image(path);
    EXPECT_EQ(image.width, 9);
    EXPECT_EQ(image.height, 6);
    EXPECT_EQ(image.rgb[0], 3);
    EXPECT_EQ(image.rgb[2], 1);
}

TEST_F(ImageLoader, OnePixelImagePreprocessesToAValidGrid) {
    const Image image =
        load_image(write("one.png", encode(".png", cv::Mat(1, 1, CV_8UC3, cv::Scalar(0, 128, 255)))));
    ASSERT_EQ(image.width, 1);
    ASSERT_EQ(image.height, 1);
    EXPECT_EQ(image.rgb, (std::vector<uint8_t>{255, 128, 0}));
    for (const PreprocessorConfig& cfg : {fixture_config(), PreprocessorConfig{}}) {
        const PreprocessedImages out = preprocess_images(std::span(&image, 1), cfg);
        ASSERT_EQ(out.grids.size(), 1u);
        const ImageGrid grid = out.grids[0];
        EXPECT_GE(grid.h, 2);
        EXPECT_GE(grid.w, 2);
        EXPECT_EQ(grid.h % 2, 0);
        EXPECT_EQ(grid.w % 2, 0);
        EXPECT_GE(grid.h * grid.w * 14 * 14, cfg.min_pixels);
        EXPECT_EQ(out.levels.size(), static_cast<size_t>(grid.n_patches()) * 3 * 14 * 14);
    }
}

TEST_F(ImageLoader, LongStripPreprocessesWithinMaxPixels) {
    const Image image =
        load_image(write("strip.png", encode(".png", cv::Mat(20000, 200, CV_8UC3, cv::Scalar(9, 99, 199)))));
    ASSERT_EQ(image.width, 200);
    ASSERT_EQ(image.height, 20000);
    const PreprocessorConfig cfg;
    const PreprocessedImages out = preprocess_images(std::span(&image, 1), cfg);
    ASSERT_EQ(out.grids.size(), 1u);
    EXPECT_EQ(out.grids[0], (ImageGrid{1, 15344 / 14, 140 / 14}));
    EXPECT_LE(out.n_patches() * 14 * 14, cfg.max_pixels);
    const float red = (static_cast<float>(199 * cfg.rescale_factor) - cfg.image_mean[0]) / cfg.image_std[0];
    EXPECT_EQ(out.values().front(), red);
}

TEST_F(ImageLoader, RejectsMissingEmptyAndUndecodableFiles) {
    std::string error = load_error(dir_ / "absent.png");
    EXPECT_TRUE(contains(error, "absent.png")) << error;

    error = load_error(dir_);
    EXPECT_TRUE(contains(error, "not a regular file")) << error;

    const fs::path empty = write("empty.png", {});
    error = load_error(empty);
    EXPECT_TRUE(contains(error, "empty.png") && contains(error, "empty")) << error;

    error = load_error(write("text.png", {'h', 'e', 'l', 'l', 'o', '\n'}));
    EXPECT_TRUE(contains(error, "text.png") && contains(error, "not a supported image")) << error;

    std::vector<uint8_t> png = encode(".png", cv::Mat(64, 64, CV_8UC3, cv::Scalar(1, 2, 3)));
    png.resize(png.size() / 2);
    error = load_error(write("truncated.png", png));
    EXPECT_TRUE(contains(error, "truncated.png") && contains(error, "cannot decode")) << error;

    std::vector<uint8_t> garbage = encode(".png", cv::Mat(8, 8, CV_8UC3, cv::Scalar(1, 2, 3)));
    std::fill(garbage.begin() + 33, garbage.end(), uint8_t{0x5a});
    error = load_error(write("garbage.png", garbage));
    EXPECT_TRUE(contains(error, "garbage.png") && contains(error, "cannot decode")) << error;

    const std::vector<uint8_t> jpeg_magic_only = {0xff, 0xd8, 0xff};
    error = load_error(write("magic.jpg", jpeg_magic_only));
    EXPECT_TRUE(contains(error, "magic.jpg") && contains(error, "cannot decode")) << error;
}

void put_be32(std::vector<uint8_t>& bytes, size_t at, uint32_t v) {
    for (size_t i = 0; i < 4; ++i) {
        bytes[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
    }
}

void put_le32(std::vector<uint8_t>& bytes, size_t at, uint32_t v) {
    for (size_t i = 0; i < 4; ++i) {
        bytes[at + i] = static_cast<uint8_t>(v >> (8 * i));
    }
}

// Headers that announce more than kMaxImagePixels are refused before decoding.
TEST_F(ImageLoader, RejectsOversizedImagesFromTheHeader) {
    const cv::Mat small(8, 8, CV_8UC3, cv::Scalar(1, 2, 3));
    const auto expect_too_large = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
        const std::string error = load_error(write(name, bytes));
        EXPECT_TRUE(contains(error, name) && contains(error, "exceeds the limit")) << name << ": " << error;
    };

    std::vector<uint8_t> png = encode(".png", small);
    put_be32(png, 16, 50000);
    put_be32(png, 20, 50000);
    expect_too_large("huge.png", png);

    std::vector<uint8_t> bmp = encode(".bmp", small);
    put_le32(bmp, 18, 20000);
    put_le32(bmp, 22, static_cast<uint32_t>(-20000));
    expect_too_large("huge.bmp", bmp);

    std::vector<uint8_t> jpeg = encode(".jpg", small);
    const std::array<uint8_t, 2> sof_marker = {0xff, 0xc0};
    const auto sof = std::search(jpeg.begin(), jpeg.end(), sof_marker.begin(), sof_marker.end());
    ASSERT_NE(sof, jpeg.end());
    const auto at = static_cast<size_t>(sof - jpeg.begin());
    jpeg[at + 5] = 0xfd;  // height 65000
    jpeg[at + 6] = 0xe8;
    jpeg[at + 7] = 0xfd;  // width 65000
    jpeg[at + 8] = 0xe8;
    expect_too_large("huge.jpg", jpeg);

    // Little-endian TIFF: IFD at 8 with ImageWidth and ImageLength as LONG values of 30000.
    std::vector<uint8_t> tiff = {'I', 'I', 42, 0, 8, 0, 0, 0, 2, 0};
    for (const uint8_t tag : {uint8_t{0}, uint8_t{1}}) {
        const std::vector<uint8_t> entry = {tag, 1, 4, 0, 1, 0, 0, 0, 0x30, 0x75, 0, 0};
        tiff.insert(tiff.end(), entry.begin(), entry.end());
    }
    tiff.insert(tiff.end(), {0, 0, 0, 0});
    expect_too_large("huge.tiff", tiff);

    // WebP extended header with a 20000x20000 canvas.
    std::vector<uint8_t> webp = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8',
                                 'X', 10,  0,   0,   0, 0, 0, 0, 0,   0,   0,   0,   0,   0,   0};
    put_le32(webp, 4, static_cast<uint32_t>(webp.size() - 8));
    webp[24] = static_cast<uint8_t>(19999 & 0xff);
    webp[25] = static_cast<uint8_t>(19999 >> 8);
    webp[27] = static_cast<uint8_t>(19999 & 0xff);
    webp[28] = static_cast<uint8_t>(19999 >> 8);
    expect_too_large("huge.webp", webp);
}

TEST(ImageDecode, EmptyBufferAndHeaderOnlyFilesFail) {
    EXPECT_THROW(decode_image({}, "nothing"), Error);
    const std::vector<uint8_t> png_signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    EXPECT_THROW(decode_image(png_signature, "signature"), Error);
    const std::vector<uint8_t> riff = {'R', 'I', 'F', 'F', 0,   0,   0,   0,
                                       'W', 'E', 'B', 'P', 'V', 'P', '8', 'L'};
    EXPECT_THROW(decode_image(riff, "riff"), Error);
    const std::vector<uint8_t> tiff_bad_ifd = {'M', 'M', 0, 42, 0xff, 0xff, 0xff, 0xff};
    EXPECT_THROW(decode_image(tiff_bad_ifd, "tiff"), Error);
}

}  // namespace
}  // namespace folio
