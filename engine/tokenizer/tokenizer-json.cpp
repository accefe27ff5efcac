// tokenizer.json: the tokenizers library's serialization, read for the components of the SentencePiece-style
// and byte-level families; any other component is refused by name.
#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/tokenizer/tokenizer-pipeline.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio {

namespace {

using nlohmann::json;

std::string base64_decode(std::string_view text, std::string_view source) {
    const auto value_of = [](char c) -> int {
        if (c >= 'A' && c <= 'Z')
            return c - 'A';
        if (c >= 'a' && c <= 'z')
            return c - 'a' + 26;
        if (c >= '0' && c <= '9')
            return c - '0' + 52;
        if (c == '+')
            return 62;
        if (c == '/')
            return 63;
        return -1;
    };
    std::string out;
    out.reserve(text.size() / 4 * 3);
    uint32_t bits = 0;
    int n_bits = 0;
    size_t n_padding = 0;
    for (const char c : text) {
        if (c == '=') {
            ++n_padding;
            continue;
        }
        const int value = value_of(c);
        if (value < 0 || n_padding > 0) {
            fail("tokenizer: ", source, ": the precompiled charsmap is not base64");
        }
        bits = (bits << 6) | static_cast<uint32_t>(value);
        n_bits += 6;
        if (n_bits >= 8) {
            n_bits -= 8;
            out.push_back(static_cast<char>((bits >> n_bits) & 0xFF));
        }
    }
    if (n_padding > 2) {
        fail("tokenizer: ", source, ": the precompiled charsmap is not base64");
    }
    return out;
}

class JsonReader {
public:
    explicit JsonReader(std::string_view source) : source_(source) {}

    const json& object(const json& value, std::string_view where) const {
        if (!value.is_object()) {
            fail("tokenizer: ", source_, ": ", where, " is a JSON ", value.type_name(), ", not an object");
        }
        return value;
    }
    std::string string(const json& object, const char* key, std::string_view where) const {
        if (!object.contains(key) || !object[key].is_string()) {
            fail("tokenizer: ", source_, ": ", where, ".", key, " is ",
                 object.contains(key) ? describe_json(object[key]) : std::string("missing"),
                 ", not a string");
        }
        const std::string value = object[key].get<std::string>();
        if (!is_valid_utf8(value)) {
            fail("tokenizer: ", source_, ": ", where, ".", key, " is not valid UTF-8");
        }
        return value;
    }
    std::optional<std::string> optional_string(const json& object, const char* key,
                                               std::string_view where) const {
        if (!object.contains(key) || object[key].is_null()) {
            return std::nullopt;
        }
        return string(object, key, where);
    }
    bool flag(const json& object, const char* key, bool fallback, std::string_view where) const {
        if (!object.contains(key) || object[key].is_null()) {
            return fallback;
        }
        if (!object[key].is_boolean()) {
            fail("tokenizer: ", source_, ": ", where, ".", key, " is ", describe_json(object[key]),
                 ", not true or false");
        }
        return object[key].get<bool>();
    }
    int64_t integer(const json& object, const char* key, int64_t fallback, std::string_view where) const {
        if (!object.contains(key) || object[key].is_null()) {
            return fallback;
        }
        const std::optional<int64_t> value = json_int64(object[key]);
        if (!value) {
            fail("tokenizer: ", source_, ": ", where, ".", key, " is ", describe_json(object[key]),
                 ", not a 64-bit integer");
        }
        return *value;
    }
    std::string type(const json& object, std::string_view where) const {
        return string(object, "type", where);
    }
    // A single character (Metaspace's replacement, Strip's content).
    std::string character(const json& object, const char* key, std::string_view where) const {
        const std::string value = string(object, key, where);
        if (value.empty() || code_point_at(value, 0).size != value.size()) {
            fail("tokenizer: ", source_, ": ", where, ".", key, " is \"", value, "\", not one character");
        }
        return value;
    }
    // Replace's pattern: {"String": "..."}; a regex is refused.
    std::string pattern(const json& object, std::string_view where) const {
        if (!object.contains("pattern") || !object["pattern"].is_object()) {
            fail("tokenizer: ", source_, ": ", where, ".pattern is missing or not an object");
        }
        const json& pattern = object["pattern"];
        if (pattern.contains("Regex")) {
            fail("tokenizer: ", source_, ": ", where, " replaces a regular expression (",
                 describe_json(pattern["Regex"]), "), which Folio does not support");
        }
        const std::string text = string(pattern, "String", std::string(where) + ".pattern");
        if (text.empty()) {
            fail("tokenizer: ", source_, ": ", where, " replaces an empty pattern");
        }
        return text;
    }
    PrependScheme prepend_scheme(const json& object, std::string_view where) const {
        PrependScheme scheme = PrependScheme::Always;
        if (const auto name = optional_string(object, "prepend_scheme", where)) {
            if (*name == "always") {
                scheme = PrependScheme::Always;
            } else if (*name == "first") {
                scheme = PrependScheme::First;
            } else if (*name == "never") {
                scheme = PrependScheme::Never;
            } else {
                fail("tokenizer: ", source_, ": ", where, ".prepend_scheme is \"", *name,
                     "\", not always, first or never");
            }
        }
        if (object.contains("add_prefix_space") && object["add_prefix_space"].is_boolean() &&
            !object["add_prefix_space"].get<bool>()) {
            scheme = PrependScheme::Never;
        }
        return scheme;
    }
    [[noreturn]] void unsupported(std::string_view kind, std::string_view type,
                                  std::string_view supported) const {
        fail("tokenizer: ", source_, ": the ", kind, " ", type, " is not supported (Folio reads ", supported,
             ")");
    }
    std::string_view source() const { return source_; }

private:
    std::string_view source_;
};

void read_normalizer(const json& value, const JsonReader& r, Normalizer& out) {
    if (value.is_null()) {
        return;
    }
    const json& n = r.object(value, "normalizer");
    const std::string type = r.type(n, "normalizer");
    if (type == "Sequence") {
        if (!n.contains("normalizers") || !n["normalizers"].is_array()) {
            fail("tokenizer: ", r.source(), ": the normalizer Sequence has no list of normalizers");
        }
        for (const json& item : n["normalizers"]) {
            read_normalizer(item, r, out);
        }
        return;
    }
    NormalizerStep step;
    if (type == "Precompiled") {
        step.kind = NormalizerStep::Kind::Precompiled;
        const std::string bytes =
            base64_decode(r.string(n, "precompiled_charsmap", "Precompiled"), r.source());
        step.charsmap = std::make_shared<PrecompiledCharsmap>(bytes, r.source());
    } else if (type == "NFKC" || type == "NFC" || type == "NFKD" || type == "NFD") {
        step.kind = NormalizerStep::Kind::Unicode;
        step.form = type == "NFKC"   ? UnicodeForm::NFKC
                    : type == "NFC"  ? UnicodeForm::NFC
                    : type == "NFKD" ? UnicodeForm::NFKD
                                     : UnicodeForm::NFD;
    } else if (type == "Replace") {
        step.kind = NormalizerStep::Kind::Replace;
        step.pattern = r.pattern(n, "the Replace normalizer");
        step.content = r.string(n, "content", "Replace");
    } else if (type == "Prepend") {
        step.kind = NormalizerStep::Kind::Prepend;
        step.content = r.string(n, "prepend", "Prepend");
    } else if (type == "Strip") {
        step.kind = NormalizerStep::Kind::Strip;
        step.strip_left = r.flag(n, "strip_left", false, "Strip");
        step.strip_right = r.flag(n, "strip_right", false, "Strip");
    } else {
        r.unsupported("normalizer", type,
                      "Sequence, Precompiled, NFC, NFD, NFKC, NFKD, Replace, Prepend, Strip");
    }
    out.add(std::move(step));
}

MetaspaceSplit read_metaspace(const json& m, const JsonReader& r) {
    MetaspaceSplit metaspace;
    metaspace.replacement = r.character(m, "replacement", "Metaspace");
    metaspace.prepend_scheme = r.prepend_scheme(m, "Metaspace");
    metaspace.split = r.flag(m, "split", true, "Metaspace");
    return metaspace;
}

SplitRule read_split(const json& s, const JsonReader& r) {
    if (r.flag(s, "invert", false, "Split")) {
        fail("tokenizer: ", r.source(), ": an inverted Split pre-tokenizer is not supported");
    }
    if (!s.contains("pattern") || !s["pattern"].is_object()) {
        fail("tokenizer: ", r.source(), ": the Split pre-tokenizer's pattern is missing or not an object");
    }
    const json& pattern = s["pattern"];
    const bool literal = pattern.contains("String");
    const std::string text = r.string(pattern, literal ? "String" : "Regex", "Split.pattern");
    SplitRule rule;
    rule.pattern = std::make_shared<const RegexSplitter>(text, literal, r.source());
    const std::string behavior = r.string(s, "behavior", "Split");
    if (behavior == "Isolated") {
        rule.behavior = SplitBehavior::Isolated;
    } else if (behavior == "Removed") {
        rule.behavior = SplitBehavior::Removed;
    } else if (behavior == "MergedWithPrevious") {
        rule.behavior = SplitBehavior::MergedWithPrevious;
    } else if (behavior == "MergedWithNext") {
        rule.behavior = SplitBehavior::MergedWithNext;
    } else if (behavior == "Contiguous") {
        rule.behavior = SplitBehavior::Contiguous;
    } else {
        fail("tokenizer: ", r.source(), ": the Split behavior \"", behavior,
             "\" is not Isolated, Removed, MergedWithPrevious, MergedWithNext or Contiguous");
    }
    return rule;
}

struct PreTokenizers {
    std::optional<MetaspaceSplit> metaspace;
    std::optional<ByteLevelSplit> byte_level;
};

// Metaspace alone, or Split pre-tokenizers followed by ByteLevel (a Sequence, or ByteLevel alone).
PreTokenizers read_pre_tokenizer(const json& value, const JsonReader& r) {
    PreTokenizers out;
    if (value.is_null()) {
        return out;
    }
    const json& p = r.object(value, "pre_tokenizer");
    const std::string type = r.type(p, "pre_tokenizer");
    std::vector<const json*> list;
    if (type == "Sequence") {
        if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array()) {
            fail("tokenizer: ", r.source(), ": the pre-tokenizer Sequence has no list of pre-tokenizers");
        }
        for (const json& item : p["pretokenizers"]) {
            list.push_back(&r.object(item, "a pre-tokenizer of the Sequence"));
        }
    } else {
        list.push_back(&p);
    }
    if (list.empty()) {
        return out;
    }
    const std::string first = r.type(*list.front(), "pre_tokenizer");
    if (list.size() == 1 && first == "Metaspace") {
        out.metaspace = read_metaspace(*list.front(), r);
        return out;
    }
    ByteLevelSplit byte_level;
    for (size_t i = 0; i < list.size(); ++i) {
        const json& item = *list[i];
        const std::string item_type = r.type(item, "pre_tokenizer");
        const bool last = i + 1 == list.size();
        if (item_type == "Split" && !last) {
            byte_level.splits.push_back(read_split(item, r));
        } else if (item_type == "ByteLevel" && last) {
            byte_level.add_prefix_space = r.flag(item, "add_prefix_space", true, "ByteLevel");
            byte_level.use_regex = r.flag(item, "use_regex", true, "ByteLevel");
        } else {
            r.unsupported("pre-tokenizer", list.size() == 1 ? item_type : "Sequence with " + item_type,
                          "Metaspace alone, or Split pre-tokenizers followed by ByteLevel");
        }
    }
    out.byte_level = std::move(byte_level);
    return out;
}

BpeConfig read_bpe(const json& value, const JsonReader& r, bool& has_merges) {
    const json& m = r.object(value, "model");
    const std::string type = m.contains("type") ? r.type(m, "model") : std::string("BPE");
    if (type != "BPE") {
        r.unsupported("model", type, "BPE");
    }
    if (m.contains("dropout") && !m["dropout"].is_null() &&
        !(m["dropout"].is_number() && m["dropout"].get<double>() == 0.0)) {
        fail("tokenizer: ", r.source(), ": the BPE model has dropout ", describe_json(m["dropout"]),
             ", which only training uses");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        if (const auto affix = r.optional_string(m, key, "model"); affix && !affix->empty()) {
            fail("tokenizer: ", r.source(), ": the BPE model's ", key, " \"", *affix, "\" is not supported");
        }
    }
    BpeConfig config;
    config.unk_token = r.optional_string(m, "unk_token", "model");
    config.fuse_unk = r.flag(m, "fuse_unk", false, "model");
    config.byte_fallback = r.flag(m, "byte_fallback", false, "model");
    config.ignore_merges = r.flag(m, "ignore_merges", false, "model");
    if (!m.contains("vocab") || !m["vocab"].is_object()) {
        fail("tokenizer: ", r.source(), ": the BPE model has no vocab object");
    }
    for (const auto& [piece, id] : m["vocab"].items()) {
        const std::optional<int64_t> value_id = json_int64(id);
        if (!value_id) {
            fail("tokenizer: ", r.source(), ": the id of piece \"", piece, "\" is ", describe_json(id),
                 ", not an integer");
        }
        if (*value_id < 0 || *value_id > INT32_MAX) {
            fail("tokenizer: ", r.source(), ": piece \"", piece, "\" has id ", *value_id);
        }
        config.vocab.emplace_back(piece, static_cast<int32_t>(*value_id));
    }
    has_merges = m.contains("merges") && !m["merges"].is_null();
    if (has_merges) {
        if (!m["merges"].is_array()) {
            fail("tokenizer: ", r.source(), ": the BPE model's merges are a JSON ", m["merges"].type_name(),
                 ", not a list");
        }
        for (const json& merge : m["merges"]) {
            if (merge.is_string()) {
                const std::string text = merge.get<std::string>();
                const size_t space = text.find(' ');
                if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
                    fail("tokenizer: ", r.source(), ": merge \"", text,
                         "\" is not two pieces separated by a space");
                }
                config.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
            } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
                       merge[1].is_string()) {
                config.merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
            } else {
                fail("tokenizer: ", r.source(), ": merge ", describe_json(merge), " is not a pair of pieces");
            }
        }
    }
    return config;
}

void read_decoder(const json& value, const JsonReader& r, TokenDecoder& out) {
    if (value.is_null()) {
        return;
    }
    const json& d = r.object(value, "decoder");
    const std::string type = r.type(d, "decoder");
    if (type == "Sequence") {
        if (!d.contains("decoders") || !d["decoders"].is_array()) {
            fail("tokenizer: ", r.source(), ": the decoder Sequence has no list of decoders");
        }
        for (const json& item : d["decoders"]) {
            read_decoder(item, r, out);
        }
        return;
    }
    TokenDecoderStep step;
    if (type == "Replace") {
        step.kind = TokenDecoderStep::Kind::Replace;
        step.pattern = r.pattern(d, "the Replace decoder");
        step.content = r.string(d, "content", "Replace");
    } else if (type == "ByteFallback") {
        step.kind = TokenDecoderStep::Kind::ByteFallback;
    } else if (type == "Fuse") {
        step.kind = TokenDecoderStep::Kind::Fuse;
    } else if (type == "Strip") {
        step.kind = TokenDecoderStep::Kind::Strip;
        step.strip_char = code_point_at(r.character(d, "content", "Strip"), 0).value;
        const int64_t start = r.integer(d, "start", 0, "Strip");
        const int64_t stop = r.integer(d, "stop", 0, "Strip");
        if (start < 0 || stop < 0) {
            fail("tokenizer: ", r.source(), ": the Strip decoder has start ", start, " and stop ", stop);
        }
        step.start = static_cast<size_t>(start);
        step.stop = static_cast<size_t>(stop);
    } else if (type == "ByteLevel") {
        step.kind = TokenDecoderStep::Kind::ByteLevel;
    } else if (type == "Metaspace") {
        step.kind = TokenDecoderStep::Kind::Metaspace;
        const MetaspaceSplit metaspace = read_metaspace(d, r);
        step.content = metaspace.replacement;
        step.prepend_scheme = metaspace.prepend_scheme;
    } else {
        r.unsupported("decoder", type, "Sequence, Replace, ByteFallback, Fuse, Strip, Metaspace, ByteLevel");
    }
    out.add(std::move(step));
}

void read_post_processor(const json& value, const JsonReader& r, const std::vector<AddedToken>& added,
                         TokenizerPipeline& out) {
    if (value.is_null()) {
        return;
    }
    const json& p = r.object(value, "post_processor");
    const std::string type = r.type(p, "post_processor");
    if (type == "Sequence") {
        if (!p.contains("processors") || !p["processors"].is_array()) {
            fail("tokenizer: ", r.source(), ": the post-processor Sequence has no list of processors");
        }
        for (const json& item : p["processors"]) {
            read_post_processor(item, r, added, out);
        }
        return;
    }
    if (type == "ByteLevel") {
        return;  // it trims offsets, which ids do not have
    }
    if (type != "TemplateProcessing") {
        r.unsupported("post-processor", type, "TemplateProcessing, ByteLevel, Sequence");
    }
    if (!p.contains("single") || !p["single"].is_array()) {
        fail("tokenizer: ", r.source(), ": TemplateProcessing has no single template");
    }
    const json special_tokens = p.contains("special_tokens") ? p["special_tokens"] : json::object();
    bool after = false;
    for (const json& item : p["single"]) {
        if (item.contains("Sequence")) {
            after = true;
            continue;
        }
        if (!item.contains("SpecialToken") || !item["SpecialToken"].is_object()) {
            fail("tokenizer: ", r.source(), ": TemplateProcessing's single template holds ",
                 describe_json(item));
        }
        const std::string name = r.string(item["SpecialToken"], "id", "SpecialToken");
        std::vector<int32_t> ids;
        if (special_tokens.is_object() && special_tokens.contains(name) &&
            special_tokens[name].contains("ids") && special_tokens[name]["ids"].is_array()) {
            for (const json& id : special_tokens[name]["ids"]) {
                const std::optional<int64_t> n = json_int64(id);
                if (!n || *n < 0 || *n > INT32_MAX) {
                    fail("tokenizer: ", r.source(), ": special token \"", name, "\" has id ",
                         describe_json(id));
                }
                ids.push_back(static_cast<int32_t>(*n));
            }
        } else {
            const auto it = std::find_if(added.begin(), added.end(),
                                         [&](const AddedToken& token) { return token.content == name; });
            if (it == added.end()) {
                fail("tokenizer: ", r.source(), ": TemplateProcessing names \"", name, "\", which has no id");
            }
            ids.push_back(it->id);
        }
        auto& target = after ? out.suffix_ids : out.prefix_ids;
        target.insert(target.end(), ids.begin(), ids.end());
    }
}

TokenizerJson read_tokenizer_json(const json& root, std::string_view source) {
    const JsonReader r(source);
    r.object(root, "the file");
    TokenizerJson result;
    TokenizerPipeline& pipeline = result.pipeline;
    if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
        if (!root["added_tokens"].is_array()) {
            fail("tokenizer: ", source, ": added_tokens is a JSON ", root["added_tokens"].type_name(),
                 ", not a list");
        }
        for (const json& item : root["added_tokens"]) {
            const json& t = r.object(item, "an added token");
            AddedToken token;
            const int64_t id = r.integer(t, "id", -1, "added token");
            if (id < 0 || id >= (int64_t{1} << 24)) {
                fail("tokenizer: ", source, ": added token ", describe_json(t), " has id ", id);
            }
            token.id = static_cast<int32_t>(id);
            token.content = r.string(t, "content", "added token");
            token.single_word = r.flag(t, "single_word", false, "added token");
            token.lstrip = r.flag(t, "lstrip", false, "added token");
            token.rstrip = r.flag(t, "rstrip", false, "added token");
            token.special = r.flag(t, "special", false, "added token");
            token.normalized = r.flag(t, "normalized", !token.special, "added token");
            pipeline.added_tokens.push_back(std::move(token));
        }
    }
    read_normalizer(root.value("normalizer", json()), r, pipeline.normalizer);
    PreTokenizers pre_tokenizers = read_pre_tokenizer(root.value("pre_tokenizer", json()), r);
    pipeline.pre_tokenizer = std::move(pre_tokenizers.metaspace);
    pipeline.byte_level = std::move(pre_tokenizers.byte_level);
    if (!root.contains("model")) {
        fail("tokenizer: ", source, " has no model");
    }
    result.bpe = read_bpe(root["model"], r, result.has_merges);
    read_decoder(root.value("decoder", json()), r, pipeline.decoder);
    const json post_processor = root.value("post_processor", json());
    result.has_post_processor = !post_processor.is_null();
    read_post_processor(post_processor, r, pipeline.added_tokens, pipeline);
    return result;
}

}  // namespace

TokenizerJson parse_tokenizer_json(std::string_view text, std::string_view source) {
    const std::string origin = "tokenizer: " + std::string(source);
    const json root = parse_json(text, origin);
    return read_json_values(origin, [&] { return read_tokenizer_json(root, source); });
}

}  // namespace folio
