// Which frames of a video the vision encoder sees: transformers' sample_frames for ERNIE-4.5-VL (frames at a
// rate, bounded by a minimum and a maximum count and by the video's own length), computed from the frame
// count and rate a container reports, before any frame is decoded.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace folio {

// How a video is sampled. The defaults are FastDeploy's for ERNIE-4.5-VL (2 frames a second, 16 to 180
// frames); transformers' processor takes min_frames and max_frames from video_preprocessor_config.json and
// samples only when asked to.
struct VideoSampling {
    std::optional<double> fps = 2.0;  // none: every frame, within the bounds
    int64_t min_frames = 16;
    int64_t max_frames = 180;
};

// The indices of the frames to keep, ascending, of a video of n_frames frames taken at video_fps frames a
// second: n = n_frames / video_fps * fps (n_frames without a rate), clamped to [min_frames, max_frames] and
// to n_frames, then every n_frames / n-th frame (the index truncated after float32 rounding, as
// torch.arange(0, n_frames, n_frames / n).int() gives). Throws folio::Error for a non-positive count, a rate
// that is not positive and finite when one is needed, or bounds that are not 1 <= min_frames <= max_frames <=
// kMaxVideoFrames.
std::vector<int64_t> sample_frame_indices(int64_t n_frames, double video_fps, const VideoSampling& sampling);

// Throws folio::Error naming `what` for bounds sample_frame_indices refuses.
void check_video_sampling(const VideoSampling& sampling, const char* what);

}  // namespace folio
