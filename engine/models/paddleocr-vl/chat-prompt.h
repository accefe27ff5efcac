// The PaddleOCR-VL prompt, as its chat template and processor make it for one user turn of images and a task:
// "<|begin_of_sentence|>User: " + "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>" per image + task +
// "\nAssistant: ", then each placeholder repeated once per merged patch of its image.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model.h"
#include "tokenizer.h"

namespace folio {

using ChatPromptTokens = PromptTokens;

// From the model's config.json, checked against the tokenizer's tokens of the chat template.
struct SpecialTokenIds {
    int32_t image_token_id = -1;
    int32_t vision_start_token_id = -1;
    int32_t vision_end_token_id = -1;
};

// The tokenizer's ids of the chat template's image tokens, for a model whose config is made to match its
// tokenizer (random weights); throws folio::Error where the tokenizer lacks one.
SpecialTokenIds template_token_ids(const Tokenizer& tokenizer);

// The chat template's text for n_images images (one placeholder each) and the task.
std::string chat_prompt_text(size_t n_images, std::string_view task);

// The prompt's ids for images of n_image_tokens[i] merged patches each (grid_t * grid_h * grid_w / 4).
ChatPromptTokens build_chat_prompt(const Tokenizer& tokenizer, const SpecialTokenIds& special,
                                   std::span<const int64_t> n_image_tokens, std::string_view task);

}  // namespace folio
