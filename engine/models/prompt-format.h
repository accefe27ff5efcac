// What building a prompt needs of a model, whichever its family: its tokenizer, its chat template with the
// values the template is given beside the messages, the ids of its image tokens, the image processor and
// how many placeholder tokens an image takes. A family's loaded model gives one; the service's request
// builder uses it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/chat-template/chat-template.h"
#include "engine/image/image-preprocess.h"
#include "engine/image/preprocessor-config.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {

// The ids of the tokens a chat template marks an image or a video with (a placeholder that stands for each
// of its features, between a start and an end token), from the model's config and checked against the
// tokenizer.
struct SpecialTokenIds {
    int32_t image_token_id = -1;
    int32_t vision_start_token_id = -1;
    int32_t vision_end_token_id = -1;
    int32_t video_token_id = -1;  // -1: the model takes no video
    // A video's own start and end tokens (ERNIE-4.5-VL's <|VIDEO_START|>, <|VIDEO_END|>); -1: a video is
    // marked with the image's.
    int32_t video_start_token_id = -1;
    int32_t video_end_token_id = -1;
};

// What building a prompt needs of a model: its tokenizer, its chat template with the values the template
// is given beside the messages (the tokenizer's special tokens, template options), the template's special
// ids, the image processor and the placeholder tokens an image takes. n_image_tokens must be safe to call
// from any thread.
struct PromptFormat {
    const Tokenizer* tokenizer = nullptr;
    std::shared_ptr<const ChatTemplate> chat_template;
    nlohmann::ordered_json template_values = nlohmann::ordered_json::object();
    SpecialTokenIds special;
    PreprocessorConfig preprocessor;
    std::function<int64_t(const ImageGrid&)> n_image_tokens;
};

// The tokenizer's special tokens as a chat template is given them beside the messages (bos_token,
// eos_token, pad_token where it has them), as transformers passes its special tokens map.
nlohmann::ordered_json special_token_values(const Tokenizer& tokenizer);

}  // namespace folio
