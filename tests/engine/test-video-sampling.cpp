// transformers' frame sampling for ERNIE-4.5-VL videos against the indices its video processor gives
// (tests/fixtures/video/sampling.json, made by make_video_sampling_fixtures.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/image/image-preprocess.h"
#include "engine/image/image.h"
#include "engine/image/preprocessor-config.h"
#include "engine/image/video-sampling.h"

namespace folio {
namespace {

TEST(VideoSampling, IndicesEqualTheReference) {
    std::ifstream in(std::filesystem::path(FOLIO_FIXTURES_DIR) / ".." / "video" / "sampling.json");
    ASSERT_TRUE(in) << "sampling.json missing";
    const nlohmann::json cases = nlohmann::json::parse(in);
    ASSERT_GE(cases.size(), 8u);
    for (const auto& c : cases) {
        VideoSampling sampling;
        sampling.fps = c["fps"].is_null() ? std::nullopt : std::optional<double>(c["fps"].get<double>());
        sampling.min_frames = c["min_frames"].get<int64_t>();
        sampling.max_frames = c["max_frames"].get<int64_t>();
        const auto indices = sample_frame_indices(c["total_num_frames"].get<int64_t>(),
                                                  c["video_fps"].get<double>(), sampling);
        EXPECT_EQ(indices, c["indices"].get<std::vector<int64_t>>()) << c.dump();
    }
}

TEST(VideoSampling, RefusesWhatCannotBeSampled) {
    VideoSampling sampling;
    EXPECT_THROW(sample_frame_indices(0, 30.0, sampling), Error);
    EXPECT_THROW(sample_frame_indices(100, 0.0, sampling), Error);  // a rate needs the video's rate
    sampling.fps.reset();
    EXPECT_EQ(sample_frame_indices(100, 0.0, sampling).size(), 100u);
    sampling.max_frames = kMaxVideoFrames + 1;
    EXPECT_THROW(sample_frame_indices(100, 30.0, sampling), Error);
    sampling.max_frames = 8;
    sampling.min_frames = 0;
    EXPECT_THROW(sample_frame_indices(100, 30.0, sampling), Error);
    sampling.min_frames = 2;
    sampling.fps = -1.0;
    EXPECT_THROW(sample_frame_indices(100, 30.0, sampling), Error);
}

// A video's frames are resized within the video bounds where the model has them (ERNIE-4.5-VL's video
// processor: smart_resize with its size's shortest_edge and longest_edge), else within the images'.
TEST(VideoPreprocess, FramesResizeWithinTheVideoBounds) {
    PreprocessorConfig cfg;
    cfg.min_pixels = 3136;
    cfg.max_pixels = 37632;
    Video video;
    video.frames.assign(2, make_image(300, 200));
    PreprocessedImages as_images;
    append_video(as_images, video, cfg, "video");
    ASSERT_EQ(as_images.grids.size(), 1u);
    // 300x200 within 37632 pixels and multiples of 28: 224x140.
    EXPECT_EQ(as_images.grids[0].h, 10);
    EXPECT_EQ(as_images.grids[0].w, 16);
    cfg.video_min_pixels = 3136;
    cfg.video_max_pixels = 9408;
    PreprocessedImages as_video;
    append_video(as_video, video, cfg, "video");
    // Within 9408 pixels: 112x56.
    EXPECT_EQ(as_video.grids[0].h, 4);
    EXPECT_EQ(as_video.grids[0].w, 8);
    // Images keep theirs.
    PreprocessedImages image;
    append_image(image, video.frames[0], cfg, "image");
    EXPECT_EQ(image.grids[0].h, 10);
}

}  // namespace
}  // namespace folio
