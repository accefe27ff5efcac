// From what a client has to a request the engine takes: images and a task, a multi-turn chat with images in
// any turn (rendered as the model's chat template renders it), raw text, or a request already made. Images
// are preprocessed and hashed here, off the engine thread, and the limits are checked against the model and
// the engine (max_model_len, the images and videos a prompt may hold, the largest image, max_tokens).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/chat-template/chat-template.h"
#include "engine/image/image-preprocess.h"
#include "engine/image/image.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/prompt-format.h"
#include "engine/runtime/engine-core.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {

struct ChatMessage {
    enum class Role { System, User, Assistant };
    ChatMessage() = default;
    ChatMessage(Role message_role, std::string message_text, std::vector<Image> message_images = {},
                std::vector<Video> message_videos = {})
        : role(message_role),
          text(std::move(message_text)),
          images(std::move(message_images)),
          videos(std::move(message_videos)) {}

    Role role = Role::User;
    std::string text;
    std::vector<Image> images;  // a user turn's images, shown before its text as the template places them
    std::vector<Video> videos;  // a user turn's videos, after its images
};

// Images and a task prompt ("OCR:", "Table Recognition:", ...): one user turn.
struct ImageTask {
    std::vector<Image> images;
    std::string task;
};
struct Chat {
    std::vector<ChatMessage> messages;  // the last one the user's
    // Variables the template is given beside the model's values (a request's chat_template_kwargs, such as
    // enable_thinking), over those of the same name; "messages" and "add_generation_prompt" are the chat's.
    nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
    // The template's generation prompt (the assistant's turn opened) after the messages; without it the
    // prompt ends where the last message does.
    bool add_generation_prompt = true;
};
// Text tokenized as it is, without the chat template.
struct RawText {
    std::string text;
};

struct GenerationOptions {
    std::optional<int64_t> max_tokens;  // none: as many as max_model_len leaves
    SamplingParams sampling;
    // The values of `sampling` (and max_tokens where it is none) the model's generation_config.json fills in:
    // those the user or client left unset. None by default: the values above as they are.
    SamplingDefaultsUse model_defaults;
    std::vector<std::string> stop_strings;
    std::vector<int32_t> stop_ids;  // the model's eos ids when empty
    bool ignore_eos = false;
    bool skip_special_tokens = true;
    // A max_tokens over what max_model_len leaves after the prompt is lowered to that instead of refused (the
    // document pipeline's 4096 new tokens a block, whatever the context).
    bool fit_max_tokens = false;
};

// The pixel bounds images are resized within (smart_resize's min_pixels and max_pixels).
struct ImagePixelBounds {
    int64_t min_pixels = 0;
    int64_t max_pixels = 0;
};

struct RequestSpec {
    using Input = std::variant<ImageTask, Chat, RawText, Request>;
    RequestSpec() = default;
    RequestSpec(Input spec_input, GenerationOptions spec_options = {})  // NOLINT(google-explicit-constructor)
        : input(std::move(spec_input)), options(std::move(spec_options)) {}

    Input input;
    GenerationOptions options;  // ignored for a Request, which has its own
    // The served model's name (ModelDescription::name); empty: the first generative model loaded.
    std::string model;
    // This request's images resized within these bounds instead of the model's (the document pipeline's
    // bounds for block crops), kept within the model's max_pixels (bounds wholly above it: the model's own).
    std::optional<ImagePixelBounds> image_pixels;
};

// What the request must fit.
struct RequestLimits {
    int64_t max_model_len = 0;
    int64_t limit_mm_per_prompt = 0;  // images
    int64_t max_image_tokens = 0;     // 0: no bound of its own
    int64_t limit_video_per_prompt = 1;
};

// An image's or a video's size, which is all that the tokens it takes in a prompt depend on.
struct MediaSize {
    MediaKind kind = MediaKind::Image;
    int width = 0;
    int height = 0;
    int64_t n_frames = 1;  // a video's
};
// The messages' images and videos in the order a chat's prompt places them.
std::vector<MediaSize> media_sizes(const std::vector<ChatMessage>& messages);

// Throws folio::Error where a request's images or videos are more than the limits allow, each counted alone.
void check_media_counts(int64_t n_images, int64_t n_videos, const RequestLimits& limits);

// The messages as a chat template takes them: {"role", "content": [{"type": "image"}..., {"type":
// "video"}...,
// {"type": "text", "text"}]}, a user turn's images and videos before its text; with text_content, the content
// is the message's text (a message with images or videos is then an error).
nlohmann::ordered_json chat_template_messages(const std::vector<ChatMessage>& messages,
                                              bool text_content = false);

// The format's chat template rendered over the messages, with the generation prompt unless told otherwise,
// each image as the template places it (one placeholder), with the kwargs (an object) as further variables.
// Throws folio::Error naming the template where it fails, and for kwargs that are not an object.
std::string render_chat(const PromptFormat& format, const std::vector<ChatMessage>& messages,
                        const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object(),
                        bool add_generation_prompt = true);

class RequestBuilder {
public:
    // Without a format only prepared requests are taken.
    RequestBuilder(std::optional<PromptFormat> format, const RequestLimits& limits);

    // The request, its images preprocessed and hashed; throws folio::Error naming what does not fit.
    Request build(RequestSpec spec) const;
    const RequestLimits& limits() const { return limits_; }
    // The tokens each text takes in the model's tokenizer, no special tokens added; throws folio::Error for
    // a model that takes prepared requests only.
    std::vector<int64_t> count_tokens(const std::vector<std::string>& texts) const;
    // The tokens each image or video takes in a chat's prompt, within the request's pixel bounds as build()
    // sets them, from their sizes alone; throws folio::Error as build() does for one it would refuse.
    std::vector<int64_t> count_media(const std::vector<MediaSize>& media,
                                     const std::optional<ImagePixelBounds>& pixels = std::nullopt) const;

private:
    const PromptFormat& format(const char* what) const;
    // Tokenizes the template text and repeats each image or video placeholder once per token of its item; the
    // placeholders must come in the order of the items.
    // add_special_tokens: the tokenizer's own special tokens (a BOS its post-processor adds) around the text.
    PromptTokens expand(const std::string& text, const PreprocessedImages& images,
                        bool add_special_tokens) const;
    void check(Request& request, const std::optional<int64_t>& max_tokens, bool fit_max_tokens) const;

    std::optional<PromptFormat> format_;
    RequestLimits limits_;
};

// Every image's content hash, for Request::image_hashes.
std::vector<uint64_t> hash_images(const PreprocessedImages& images);

}  // namespace folio
