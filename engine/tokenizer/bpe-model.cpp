#include "engine/tokenizer/bpe-model.h"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <unordered_set>

#include "engine/common/error.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio {

namespace {

// Ids above this are taken for a broken file rather than a vocabulary.
constexpr int32_t kMaxTokenId = int32_t{1} << 24;

// Byte offsets where each code point of s starts, followed by s.size().
std::vector<size_t> code_point_starts(std::string_view s) {
    std::vector<size_t> starts;
    starts.reserve(s.size() + 1);
    size_t pos = 0;
    while (pos < s.size()) {
        starts.push_back(pos);
        pos += code_point_at(s, pos).size;
    }
    starts.push_back(s.size());
    return starts;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> merges_from_vocab(
    const std::vector<std::pair<std::string, int32_t>>& vocab, const std::vector<std::string>& skip) {
    std::unordered_map<std::string_view, int32_t> ids;
    ids.reserve(vocab.size());
    for (const auto& [piece, id] : vocab) {
        ids.emplace(piece, id);
    }
    const std::unordered_set<std::string_view> skipped(skip.begin(), skip.end());
    struct Candidate {
        std::string_view left;
        std::string_view right;
        int32_t merged_id;
        size_t left_chars;
        size_t right_chars;
    };
    std::vector<Candidate> candidates;
    for (const auto& [piece, id] : vocab) {
        if (skipped.contains(piece)) {
            continue;
        }
        const std::vector<size_t> starts = code_point_starts(piece);
        const size_t n_chars = starts.size() - 1;
        const size_t first = candidates.size();
        for (size_t k = 1; k < n_chars; ++k) {
            const std::string_view left = std::string_view(piece).substr(0, starts[k]);
            const std::string_view right = std::string_view(piece).substr(starts[k]);
            if (skipped.contains(left) || skipped.contains(right)) {
                continue;
            }
            if (ids.contains(left) && ids.contains(right)) {
                candidates.push_back({left, right, id, k, n_chars - k});
            }
        }
        std::stable_sort(candidates.begin() + static_cast<std::ptrdiff_t>(first), candidates.end(),
                         [&](const Candidate& a, const Candidate& b) {
                             return std::pair(ids.at(a.left), ids.at(a.right)) <
                                    std::pair(ids.at(b.left), ids.at(b.right));
                         });
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return std::tuple(a.merged_id, a.left_chars, a.right_chars) <
               std::tuple(b.merged_id, b.left_chars, b.right_chars);
    });
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(candidates.size());
    for (const Candidate& c : candidates) {
        merges.emplace_back(std::string(c.left), std::string(c.right));
    }
    return merges;
}

BpeModel::BpeModel(BpeConfig config, std::string_view source)
    : unk_token_(std::move(config.unk_token)),
      fuse_unk_(config.fuse_unk),
      byte_fallback_(config.byte_fallback),
      ignore_merges_(config.ignore_merges) {
    int32_t max_id = -1;
    for (const auto& [piece, id] : config.vocab) {
        if (id < 0 || id >= kMaxTokenId) {
            fail("tokenizer: ", source, ": piece \"", piece, "\" has id ", id, ", outside 0..",
                 kMaxTokenId - 1);
        }
        max_id = std::max(max_id, id);
    }
    n_ids_ = max_id + 1;
    ids_.reserve(config.vocab.size());
    tokens_.reserve(config.vocab.size());
    for (auto& [piece, id] : config.vocab) {
        if (!is_valid_utf8(piece)) {
            fail("tokenizer: ", source, ": piece ", id, " is not valid UTF-8");
        }
        // A later entry for the same piece replaces an earlier one, as in a JSON object.
        if (const auto it = ids_.find(piece); it != ids_.end()) {
            tokens_.erase(it->second);
        }
        ids_.insert_or_assign(piece, id);
        tokens_.insert_or_assign(id, piece);
    }
    byte_ids_.fill(-1);
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        if (const auto it = ids_.find(name); it != ids_.end()) {
            byte_ids_[static_cast<size_t>(b)] = it->second;
        }
    }
    if (unk_token_) {
        if (const auto it = ids_.find(*unk_token_); it != ids_.end()) {
            unk_id_ = it->second;
        }
    }
    merges_.reserve(config.merges.size());
    for (size_t rank = 0; rank < config.merges.size(); ++rank) {
        const auto& [left, right] = config.merges[rank];
        const auto l = ids_.find(left);
        const auto r = ids_.find(right);
        if (l == ids_.end() || r == ids_.end()) {
            fail("tokenizer: ", source, ": merge ", rank, " (\"", left, "\", \"", right, "\") names \"",
                 l == ids_.end() ? left : right, "\", which is not in the vocabulary");
        }
        const auto merged = ids_.find(left + right);
        if (merged == ids_.end()) {
            fail("tokenizer: ", source, ": merge ", rank, " (\"", left, "\", \"", right, "\") makes \"",
                 left + right, "\", which is not in the vocabulary");
        }
        merges_.insert_or_assign(pair_key(l->second, r->second),
                                 MergeTarget{static_cast<int32_t>(rank), merged->second});
    }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
    const auto it = ids_.find(std::string(token));
    if (it == ids_.end()) {
        return std::nullopt;
    }
    return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
    const auto it = tokens_.find(id);
    return it == tokens_.end() ? nullptr : &it->second;
}

void BpeModel::encode(std::string_view word, std::vector<int32_t>& ids) const {
    if (word.empty()) {
        return;
    }
    if (ignore_merges_) {
        if (const auto id = token_to_id(word)) {
            ids.push_back(*id);
            return;
        }
    }
    struct Symbol {
        int32_t id;
        int32_t prev;
        int32_t next;
        bool alive;
    };
    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    const auto add = [&](int32_t id) {
        const auto index = static_cast<int32_t>(symbols.size());
        if (index > 0) {
            symbols.back().next = index;
        }
        symbols.push_back({id, index - 1, -1, true});
    };
    int32_t pending_unk = -1;  // an unknown token not added yet
    size_t pos = 0;
    std::string piece;
    while (pos < word.size()) {
        const size_t size = code_point_at(word, pos).size;
        piece.assign(word.substr(pos, size));
        pos += size;
        if (const auto it = ids_.find(piece); it != ids_.end()) {
            if (pending_unk >= 0) {
                add(pending_unk);
                pending_unk = -1;
            }
            add(it->second);
            continue;
        }
        if (byte_fallback_ && std::all_of(piece.begin(), piece.end(), [&](char c) {
                return byte_ids_[static_cast<unsigned char>(c)] >= 0;
            })) {
            // As in the reference, a pending unknown token is not flushed before byte pieces.
            for (const char c : piece) {
                add(byte_ids_[static_cast<unsigned char>(c)]);
            }
            continue;
        }
        if (unk_token_) {
            if (!unk_id_) {
                fail("tokenizer: the unknown token \"", *unk_token_, "\" is not in the vocabulary");
            }
            if (pending_unk >= 0 && !fuse_unk_) {
                add(pending_unk);
            }
            pending_unk = *unk_id_;
        }
    }
    if (pending_unk >= 0) {
        add(pending_unk);
    }

    struct Merge {
        int32_t rank;
        int32_t pos;
        int32_t id;
        bool operator>(const Merge& other) const {
            return rank != other.rank ? rank > other.rank : pos > other.pos;
        }
    };
    std::priority_queue<Merge, std::vector<Merge>, std::greater<>> queue;
    const auto consider = [&](int32_t left) {
        const int32_t right = symbols[static_cast<size_t>(left)].next;
        if (right < 0) {
            return;
        }
        const auto it = merges_.find(
            pair_key(symbols[static_cast<size_t>(left)].id, symbols[static_cast<size_t>(right)].id));
        if (it != merges_.end()) {
            queue.push({it->second.rank, left, it->second.id});
        }
    };
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) {
        consider(i);
    }
    while (!queue.empty()) {
        const Merge top = queue.top();
        queue.pop();
        Symbol& left = symbols[static_cast<size_t>(top.pos)];
        if (!left.alive || left.next < 0) {
            continue;
        }
        Symbol& right = symbols[static_cast<size_t>(left.next)];
        const auto it = merges_.find(pair_key(left.id, right.id));
        if (it == merges_.end() || it->second.id != top.id) {
            continue;
        }
        left.id = top.id;
        right.alive = false;
        left.next = right.next;
        if (left.next >= 0) {
            symbols[static_cast<size_t>(left.next)].prev = top.pos;
        }
        if (left.prev >= 0) {
            consider(left.prev);
        }
        consider(top.pos);
    }
    for (const Symbol& s : symbols) {
        if (s.alive) {
            ids.push_back(s.id);
        }
    }
}

}  // namespace folio
