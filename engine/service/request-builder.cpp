#include "engine/service/request-builder.h"

#include <algorithm>
#include <iterator>
#include <variant>

#include "engine/common/error.h"
#include "engine/image/image-preprocess.h"

namespace folio {

nlohmann::ordered_json chat_template_messages(const std::vector<ChatMessage>& messages, bool text_content) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const ChatMessage& m : messages) {
        const char* role = m.role == ChatMessage::Role::System ? "system"
                           : m.role == ChatMessage::Role::User ? "user"
                                                               : "assistant";
        if (text_content) {
            if (!m.images.empty() || !m.videos.empty()) {
                const size_t n = m.images.size() + m.videos.size();
                fail("the model reads text only; it takes no images or videos (", n, " in a ", role,
                     " message)");
            }
            out.push_back({{"role", role}, {"content", m.text}});
            continue;
        }
        nlohmann::ordered_json content = nlohmann::ordered_json::array();
        for (size_t i = 0; i < m.images.size(); ++i) {
            content.push_back({{"type", "image"}});
        }
        for (size_t i = 0; i < m.videos.size(); ++i) {
            content.push_back({{"type", "video"}});
        }
        content.push_back({{"type", "text"}, {"text", m.text}});
        out.push_back({{"role", role}, {"content", std::move(content)}});
    }
    return out;
}

std::string render_chat(const PromptFormat& format, const std::vector<ChatMessage>& messages,
                        const nlohmann::ordered_json& kwargs, bool add_generation_prompt) {
    if (!format.chat_template) {
        fail("the model has no chat template; give the prompt as text");
    }
    if (!kwargs.is_object()) {
        fail("chat_template_kwargs must be an object, got ", kwargs.type_name());
    }
    nlohmann::ordered_json context =
        format.template_values.is_object() ? format.template_values : nlohmann::ordered_json::object();
    for (const auto& [key, value] : kwargs.items()) {
        context[key] = value;
    }
    context["messages"] = chat_template_messages(messages, format.text_content);
    context["add_generation_prompt"] = add_generation_prompt;
    return format.chat_template->render(context);
}

void check_media_counts(int64_t n_images, int64_t n_videos, const RequestLimits& limits) {
    if (n_images > limits.limit_mm_per_prompt) {
        fail(n_images, " images in one request, more than limit_mm_per_prompt ", limits.limit_mm_per_prompt);
    }
    if (n_videos > limits.limit_video_per_prompt) {
        fail(n_videos, n_videos == 1 ? " video" : " videos",
             " in one request, more than limit_mm_per_prompt's video limit ", limits.limit_video_per_prompt);
    }
}

std::vector<uint64_t> hash_images(const PreprocessedImages& images) {
    const std::span<const std::byte> level_values =
        images.levels.empty() ? std::span<const std::byte>{} : std::as_bytes(std::span(images.level_values));
    std::vector<uint64_t> hashes;
    for (size_t i = 0; i < images.grids.size(); ++i) {
        hashes.push_back(image_content_hash(images.image_bytes(i), level_values, images.grids[i]));
    }
    return hashes;
}

RequestBuilder::RequestBuilder(std::optional<PromptFormat> format, const RequestLimits& limits)
    : format_(std::move(format)), limits_(limits) {}

const PromptFormat& RequestBuilder::format(const char* what) const {
    if (!format_) {
        fail(what, " needs the model's tokenizer and chat template; this model takes prepared requests only");
    }
    return *format_;
}

std::vector<int64_t> RequestBuilder::count_tokens(const std::vector<std::string>& texts) const {
    const Tokenizer& tokenizer = *format("counting tokens").tokenizer;
    std::vector<int64_t> counts;
    counts.reserve(texts.size());
    for (const std::string& text : texts) {
        counts.push_back(static_cast<int64_t>(tokenizer.encode(text).size()));
    }
    return counts;
}

namespace {

// The model's preprocessor within a request's pixel bounds.
PreprocessorConfig bounded(const PromptFormat& f, const std::optional<ImagePixelBounds>& pixels) {
    PreprocessorConfig cfg = f.preprocessor;
    if (pixels) {
        const ImagePixelBounds& b = *pixels;
        if (b.min_pixels < 1 || b.max_pixels < b.min_pixels) {
            fail("image pixel bounds ", b.min_pixels, "..", b.max_pixels, " are not a range");
        }
        // Within the model's own bound, which max_image_tokens is checked against.
        cfg.max_pixels = std::min(b.max_pixels, f.preprocessor.max_pixels);
        cfg.min_pixels = b.min_pixels <= cfg.max_pixels ? b.min_pixels : f.preprocessor.min_pixels;
    }
    return cfg;
}

}  // namespace

std::vector<int64_t> RequestBuilder::count_media(const std::vector<MediaSize>& media,
                                                 const std::optional<ImagePixelBounds>& pixels) const {
    const PromptFormat& f = format("counting image tokens");
    const PreprocessorConfig cfg = bounded(f, pixels);
    std::vector<int64_t> counts;
    counts.reserve(media.size());
    for (size_t i = 0; i < media.size(); ++i) {
        const MediaSize& m = media[i];
        const std::string what = (m.kind == MediaKind::Video ? "video " : "image ") + std::to_string(i);
        if (m.kind == MediaKind::Video && f.special.video_token_id < 0) {
            fail(what, ": the model takes no video");
        }
        const ImageGrid grid = m.kind == MediaKind::Video
                                   ? video_grid(m.width, m.height, m.n_frames, cfg, what)
                                   : image_grid(m.width, m.height, cfg, what);
        counts.push_back(f.n_image_tokens(grid));
    }
    return counts;
}

std::vector<MediaSize> media_sizes(const std::vector<ChatMessage>& messages) {
    std::vector<MediaSize> sizes;
    for (const ChatMessage& m : messages) {
        for (const Image& image : m.images) {
            sizes.push_back({MediaKind::Image, image.width, image.height, 1});
        }
        for (const Video& video : m.videos) {
            const Image* first = video.frames.empty() ? nullptr : &video.frames.front();
            sizes.push_back({MediaKind::Video, first ? first->width : 0, first ? first->height : 0,
                             static_cast<int64_t>(video.frames.size())});
        }
    }
    return sizes;
}

PromptTokens RequestBuilder::expand(const std::string& text, const PreprocessedImages& images,
                                    bool add_special_tokens) const {
    const PromptFormat& f = format("a prompt");
    const SpecialTokenIds& special = f.special;
    const std::vector<int32_t> ids = f.tokenizer->encode(text, add_special_tokens);
    const auto count = [&](int32_t id) { return id < 0 ? 0 : std::count(ids.begin(), ids.end(), id); };
    const auto n_media = static_cast<std::ptrdiff_t>(images.grids.size());
    const std::ptrdiff_t n_videos = images.n_videos();
    // Videos marked by their own start and end tokens are counted apart from the images'.
    const bool video_marks = special.video_start_token_id >= 0;
    const std::ptrdiff_t n_marked = video_marks ? n_media - n_videos : n_media;
    const bool marks_match =
        count(special.vision_start_token_id) == n_marked && count(special.vision_end_token_id) == n_marked &&
        (!video_marks || (count(special.video_start_token_id) == n_videos &&
                          (special.video_end_token_id < 0 || count(special.video_end_token_id) == n_videos)));
    if (count(special.image_token_id) != n_media - n_videos || count(special.video_token_id) != n_videos ||
        !marks_match) {
        fail("the prompt has ", count(special.image_token_id), " image and ", count(special.video_token_id),
             " video placeholders for ", n_media - n_videos, " images and ", n_videos,
             " videos (the chat template dropped some, or the text holds such tokens of its own)");
    }
    PromptTokens prompt;
    size_t item = 0;
    for (const int32_t id : ids) {
        const bool image = id == special.image_token_id, video = id == special.video_token_id;
        if (!image && !video) {
            prompt.ids.push_back(id);
            prompt.modality.push_back(TokenModality::Text);
            continue;
        }
        if ((images.kind(item) == MediaKind::Video) != video) {
            fail("the chat template places ", video ? "a video" : "an image", " where item ", item, " is ",
                 video ? "an image" : "a video");
        }
        const int64_t n = f.n_image_tokens(images.grids[item++]);
        prompt.ids.insert(prompt.ids.end(), static_cast<size_t>(n), id);
        prompt.modality.insert(prompt.modality.end(), static_cast<size_t>(n),
                               video ? TokenModality::Video : TokenModality::Image);
    }
    return prompt;
}

void RequestBuilder::check(Request& r, const std::optional<int64_t>& max_tokens, bool fit_max_tokens) const {
    const auto n_videos = static_cast<int64_t>(r.images.n_videos());
    check_media_counts(static_cast<int64_t>(r.images.grids.size()) - n_videos, n_videos, limits_);
    if (limits_.max_image_tokens > 0 && format_) {
        for (size_t i = 0; i < r.images.grids.size(); ++i) {
            const int64_t n = format_->n_image_tokens(r.images.grids[i]);
            // A step takes an image or a video whole, so a video's frames together fit the same bound.
            if (n > limits_.max_image_tokens) {
                fail(r.images.kind(i) == MediaKind::Video ? "video " : "image ", i, " takes ", n,
                     " tokens, more than the largest image of ", limits_.max_image_tokens);
            }
        }
    }
    const auto n_prompt = static_cast<int64_t>(r.prompt.ids.size());
    if (n_prompt == 0) {
        fail("empty prompt");
    }
    const int64_t room = limits_.max_model_len - n_prompt;
    if (room < 1) {
        fail("a prompt of ", n_prompt, " tokens leaves no room for output in max_model_len ",
             limits_.max_model_len);
    }
    if (max_tokens) {
        if (*max_tokens < 1) {
            fail("max_tokens must be at least 1, got ", *max_tokens);
        }
        if (*max_tokens > room && !fit_max_tokens) {
            fail("max_tokens ", *max_tokens, " with a prompt of ", n_prompt, " tokens exceeds max_model_len ",
                 limits_.max_model_len, " (at most ", room, " new tokens)");
        }
        r.max_tokens = std::min(*max_tokens, room);
    } else {
        r.max_tokens = room;
    }
}

Request RequestBuilder::build(RequestSpec spec) const {
    Request r;
    const GenerationOptions& o = spec.options;
    r.sampling = o.sampling;
    std::optional<int64_t> n_new_tokens = o.max_tokens;
    bool fit_max_tokens = o.fit_max_tokens;
    if (format_ && !std::holds_alternative<Request>(spec.input)) {
        const GenerationDefaults& defaults = format_->generation;
        r.sampling = apply_generation_defaults(defaults, o.sampling, o.model_defaults);
        if (!n_new_tokens && o.model_defaults.max_tokens && defaults.max_new_tokens) {
            n_new_tokens = defaults.max_new_tokens;
            // The model's default length is a bound, lowered to what the context leaves.
            fit_max_tokens = true;
        }
    }
    r.stop_strings = o.stop_strings;
    r.stop_ids = o.stop_ids;
    r.ignore_eos = o.ignore_eos;
    r.skip_special_tokens = o.skip_special_tokens;
    if (auto* task = std::get_if<ImageTask>(&spec.input)) {
        ChatMessage m;
        m.text = std::move(task->task);
        m.images = std::move(task->images);
        spec.input = Chat{{std::move(m)}};
    }
    if (auto* chat = std::get_if<Chat>(&spec.input)) {
        const PromptFormat& f = format("a chat");
        // Without the generation prompt the chat may end with the assistant's turn, which the model
        // continues.
        if (chat->messages.empty() ||
            (chat->add_generation_prompt && chat->messages.back().role != ChatMessage::Role::User)) {
            fail("a chat must end with the user's message");
        }
        int64_t n_images = 0, n_videos = 0;
        for (size_t m = 0; m < chat->messages.size(); ++m) {
            const ChatMessage& message = chat->messages[m];
            if (message.role != ChatMessage::Role::User &&
                (!message.images.empty() || !message.videos.empty())) {
                fail("message ", m, ": only the user's turns carry images or videos");
            }
            if (!message.videos.empty() && f.special.video_token_id < 0) {
                fail("message ", m, ": the model takes no video");
            }
            n_images += static_cast<int64_t>(message.images.size());
            n_videos += static_cast<int64_t>(message.videos.size());
        }
        check_media_counts(n_images, n_videos, limits_);
        const PreprocessorConfig within = bounded(f, spec.image_pixels);
        // Each turn's images, then its videos, as chat_template_messages gives them to the template; the
        // pixels are released as they are cut into patches.
        for (size_t m = 0; m < chat->messages.size(); ++m) {
            ChatMessage& message = chat->messages[m];
            const std::string turn = "message " + std::to_string(m);
            for (size_t i = 0; i < message.images.size(); ++i) {
                append_image(r.images, message.images[i], within, turn + " image " + std::to_string(i));
                message.images[i] = Image{};
            }
            for (size_t i = 0; i < message.videos.size(); ++i) {
                append_video(r.images, message.videos[i], within, turn + " video " + std::to_string(i));
                message.videos[i] = Video{};
            }
        }
        r.prompt = expand(render_chat(f, chat->messages, chat->template_kwargs, chat->add_generation_prompt),
                          r.images, f.chat_special_tokens);
    } else if (auto* raw = std::get_if<RawText>(&spec.input)) {
        r.prompt = expand(raw->text, r.images, true);
    } else {
        Request& prepared = std::get<Request>(spec.input);
        const int64_t max_tokens = prepared.max_tokens;
        r = std::move(prepared);
        check(r, max_tokens, false);
        if (r.image_hashes.empty()) {
            r.image_hashes = hash_images(r.images);
        }
        return r;
    }
    check(r, n_new_tokens, fit_max_tokens);
    r.image_hashes = hash_images(r.images);
    return r;
}

}  // namespace folio
