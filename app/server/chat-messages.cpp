#include "app/server/chat-messages.h"

#include <cmath>

#include "app/server/openai-protocol.h"

namespace folio::server {

namespace {

using nlohmann::json;

// The member when present and not null.
const json* member(const json& obj, const char* key) {
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// A string member; a 400 naming it when it is missing or of another type.
std::string string_member(const json& obj, const char* key, const std::string& param) {
    const json* v = member(obj, key);
    if (!v) {
        bad_request(param + " is required", param);
    }
    if (!v->is_string()) {
        wrong_type(param, "a string", *v);
    }
    return v->get<std::string>();
}

// image_url and video_url: {"url": URL} as OpenAI gives it, or the URL alone as some clients send it.
std::string url_member(const json& part, const char* key, const std::string& at) {
    const json* holder = member(part, key);
    if (!holder) {
        bad_request(at + "." + key + " is required", at + "." + key);
    }
    if (holder->is_object()) {
        return string_member(*holder, "url", at + "." + key + ".url");
    }
    if (!holder->is_string()) {
        wrong_type(at + "." + key, "an object with a url", *holder);
    }
    return holder->get<std::string>();
}

MediaPart video_frames(const json& part, const std::string& at) {
    MediaPart video;
    video.param = at;
    const json* frames = member(part, "frames");
    if (!frames) {
        bad_request(at + ".frames is required", at + ".frames");
    }
    if (!frames->is_array()) {
        wrong_type(at + ".frames", "an array of image URLs", *frames);
    }
    if (frames->empty()) {
        bad_request(at + ".frames must hold at least one frame", at + ".frames");
    }
    for (size_t f = 0; f < frames->size(); ++f) {
        const json& frame = (*frames)[f];
        const std::string param = at + ".frames[" + std::to_string(f) + "]";
        if (!frame.is_string()) {
            wrong_type(param, "an image URL", frame);
        }
        video.frames.push_back(frame.get<std::string>());
    }
    const json* fps = member(part, "fps");
    if (!fps) {
        bad_request(at + ".fps is required: the rate the frames were taken at", at + ".fps");
    }
    if (!fps->is_number()) {
        wrong_type(at + ".fps", "a number", *fps);
    }
    video.fps = fps->get<double>();
    if (!(video.fps > 0.0) || !std::isfinite(video.fps)) {
        bad_request(at + ".fps must be a number above 0, got " + fps->dump(), at + ".fps");
    }
    return video;
}

// A message's content: a string, or an array of parts.
void parse_content(const json& content, const std::string& param, ChatTurn& turn) {
    if (content.is_string()) {
        turn.text = content.get<std::string>();
        return;
    }
    if (!content.is_array()) {
        wrong_type(param, "a string or an array of parts", content);
    }
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string at = param + "[" + std::to_string(i) + "]";
        if (!part.is_object()) {
            wrong_type(at, "an object", part);
        }
        const std::string kind = string_member(part, "type", at + ".type");
        if (kind == "text") {
            turn.text += string_member(part, "text", at + ".text");
            continue;
        }
        if (kind != "image_url" && kind != "video_url" && kind != "video_frames") {
            bad_request(
                at + ".type: '" + kind + "' is not supported; use text, image_url, video_url or video_frames",
                at + ".type");
        }
        if (turn.role != ChatMessage::Role::User) {
            bad_request(at + ": only user messages may hold images and videos", at);
        }
        if (kind == "image_url") {
            turn.images.push_back({url_member(part, "image_url", at), {}, 0.0, at});
        } else if (kind == "video_url") {
            turn.videos.push_back({url_member(part, "video_url", at), {}, 0.0, at});
        } else {
            turn.videos.push_back(video_frames(part, at));
        }
    }
}

}  // namespace

std::vector<ChatTurn> parse_chat_messages(const json& messages) {
    if (!messages.is_array()) {
        wrong_type("messages", "an array", messages);
    }
    std::vector<ChatTurn> turns;
    for (size_t i = 0; i < messages.size(); ++i) {
        const json& m = messages[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) {
            wrong_type(at, "an object", m);
        }
        const std::string role = string_member(m, "role", at + ".role");
        ChatTurn turn;
        if (role == "user") {
            turn.role = ChatMessage::Role::User;
        } else if (role == "assistant") {
            turn.role = ChatMessage::Role::Assistant;
        } else if (role == "system" || role == "developer") {
            turn.role = ChatMessage::Role::System;
        } else {
            bad_request(at + ".role: '" + role + "' is not supported; use system, user or assistant",
                        at + ".role");
        }
        if (const json* content = member(m, "content")) {
            parse_content(*content, at + ".content", turn);
        } else if (turn.role == ChatMessage::Role::User) {
            bad_request(at + ".content is required", at + ".content");
        }
        // A system turn goes to the chat template, which places it (ERNIE-4.5-VL's) or leaves it out
        // (PaddleOCR-VL's).
        turns.push_back(std::move(turn));
    }
    return turns;
}

}  // namespace folio::server
