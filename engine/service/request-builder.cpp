#include "engine/service/request-builder.h"

#include <algorithm>
#include <iterator>

#include "engine/common/error.h"
#include "engine/image/image-preprocess.h"

namespace folio {

nlohmann::ordered_json chat_template_messages(const std::vector<ChatMessage>& messages) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const ChatMessage& m : messages) {
        nlohmann::ordered_json content = nlohmann::ordered_json::array();
        for (size_t i = 0; i < m.images.size(); ++i) {
            content.push_back({{"type", "image"}});
        }
        content.push_back({{"type", "text"}, {"text", m.text}});
        out.push_back({{"role", m.role == ChatMessage::Role::User ? "user" : "assistant"},
                       {"content", std::move(content)}});
    }
    return out;
}

std::string render_chat(const PromptFormat& format, const std::vector<ChatMessage>& messages) {
    if (!format.chat_template) {
        fail("the model has no chat template; give the prompt as text");
    }
    nlohmann::ordered_json context =
        format.template_values.is_object() ? format.template_values : nlohmann::ordered_json::object();
    context["messages"] = chat_template_messages(messages);
    context["add_generation_prompt"] = true;
    return format.chat_template->render(context);
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

PromptTokens RequestBuilder::expand(const std::string& text, const PreprocessedImages& images) const {
    const PromptFormat& f = format("a prompt");
    const SpecialTokenIds& special = f.special;
    const std::vector<int32_t> ids = f.tokenizer->encode(text, /*add_special_tokens=*/true);
    const auto count = [&](int32_t id) { return std::count(ids.begin(), ids.end(), id); };
    const auto n_images = static_cast<std::ptrdiff_t>(images.grids.size());
    if (count(special.image_token_id) != n_images || count(special.vision_start_token_id) != n_images ||
        count(special.vision_end_token_id) != n_images) {
        fail("the prompt's text contains image tokens of its own");
    }
    PromptTokens prompt;
    size_t image = 0;
    for (const int32_t id : ids) {
        if (id != special.image_token_id) {
            prompt.ids.push_back(id);
            prompt.is_image.push_back(0);
            continue;
        }
        const int64_t n = f.n_image_tokens(images.grids[image++]);
        prompt.ids.insert(prompt.ids.end(), static_cast<size_t>(n), id);
        prompt.is_image.insert(prompt.is_image.end(), static_cast<size_t>(n), 1);
    }
    return prompt;
}

void RequestBuilder::check(Request& r, const std::optional<int64_t>& max_tokens, bool fit_max_tokens) const {
    const auto n_images = static_cast<int64_t>(r.images.grids.size());
    if (n_images > limits_.limit_mm_per_prompt) {
        fail(n_images, " images in one request, more than limit_mm_per_prompt ", limits_.limit_mm_per_prompt);
    }
    if (limits_.max_image_tokens > 0 && format_) {
        for (size_t i = 0; i < r.images.grids.size(); ++i) {
            const int64_t n = format_->n_image_tokens(r.images.grids[i]);
            if (n > limits_.max_image_tokens) {
                fail("image ", i, " takes ", n, " tokens, more than the largest image of ",
                     limits_.max_image_tokens);
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
        if (chat->messages.empty() || chat->messages.back().role != ChatMessage::Role::User) {
            fail("a chat must end with the user's message");
        }
        std::vector<Image> images;
        for (size_t m = 0; m < chat->messages.size(); ++m) {
            ChatMessage& message = chat->messages[m];
            if (message.role == ChatMessage::Role::Assistant && !message.images.empty()) {
                fail("message ", m, ": the assistant's turns carry no images");
            }
            for (size_t i = 0; i < message.images.size(); ++i) {
                check_image(message.images[i],
                            "message " + std::to_string(m) + " image " + std::to_string(i));
            }
            // Moved out, the entries stay for the template to place.
            std::move(message.images.begin(), message.images.end(), std::back_inserter(images));
        }
        if (static_cast<int64_t>(images.size()) > limits_.limit_mm_per_prompt) {
            fail(images.size(), " images in one request, more than limit_mm_per_prompt ",
                 limits_.limit_mm_per_prompt);
        }
        if (spec.image_pixels) {
            const ImagePixelBounds& b = *spec.image_pixels;
            if (b.min_pixels < 1 || b.max_pixels < b.min_pixels) {
                fail("image pixel bounds ", b.min_pixels, "..", b.max_pixels, " are not a range");
            }
            // Within the model's own bound, which max_image_tokens is checked against.
            PreprocessorConfig bounded = f.preprocessor;
            bounded.max_pixels = std::min(b.max_pixels, f.preprocessor.max_pixels);
            bounded.min_pixels =
                b.min_pixels <= bounded.max_pixels ? b.min_pixels : f.preprocessor.min_pixels;
            r.images = preprocess_images(images, bounded);
        } else {
            r.images = preprocess_images(images, f.preprocessor);
        }
        r.prompt = expand(render_chat(f, chat->messages), r.images);
    } else if (auto* raw = std::get_if<RawText>(&spec.input)) {
        r.prompt = expand(raw->text, r.images);
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
    check(r, o.max_tokens, o.fit_max_tokens);
    r.image_hashes = hash_images(r.images);
    return r;
}

}  // namespace folio
