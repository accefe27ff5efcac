#include "engine/tokenizer/added-vocabulary.h"

#include <algorithm>
#include <map>

#include "engine/tokenizer/unicode-text.h"

namespace folio {

namespace {

// The start of the last code point before end.
size_t previous_start(std::string_view text, size_t end) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
        --start;
    }
    return start;
}

bool ends_with_word(std::string_view text) {
    return !text.empty() && is_word_character(code_point_at(text, previous_start(text, text.size())).value);
}

bool starts_with_word(std::string_view text) {
    return !text.empty() && is_word_character(code_point_at(text, 0).value);
}

// Where the run of whitespace that ends text begins.
size_t whitespace_run_before(std::string_view text) {
    size_t begin = text.size();
    while (begin > 0) {
        const size_t start = previous_start(text, begin);
        if (!is_unicode_whitespace(code_point_at(text, start).value)) {
            break;
        }
        begin = start;
    }
    return begin;
}

// The length of the run of whitespace that starts text.
size_t whitespace_run_after(std::string_view text) {
    size_t end = 0;
    while (end < text.size()) {
        const CodePoint cp = code_point_at(text, end);
        if (!is_unicode_whitespace(cp.value)) {
            break;
        }
        end += cp.size;
    }
    return end;
}

}  // namespace

void AddedVocabulary::Trie::add(std::string_view pattern, int32_t id) {
    size_t node = 0;
    for (const char c : pattern) {
        const auto byte = static_cast<unsigned char>(c);
        auto& next = nodes_[node].next;
        const auto it =
            std::find_if(next.begin(), next.end(), [&](const auto& edge) { return edge.first == byte; });
        if (it != next.end()) {
            node = static_cast<size_t>(it->second);
        } else {
            const auto child = static_cast<int32_t>(nodes_.size());
            next.emplace_back(byte, child);
            nodes_.emplace_back();
            node = static_cast<size_t>(child);
        }
    }
    nodes_[node].id = id;
}

std::pair<size_t, int32_t> AddedVocabulary::Trie::longest_at(std::string_view text, size_t pos) const {
    std::pair<size_t, int32_t> best{0, -1};
    size_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const auto& next = nodes_[node].next;
        const auto it =
            std::find_if(next.begin(), next.end(), [&](const auto& edge) { return edge.first == byte; });
        if (it == next.end()) {
            break;
        }
        node = static_cast<size_t>(it->second);
        if (nodes_[node].id >= 0) {
            best = {i + 1 - pos, nodes_[node].id};
        }
    }
    return best;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer& normalizer) {
    std::map<int32_t, AddedToken> by_id;
    std::unordered_map<std::string, int32_t> id_of;
    for (AddedToken& token : tokens) {
        if (token.content.empty()) {
            continue;
        }
        // A content given again under another id keeps the first id, as the reference's lookup does.
        if (const auto it = id_of.find(token.content); it != id_of.end()) {
            token.id = it->second;
        }
        id_of[token.content] = token.id;
        by_id.insert_or_assign(token.id, std::move(token));
    }
    for (auto& [id, token] : by_id) {
        by_content_[token.content] = tokens_.size();
        by_id_[id] = tokens_.size();
        if (token.normalized) {
            normalized_.add(normalizer.empty() ? token.content : normalizer.normalize(token.content), id);
        } else {
            plain_.add(token.content, id);
        }
        tokens_.push_back(std::move(token));
    }
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::find(std::string_view content) const {
    const auto it = by_content_.find(std::string(content));
    return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

std::vector<AddedVocabulary::Match> AddedVocabulary::find_matches(std::string_view text,
                                                                  const Trie& trie) const {
    std::vector<Match> matches;
    if (trie.empty()) {
        return matches;
    }
    size_t covered = 0;  // the end of the last kept match
    size_t pos = 0;
    while (pos < text.size()) {
        const auto [length, id] = trie.longest_at(text, pos);
        if (length == 0) {
            ++pos;
            continue;
        }
        size_t begin = pos;
        size_t end = pos + length;
        pos = end;
        const AddedToken& token = tokens_[by_id_.at(id)];
        if (token.single_word && ((begin > 0 && ends_with_word(text.substr(0, begin))) ||
                                  (end < text.size() && starts_with_word(text.substr(end))))) {
            continue;
        }
        if (token.lstrip) {
            begin = std::max(whitespace_run_before(text.substr(0, begin)), covered);
        }
        if (token.rstrip) {
            end += whitespace_run_after(text.substr(end));
            pos = end;
        }
        matches.push_back({id, begin, end});
        covered = end;
    }
    return matches;
}

std::vector<TextPiece> AddedVocabulary::split(std::string_view text, const Normalizer& normalizer) const {
    std::vector<TextPiece> pieces;
    const auto add_normalized = [&](std::string_view original, bool at_start) {
        if (original.empty()) {
            return;
        }
        const std::string normalized =
            normalizer.empty() ? std::string(original) : normalizer.normalize(original);
        size_t last = 0;
        for (const Match& match : find_matches(normalized, normalized_)) {
            if (match.begin > last) {
                pieces.push_back({normalized.substr(last, match.begin - last), -1, at_start && last == 0});
            }
            pieces.push_back({normalized.substr(match.begin, match.end - match.begin), match.id, false});
            last = match.end;
        }
        if (last < normalized.size()) {
            pieces.push_back({normalized.substr(last), -1, at_start && last == 0});
        }
    };
    size_t last = 0;
    for (const Match& match : find_matches(text, plain_)) {
        add_normalized(text.substr(last, match.begin - last), last == 0);
        pieces.push_back({std::string(text.substr(match.begin, match.end - match.begin)), match.id, false});
        last = match.end;
    }
    add_normalized(text.substr(last), last == 0);
    return pieces;
}

}  // namespace folio
