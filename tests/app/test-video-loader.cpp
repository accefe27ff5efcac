// Video files through OpenCV's FFmpeg reader: the frames transformers' sampling picks, decoded as FFmpeg's
// own command line decodes them, and clear errors for files that are not videos.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "app/images/image-loader.h"
#include "app/images/video-loader.h"
#include "engine/common/error.h"

namespace folio {
namespace {

const std::filesystem::path kVideos = std::filesystem::path(FOLIO_FIXTURES_DIR) / ".." / "video";
// 33 frames of FFmpeg's testsrc2 pattern, 64x48 at 10 frames a second, H.264.
const std::filesystem::path kTestVideo = kVideos / "testsrc-64x48-10fps.mp4";

std::string error_of(const auto& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// Mean absolute difference of two images' samples.
double mean_difference(const Image& a, const Image& b) {
    double sum = 0.0;
    for (size_t i = 0; i < a.rgb.size(); ++i) {
        sum += std::abs(static_cast<int>(a.rgb[i]) - static_cast<int>(b.rgb[i]));
    }
    return sum / static_cast<double>(a.rgb.size());
}

TEST(VideoLoader, SamplesAtTheRateAskedWithinTheFrameBounds) {
    VideoSampling sampling;
    sampling.fps = 2.0;
    sampling.min_frames = 4;
    // 3.3 s at 2 frames a second: 6.6 frames, every 5th of 33 (torch.arange(0, 33, 5)).
    const Video video = load_video(kTestVideo, sampling);
    ASSERT_EQ(video.frames.size(), 7u);
    EXPECT_EQ(video.frames[0].width, 64);
    EXPECT_EQ(video.frames[0].height, 48);
    EXPECT_NEAR(video.fps, 10.0 * 7.0 / 33.0, 1e-9);
    // Frames 0, 5 and 30 as `ffmpeg -vf select=eq(n,N) -pix_fmt rgb24` writes them; the two convert the
    // chroma with different filters, so the samples agree closely rather than exactly.
    const std::vector<std::pair<size_t, int>> checked = {{0, 0}, {1, 5}, {6, 30}};
    for (const auto& [kept, frame] : checked) {
        const Image expected = load_image(kVideos / ("frame-" + std::to_string(frame) + ".png"));
        ASSERT_EQ(expected.width, video.frames[kept].width);
        ASSERT_EQ(expected.height, video.frames[kept].height);
        const double difference = mean_difference(video.frames[kept], expected);
        EXPECT_LT(difference, 1.0) << "frame " << frame;
        // Every other frame kept is further from it: the pattern moves from frame to frame.
        for (size_t other = 0; other < video.frames.size(); ++other) {
            if (other != kept) {
                EXPECT_GT(mean_difference(video.frames[other], expected), difference + 0.5)
                    << "frame " << frame << " against kept frame " << other;
            }
        }
    }
}

TEST(VideoLoader, MinimumFramesAndEveryFrame) {
    // The default minimum of 16 frames is above 6.6: 16 frames, 33/16 apart.
    EXPECT_EQ(load_video(kTestVideo, VideoSampling{}).frames.size(), 16u);
    // Without a rate every frame, up to max_frames.
    VideoSampling all;
    all.fps.reset();
    EXPECT_EQ(load_video(kTestVideo, all).frames.size(), 33u);
    all.max_frames = 20;
    all.min_frames = 2;
    EXPECT_EQ(load_video(kTestVideo, all).frames.size(), 20u);
}

TEST(VideoLoader, DecodesFromMemoryAndNamesTheCallersName) {
    std::ifstream in(kTestVideo, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    VideoSampling sampling;
    sampling.min_frames = 4;
    EXPECT_EQ(decode_video(bytes, "messages[0] video 1", sampling).frames.size(), 7u);
    const std::vector<uint8_t> text = {'n', 'o', 't', ' ', 'a', ' ', 'v', 'i', 'd', 'e', 'o'};
    const std::string message = error_of([&] { decode_video(text, "messages[0] video 1", sampling); });
    EXPECT_TRUE(message.starts_with("messages[0] video 1: ")) << message;
    EXPECT_EQ(message.find("folio-video-"), std::string::npos) << message;
}

TEST(VideoLoader, BadFilesAreNamedErrors) {
    std::string message = error_of([] { load_video(kVideos / "not-a-video.mp4", VideoSampling{}); });
    EXPECT_NE(message.find("not-a-video.mp4: not a video"), std::string::npos) << message;
    message = error_of([] { load_video(kVideos / "missing.mp4", VideoSampling{}); });
    EXPECT_NE(message.find("missing.mp4: cannot read the video"), std::string::npos) << message;
    const std::filesystem::path empty = std::filesystem::temp_directory_path() / "folio-empty-video.mp4";
    std::ofstream(empty).close();
    message = error_of([&] { load_video(empty, VideoSampling{}); });
    std::filesystem::remove(empty);
    EXPECT_NE(message.find("the file is empty"), std::string::npos) << message;
    VideoSampling bad;
    bad.min_frames = 20;
    bad.max_frames = 10;
    message = error_of([&] { load_video(kTestVideo, bad); });
    EXPECT_NE(message.find("min_frames <= max_frames"), std::string::npos) << message;
}

}  // namespace
}  // namespace folio
