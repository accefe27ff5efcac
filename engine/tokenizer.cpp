#include "tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "error.h"

namespace folio {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // "▁", SentencePiece's space
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";
// Added token ids above this are taken for a broken file rather than a vocabulary.
constexpr int64_t kMaxTokenId = int64_t{1} << 24;
// The tokens that tokenizer_config.json and special_tokens_map.json name, which transformers makes special.
constexpr const char* kNamedSpecialTokens[] = {"bos_token", "eos_token", "unk_token", "pad_token",
                                               "cls_token", "sep_token", "mask_token"};

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) {
        fail("tokenizer: cannot open ", path);
    }
    const std::streamoff size = in.tellg();
    if (size < 0) {
        fail("tokenizer: cannot read ", path);
    }
    std::string bytes(static_cast<size_t>(size), '\0');
    in.seekg(0);
    if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
        fail("tokenizer: cannot read ", path);
    }
    return bytes;
}

// The JSON object in path, or nothing when the file does not exist.
std::optional<json> read_json_object(const fs::path& path) {
    std::error_code error;
    if (!fs::exists(path, error)) {
        return std::nullopt;
    }
    json value;
    try {
        value = json::parse(read_file(path));
    } catch (const json::parse_error& e) {
        fail("tokenizer: ", path, " is not valid JSON: ", e.what());
    }
    if (!value.is_object()) {
        fail("tokenizer: ", path, " holds a JSON ", value.type_name(), ", not an object");
    }
    return value;
}

std::optional<uint64_t> read_varint(std::string_view data, size_t& pos) {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (pos >= data.size()) {
            return std::nullopt;
        }
        const auto byte = static_cast<unsigned char>(data[pos++]);
        value |= static_cast<uint64_t>(byte & 0x7F) << shift;
        if ((byte & 0x80) == 0) {
            return value;
        }
    }
    return std::nullopt;
}

void write_varint(std::string& out, uint64_t value) {
    while (value >= 0x80) {
        out.push_back(static_cast<char>((value & 0x7F) | 0x80));
        value >>= 7;
    }
    out.push_back(static_cast<char>(value));
}

// The serialized SentencePiece ModelProto with its normalizer_spec (field 3) replaced by the identity without
// dummy prefix or whitespace folding, and its self_test_data (field 4) dropped, since the samples were
// computed with the original normalizer. transformers 5 does not normalize, and the Metaspace prefix is
// applied by Tokenizer itself.
std::string with_identity_normalizer(std::string_view proto, const fs::path& path) {
    std::string out;
    out.reserve(proto.size() + 32);
    size_t pos = 0;
    while (pos < proto.size()) {
        const size_t field_start = pos;
        const auto malformed = [&] {
            fail("tokenizer: ", path, " is not a SentencePiece model (malformed protobuf field at byte ",
                 field_start, ")");
        };
        const auto key = read_varint(proto, pos);
        if (!key || (*key >> 3) == 0) {
            malformed();
        }
        switch (*key & 7) {
            case 0:
                if (!read_varint(proto, pos)) {
                    malformed();
                }
                break;
            case 1:
                if (proto.size() - pos < 8) {
                    malformed();
                }
                pos += 8;
                break;
            case 2: {
                const auto length = read_varint(proto, pos);
                if (!length || *length > proto.size() - pos) {
                    malformed();
                }
                pos += static_cast<size_t>(*length);
                break;
            }
            case 5:
                if (proto.size() - pos < 4) {
                    malformed();
                }
                pos += 4;
                break;
            default:
                malformed();
        }
        const uint64_t field = *key >> 3;
        if (field != 3 && field != 4) {
            out.append(proto.substr(field_start, pos - field_start));
        }
    }
    std::string spec;
    spec.push_back(0x0A);  // name
    write_varint(spec, 8);
    spec.append("identity");
    spec.append({0x18, 0x00});  // add_dummy_prefix: false
    spec.append({0x20, 0x00});  // remove_extra_whitespaces: false
    spec.append({0x28, 0x01});  // escape_whitespaces: true
    out.push_back(0x1A);        // normalizer_spec
    write_varint(out, spec.size());
    out.append(spec);
    return out;
}

bool is_valid_utf8(std::string_view bytes) {
    size_t i = 0;
    while (i < bytes.size()) {
        const auto lead = static_cast<unsigned char>(bytes[i]);
        int n_continuation = 0;
        uint32_t code_point = 0;
        if (lead < 0x80) {
            ++i;
            continue;
        } else if (lead >= 0xC2 && lead <= 0xDF) {
            n_continuation = 1;
            code_point = lead & 0x1F;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            n_continuation = 2;
            code_point = lead & 0x0F;
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            n_continuation = 3;
            code_point = lead & 0x07;
        } else {
            return false;
        }
        if (bytes.size() - i <= static_cast<size_t>(n_continuation)) {
            return false;
        }
        for (int k = 1; k <= n_continuation; ++k) {
            const auto byte = static_cast<unsigned char>(bytes[i + static_cast<size_t>(k)]);
            if ((byte & 0xC0) != 0x80) {
                return false;
            }
            code_point = (code_point << 6) | (byte & 0x3F);
        }
        const bool overlong =
            (n_continuation == 2 && code_point < 0x800) || (n_continuation == 3 && code_point < 0x10000);
        if (overlong || (code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF) {
            return false;
        }
        i += static_cast<size_t>(n_continuation) + 1;
    }
    return true;
}

// The value of a byte fallback token "<0xXX>", or -1.
int byte_value(std::string_view token) {
    if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') {
        return -1;
    }
    int value = 0;
    const auto [end, error] = std::from_chars(token.data() + 3, token.data() + 5, value, 16);
    return error == std::errc() && end == token.data() + 5 ? value : -1;
}

std::string replace_metaspace(std::string_view piece) {
    std::string text;
    text.reserve(piece.size());
    size_t pos = 0;
    while (pos < piece.size()) {
        const size_t found = piece.find(kMetaspace, pos);
        if (found == std::string_view::npos) {
            text.append(piece.substr(pos));
            break;
        }
        text.append(piece.substr(pos, found - pos));
        text.push_back(' ');
        pos = found + kMetaspace.size();
    }
    return text;
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
    fail("tokenizer: ", path, ": ", key, " is ", value.dump(), ", not a token");
}

std::optional<bool> config_flag(const json& config, const char* key, const fs::path& path) {
    if (!config.contains(key) || config[key].is_null()) {
        return std::nullopt;
    }
    if (!config[key].is_boolean()) {
        fail("tokenizer: ", path, ": ", key, " is ", config[key].dump(), ", not true or false");
    }
    return config[key].get<bool>();
}

PrefixSpace prefix_space_from_config(const json& config, const fs::path& path) {
    if (!config_flag(config, "add_prefix_space", path).value_or(true)) {
        return PrefixSpace::Never;
    }
    return config_flag(config, "legacy", path).value_or(false) ? PrefixSpace::Always : PrefixSpace::First;
}

struct AddedSpec {
    std::string content;
    bool special = false;
    fs::path source;
};

class AddedTokens {
public:
    void add(int64_t id, const std::string& content, bool special, const fs::path& source) {
        if (id < 0 || id >= kMaxTokenId) {
            fail("tokenizer: ", source, ": added token \"", content, "\" has id ", id, ", outside 0..",
                 kMaxTokenId - 1);
        }
        if (content.empty()) {
            fail("tokenizer: ", source, ": added token ", id, " is empty");
        }
        const auto [it, inserted] =
            by_id_.try_emplace(static_cast<int32_t>(id), AddedSpec{content, special, source});
        if (!inserted) {
            if (it->second.content != content) {
                fail("tokenizer: ", source, " gives id ", id, " to \"", content, "\" but ", it->second.source,
                     " gives it to \"", it->second.content, "\"");
            }
            it->second.special = it->second.special || special;
        }
    }
    std::map<int32_t, AddedSpec>& by_id() { return by_id_; }

private:
    std::map<int32_t, AddedSpec> by_id_;
};

void read_added_tokens_decoder(const json& config, const fs::path& path, AddedTokens& added) {
    if (!config.contains("added_tokens_decoder")) {
        return;
    }
    const json& decoder = config["added_tokens_decoder"];
    if (!decoder.is_object()) {
        fail("tokenizer: ", path, ": added_tokens_decoder is a JSON ", decoder.type_name(),
             ", not an object");
    }
    for (const auto& [key, token] : decoder.items()) {
        int64_t id = 0;
        const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (error != std::errc() || end != key.data() + key.size()) {
            fail("tokenizer: ", path, ": added_tokens_decoder has the key \"", key, "\", not a token id");
        }
        if (!token.is_object() || !token.contains("content") || !token["content"].is_string()) {
            fail("tokenizer: ", path, ": added_tokens_decoder[\"", key, "\"] is ", token.dump(),
                 ", not an object with a content string");
        }
        const std::string content = token["content"].get<std::string>();
        for (const char* option : {"lstrip", "rstrip", "single_word"}) {
            if (token.contains(option) && token[option].is_boolean() && token[option].get<bool>()) {
                fail("tokenizer: ", path, ": added token \"", content, "\" sets ", option,
                     ", which is not supported");
            }
        }
        const bool special =
            token.contains("special") && token["special"].is_boolean() && token["special"].get<bool>();
        added.add(id, content, special, path);
    }
}

void read_added_tokens_json(const json& tokens, const fs::path& path, AddedTokens& added) {
    for (const auto& [content, id] : tokens.items()) {
        if (!id.is_number_integer()) {
            fail("tokenizer: ", path, ": the id of \"", content, "\" is ", id.dump(), ", not an integer");
        }
        added.add(id.get<int64_t>(), content, false, path);
    }
}

struct NamedToken {
    std::string key;
    std::string content;
    fs::path source;
};

// The tokens a config names as special (bos_token, ..., additional_special_tokens, extra_special_tokens).
void read_named_special_tokens(const json& config, const fs::path& path, std::vector<NamedToken>& named) {
    for (const char* key : kNamedSpecialTokens) {
        if (config.contains(key)) {
            if (const auto content = token_content(config[key], path, key)) {
                named.push_back({key, *content, path});
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
        for (const auto& item : list) {
            if (const auto content = token_content(item, path, key)) {
                named.push_back({key, *content, path});
            }
        }
    }
}

}  // namespace

Tokenizer::Tokenizer() : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()), trie_(1) {}

Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::load(const fs::path& model_dir) {
    std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
    Tokenizer& t = *tokenizer;
    t.model_path_ = model_dir / "tokenizer.model";
    std::error_code error;
    if (!fs::is_regular_file(t.model_path_, error)) {
        fail("tokenizer: ", t.model_path_, " does not exist");
    }
    const std::string proto = with_identity_normalizer(read_file(t.model_path_), t.model_path_);
    if (const auto status = t.processor_->LoadFromSerializedProto(proto); !status.ok()) {
        fail("tokenizer: ", t.model_path_, " is not a SentencePiece model: ", status.ToString());
    }
    const int n_pieces = t.processor_->GetPieceSize();
    if (n_pieces <= 0) {
        fail("tokenizer: ", t.model_path_, " has no pieces");
    }

    const fs::path config_path = model_dir / "tokenizer_config.json";
    const fs::path added_path = model_dir / "added_tokens.json";
    const fs::path special_map_path = model_dir / "special_tokens_map.json";
    const std::optional<json> config = read_json_object(config_path);
    const std::optional<json> added_json = read_json_object(added_path);
    const std::optional<json> special_map = read_json_object(special_map_path);
    if (!config && !added_json) {
        fail("tokenizer: ", model_dir, " has neither tokenizer_config.json nor added_tokens.json");
    }

    std::vector<std::string> pieces(static_cast<size_t>(n_pieces));
    std::unordered_map<std::string, int32_t> piece_ids;
    for (int id = 0; id < n_pieces; ++id) {
        pieces[static_cast<size_t>(id)] = t.processor_->IdToPiece(id);
        piece_ids.emplace(pieces[static_cast<size_t>(id)], id);
    }

    AddedTokens added;
    if (config) {
        read_added_tokens_decoder(*config, config_path, added);
    }
    if (added_json) {
        read_added_tokens_json(*added_json, added_path, added);
    }
    std::unordered_map<std::string, int32_t> added_ids;
    for (const auto& [id, spec] : added.by_id()) {
        if (id < n_pieces && pieces[static_cast<size_t>(id)] != spec.content) {
            fail("tokenizer: ", spec.source, ": added token \"", spec.content, "\" has id ", id,
                 ", which is \"", pieces[static_cast<size_t>(id)], "\" in ", t.model_path_);
        }
        const auto [it, inserted] = added_ids.emplace(spec.content, id);
        if (!inserted) {
            fail("tokenizer: ", spec.source, ": added token \"", spec.content, "\" has two ids, ", it->second,
                 " and ", id);
        }
    }

    // Named special tokens become special added tokens, as in transformers; tokenizer_config.json names them
    // before special_tokens_map.json. A name the vocabulary does not have would be a new id that no model
    // knows, and is left out.
    std::vector<NamedToken> named;
    if (config) {
        read_named_special_tokens(*config, config_path, named);
    }
    if (special_map) {
        read_named_special_tokens(*special_map, special_map_path, named);
    }
    std::unordered_map<std::string, int32_t> named_ids;
    for (const NamedToken& token : named) {
        int32_t id = -1;
        if (const auto it = added_ids.find(token.content); it != added_ids.end()) {
            id = it->second;
        } else if (const auto piece = piece_ids.find(token.content); piece != piece_ids.end()) {
            id = piece->second;
            added_ids.emplace(token.content, id);
        } else {
            continue;
        }
        added.add(id, token.content, true, token.source);
        named_ids.try_emplace(token.key, id);
    }

    const int32_t n_vocab =
        added.by_id().empty() ? n_pieces : std::max(n_pieces, added.by_id().rbegin()->first + 1);
    t.entries_.resize(static_cast<size_t>(n_vocab));
    for (int32_t id = 0; id < n_pieces; ++id) {
        Entry& entry = t.entries_[static_cast<size_t>(id)];
        entry.text = replace_metaspace(pieces[static_cast<size_t>(id)]);
        entry.byte = byte_value(entry.text);
        entry.assigned = true;
    }
    t.ids_by_token_ = std::move(piece_ids);
    for (const auto& [id, spec] : added.by_id()) {
        Entry& entry = t.entries_[static_cast<size_t>(id)];
        entry.text = replace_metaspace(spec.content);
        entry.byte = byte_value(entry.text);
        entry.assigned = true;
        entry.special = spec.special;
        t.ids_by_token_.insert_or_assign(spec.content, id);
        t.add_to_trie(spec.content, id);
    }

    const auto named_or = [&](const char* key, int fallback) {
        const auto it = named_ids.find(key);
        return it != named_ids.end() ? it->second : static_cast<int32_t>(fallback);
    };
    t.bos_id_ = named_or("bos_token", t.processor_->bos_id());
    t.eos_id_ = named_or("eos_token", t.processor_->eos_id());
    t.pad_id_ = named_or("pad_token", t.processor_->pad_id());
    t.prefix_space_ = prefix_space_from_config(config.value_or(json::object()), config_path);
    return tokenizer;
}

void Tokenizer::add_to_trie(std::string_view content, int32_t id) {
    int32_t node = 0;
    for (const char c : content) {
        const auto byte = static_cast<unsigned char>(c);
        auto& next = trie_[static_cast<size_t>(node)].next;
        const auto it =
            std::find_if(next.begin(), next.end(), [&](const auto& edge) { return edge.first == byte; });
        if (it != next.end()) {
            node = it->second;
        } else {
            const auto child = static_cast<int32_t>(trie_.size());
            next.emplace_back(byte, child);
            trie_.emplace_back();
            node = child;
        }
    }
    trie_[static_cast<size_t>(node)].token_id = id;
}

std::pair<size_t, int32_t> Tokenizer::match_added(std::string_view text, size_t pos) const {
    std::pair<size_t, int32_t> best{0, -1};
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const auto& next = trie_[static_cast<size_t>(node)].next;
        const auto it =
            std::find_if(next.begin(), next.end(), [&](const auto& edge) { return edge.first == byte; });
        if (it == next.end()) {
            break;
        }
        node = it->second;
        if (trie_[static_cast<size_t>(node)].token_id >= 0) {
            best = {i + 1 - pos, trie_[static_cast<size_t>(node)].token_id};
        }
    }
    return best;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
    std::vector<int32_t> ids;
    size_t segment_start = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        const auto [length, id] = match_added(text, pos);
        if (length == 0) {
            ++pos;
            continue;
        }
        encode_plain(text.substr(segment_start, pos - segment_start), segment_start == 0, ids);
        ids.push_back(id);
        pos += length;
        segment_start = pos;
    }
    encode_plain(text.substr(segment_start), segment_start == 0, ids);
    return ids;
}

void Tokenizer::encode_plain(std::string_view text, bool at_text_start, std::vector<int32_t>& ids) const {
    if (text.empty()) {
        return;
    }
    const bool starts_with_space = text.front() == ' ' || text.starts_with(kMetaspace);
    const bool prepend = !starts_with_space && (prefix_space_ == PrefixSpace::Always ||
                                                (prefix_space_ == PrefixSpace::First && at_text_start));
    std::string input;
    input.reserve(text.size() + kMetaspace.size());
    if (prepend) {
        input.append(kMetaspace);
    }
    input.append(text);
    std::vector<int> pieces;
    if (const auto status = processor_->Encode(input, &pieces); !status.ok()) {
        fail("tokenizer: ", model_path_, " cannot encode \"", text, "\": ", status.ToString());
    }
    ids.insert(ids.end(), pieces.begin(), pieces.end());
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
    DecodeState state;
    std::string text;
    for (const int32_t id : ids) {
        decode_step(state, id, skip_special, text);
    }
    decode_finish(state, text);
    return text;
}

void Tokenizer::decode_step(DecodeState& state, int32_t id, bool skip_special, std::string& out) const {
    if (id < 0 || id >= n_vocab()) {
        return;
    }
    const Entry& entry = entries_[static_cast<size_t>(id)];
    if (!entry.assigned || (skip_special && entry.special)) {
        return;
    }
    if (entry.byte >= 0) {
        state.pending_bytes.push_back(static_cast<char>(entry.byte));
        return;
    }
    decode_finish(state, out);
    append_text(state, entry.text, out);
}

void Tokenizer::decode_finish(DecodeState& state, std::string& out) const {
    if (state.pending_bytes.empty()) {
        return;
    }
    if (is_valid_utf8(state.pending_bytes)) {
        append_text(state, state.pending_bytes, out);
    } else {
        std::string replaced;
        for (size_t i = 0; i < state.pending_bytes.size(); ++i) {
            replaced.append(kReplacementCharacter);
        }
        append_text(state, replaced, out);
    }
    state.pending_bytes.clear();
}

void Tokenizer::append_text(DecodeState& state, std::string_view text, std::string& out) const {
    if (text.empty()) {
        return;
    }
    // transformers strips one leading space of the whole text when it prepends "▁" on encoding.
    if (state.at_start && prefix_space_ != PrefixSpace::Never && text.front() == ' ') {
        text.remove_prefix(1);
    }
    state.at_start = false;
    out.append(text);
}

int32_t Tokenizer::token_id(std::string_view token) const {
    if (const auto id = find_token(token)) {
        return *id;
    }
    fail("tokenizer: ", model_path_.parent_path(), " has no token \"", token, "\"");
}

std::optional<int32_t> Tokenizer::find_token(std::string_view token) const {
    const auto it = ids_by_token_.find(std::string(token));
    if (it == ids_by_token_.end()) {
        return std::nullopt;
    }
    return it->second;
}

bool Tokenizer::is_special(int32_t id) const {
    return id >= 0 && id < n_vocab() && entries_[static_cast<size_t>(id)].special;
}

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string IncrementalDetokenizer::push(int32_t id) {
    std::string text;
    tokenizer_.decode_step(state_, id, skip_special_, text);
    return text;
}

std::string IncrementalDetokenizer::flush() {
    std::string text;
    tokenizer_.decode_finish(state_, text);
    return text;
}

}  // namespace folio
