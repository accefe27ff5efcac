// Which pipeline a model folder's tokenizer files make, following transformers 5.17's AutoTokenizer.
#include "engine/tokenizer/tokenizer-pipeline.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"
#include "engine/tokenizer/sentencepiece-model.h"

namespace folio {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kMetaspace = "\xE2\x96\x81";  // "▁"
// The tokens a configuration names, which transformers makes special added tokens.
constexpr const char* kNamedSpecialTokens[] = {"bos_token", "eos_token", "unk_token", "pad_token",
                                               "cls_token", "sep_token", "mask_token"};
// Model types whose folders transformers tokenizes with TokenizersBackend whatever tokenizer_class says.
const std::set<std::string> kBackendModelTypes = {"paddleocr_vl", "ernie4_5", "ernie4_5_moe"};

bool is_file(const fs::path& path) {
    std::error_code error;
    return fs::is_regular_file(path, error);
}

// The JSON object in path, or nothing when the file does not exist.
std::optional<json> read_json_object(const fs::path& path) {
    if (!is_file(path)) {
        return std::nullopt;
    }
    return parse_json_object(read_file_text(path), "tokenizer: " + path.string());
}

// A token named in a config: a string or an AddedToken object {"content": ...}.
std::optional<std::string> token_content(const json& value, const fs::path& path, std::string_view key) {
    if (value.is_null()) {
        return std::nullopt;
    }
    if (value.is_string()) {
        return value.get<std::string>();
    }
    if (value.is_object() && value.contains("content") && value["content"].is_string()) {
        return value["content"].get<std::string>();
    }
    fail("tokenizer: ", path, ": ", key, " is ", describe_json(value), ", not a token");
}

std::optional<bool> config_flag(const json& config, const char* key, const fs::path& path) {
    if (!config.contains(key) || config[key].is_null()) {
        return std::nullopt;
    }
    if (!config[key].is_boolean()) {
        fail("tokenizer: ", path, ": ", key, " is ", describe_json(config[key]), ", not true or false");
    }
    return config[key].get<bool>();
}

bool token_flag(const json& token, const char* key, bool fallback) {
    return token.contains(key) && token[key].is_boolean() ? token[key].get<bool>() : fallback;
}

// What the configuration files say about tokens.
struct TokenConfig {
    json config = json::object();  // tokenizer_config.json, or empty
    fs::path config_path;
    std::vector<AddedToken> added_tokens_decoder;  // tokenizer_config.json's, then added_tokens.json's
    std::map<std::string, std::string> named;      // bos_token, ... to their text
    std::vector<std::string> extra;                // extra_special_tokens / additional_special_tokens
};

void read_named(const json& config, const fs::path& path, TokenConfig& out) {
    for (const char* key : kNamedSpecialTokens) {
        if (config.contains(key)) {
            if (const auto content = token_content(config[key], path, key)) {
                out.named.try_emplace(key, *content);
            }
        }
    }
    for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
        if (!config.contains(key)) {
            continue;
        }
        const json& list = config[key];
        if (!list.is_array() && !list.is_object() && !list.is_null()) {
            fail("tokenizer: ", path, ": ", key, " is a JSON ", list.type_name(), ", not a list of tokens");
        }
        // A mapping (model-specific tokens such as image_token) names tokens without making them extra.
        if (list.is_array()) {
            for (const auto& item : list) {
                if (const auto content = token_content(item, path, key)) {
                    out.extra.push_back(*content);
                }
            }
        }
    }
}

TokenConfig read_token_config(const fs::path& dir) {
    TokenConfig out;
    out.config_path = dir / "tokenizer_config.json";
    if (auto config = read_json_object(out.config_path)) {
        out.config = std::move(*config);
    }
    const fs::path special_map_path = dir / "special_tokens_map.json";
    read_named(out.config, out.config_path, out);
    if (const auto special_map = read_json_object(special_map_path)) {
        read_named(*special_map, special_map_path, out);
    }
    if (out.config.contains("added_tokens_decoder")) {
        const json& decoder = out.config["added_tokens_decoder"];
        if (!decoder.is_object()) {
            fail("tokenizer: ", out.config_path, ": added_tokens_decoder is a JSON ", decoder.type_name(),
                 ", not an object");
        }
        for (const auto& [key, token] : decoder.items()) {
            int64_t id = 0;
            const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
            if (error != std::errc() || end != key.data() + key.size() || id < 0 ||
                id >= (int64_t{1} << 24)) {
                fail("tokenizer: ", out.config_path, ": added_tokens_decoder has the key \"", key,
                     "\", not a token id");
            }
            if (!token.is_object() || !token.contains("content") || !token["content"].is_string()) {
                fail("tokenizer: ", out.config_path, ": added_tokens_decoder[\"", key, "\"] is ",
                     describe_json(token), ", not an object with a content string");
            }
            AddedToken added;
            added.id = static_cast<int32_t>(id);
            added.content = token["content"].get<std::string>();
            added.special = token_flag(token, "special", false);
            added.normalized = token_flag(token, "normalized", !added.special);
            added.lstrip = token_flag(token, "lstrip", false);
            added.rstrip = token_flag(token, "rstrip", false);
            added.single_word = token_flag(token, "single_word", false);
            out.added_tokens_decoder.push_back(std::move(added));
        }
    }
    // The legacy added_tokens.json adds the tokens those entries lack: special when a configuration names
    // them.
    const fs::path added_path = dir / "added_tokens.json";
    if (const auto added = read_json_object(added_path)) {
        std::set<std::string> special;
        for (const auto& [key, content] : out.named) {
            special.insert(content);
        }
        special.insert(out.extra.begin(), out.extra.end());
        const size_t n_declared = out.added_tokens_decoder.size();
        for (const auto& [content, id] : added->items()) {
            const std::optional<int64_t> value = json_int64(id);
            if (!value || *value < 0 || *value >= (int64_t{1} << 24)) {
                fail("tokenizer: ", added_path, ": the id of \"", content, "\" is ", describe_json(id));
            }
            const auto declared = out.added_tokens_decoder.begin() + static_cast<std::ptrdiff_t>(n_declared);
            const std::string& text = content;
            if (std::any_of(out.added_tokens_decoder.begin(), declared,
                            [&](const AddedToken& t) { return t.content == text || t.id == *value; })) {
                continue;
            }
            AddedToken token;
            token.id = static_cast<int32_t>(*value);
            token.content = content;
            token.special = special.contains(content);
            token.normalized = !token.special;
            out.added_tokens_decoder.push_back(std::move(token));
        }
    }
    return out;
}

std::optional<std::string> model_type_of(const fs::path& dir) {
    const fs::path path = dir / "config.json";
    if (!is_file(path)) {
        return std::nullopt;
    }
    const json config = parse_json(read_file_text(path), "tokenizer: " + path.string());
    if (config.is_object() && config.contains("model_type") && config["model_type"].is_string()) {
        return config["model_type"].get<std::string>();
    }
    return std::nullopt;
}

TokenDecoderStep decoder_step(TokenDecoderStep::Kind kind) {
    TokenDecoderStep step;
    step.kind = kind;
    return step;
}

TokenDecoderStep replace_decoder(std::string pattern, std::string content) {
    TokenDecoderStep step = decoder_step(TokenDecoderStep::Kind::Replace);
    step.pattern = std::move(pattern);
    step.content = std::move(content);
    return step;
}

std::vector<std::pair<std::string, int32_t>> spm_vocab(const SentencePieceModel& spm) {
    std::vector<std::pair<std::string, int32_t>> vocab;
    vocab.reserve(spm.pieces.size());
    for (size_t id = 0; id < spm.pieces.size(); ++id) {
        vocab.emplace_back(spm.pieces[id].piece, static_cast<int32_t>(id));
    }
    return vocab;
}

// Control pieces become special added tokens and user-defined pieces plain ones, neither normalized.
std::vector<AddedToken> spm_added_tokens(const SentencePieceModel& spm) {
    std::vector<AddedToken> tokens;
    for (size_t id = 0; id < spm.pieces.size(); ++id) {
        const SentencePiece& piece = spm.pieces[id];
        if (piece.type == SentencePiece::Type::Control || piece.type == SentencePiece::Type::UserDefined) {
            AddedToken token;
            token.id = static_cast<int32_t>(id);
            token.content = piece.piece;
            token.normalized = false;
            token.special = piece.type == SentencePiece::Type::Control;
            tokens.push_back(std::move(token));
        }
    }
    return tokens;
}

// TokenizersBackend over tokenizer.model: BPE over the pieces with merges derived from them, the model's own
// precompiled normalizer then spaces as "▁", no pre-tokenizer.
TokenizerPipeline spm_backend_pipeline(const SentencePieceModel& spm, const fs::path& path,
                                       const TokenConfig& tokens) {
    if (spm.model_type != 2) {
        fail("tokenizer: ", path, " is a SentencePiece ", spm.model_type == 1 ? "unigram" : "non-BPE",
             " model (type ", spm.model_type, "); Folio reads BPE models");
    }
    TokenizerPipeline p;
    BpeConfig bpe;
    bpe.vocab = spm_vocab(spm);
    // added_tokens_decoder may rename a piece whose id it gives to another text.
    for (const AddedToken& token : tokens.added_tokens_decoder) {
        if (token.id < static_cast<int32_t>(bpe.vocab.size())) {
            auto& entry = bpe.vocab[static_cast<size_t>(token.id)];
            const bool known = std::any_of(bpe.vocab.begin(), bpe.vocab.end(),
                                           [&](const auto& piece) { return piece.first == token.content; });
            if (entry.first != token.content && !known) {
                entry.first = token.content;
            }
        }
    }
    bpe.merges = merges_from_vocab(bpe.vocab);
    bpe.unk_token = spm.unk_piece;
    bpe.fuse_unk = true;
    bpe.byte_fallback = spm.byte_fallback;
    p.model = std::make_unique<BpeModel>(std::move(bpe), path.string());
    if (!spm.precompiled_charsmap.empty()) {
        NormalizerStep step;
        step.kind = NormalizerStep::Kind::Precompiled;
        step.charsmap = std::make_shared<PrecompiledCharsmap>(spm.precompiled_charsmap, path.string());
        p.normalizer.add(std::move(step));
    }
    NormalizerStep spaces;
    spaces.kind = NormalizerStep::Kind::Replace;
    spaces.pattern = " ";
    spaces.content = kMetaspace;
    p.normalizer.add(std::move(spaces));
    p.decoder.add(replace_decoder(kMetaspace, " "));
    if (spm.byte_fallback) {
        p.decoder.add(decoder_step(TokenDecoderStep::Kind::ByteFallback));
        p.decoder.add(decoder_step(TokenDecoderStep::Kind::Fuse));
    }
    p.added_tokens = spm_added_tokens(spm);
    p.spm_bos_id = spm.bos_id;
    p.spm_eos_id = spm.eos_id;
    p.spm_pad_id = spm.pad_id;
    return p;
}

// LlamaTokenizer: BPE with byte fallback over the vocabulary, no normalizer, Metaspace without splitting,
// prefixed as add_prefix_space (default true) and legacy (default false) say; its decoder strips the prefix.
TokenizerPipeline llama_pipeline(BpeConfig bpe, const TokenConfig& tokens, const std::string& source) {
    TokenizerPipeline p;
    const bool add_prefix_space =
        config_flag(tokens.config, "add_prefix_space", tokens.config_path).value_or(true);
    const bool legacy = config_flag(tokens.config, "legacy", tokens.config_path).value_or(false);
    bpe.unk_token.reset();
    bpe.fuse_unk = true;
    bpe.byte_fallback = true;
    bpe.ignore_merges = false;
    p.model = std::make_unique<BpeModel>(std::move(bpe), source);
    MetaspaceSplit metaspace;
    metaspace.prepend_scheme = !add_prefix_space ? PrependScheme::Never
                               : legacy          ? PrependScheme::Always
                                                 : PrependScheme::First;
    metaspace.split = false;
    p.pre_tokenizer = metaspace;
    p.decoder.add(replace_decoder(kMetaspace, " "));
    p.decoder.add(decoder_step(TokenDecoderStep::Kind::ByteFallback));
    p.decoder.add(decoder_step(TokenDecoderStep::Kind::Fuse));
    if (add_prefix_space) {
        TokenDecoderStep strip = decoder_step(TokenDecoderStep::Kind::Strip);
        strip.strip_char = ' ';
        strip.start = 1;
        p.decoder.add(std::move(strip));
    }
    return p;
}

// The ids of the model vocabulary and of tokens already added, for named tokens.
std::optional<int32_t> lookup(const TokenizerPipeline& p, const std::vector<AddedToken>& added,
                              const std::string& content) {
    for (auto it = added.rbegin(); it != added.rend(); ++it) {
        if (it->content == content) {
            return it->id;
        }
    }
    return p.model->token_to_id(content);
}

}  // namespace

TokenizerPipeline read_tokenizer_pipeline(const fs::path& dir) {
    const fs::path json_path = dir / "tokenizer.json";
    const fs::path spm_path = dir / "tokenizer.model";
    const bool has_json = is_file(json_path);
    const bool has_spm = is_file(spm_path);
    if (!has_json && !has_spm) {
        fail("tokenizer: ", dir, " has neither tokenizer.json nor tokenizer.model");
    }
    // The token configuration files' values are read with their types checked; anything unchecked still
    // ends as folio::Error naming the folder.
    TokenConfig tokens =
        read_json_values("tokenizer: " + dir.string(), [&] { return read_token_config(dir); });
    std::string class_name;
    if (tokens.config.contains("tokenizer_class") && tokens.config["tokenizer_class"].is_string()) {
        class_name = tokens.config["tokenizer_class"].get<std::string>();
        if (class_name.ends_with("Fast")) {
            class_name.resize(class_name.size() - 4);
        }
    }
    const std::optional<std::string> model_type = model_type_of(dir);
    const bool forced_backend = model_type && kBackendModelTypes.contains(*model_type);
    const bool backend = forced_backend || class_name.empty() || class_name == "TokenizersBackend" ||
                         class_name == "PreTrainedTokenizer";
    if (!backend && class_name != "LlamaTokenizer") {
        fail("tokenizer: ", tokens.config_path, ": tokenizer_class \"", class_name,
             "\" is not supported (Folio reads TokenizersBackend, PreTrainedTokenizerFast and "
             "LlamaTokenizer)");
    }

    TokenizerPipeline p;
    bool json_post_processor = false;
    if (has_json) {
        TokenizerJson parsed = parse_tokenizer_json(read_file_text(json_path), json_path.string());
        json_post_processor = parsed.has_post_processor;
        if (backend) {
            p = std::move(parsed.pipeline);
            p.model = std::make_unique<BpeModel>(std::move(parsed.bpe), json_path.string());
            p.description = "TokenizersBackend (tokenizer.json)";
        } else {
            if (!parsed.has_merges) {
                std::vector<std::string> skip;
                for (const auto& [key, content] : tokens.named) {
                    skip.push_back(content);
                }
                skip.insert(skip.end(), tokens.extra.begin(), tokens.extra.end());
                parsed.bpe.merges = merges_from_vocab(parsed.bpe.vocab, skip);
            }
            std::vector<int32_t> prefix = std::move(parsed.pipeline.prefix_ids);
            std::vector<int32_t> suffix = std::move(parsed.pipeline.suffix_ids);
            p = llama_pipeline(std::move(parsed.bpe), tokens, json_path.string());
            p.added_tokens = std::move(parsed.pipeline.added_tokens);
            p.prefix_ids = std::move(prefix);
            p.suffix_ids = std::move(suffix);
            p.description = "LlamaTokenizer (tokenizer.json)";
        }
    } else {
        const SentencePieceModel spm = read_sentencepiece_model(spm_path);
        if (backend) {
            p = spm_backend_pipeline(spm, spm_path, tokens);
            p.description = "TokenizersBackend (tokenizer.model)";
        } else {
            BpeConfig bpe;
            bpe.vocab = spm_vocab(spm);
            bpe.merges = merges_from_vocab(bpe.vocab);
            p = llama_pipeline(std::move(bpe), tokens, spm_path.string());
            p.added_tokens = spm_added_tokens(spm);
            p.spm_bos_id = spm.bos_id;
            p.spm_eos_id = spm.eos_id;
            p.spm_pad_id = spm.pad_id;
            p.description = "LlamaTokenizer (tokenizer.model)";
        }
        // The SentencePiece model's special pieces stand for names the configuration leaves out.
        if (spm.bos_id >= 0) {
            tokens.named.try_emplace("bos_token", spm.bos_piece);
        }
        if (spm.eos_id >= 0) {
            tokens.named.try_emplace("eos_token", spm.eos_piece);
        }
        if (spm.unk_id >= 0) {
            tokens.named.try_emplace("unk_token", spm.unk_piece);
        }
    }
    if (!backend) {
        tokens.named.try_emplace("unk_token", "<unk>");
        tokens.named.try_emplace("bos_token", "<s>");
        tokens.named.try_emplace("eos_token", "</s>");
    }

    // The configuration's added tokens, then named and extra tokens not added yet, as special tokens.
    std::vector<AddedToken>& added = p.added_tokens;
    added.insert(added.end(), tokens.added_tokens_decoder.begin(), tokens.added_tokens_decoder.end());
    std::vector<std::string> names;
    for (const char* key : kNamedSpecialTokens) {
        if (const auto it = tokens.named.find(key); it != tokens.named.end()) {
            names.push_back(it->second);
        }
    }
    names.insert(names.end(), tokens.extra.begin(), tokens.extra.end());
    for (const std::string& name : names) {
        if (name.empty() ||
            std::any_of(added.begin(), added.end(), [&](const AddedToken& t) { return t.content == name; })) {
            continue;
        }
        AddedToken token;
        token.content = name;
        token.special = true;
        token.normalized = false;
        if (const auto id = p.model->token_to_id(name)) {
            token.id = *id;
        } else {
            int32_t next = p.model->n_ids();
            for (const AddedToken& t : added) {
                next = std::max(next, t.id + 1);
            }
            token.id = next;
        }
        added.push_back(std::move(token));
    }

    // The post-processor: add_bos_token / add_eos_token when the configuration sets either, else the one of
    // tokenizer.json.
    const bool explicit_bos_eos =
        tokens.config.contains("add_bos_token") || tokens.config.contains("add_eos_token");
    if (explicit_bos_eos || !json_post_processor) {
        p.prefix_ids.clear();
        p.suffix_ids.clear();
        const auto add_named = [&](const char* flag, const char* key, std::vector<int32_t>& target) {
            if (!config_flag(tokens.config, flag, tokens.config_path).value_or(false)) {
                return;
            }
            const auto it = tokens.named.find(key);
            if (it == tokens.named.end()) {
                return;
            }
            if (const auto id = lookup(p, added, it->second)) {
                target.push_back(*id);
            }
        };
        add_named("add_bos_token", "bos_token", p.prefix_ids);
        add_named("add_eos_token", "eos_token", p.suffix_ids);
    }
    for (const auto& [key, target] :
         {std::pair{"bos_token", &p.bos_token}, std::pair{"eos_token", &p.eos_token},
          std::pair{"pad_token", &p.pad_token}}) {
        if (const auto it = tokens.named.find(key); it != tokens.named.end()) {
            *target = it->second;
        }
    }
    return p;
}

}  // namespace folio
