// Fuzzes the server's request parsing: any body either parses into a request whose fields are in range, or
// throws an ApiError with a 4xx status; a data URL either decodes to bytes or throws the same. A request's
// document is cut to budgets as the server cuts it: what is given fits, and every page is given, given in part
// or named as left out.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "app/ask/document-passages.h"
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

void check_document(const folio::DocumentPassages& document, std::string_view question) {
    std::set<int> all;
    for (const folio::Passage& p : document.passages()) {
        all.insert(p.page);
    }
    for (const int64_t budget : {int64_t{0}, int64_t{200}, int64_t{600}, int64_t{1} << 20}) {
        const folio::PassageSelection s = document.select(question, budget);
        check(s.text.empty() == s.pages.empty());
        check(s.text.empty() || s.estimated_tokens + 64 <= budget);
        std::set<int> seen(s.pages.begin(), s.pages.end());
        for (const int page : s.in_part) {
            check(seen.count(page) == 1);
        }
        for (const int page : s.left_out) {
            check(seen.insert(page).second);
        }
        check(s.text.empty() || seen == all);
        folio::find_citations(s.text, document);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    try {
        const folio::server::ChatCompletionRequest chat = folio::server::parse_chat_completion(body);
        check(!chat.messages.empty() && chat.messages.back().role == folio::ChatMessage::Role::User);
        check_generation(chat.generation);
        if (chat.document) {
            check_document(*chat.document, chat.messages.back().text);
        }
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
