// Video files to folio::Video through OpenCV's video I/O (FFmpeg): the frames sample_frame_indices picks from
// the count and rate the container reports, decoded to 8-bit RGB, with the rate they were sampled at.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "engine/image/image.h"
#include "engine/image/video-sampling.h"

namespace folio {

// Files larger than this are refused before they are opened.
inline constexpr int64_t kMaxVideoFileBytes = int64_t{4} << 30;
// The decoded frames of one video hold at most this many bytes.
inline constexpr int64_t kMaxVideoFrameBytes = int64_t{4} << 30;

// Decodes the sampled frames of a video file. Where the container's frame count is missing or longer than the
// stream, the frames are counted by reading the stream and sampled from that count. Throws folio::Error
// naming the file for a missing, empty or oversized file, one that does not decode as a video, frames of more
// than kMaxImagePixels pixels or of changing size, and frames that would hold more than kMaxVideoFrameBytes.
Video load_video(const std::filesystem::path& file, const VideoSampling& sampling);

// The same for a video in memory (a data URL's bytes), through a temporary file that is removed afterwards;
// `name` identifies it in errors.
Video decode_video(std::span<const uint8_t> bytes, std::string_view name, const VideoSampling& sampling);

}  // namespace folio
