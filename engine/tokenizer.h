// The text tokenizer of SentencePiece-based models (PaddleOCR-VL's ERNIE-4.5, Llama-2 style vocabularies),
// behaving like transformers 5's LlamaTokenizer: added tokens are split off first, the remaining text is
// encoded by the SentencePiece BPE model with a Metaspace prefix scheme and no normalization, and decoding
// runs the same chain as transformers (▁ to space, byte fallback, optional strip of one leading space).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace folio {

// Where the Metaspace pre-tokenizer prepends "▁" to a piece of plain text between added tokens (never when
// the piece already starts with a space): Never; First, only to a piece at the very start of the text;
// Always, to every piece. Read from tokenizer_config.json as transformers 5 does: add_prefix_space false
// gives Never; add_prefix_space true or absent gives First when legacy is false or absent (LlamaTokenizer's
// defaults are add_prefix_space true, legacy false) and Always when legacy is true.
enum class PrefixSpace { Never, First, Always };

class Tokenizer {
public:
    // Reads model_dir/tokenizer.model and at least one of tokenizer_config.json and added_tokens.json
    // (special_tokens_map.json too when present). The SentencePiece normalizer stored in tokenizer.model is
    // replaced by the identity, as transformers 5 ignores it.
    static std::unique_ptr<Tokenizer> load(const std::filesystem::path& model_dir);
    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // Splits text on added tokens (leftmost, then longest match) and encodes each piece of plain text.
    std::vector<int32_t> encode(std::string_view text) const;
    // Ids without a token (outside the vocabulary, or gaps between pieces and added tokens) decode to
    // nothing, as in transformers.
    std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

    // The id of an added token or a SentencePiece piece; throws when there is none.
    int32_t token_id(std::string_view token) const;
    std::optional<int32_t> find_token(std::string_view token) const;

    int32_t n_vocab() const { return static_cast<int32_t>(entries_.size()); }
    bool is_special(int32_t id) const;
    // -1 when the tokenizer has no such token.
    int32_t bos_id() const { return bos_id_; }
    int32_t eos_id() const { return eos_id_; }
    int32_t pad_id() const { return pad_id_; }

    void set_prefix_space(PrefixSpace prefix_space) { prefix_space_ = prefix_space; }
    PrefixSpace prefix_space() const { return prefix_space_; }

private:
    friend class IncrementalDetokenizer;

    struct Entry {
        std::string text;       // the piece or added token with "▁" turned into spaces, as decoded
        int byte = -1;          // 0..255 for a byte fallback piece "<0xXX>"
        bool assigned = false;  // ids between the pieces and the added tokens may have no token
        bool special = false;
    };
    struct TrieNode {
        std::vector<std::pair<unsigned char, int32_t>> next;
        int32_t token_id = -1;
    };
    struct DecodeState {
        std::string pending_bytes;  // a run of byte fallback pieces, decoded together when it ends
        bool at_start = true;       // nothing visible decoded yet
    };

    Tokenizer();
    void add_to_trie(std::string_view content, int32_t id);
    // Length of the longest added token starting at text[pos] (0 when none) and its id.
    std::pair<size_t, int32_t> match_added(std::string_view text, size_t pos) const;
    void encode_plain(std::string_view text, bool at_text_start, std::vector<int32_t>& ids) const;
    void decode_step(DecodeState& state, int32_t id, bool skip_special, std::string& out) const;
    void decode_finish(DecodeState& state, std::string& out) const;
    void append_text(DecodeState& state, std::string_view text, std::string& out) const;

    std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
    std::filesystem::path model_path_;
    std::vector<Entry> entries_;
    std::unordered_map<std::string, int32_t> ids_by_token_;
    std::vector<TrieNode> trie_;
    int32_t bos_id_ = -1;
    int32_t eos_id_ = -1;
    int32_t pad_id_ = -1;
    PrefixSpace prefix_space_ = PrefixSpace::First;
};

// Turns generated ids into text as they come. push() returns the text completed by the id (possibly
// empty); a run of byte fallback pieces is held back until it ends, because like the reference decoder it
// becomes one U+FFFD per byte when the run as a whole is not valid UTF-8. Every returned piece is valid
// UTF-8, and all pieces followed by flush() equal decode() of all ids.
class IncrementalDetokenizer {
public:
    explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = true);
    std::string push(int32_t id);
    // The rest: a pending run of bytes (one U+FFFD per byte when it is not valid UTF-8).
    std::string flush();

private:
    const Tokenizer& tokenizer_;
    bool skip_special_;
    Tokenizer::DecodeState state_;
};

}  // namespace folio
