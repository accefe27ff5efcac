// The text tokenizer of a model folder, giving the ids transformers 5.17's AutoTokenizer gives on the same
// folder: tokenizer.json as it is, tokenizer.model converted with its own normalizer, or LlamaTokenizer's
// rules (tokenizer/tokenizer-pipeline.h says which applies when). Encoding splits off added tokens,
// normalizes and pre-tokenizes the rest and encodes it with BPE; decoding runs the pipeline's decoder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

struct TokenizerPipeline;
class AddedVocabulary;

class Tokenizer {
public:
    // Reads tokenizer.json or tokenizer.model with tokenizer_config.json, special_tokens_map.json and
    // added_tokens.json where present. Throws naming the file and what is wrong.
    static std::unique_ptr<Tokenizer> load(const std::filesystem::path& model_dir);
    // A tokenizer.json given as its text, read as it is (TokenizersBackend); source names it in errors.
    static std::unique_ptr<Tokenizer> from_tokenizer_json(std::string_view text, std::string_view source);
    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // The ids of text (valid UTF-8, else throws). add_special_tokens adds the post-processor's tokens around
    // them (a BOS where the configuration asks for one), as a processor's call does.
    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
    // Ids without a token decode to nothing, as in transformers.
    std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

    // The token an id stands for as the vocabulary spells it ("▁Hello", "<0x0A>", "<|IMAGE_START|>");
    // nothing for an id without one.
    std::optional<std::string> token_text(int32_t id) const;
    // The id of an added token or a piece of the vocabulary; throws when there is none.
    int32_t token_id(std::string_view token) const;
    std::optional<int32_t> find_token(std::string_view token) const;

    int32_t n_vocab() const { return n_vocab_; }
    bool is_special(int32_t id) const;
    // -1 when the tokenizer has no such token.
    int32_t bos_id() const { return bos_id_; }
    int32_t eos_id() const { return eos_id_; }
    int32_t pad_id() const { return pad_id_; }
    // Which rules built it and from which file, e.g. "TokenizersBackend (tokenizer.json)".
    const std::string& description() const;

private:
    friend class IncrementalDetokenizer;

    Tokenizer();
    static std::unique_ptr<Tokenizer> from_pipeline(TokenizerPipeline pipeline,
                                                    std::filesystem::path model_dir);
    // decode(), or with continuation the text the tokens add after earlier ones: the decoder then runs behind
    // a sentinel token, so that rules for the start of a text (a first token's "▁", a leading strip) do not
    // apply to them.
    std::string decode_tokens(std::span<const int32_t> ids, bool skip_special, bool continuation) const;
    std::string decode_pieces(std::span<const std::string> tokens, bool continuation) const;
    // The decoder on tokens that start with the sentinel where continuation is set.
    std::string run_decoder(std::vector<std::string> tokens, bool continuation) const;
    void encode_piece(std::string_view text, bool at_start, std::vector<int32_t>& ids) const;
    void encode_byte_level(std::string_view text, std::vector<int32_t>& ids) const;

    std::unique_ptr<TokenizerPipeline> pipeline_;
    std::unique_ptr<AddedVocabulary> added_;
    std::filesystem::path model_dir_;
    int32_t n_vocab_ = 0;
    int32_t bos_id_ = -1;
    int32_t eos_id_ = -1;
    int32_t pad_id_ = -1;
    bool continuation_sentinel_ = true;  // the decoder leaves the sentinel of decode_tokens as it is
    bool decoder_grows_at_end_ = true;   // TokenDecoder::grows_at_end
};

// Turns generated ids into text as they come, on the same rules as Tokenizer::decode: each push() decodes
// the tokens since the last text it returned together with those before it, and returns what is new. A run
// of byte fallback pieces gives each character as soon as its last byte comes, and U+FFFD for each byte
// from the one that shows the run is not UTF-8 (a byte that starts no character or does not continue the
// one begun, or the run ending in the middle of a character), as the reference decoder turns such a run into
// one U+FFFD per byte. Every returned piece is valid UTF-8, and all pieces followed by flush() equal decode()
// of all ids, but for one case: a run that turns out not to be UTF-8 after whole characters were given keeps
// those characters, where decode() has U+FFFD for their bytes too (text once streamed is not taken back).
// A decoder whose steps could change text already given when later tokens come (TokenDecoder::grows_at_end)
// gives all its text at flush().
class IncrementalDetokenizer {
public:
    explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = true);
    std::string push(int32_t id);
    // The rest (U+FFFD for each byte of a run that never completed its last character).
    std::string flush();

private:
    // The text the window adds since the last returned piece, when there is new text; nothing else.
    std::string take_new_text();
    // The run of byte pieces ends or has shown it is not UTF-8: the bytes after its whole characters each
    // become a U+FFFD token.
    void replace_unfinished_run();

    const Tokenizer& tokenizer_;
    bool skip_special_;
    bool byte_fallback_;  // the decoder turns "<0xXX>" pieces into bytes
    std::vector<std::string>
        tokens_;                 // the tokens since the start of the text before the last returned piece
    size_t prefix_size_ = 0;     // of those, the tokens that made prefix_
    std::string prefix_;         // the text of tokens_[0..prefix_size_)
    bool continuation_ = false;  // tokens_ no longer starts at the first token
    std::string run_;            // the bytes of the byte pieces since the last other token
    bool run_invalid_ = false;   // run_ is not UTF-8 whatever follows
    bool byte_level_;            // the decoder turns each token into bytes (ByteLevel)
    std::string pending_;        // ByteLevel: the bytes since the last returned piece
    bool grows_at_end_;          // the decoder's text only grows at its end, so text can be given as it comes
};

}  // namespace folio
