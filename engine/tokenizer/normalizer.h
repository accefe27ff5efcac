// The normalizer of a tokenizer pipeline: the steps of the tokenizers library's SentencePiece-style family,
// applied in order to each piece of text between added tokens.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/precompiled-charsmap.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio {

struct NormalizerStep {
    enum class Kind { Precompiled, Unicode, Replace, Prepend, Strip };
    Kind kind = Kind::Replace;
    std::shared_ptr<const PrecompiledCharsmap> charsmap;  // Precompiled
    UnicodeForm form = UnicodeForm::NFKC;                 // Unicode
    std::string pattern;                                  // Replace: every occurrence, left to right
    std::string content;                                  // Replace: the replacement; Prepend: the prefix
    bool strip_left = false;                              // Strip: Unicode whitespace
    bool strip_right = false;
};

class Normalizer {
public:
    void add(NormalizerStep step) { steps_.push_back(std::move(step)); }
    bool empty() const { return steps_.empty(); }
    std::string normalize(std::string_view text) const;

private:
    std::vector<NormalizerStep> steps_;
};

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content);

}  // namespace folio
