#include "app/images/video-loader.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "engine/common/error.h"

namespace folio {

namespace {

cv::VideoCapture open_capture(const std::string& name) {
    cv::VideoCapture capture;
    try {
        capture.open(name, cv::CAP_FFMPEG);
    } catch (const cv::Exception& e) {
        fail(name, ": not a video that can be decoded (", e.what(), ")");
    }
    if (!capture.isOpened()) {
        fail(name, ": not a video that can be decoded (no video stream FFmpeg reads)");
    }
    return capture;
}

// Frames in the stream, counted by reading it (containers may not say, or say more than they hold).
int64_t count_frames(const std::string& name) {
    cv::VideoCapture capture = open_capture(name);
    int64_t n = 0;
    while (capture.grab()) {
        if (++n > int64_t{1} << 24) {
            fail(name, ": more than ", int64_t{1} << 24, " frames");
        }
    }
    return n;
}

Image to_image(const cv::Mat& frame, const std::string& name, int64_t index) {
    const std::string what = name + " frame " + std::to_string(index);
    check_image_size(frame.cols, frame.rows, what);
    cv::Mat rgb;
    if (frame.type() == CV_8UC3) {
        cv::cvtColor(frame, rgb, cv::COLOR_BGR2RGB);
    } else if (frame.type() == CV_8UC1) {
        cv::cvtColor(frame, rgb, cv::COLOR_GRAY2RGB);
    } else if (frame.type() == CV_8UC4) {
        cv::cvtColor(frame, rgb, cv::COLOR_BGRA2RGB);
    } else {
        fail(what, ": frames of OpenCV type ", frame.type(), " are not 8-bit colour");
    }
    Image image = make_image(rgb.cols, rgb.rows);
    for (int y = 0; y < rgb.rows; ++y) {
        std::copy_n(rgb.ptr<uint8_t>(y), static_cast<size_t>(rgb.cols) * 3,
                    image.rgb.data() + static_cast<size_t>(y) * static_cast<size_t>(rgb.cols) * 3);
    }
    return image;
}

// The frames at `indices` (ascending) of the stream; fewer where the stream ends first.
std::vector<Image> decode_frames(const std::string& name, const std::vector<int64_t>& indices) {
    cv::VideoCapture capture = open_capture(name);
    std::vector<Image> frames;
    int64_t bytes = 0;
    int64_t position = 0;
    for (const int64_t index : indices) {
        for (; position < index; ++position) {
            if (!capture.grab()) {
                return frames;
            }
        }
        cv::Mat frame;
        if (!capture.read(frame) || frame.empty()) {
            return frames;
        }
        ++position;
        Image image = to_image(frame, name, index);
        if (!frames.empty() &&
            (image.width != frames.front().width || image.height != frames.front().height)) {
            fail(name, ": frame ", index, " is ", image.width, "x", image.height,
                 ", the first sampled frame ", frames.front().width, "x", frames.front().height,
                 "; videos whose frame size changes are not "
                 "supported");
        }
        bytes += static_cast<int64_t>(image.rgb.size());
        if (bytes > kMaxVideoFrameBytes) {
            fail(name, ": ", indices.size(), " frames of ", image.width, "x", image.height,
                 " take more than ", kMaxVideoFrameBytes >> 30, " GiB; sample fewer (max_frames)");
        }
        frames.push_back(std::move(image));
    }
    return frames;
}

}  // namespace

Video load_video(const std::filesystem::path& file, const VideoSampling& sampling) {
    const std::string name = file.string();
    check_video_sampling(sampling, name.c_str());
    std::error_code error;
    const auto size = std::filesystem::file_size(file, error);
    if (error) {
        fail(name, ": cannot read the video (", error.message(), ")");
    }
    if (size == 0) {
        fail(name, ": the file is empty");
    }
    if (size > static_cast<uintmax_t>(kMaxVideoFileBytes)) {
        fail(name, ": ", size, " bytes, more than the ", kMaxVideoFileBytes >> 30, " GiB a video may have");
    }
    double fps = 0.0;
    int64_t n_frames = 0;
    {
        cv::VideoCapture capture = open_capture(name);
        fps = capture.get(cv::CAP_PROP_FPS);
        const double count = capture.get(cv::CAP_PROP_FRAME_COUNT);
        n_frames = std::isfinite(count) && count >= 1.0 && count < 1e9 ? static_cast<int64_t>(count) : 0;
    }
    if (!(std::isfinite(fps) && fps > 0.0 && fps < 1e4)) {
        fps = 0.0;
    }
    if (n_frames == 0) {
        n_frames = count_frames(name);
    }
    if (n_frames == 0) {
        fail(name, ": the video has no frames");
    }
    if (sampling.fps && fps == 0.0) {
        fail(name, ": the video does not say its frame rate, which sampling at ", *sampling.fps,
             " frames a second needs");
    }
    std::vector<int64_t> indices = sample_frame_indices(n_frames, fps, sampling);
    std::vector<Image> frames = decode_frames(name, indices);
    if (frames.size() < indices.size()) {
        // The container promised more frames than the stream holds: sampled again from the real count.
        n_frames = count_frames(name);
        if (n_frames == 0) {
            fail(name, ": no frame of the video decodes");
        }
        indices = sample_frame_indices(n_frames, fps, sampling);
        frames = decode_frames(name, indices);
        if (frames.size() < indices.size()) {
            fail(name, ": the video ends after ", frames.size(), " of the ", indices.size(),
                 " frames sampled");
        }
    }
    Video video;
    video.frames = std::move(frames);
    // The rate of the frames kept: the video's, spread over the frames sampled.
    video.fps =
        fps > 0.0 ? fps * static_cast<double>(video.frames.size()) / static_cast<double>(n_frames) : 0.0;
    return video;
}

Video decode_video(std::span<const uint8_t> bytes, std::string_view name, const VideoSampling& sampling) {
    if (bytes.empty()) {
        fail(name, ": the video is empty");
    }
    if (static_cast<int64_t>(bytes.size()) > kMaxVideoFileBytes) {
        fail(name, ": ", bytes.size(), " bytes, more than the ", kMaxVideoFileBytes >> 30,
             " GiB a video may have");
    }
    std::error_code error;
    std::string pattern = (std::filesystem::temp_directory_path(error) / "folio-video-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) {
        fail(name, ": cannot make a temporary file for the video in ", pattern);
    }
    // Removed however this ends.
    struct Remove {
        std::string path;
        ~Remove() { std::remove(path.c_str()); }
    } remove{pattern};
    ::close(fd);
    {
        std::ofstream out(pattern, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        if (!out) {
            fail(name, ": cannot write the video to the temporary file ", pattern);
        }
    }
    try {
        return load_video(pattern, sampling);
    } catch (const Error& e) {
        // The temporary file's name in the message is the caller's name for the video.
        std::string message = e.what();
        if (message.starts_with(pattern)) {
            message.replace(0, pattern.size(), name);
        }
        fail(message);
    }
}

}  // namespace folio
