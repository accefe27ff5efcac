// The byte-pair-encoding model of the tokenizers library as SentencePiece-style vocabularies use it: a word's
// code points are looked up one by one (those outside the vocabulary become byte fallback pieces "<0xXX>",
// or the unknown token, or nothing), then the pair with the lowest merge rank, leftmost first, is merged
// until none is left.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace folio {

struct BpeConfig {
    std::vector<std::pair<std::string, int32_t>> vocab;       // piece and id
    std::vector<std::pair<std::string, std::string>> merges;  // in rank order
    std::optional<std::string> unk_token;
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
};

// Merges as transformers derives them from a vocabulary without merges: every split of a piece into two
// pieces of the vocabulary, ordered by the merged piece's id, then the halves' lengths in code points (ties
// keep the order of the halves' ids). Pieces named in skip take no part.
std::vector<std::pair<std::string, std::string>> merges_from_vocab(
    const std::vector<std::pair<std::string, int32_t>>& vocab, const std::vector<std::string>& skip = {});

class BpeModel {
public:
    // Throws naming source for an id outside 0..2^24-1, a piece given twice, or a merge of unknown pieces.
    BpeModel(BpeConfig config, std::string_view source);

    void encode(std::string_view word, std::vector<int32_t>& ids) const;
    std::optional<int32_t> token_to_id(std::string_view token) const;
    // Null for an id the vocabulary does not have.
    const std::string* id_to_token(int32_t id) const;
    // One past the largest id.
    int32_t n_ids() const { return n_ids_; }

private:
    struct MergeTarget {
        int32_t rank = 0;
        int32_t id = 0;
    };
    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }

    std::unordered_map<std::string, int32_t> ids_;
    std::unordered_map<int32_t, std::string> tokens_;  // by id
    int32_t n_ids_ = 0;
    std::unordered_map<uint64_t, MergeTarget> merges_;
    std::array<int32_t, 256> byte_ids_{};  // "<0xXX>" pieces, -1 when absent
    std::optional<int32_t> unk_id_;
    std::optional<std::string> unk_token_;
    bool fuse_unk_ = false;
    bool byte_fallback_ = false;
    bool ignore_merges_ = false;
};

}  // namespace folio
