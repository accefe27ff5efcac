// OpenAI chat messages as the server's requests and folio-cli generate --messages give them: each message's
// role and content (a string, or an array of text, image_url, video_url and video_frames parts) checked and
// read into turns whose images and videos are still URLs or paths. Each front end resolves those its own way
// (the server data URLs and allowed http(s) URLs, the command line files); the parts are read here alone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/service/request-builder.h"

namespace folio::server {

// One image or video of a turn as the message gives it.
struct MediaPart {
    std::string url;                  // image_url, video_url: the URL (or, on the command line, a path)
    std::vector<std::string> frames;  // video_frames: each frame's URL or path, in order
    double fps = 0.0;                 // video_frames: the rate the frames were taken at
    std::string param;                // where the part is: "messages[1].content[2]"

    bool is_frames() const { return !frames.empty(); }
};

struct ChatTurn {
    ChatMessage::Role role = ChatMessage::Role::User;
    std::string text;  // the text parts joined, in order
    // A user turn's images and videos, each in the order given; the template places a turn's images before
    // its videos and both before its text, as ChatMessage does.
    std::vector<MediaPart> images;
    std::vector<MediaPart> videos;
};

// The messages array read into turns: roles system (and developer, as system), user and assistant; content a
// string or an array of parts {"type": "text", "text"}, {"type": "image_url", "image_url": {"url"}},
// {"type": "video_url", "video_url": {"url"}} and {"type": "video_frames", "frames": [URL, ...], "fps": F};
// only user turns hold images and videos. Throws ApiError (400) naming the message and the part at fault
// ("messages[1].content[0].fps must be ..."). Whose turn comes last is not checked here.
std::vector<ChatTurn> parse_chat_messages(const nlohmann::json& messages);

}  // namespace folio::server
