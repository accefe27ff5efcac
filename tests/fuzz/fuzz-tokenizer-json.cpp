// Fuzzes the tokenizer.json reader: any input either builds a tokenizer that encodes and decodes text to
// valid UTF-8 and ids it knows, and streams the text decode() gives (but for the one case tokenizer.h
// states), or throws folio::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/error.h"
#include "engine/tokenizer/token-decoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode-text.h"

namespace {

// Whether a run of byte tokens stops being UTF-8 after whole characters: the streamed text keeps those
// characters where decode() gives U+FFFD for their bytes (IncrementalDetokenizer). A tokenizer whose ids and
// pieces disagree (two pieces on one id) can encode valid text to such a run.
bool has_run_broken_after_characters(const folio::Tokenizer& tokenizer, std::span<const int32_t> ids) {
    std::string run;
    const auto broken = [&] {
        const folio::Utf8Prefix prefix = folio::utf8_prefix(run);
        return prefix.n_complete > 0 && prefix.n_complete < run.size();
    };
    for (const int32_t id : ids) {
        const std::optional<std::string> token = tokenizer.token_text(id);
        if (!token) {
            continue;
        }
        if (const int byte = folio::byte_fallback_value(*token); byte >= 0) {
            run.push_back(static_cast<char>(byte));
            continue;
        }
        if (broken()) {
            return true;
        }
        run.clear();
    }
    return broken();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto tokenizer = folio::Tokenizer::from_tokenizer_json(text, "fuzz/tokenizer.json");
        for (const std::string_view sample :
             {std::string_view("Hello, world!\n\tx  y"),
              std::string_view("\xE6\x96\x87\xE6\xA1\xA3 \xF0\x9F\x99\x82"),
              std::string_view("<s>a<|IMAGE_START|>b</s>"), std::string_view("")}) {
            const std::vector<int32_t> ids = tokenizer->encode(sample, true);
            for (const int32_t id : ids) {
                if (id < 0 || id >= tokenizer->n_vocab()) {
                    std::abort();
                }
            }
            if (!folio::is_valid_utf8(tokenizer->decode(ids)) ||
                !folio::is_valid_utf8(tokenizer->decode(ids, true))) {
                std::abort();
            }
            folio::IncrementalDetokenizer detokenizer(*tokenizer, false);
            std::string streamed;
            for (const int32_t id : ids) {
                streamed += detokenizer.push(id);
            }
            streamed += detokenizer.flush();
            if (!folio::is_valid_utf8(streamed) ||
                (streamed != tokenizer->decode(ids) && !has_run_broken_after_characters(*tokenizer, ids))) {
                std::abort();
            }
        }
    } catch (const folio::Error&) {
    }
    return 0;
}
