#include "engine/tokenizer/tokenizer.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/tokenizer/added-vocabulary.h"
#include "engine/tokenizer/byte-level.h"
#include "engine/tokenizer/token-decoder.h"
#include "engine/tokenizer/tokenizer-pipeline.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";
// A token that no decoder step of the family changes and that ends no byte run (checked at load).
constexpr std::string_view kSentinel = "\x01";

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::load(const fs::path& model_dir) {
    return from_pipeline(read_tokenizer_pipeline(model_dir), model_dir);
}

std::unique_ptr<Tokenizer> Tokenizer::from_tokenizer_json(std::string_view text, std::string_view source) {
    TokenizerJson parsed = parse_tokenizer_json(text, source);
    parsed.pipeline.model = std::make_unique<BpeModel>(std::move(parsed.bpe), source);
    parsed.pipeline.description = "TokenizersBackend (tokenizer.json)";
    return from_pipeline(std::move(parsed.pipeline), fs::path(source));
}

std::unique_ptr<Tokenizer> Tokenizer::from_pipeline(TokenizerPipeline pipeline, fs::path model_dir) {
    std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
    Tokenizer& t = *tokenizer;
    t.model_dir_ = std::move(model_dir);
    t.pipeline_ = std::make_unique<TokenizerPipeline>(std::move(pipeline));
    t.added_ =
        std::make_unique<AddedVocabulary>(std::move(t.pipeline_->added_tokens), t.pipeline_->normalizer);
    t.n_vocab_ = t.pipeline_->model->n_ids();
    for (const AddedToken& token : t.added_->tokens()) {
        t.n_vocab_ = std::max(t.n_vocab_, token.id + 1);
    }
    for (const auto* ids : {&t.pipeline_->prefix_ids, &t.pipeline_->suffix_ids}) {
        for (const int32_t id : *ids) {
            if (!t.token_text(id)) {
                fail("tokenizer: ", t.model_dir_, ": the post-processor adds id ", id,
                     ", which has no token");
            }
        }
    }
    const auto id_of = [&](const std::optional<std::string>& name, int32_t fallback) {
        if (name) {
            if (const auto id = t.find_token(*name)) {
                return *id;
            }
        }
        return fallback;
    };
    t.bos_id_ = id_of(t.pipeline_->bos_token, t.pipeline_->spm_bos_id);
    t.eos_id_ = id_of(t.pipeline_->eos_token, t.pipeline_->spm_eos_id);
    t.pad_id_ = id_of(t.pipeline_->pad_token, t.pipeline_->spm_pad_id);
    // Decoding a window of the text behind a sentinel gives the same text only where the decoder keeps the
    // sentinel and takes nothing off the end.
    t.continuation_sentinel_ = t.pipeline_->decoder.decode({std::string(kSentinel)}) == kSentinel &&
                               !t.pipeline_->decoder.strips_end();
    t.decoder_grows_at_end_ = t.pipeline_->decoder.grows_at_end();
    return tokenizer;
}

const std::string& Tokenizer::description() const {
    return pipeline_->description;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
    if (!is_valid_utf8(text)) {
        fail("tokenizer: the text to encode is not valid UTF-8");
    }
    std::vector<int32_t> ids;
    if (add_special_tokens) {
        ids = pipeline_->prefix_ids;
    }
    for (const TextPiece& piece : added_->split(text, pipeline_->normalizer)) {
        if (piece.id >= 0) {
            ids.push_back(piece.id);
        } else {
            encode_piece(piece.text, piece.at_start, ids);
        }
    }
    if (add_special_tokens) {
        ids.insert(ids.end(), pipeline_->suffix_ids.begin(), pipeline_->suffix_ids.end());
    }
    return ids;
}

void Tokenizer::encode_piece(std::string_view text, bool at_start, std::vector<int32_t>& ids) const {
    const BpeModel& model = *pipeline_->model;
    if (pipeline_->byte_level) {
        encode_byte_level(text, ids);
        return;
    }
    if (!pipeline_->pre_tokenizer) {
        model.encode(text, ids);
        return;
    }
    const MetaspaceSplit& metaspace = *pipeline_->pre_tokenizer;
    std::string word = replace_all(text, " ", metaspace.replacement);
    const bool prepend = !word.empty() && !word.starts_with(metaspace.replacement) &&
                         (metaspace.prepend_scheme == PrependScheme::Always ||
                          (metaspace.prepend_scheme == PrependScheme::First && at_start));
    if (prepend) {
        word.insert(0, metaspace.replacement);
    }
    if (!metaspace.split) {
        model.encode(word, ids);
        return;
    }
    // Each replacement character starts a new word.
    size_t begin = 0;
    size_t pos = word.find(metaspace.replacement, 1);
    while (pos != std::string::npos) {
        model.encode(std::string_view(word).substr(begin, pos - begin), ids);
        begin = pos;
        pos = word.find(metaspace.replacement, pos + metaspace.replacement.size());
    }
    model.encode(std::string_view(word).substr(begin), ids);
}

void Tokenizer::encode_byte_level(std::string_view text, std::vector<int32_t>& ids) const {
    static const RegexSplitter gpt2(kGpt2SplitPattern, false, "GPT-2's pre-tokenizer");
    const ByteLevelSplit& byte_level = *pipeline_->byte_level;
    std::vector<std::string_view> pieces{text};
    for (const SplitRule& rule : byte_level.splits) {
        std::vector<std::string_view> next;
        for (const std::string_view piece : pieces) {
            const std::vector<std::string_view> parts = rule.pattern->split(piece, rule.behavior);
            next.insert(next.end(), parts.begin(), parts.end());
        }
        pieces = std::move(next);
    }
    for (const std::string_view piece : pieces) {
        std::string spaced;
        std::string_view words = piece;
        if (byte_level.add_prefix_space && !piece.starts_with(' ')) {
            spaced.reserve(piece.size() + 1);
            spaced.push_back(' ');
            spaced.append(piece);
            words = spaced;
        }
        if (!byte_level.use_regex) {
            pipeline_->model->encode(byte_level_encode(words), ids);
            continue;
        }
        for (const std::string_view word : gpt2.split(words, SplitBehavior::Isolated)) {
            pipeline_->model->encode(byte_level_encode(word), ids);
        }
    }
}

std::optional<std::string> Tokenizer::token_text(int32_t id) const {
    if (const AddedToken* token = added_->find(id)) {
        return token->content;
    }
    if (const std::string* piece = pipeline_->model->id_to_token(id)) {
        return *piece;
    }
    return std::nullopt;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
    return decode_tokens(ids, skip_special, false);
}

std::string Tokenizer::decode_tokens(std::span<const int32_t> ids, bool skip_special,
                                     bool continuation) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size() + 1);
    if (continuation) {
        tokens.emplace_back(kSentinel);
    }
    for (const int32_t id : ids) {
        if (const AddedToken* token = added_->find(id)) {
            if (!(skip_special && token->special)) {
                tokens.push_back(token->content);
            }
        } else if (const std::string* piece = pipeline_->model->id_to_token(id)) {
            tokens.push_back(*piece);
        }
    }
    return run_decoder(std::move(tokens), continuation);
}

std::string Tokenizer::decode_pieces(std::span<const std::string> pieces, bool continuation) const {
    std::vector<std::string> tokens;
    tokens.reserve(pieces.size() + 1);
    if (continuation) {
        tokens.emplace_back(kSentinel);
    }
    tokens.insert(tokens.end(), pieces.begin(), pieces.end());
    return run_decoder(std::move(tokens), continuation);
}

std::string Tokenizer::run_decoder(std::vector<std::string> tokens, bool continuation) const {
    std::string text = pipeline_->decoder.decode(std::move(tokens));
    if (continuation) {
        if (!text.starts_with(kSentinel)) {
            fail("tokenizer: the decoder changed the continuation sentinel");
        }
        text.erase(0, kSentinel.size());
    }
    return text;
}

int32_t Tokenizer::token_id(std::string_view token) const {
    if (const auto id = find_token(token)) {
        return *id;
    }
    fail("tokenizer: ", model_dir_, " has no token \"", token, "\"");
}

std::optional<int32_t> Tokenizer::find_token(std::string_view token) const {
    if (const AddedToken* added = added_->find(token)) {
        return added->id;
    }
    return pipeline_->model->token_to_id(token);
}

bool Tokenizer::is_special(int32_t id) const {
    const AddedToken* token = added_->find(id);
    return token != nullptr && token->special;
}

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer),
      skip_special_(skip_special),
      byte_fallback_(tokenizer.pipeline_->decoder.has_byte_fallback()),
      byte_level_(tokenizer.pipeline_->decoder.has_byte_level()),
      grows_at_end_(tokenizer.decoder_grows_at_end_) {}

std::string IncrementalDetokenizer::push(int32_t id) {
    if (skip_special_ && tokenizer_.is_special(id)) {
        return {};  // decode() leaves it out before the decoder, so it does not end a byte run either
    }
    std::optional<std::string> token = tokenizer_.token_text(id);
    if (!token) {
        return {};  // an id without a token decodes to nothing
    }
    if (!grows_at_end_) {
        // Text given now could be changed by a later token: all of it comes at flush().
        tokens_.push_back(std::move(*token));
        return {};
    }
    if (byte_level_) {
        // A token's bytes may end inside a character that the next token finishes: nothing is given until
        // the bytes since the last piece are whole characters, or show that they never will be.
        pending_ += byte_level_bytes(*token);
        tokens_.push_back(std::move(*token));
        if (utf8_unfinished_tail(pending_) > 0) {
            return {};
        }
        pending_.clear();
        return take_new_text();
    }
    const int byte = byte_fallback_ ? byte_fallback_value(*token) : -1;
    if (byte < 0) {
        replace_unfinished_run();
        run_.clear();
        run_invalid_ = false;
        tokens_.push_back(std::move(*token));
        return take_new_text();
    }
    if (run_invalid_) {
        // The reference gives every byte of a run that is not UTF-8 a U+FFFD of its own.
        tokens_.emplace_back(kReplacementCharacter);
        return take_new_text();
    }
    run_.push_back(static_cast<char>(byte));
    tokens_.push_back(std::move(*token));
    const Utf8Prefix prefix = utf8_prefix(run_);
    if (prefix.invalid) {
        replace_unfinished_run();
    } else if (prefix.n_complete < run_.size()) {
        return {};  // the middle of a character
    }
    return take_new_text();
}

void IncrementalDetokenizer::replace_unfinished_run() {
    if (run_invalid_) {
        return;
    }
    const size_t n_complete = utf8_prefix(run_).n_complete;
    if (n_complete == run_.size()) {
        return;
    }
    // The bytes after the whole characters are the last tokens, none of them in the text given so far.
    const size_t n_unfinished = run_.size() - n_complete;
    tokens_.resize(tokens_.size() - n_unfinished);
    for (size_t i = 0; i < n_unfinished; ++i) {
        tokens_.emplace_back(kReplacementCharacter);
    }
    run_invalid_ = true;
}

std::string IncrementalDetokenizer::take_new_text() {
    std::string text = tokenizer_.decode_pieces(tokens_, continuation_);
    if (text.size() <= prefix_.size() || !text.starts_with(prefix_)) {
        return {};
    }
    std::string piece = text.substr(prefix_.size());
    // Keep the tokens after the old prefix as the context of the next piece: every cut falls between whole
    // characters. Without a sentinel the decoder keeps, the text is decoded from its first token each time.
    if (prefix_size_ > 0 && tokenizer_.continuation_sentinel_) {
        tokens_.erase(tokens_.begin(), tokens_.begin() + static_cast<std::ptrdiff_t>(prefix_size_));
        continuation_ = true;
    }
    prefix_size_ = tokens_.size();
    prefix_ = tokenizer_.decode_pieces(tokens_, continuation_);
    return piece;
}

std::string IncrementalDetokenizer::flush() {
    replace_unfinished_run();
    const std::string text = tokenizer_.decode_pieces(tokens_, continuation_);
    std::string rest =
        text.size() > prefix_.size() && text.starts_with(prefix_) ? text.substr(prefix_.size()) : "";
    tokens_.clear();
    prefix_size_ = 0;
    prefix_.clear();
    continuation_ = false;
    run_.clear();
    run_invalid_ = false;
    pending_.clear();
    return rest;
}

}  // namespace folio
