// preprocessor_config.json of the patch image processors (PaddleOCR-VL's, as transformers' Qwen2-VL family
// writes it) as a typed, validated struct: the pixel bounds of smart_resize, the patch and merge sizes, and
// rescale and normalize. What engine/image-preprocess does with an image and the service's requests follow
// it. A key that is absent takes the reference image processor's default.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace folio {

// The largest max_pixels accepted (16384 x 16384).
inline constexpr int64_t kMaxPreprocessorPixels = int64_t{16384} * 16384;

struct PreprocessorConfig {
    int64_t min_pixels = 384 * 384;
    int64_t max_pixels = 1536 * 1536;
    int patch_size = 14;
    int merge_size = 2;
    int temporal_patch_size = 1;
    // A video's frames are padded, by repeating the last, to a multiple of this and of temporal_patch_size:
    // ERNIE-4.5-VL's resampler merges frames in pairs (the model's, not the file's).
    int video_frame_multiple = 1;
    // A video's frames are resized within these bounds (a video processor's own, such as ERNIE-4.5-VL's
    // video_preprocessor_config.json); 0: within the images' min_pixels and max_pixels.
    int64_t video_min_pixels = 0;
    int64_t video_max_pixels = 0;
    std::array<float, 3> image_mean{0.48145466f, 0.4578275f, 0.40821073f};
    std::array<float, 3> image_std{0.26862954f, 0.26130258f, 0.27577711f};
    double rescale_factor = 1.0 / 255;
    bool do_resize = true;
    bool do_rescale = true;
    bool do_normalize = true;
    bool do_convert_rgb = true;
    int resample = 3;  // PIL's numbering: 0 nearest, 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming
};

// Pixel bounds come from min_pixels/max_pixels where present, else from size.shortest_edge/longest_edge.
// `origin` names the file in error messages.
PreprocessorConfig parse_preprocessor_config(std::string_view json_text, const std::string& origin);
PreprocessorConfig load_preprocessor_config(const std::filesystem::path& preprocessor_config_json);

}  // namespace folio
