// folio-cli generate --messages: a file of OpenAI chat messages read into the engine's chat turns, their
// parts parsed as the server parses them and their images and videos read from files (paths, file:// URLs) or
// data URLs.
#pragma once

#include <filesystem>
#include <vector>

#include "app/options/engine-options.h"
#include "engine/image/video-sampling.h"
#include "engine/service/request-builder.h"

namespace folio::cli {

// Reads the messages file: a JSON array of messages, or an object whose "messages" holds them (a chat
// request's body). Relative paths are taken from the file's folder. video_url parts are sampled from their
// files by `sampling`; a video_frames part becomes a video of its frames at its rate, and may have at most
// sampling.max_frames frames. Throws folio::Error naming the file, the message and the part at fault.
std::vector<ChatMessage> load_messages_file(const std::filesystem::path& file, const VideoSampling& sampling);

// How the model samples video files: VideoSampling's defaults, the min_frames and max_frames of the folder's
// video_preprocessor_config.json where it has them, then --mm-processor-kwargs' video_fps, video_min_frames
// and video_max_frames. Throws folio::Error naming the file or the option where they do not make bounds.
VideoSampling video_sampling(const std::filesystem::path& model_dir, const EngineOptions& options);

}  // namespace folio::cli
