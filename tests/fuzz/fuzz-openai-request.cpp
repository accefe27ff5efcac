// Fuzzes the server's request parsing: any body either parses into a request whose fields are in range, or
// throws an ApiError with a 4xx status; a data URL either decodes to bytes or throws the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "app/server/openai-protocol.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

void check_generation(const folio::server::GenerationRequest& g) {
    check(!g.max_tokens || *g.max_tokens >= 1);
    check(g.sampling.temperature >= 0.0f && g.sampling.temperature <= 2.0f);
    check(g.sampling.top_p > 0.0f && g.sampling.top_p <= 1.0f);
    check(g.sampling.top_k >= 0);
    check(g.sampling.repetition_penalty > 0.0f);
    check(g.stop.size() <= 16);
    check(!g.image_min_pixels || *g.image_min_pixels >= 1);
    check(!g.image_max_pixels || *g.image_max_pixels >= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    try {
        const folio::server::ChatCompletionRequest chat = folio::server::parse_chat_completion(body);
        check(!chat.messages.empty() && chat.messages.back().role == folio::ChatMessage::Role::User);
        check_generation(chat.generation);
        for (const auto& turn : chat.messages) {
            check(turn.role == folio::ChatMessage::Role::User ||
                  (turn.images.empty() && turn.videos.empty()));
            for (const auto& video : turn.videos) {
                check(video.url.empty() != video.frames.empty() && (video.frames.empty() || video.fps > 0.0));
            }
            for (const auto& image : turn.images) {
                try {
                    check(!folio::server::decode_data_url(image.url, "image").empty());
                } catch (const folio::server::ApiError& e) {
                    check(e.status() == 400);
                }
            }
        }
    } catch (const folio::server::ApiError& e) {
        check(e.status() >= 400 && e.status() < 500);
    }
    try {
        check_generation(folio::server::parse_completion(body).generation);
    } catch (const folio::server::ApiError& e) {
        check(e.status() >= 400 && e.status() < 500);
    }
    try {
        check(!folio::server::decode_data_url(body, "image").empty());
    } catch (const folio::server::ApiError& e) {
        check(e.status() == 400);
    }
    return 0;
}
