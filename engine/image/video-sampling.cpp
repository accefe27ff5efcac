#include "engine/image/video-sampling.h"

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"
#include "engine/image/image.h"

namespace folio {

void check_video_sampling(const VideoSampling& sampling, const char* what) {
    if (sampling.fps && !(std::isfinite(*sampling.fps) && *sampling.fps > 0.0)) {
        fail(what, ": the sampling rate must be a positive number of frames a second, got ", *sampling.fps);
    }
    if (sampling.min_frames < 1 || sampling.min_frames > sampling.max_frames ||
        sampling.max_frames > kMaxVideoFrames) {
        fail(what, ": the frame bounds must satisfy 1 <= min_frames <= max_frames <= ", kMaxVideoFrames,
             ", got ", sampling.min_frames, " and ", sampling.max_frames);
    }
}

std::vector<int64_t> sample_frame_indices(int64_t n_frames, double video_fps, const VideoSampling& sampling) {
    check_video_sampling(sampling, "video sampling");
    if (n_frames < 1) {
        fail("video sampling: a video needs at least one frame, got ", n_frames);
    }
    double n = static_cast<double>(n_frames);
    if (sampling.fps) {
        if (!(std::isfinite(video_fps) && video_fps > 0.0)) {
            fail("video sampling: sampling at ", *sampling.fps,
                 " frames a second needs the video's own rate, which is unknown (", video_fps, ")");
        }
        n = static_cast<double>(n_frames) / video_fps * *sampling.fps;
    }
    n = std::min({std::max(n, static_cast<double>(sampling.min_frames)),
                  static_cast<double>(sampling.max_frames), static_cast<double>(n_frames)});
    // torch.arange(0, end, step): ceil(end / step) values start + i * step, each rounded to float32.
    const double step = static_cast<double>(n_frames) / n;
    const auto count = static_cast<int64_t>(std::ceil(static_cast<double>(n_frames) / step));
    std::vector<int64_t> indices;
    indices.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
        const auto value = static_cast<float>(static_cast<double>(i) * step);
        indices.push_back(std::min(static_cast<int64_t>(value), n_frames - 1));
    }
    return indices;
}

}  // namespace folio
