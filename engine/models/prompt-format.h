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
#include "engine/models/generation-config.h"
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
    // Where a video's run is marked by tokens of its own (ERNIE-4.5-VL's <|VIDEO_START|>); -1: the vision
    // start and end tokens mark videos too.
    int32_t video_start_token_id = -1;
    int32_t video_end_token_id = -1;
};

// What building a prompt needs of a model: its tokenizer, its chat template with the values the template
// is given beside the messages (the tokenizer's special tokens, template options), the template's special
// ids, the image processor, the placeholder tokens an image takes and the model's generation defaults.
// n_image_tokens must be safe to call from any thread.
struct PromptFormat {
    const Tokenizer* tokenizer = nullptr;
    std::shared_ptr<const ChatTemplate> chat_template;
    nlohmann::ordered_json template_values = nlohmann::ordered_json::object();
    SpecialTokenIds special;
    PreprocessorConfig preprocessor;
    std::function<int64_t(const ImageGrid&)> n_image_tokens;
    // The request defaults of the model's generation_config.json, which the request builder applies.
    GenerationDefaults generation;
    // A message's content as the template reads it: a list of typed parts, as the multimodal processors give
    // it, or (text models) a string, as an OpenAI chat of strings reaches transformers' apply_chat_template.
    bool text_content = false;
    // Whether the rendered chat is tokenized with the tokenizer's special tokens added: a processor's call
    // adds them, apply_chat_template does not (its template writes them itself).
    bool chat_special_tokens = true;
};

// The tokenizer's special tokens as a chat template is given them beside the messages (bos_token,
// eos_token, pad_token where it has them), as transformers passes its special tokens map.
nlohmann::ordered_json special_token_values(const Tokenizer& tokenizer);

}  // namespace folio
