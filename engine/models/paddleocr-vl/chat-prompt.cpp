#include "engine/models/paddleocr-vl/chat-prompt.h"

#include <algorithm>
#include <limits>

#include "engine/common/error.h"

namespace folio {

namespace {

constexpr std::string_view kBeginOfSentence = "<|begin_of_sentence|>";
constexpr std::string_view kImageStart = "<|IMAGE_START|>";
constexpr std::string_view kImagePlaceholder = "<|IMAGE_PLACEHOLDER|>";
constexpr std::string_view kImageEnd = "<|IMAGE_END|>";

// The turns as PaddleOCR-VL's chat template lays them out, for a folder without a template of its own.
constexpr std::string_view kBuiltinTemplate =
    R"jinja({%- if not add_generation_prompt is defined -%}{%- set add_generation_prompt = true -%}{%- endif -%}{{- '<|begin_of_sentence|>' -}}{%- for message in messages -%}{%- if message['role'] == 'user' -%}{{- 'User: ' -}}{%- for content in message['content'] -%}{%- if content['type'] == 'image' -%}{{- '<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>' -}}{%- endif -%}{%- endfor -%}{%- for content in message['content'] -%}{%- if content['type'] == 'text' -%}{{- content['text'] -}}{%- endif -%}{%- endfor -%}{{- '\n' -}}{%- elif message['role'] == 'assistant' -%}{{- 'Assistant: ' -}}{%- for content in message['content'] -%}{%- if content['type'] == 'text' -%}{{- content['text'] -}}{%- endif -%}{%- endfor -%}{{- '<|end_of_sentence|>' -}}{%- endif -%}{%- endfor -%}{%- if add_generation_prompt -%}{{- 'Assistant: ' -}}{%- endif -%})jinja";

void check_template_token(const Tokenizer& tokenizer, std::string_view token, int32_t config_id,
                          const char* config_key) {
    const auto id = tokenizer.find_token(token);
    if (!id) {
        fail("chat prompt: the tokenizer has no ", token, " for the chat template");
    }
    if (*id != config_id) {
        fail("chat prompt: the model config's ", config_key, " is ", config_id, " but the tokenizer has ",
             token, " at ", *id);
    }
}

}  // namespace

SpecialTokenIds template_token_ids(const Tokenizer& tokenizer) {
    const auto id = [&](std::string_view token) {
        const std::optional<int32_t> found = tokenizer.find_token(token);
        if (!found) {
            fail("chat prompt: the tokenizer has no ", token, " for the chat template");
        }
        return *found;
    };
    return {id(kImagePlaceholder), id(kImageStart), id(kImageEnd)};
}

std::shared_ptr<const ChatTemplate> paddleocr_vl_chat_template(const std::filesystem::path& dir) {
    if (!dir.empty()) {
        if (std::optional<ChatTemplate> found = ChatTemplate::find_in_folder(dir)) {
            return std::make_shared<const ChatTemplate>(std::move(*found));
        }
    }
    static const std::shared_ptr<const ChatTemplate> builtin = std::make_shared<const ChatTemplate>(
        ChatTemplate::parse(kBuiltinTemplate, "PaddleOCR-VL's built-in chat template"));
    return builtin;
}

std::string chat_prompt_text(const ChatTemplate& chat_template, size_t n_images, std::string_view task) {
    nlohmann::ordered_json content = nlohmann::ordered_json::array();
    for (size_t i = 0; i < n_images; ++i) {
        content.push_back({{"type", "image"}});
    }
    content.push_back({{"type", "text"}, {"text", std::string(task)}});
    nlohmann::ordered_json context;
    context["messages"] =
        nlohmann::ordered_json::array({{{"role", "user"}, {"content", std::move(content)}}});
    context["add_generation_prompt"] = true;
    return chat_template.render(context);
}

ChatPromptTokens build_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                   const SpecialTokenIds& special, std::span<const int64_t> n_image_tokens,
                                   std::string_view task) {
    if (!tokenizer.find_token(kBeginOfSentence)) {
        fail("chat prompt: the tokenizer has no ", kBeginOfSentence, " for the chat template");
    }
    check_template_token(tokenizer, kImagePlaceholder, special.image_token_id, "image_token_id");
    check_template_token(tokenizer, kImageStart, special.vision_start_token_id, "vision_start_token_id");
    check_template_token(tokenizer, kImageEnd, special.vision_end_token_id, "vision_end_token_id");

    int64_t n_image_total = 0;
    for (size_t i = 0; i < n_image_tokens.size(); ++i) {
        if (n_image_tokens[i] < 1 ||
            n_image_tokens[i] > std::numeric_limits<int32_t>::max() - n_image_total) {
            fail("chat prompt: image ", i, " has ", n_image_tokens[i], " tokens");
        }
        n_image_total += n_image_tokens[i];
    }

    // The processor repeats each image's placeholder in the template's text before tokenizing it; as the
    // placeholder is an added token, repeating its id in the tokenized template is the same.
    const std::vector<int32_t> template_ids =
        tokenizer.encode(chat_prompt_text(chat_template, n_image_tokens.size(), task),
                         /*add_special_tokens=*/true);
    const auto count = [&](int32_t id) { return std::count(template_ids.begin(), template_ids.end(), id); };
    const auto n_images = static_cast<std::ptrdiff_t>(n_image_tokens.size());
    if (count(special.image_token_id) != n_images || count(special.vision_start_token_id) != n_images ||
        count(special.vision_end_token_id) != n_images) {
        fail("chat prompt: the task \"", task, "\" contains image tokens");
    }

    ChatPromptTokens prompt;
    prompt.ids.reserve(template_ids.size() + static_cast<size_t>(n_image_total));
    prompt.modality.reserve(prompt.ids.capacity());
    size_t image = 0;
    for (size_t i = 0; i < template_ids.size(); ++i) {
        const int32_t id = template_ids[i];
        if (id != special.image_token_id) {
            prompt.ids.push_back(id);
            prompt.modality.push_back(TokenModality::Text);
            continue;
        }
        if (i == 0 || template_ids[i - 1] != special.vision_start_token_id || i + 1 == template_ids.size() ||
            template_ids[i + 1] != special.vision_end_token_id) {
            fail("chat prompt: image placeholder ", image, " is not between ", kImageStart, " and ",
                 kImageEnd);
        }
        const auto n = static_cast<size_t>(n_image_tokens[image++]);
        prompt.ids.insert(prompt.ids.end(), n, id);
        prompt.modality.insert(prompt.modality.end(), n, TokenModality::Image);
    }
    return prompt;
}

}  // namespace folio
