// Checks of streamed text for the tokenizer tests: well-formed UTF-8, the byte runs of ids, and the text an
// IncrementalDetokenizer must give for ids pushed one by one.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace folio::tokenizer_test {

// Well-formed UTF-8 (RFC 3629): no overlong forms, surrogates, code points above U+10FFFF or cut sequences.
inline bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            ++i;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
        } else if (c == 0xE0) {
            n = 2;
            lo = 0xA0;
        } else if (c == 0xED) {
            n = 2;
            hi = 0x9F;
        } else if (c >= 0xE1 && c <= 0xEF) {
            n = 2;
        } else if (c == 0xF0) {
            n = 3;
            lo = 0x90;
        } else if (c == 0xF4) {
            n = 3;
            hi = 0x8F;
        } else if (c >= 0xF1 && c <= 0xF3) {
            n = 3;
        } else {
            return false;
        }
        if (i + n >= s.size()) {
            return false;
        }
        for (size_t k = 1; k <= n; ++k) {
            const auto b = static_cast<unsigned char>(s[i + k]);
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
                return false;
            }
        }
        i += n + 1;
    }
    return true;
}

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// The byte of a byte fallback piece "<0xXX>", or -1.
inline int byte_of(const Tokenizer& tokenizer, int32_t id) {
    const std::optional<std::string> token = tokenizer.token_text(id);
    if (!token || token->size() != 6 || !token->starts_with("<0x") || token->back() != '>') {
        return -1;
    }
    return std::stoi(token->substr(3, 2), nullptr, 16);
}

// The longest start of bytes that is well-formed UTF-8.
inline size_t n_valid_utf8(std::string_view bytes) {
    size_t n = bytes.size();
    while (n > 0 && !valid_utf8(bytes.substr(0, n))) {
        --n;
    }
    return n;
}

// The runs of byte pieces that reach the decoder (skipped special tokens and ids without a token do not end
// a run): the index after each run's last id, and its bytes.
inline std::vector<std::pair<size_t, std::string>> byte_runs(const Tokenizer& tokenizer,
                                                             std::span<const int32_t> ids,
                                                             bool skip_special) {
    std::vector<std::pair<size_t, std::string>> runs;
    std::string bytes;
    size_t end = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (!tokenizer.token_text(ids[i]) || (skip_special && tokenizer.is_special(ids[i]))) {
            continue;
        }
        const int byte = byte_of(tokenizer, ids[i]);
        if (byte >= 0) {
            bytes.push_back(static_cast<char>(byte));
            end = i + 1;
        } else if (!bytes.empty()) {
            runs.emplace_back(end, std::move(bytes));
            bytes.clear();
        }
    }
    if (!bytes.empty()) {
        runs.emplace_back(end, std::move(bytes));
    }
    return runs;
}

// What streaming ids gives: decode()'s text, except that a run of byte pieces that is not UTF-8 as a whole
// keeps the whole characters before the byte that shows it (already streamed when that byte comes), where
// decode() has U+FFFD for each of the run's bytes.
inline std::string expected_stream(const Tokenizer& tokenizer, std::span<const int32_t> ids,
                                   bool skip_special) {
    std::string text = tokenizer.decode(ids, skip_special);
    const auto runs = byte_runs(tokenizer, ids, skip_special);
    for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
        const std::string& bytes = run->second;
        const size_t n_kept = n_valid_utf8(bytes);
        if (n_kept == bytes.size() || n_kept == 0) {
            continue;
        }
        // The run's U+FFFDs end where the text of the ids up to its end ends.
        const size_t end = tokenizer.decode(ids.first(run->first), skip_special).size();
        const size_t start = end - bytes.size() * kReplacement.size();
        std::string replacements;
        for (size_t i = 0; i < bytes.size(); ++i) {
            replacements += kReplacement;
        }
        EXPECT_EQ(text.substr(start, replacements.size()), replacements);
        text.replace(start, n_kept * kReplacement.size(), bytes.substr(0, n_kept));
    }
    return text;
}

// Pushes ids one by one: every chunk must be valid UTF-8, all of them must make the streamed text (decode()'s
// but for runs of byte pieces that turn out not to be UTF-8), and a byte piece that completes a character
// must bring the text up to date on its own step.
inline void expect_incremental_matches(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                                       bool skip_special) {
    IncrementalDetokenizer detokenizer(tokenizer, skip_special);
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) {
        const std::string chunk = detokenizer.push(ids[i]);
        EXPECT_TRUE(valid_utf8(chunk)) << "after id " << ids[i];
        text += chunk;
        const std::span<const int32_t> so_far(ids.data(), i + 1);
        const auto runs = byte_runs(tokenizer, so_far, skip_special);
        if (byte_of(tokenizer, ids[i]) >= 0 && !runs.empty() && runs.back().first == i + 1 &&
            valid_utf8(runs.back().second)) {
            EXPECT_EQ(text, expected_stream(tokenizer, so_far, skip_special))
                << "the character completed by id " << i << " was not given";
        }
    }
    const std::string rest = detokenizer.flush();
    EXPECT_TRUE(valid_utf8(rest));
    text += rest;
    EXPECT_EQ(text, expected_stream(tokenizer, ids, skip_special));
    // Where every run is UTF-8, or shows it is not before a whole character, that is decode()'s text.
    bool kept = false;
    for (const auto& [end, bytes] : byte_runs(tokenizer, ids, skip_special)) {
        const size_t n_kept = n_valid_utf8(bytes);
        kept = kept || (n_kept > 0 && n_kept < bytes.size());
    }
    if (!kept) {
        EXPECT_EQ(text, tokenizer.decode(ids, skip_special));
    }
}

// expect_incremental_matches on 200 random sequences of 1 to 10 ids below n_ids, each with every value of
// skip_special.
inline void expect_random_streams_match(const Tokenizer& tokenizer, std::mt19937& rng, int32_t n_ids,
                                        std::initializer_list<bool> skip_special) {
    for (int n = 0; n < 200; ++n) {
        std::vector<int32_t> ids(1 + rng() % 10);
        for (int32_t& id : ids) {
            id = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_ids));
        }
        for (const bool skip : skip_special) {
            SCOPED_TRACE(::testing::PrintToString(ids));
            expect_incremental_matches(tokenizer, ids, skip);
        }
    }
}

}  // namespace folio::tokenizer_test
