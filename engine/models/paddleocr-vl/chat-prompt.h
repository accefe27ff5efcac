// The PaddleOCR-VL prompt, as its chat template and processor make it: the template renders the turns with
// one "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>" per image (for one user turn of images and a task:
// "<|begin_of_sentence|>User: " + images + task + "\nAssistant: "), then each placeholder is repeated once
// per merged patch of its image.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat-template/chat-template.h"
#include "engine/models/prompt-format.h"
#include "engine/runtime/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {

using ChatPromptTokens = PromptTokens;

// The tokenizer's ids of the chat template's image tokens, for a model whose config is made to match its
// tokenizer (random weights); throws folio::Error where the tokenizer lacks one.
SpecialTokenIds template_token_ids(const Tokenizer& tokenizer);

// The chat template of a PaddleOCR-VL folder (chat_template.jinja or tokenizer_config.json), else a built-in
// one that lays the turns out the same way (a checkpoint saved without its processor files has none).
std::shared_ptr<const ChatTemplate> paddleocr_vl_chat_template(const std::filesystem::path& dir);

// The template's text for one user turn of n_images images (one placeholder each) and the task, with the
// generation prompt.
std::string chat_prompt_text(const ChatTemplate& chat_template, size_t n_images, std::string_view task);

// The prompt's ids for images of n_image_tokens[i] merged patches each (grid_t * grid_h * grid_w / 4).
ChatPromptTokens build_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                   const SpecialTokenIds& special, std::span<const int64_t> n_image_tokens,
                                   std::string_view task);

}  // namespace folio
