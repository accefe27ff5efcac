// folio-cli generate --document: a document folio-cli ocr wrote (its JSON) or a text file whose blocks open a
// request's first user message as Ask the document gives them (app/ask), cut to the context by the same rule
// and counted by the model's tokenizer, and the citations of the answer read back.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "app/ask/document-passages.h"
#include "engine/service/engine-service.h"
#include "engine/service/request-builder.h"

namespace folio::cli {

// The document in file: folio-cli ocr's JSON (a .json file: its array of pages, or PaddleOCR's one page
// object) or UTF-8 text, a paragraph a block. Throws folio::Error naming the file where it cannot be read, is
// not such JSON or has no text to answer from.
DocumentPassages load_document(const std::filesystem::path& file);

// Puts the part of the document that fits ahead of the chat's first user message: the loaded model's context
// less the messages, their images and videos, and the answer's room (max_tokens, else a quarter of the
// context). Throws folio::Error naming the file where not even one block fits.
PassageSelection add_document(Chat& chat, const DocumentPassages& document, const std::filesystem::path& file,
                              const EngineService& service, std::optional<int64_t> max_tokens);

// One line for the terminal: the pages the answer was given (those in part and left out named) and each
// block it cites, with its page and block id, or that the document has no such block.
std::string describe_answer(const std::string& answer, const DocumentPassages& document,
                            const PassageSelection& selection);

}  // namespace folio::cli
