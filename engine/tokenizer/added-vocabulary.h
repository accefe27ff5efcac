// Tokens matched in the text before the model sees it, as the tokenizers library's AddedVocabulary does:
// tokens that are not normalized are found in the original text first, the pieces between them are
// normalized, and normalized tokens are found in those. A match is leftmost, then longest; lstrip and rstrip
// take the whitespace beside the token into it, and a single_word token only matches a whole word.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/normalizer.h"

namespace folio {

struct AddedToken {
    int32_t id = -1;
    std::string content;
    bool single_word = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = true;
    bool special = false;
};

// A piece of the input after the added tokens are split off: an added token (id >= 0) or text to
// pre-tokenize, normalized, that starts at the beginning of the original text or not.
struct TextPiece {
    std::string text;
    int32_t id = -1;
    bool at_start = false;
};

class AddedVocabulary {
public:
    // Later tokens with the same id or content replace earlier ones. normalizer gives the normalized form of
    // the normalized tokens.
    AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer& normalizer);

    std::vector<TextPiece> split(std::string_view text, const Normalizer& normalizer) const;

    const AddedToken* find(int32_t id) const;
    const AddedToken* find(std::string_view content) const;
    const std::vector<AddedToken>& tokens() const { return tokens_; }

private:
    class Trie {
    public:
        void add(std::string_view pattern, int32_t id);
        bool empty() const { return nodes_.size() == 1; }
        // The longest pattern starting at text[pos]: its length and id, or {0, -1}.
        std::pair<size_t, int32_t> longest_at(std::string_view text, size_t pos) const;

    private:
        struct Node {
            std::vector<std::pair<unsigned char, int32_t>> next;
            int32_t id = -1;
        };
        std::vector<Node> nodes_{1};
    };
    struct Match {
        int32_t id;
        size_t begin;
        size_t end;
    };
    std::vector<Match> find_matches(std::string_view text, const Trie& trie) const;

    std::vector<AddedToken> tokens_;  // by id order
    std::unordered_map<int32_t, size_t> by_id_;
    std::unordered_map<std::string, size_t> by_content_;
    Trie plain_;
    Trie normalized_;
};

}  // namespace folio
