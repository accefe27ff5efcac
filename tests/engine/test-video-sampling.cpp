// transformers' frame sampling for ERNIE-4.5-VL videos against the indices its video processor gives
// (tests/fixtures/video/sampling.json, made by make_video_sampling_fixtures.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/image/image.h"
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

}  // namespace
}  // namespace folio
