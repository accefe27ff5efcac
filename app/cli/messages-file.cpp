#include "app/cli/messages-file.h"

#include <QString>
#include <QUrl>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "app/images/image-loader.h"
#include "app/images/video-loader.h"
#include "app/server/chat-messages.h"
#include "app/server/openai-protocol.h"
#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"

namespace folio::cli {

namespace {

// What a part points at: the bytes of a data URL, or a file.
struct Source {
    std::vector<uint8_t> bytes;  // a data URL's
    std::filesystem::path file;  // otherwise
};

Source source_of(const std::string& url, const std::filesystem::path& base, const std::string& where,
                 std::string_view kind) {
    if (url.starts_with("data:")) {
        try {
            return {server::decode_data_url(url, where, kind), {}};
        } catch (const server::ApiError& e) {
            fail(e.what());
        }
    }
    if (url.starts_with("http://") || url.starts_with("https://")) {
        fail(where, ": ", kind, " URLs are not fetched; give a file path or a data URL, got '", url, "'");
    }
    std::string path = url;
    if (path.starts_with("file:")) {
        // Percent-decoded, as a URL's path is: file:///tmp/a%20b.png is "/tmp/a b.png".
        const QUrl u(QString::fromStdString(url), QUrl::StrictMode);
        if (!u.isValid() || (!u.host().isEmpty() && u.host() != QStringLiteral("localhost"))) {
            fail(where, ": '", url,
                 "' is not a file URL of this machine (file:///path, or file://localhost/path)");
        }
        path = u.path(QUrl::FullyDecoded).toStdString();
    }
    if (path.empty()) {
        fail(where, ": an empty path");
    }
    const std::filesystem::path p(path);
    return {{}, p.is_absolute() ? p : base / p};
}

Image read_image(const std::string& url, const std::filesystem::path& base, const std::string& where) {
    Source s = source_of(url, base, where, "image");
    try {
        return s.file.empty() ? decode_image(s.bytes, where) : load_image(s.file);
    } catch (const Error& e) {
        fail(where, ": ", e.what());
    }
}

Video read_video(const server::MediaPart& part, const std::filesystem::path& base, const std::string& where,
                 const VideoSampling& sampling) {
    if (!part.is_frames()) {
        Source s = source_of(part.url, base, where, "video");
        try {
            return s.file.empty() ? decode_video(s.bytes, where, sampling) : load_video(s.file, sampling);
        } catch (const Error& e) {
            fail(where, ": ", e.what());
        }
    }
    const auto n_frames = static_cast<int64_t>(part.frames.size());
    if (n_frames > sampling.max_frames) {
        fail(where, ".frames: ", n_frames, " frames, more than the ", sampling.max_frames,
             " a video may have (max_frames; --mm-processor-kwargs video_max_frames)");
    }
    Video video;
    video.fps = part.fps;
    for (size_t f = 0; f < part.frames.size(); ++f) {
        video.frames.push_back(
            read_image(part.frames[f], base, where + ".frames[" + std::to_string(f) + "]"));
    }
    return video;
}

}  // namespace

std::vector<ChatMessage> load_messages_file(const std::filesystem::path& file,
                                            const VideoSampling& sampling) {
    const std::string name = file.string();
    std::string problem;
    const std::optional<nlohmann::json> doc = try_parse_json(read_file_text(file), problem);
    if (!doc) {
        fail(name, ": ", problem);
    }
    const nlohmann::json* messages = &*doc;
    if (doc->is_object()) {
        const auto it = doc->find("messages");
        if (it == doc->end()) {
            fail(name, ": expected an array of messages or an object with \"messages\"");
        }
        messages = &*it;
    }
    std::vector<server::ChatTurn> turns;
    try {
        turns = server::parse_chat_messages(*messages);
    } catch (const server::ApiError& e) {
        fail(name, ": ", e.what());
    }
    const std::filesystem::path base = file.parent_path();
    std::vector<ChatMessage> out;
    for (server::ChatTurn& turn : turns) {
        ChatMessage& message = out.emplace_back(turn.role, std::move(turn.text));
        for (const server::MediaPart& part : turn.images) {
            message.images.push_back(read_image(part.url, base, name + ": " + part.param));
        }
        for (const server::MediaPart& part : turn.videos) {
            message.videos.push_back(read_video(part, base, name + ": " + part.param, sampling));
        }
    }
    return out;
}

VideoSampling video_sampling(const std::filesystem::path& model_dir, const EngineOptions& options) {
    VideoSampling sampling;
    const std::filesystem::path file = model_dir / "video_preprocessor_config.json";
    if (std::filesystem::exists(file)) {
        std::string problem;
        const std::optional<nlohmann::json> doc = try_parse_json(read_file_text(file), problem);
        if (!doc || !doc->is_object()) {
            fail(file.string(), ": ", doc ? "expected a JSON object" : problem);
        }
        for (const auto& [key, bound] :
             {std::pair{"min_frames", &sampling.min_frames}, std::pair{"max_frames", &sampling.max_frames}}) {
            const auto it = doc->find(key);
            if (it == doc->end() || it->is_null()) {
                continue;
            }
            if (!it->is_number_integer()) {
                fail(file.string(), ": ", key, " must be an integer, got ", it->dump());
            }
            *bound = it->get<int64_t>();
        }
        check_video_sampling(sampling, file.string().c_str());
    }
    if (options.video_fps) {
        sampling.fps = options.video_fps;
    }
    sampling.min_frames = options.video_min_frames.value_or(sampling.min_frames);
    sampling.max_frames = options.video_max_frames.value_or(sampling.max_frames);
    check_video_sampling(sampling, "--mm-processor-kwargs");
    return sampling;
}

}  // namespace folio::cli
