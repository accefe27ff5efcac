// Fuzzes the tokenizer.json reader: any input either builds a tokenizer that encodes and decodes text to
// valid UTF-8 and ids it knows, or throws folio::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "engine/common/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode-text.h"

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
            if (streamed != tokenizer->decode(ids)) {
                std::abort();
            }
        }
    } catch (const folio::Error&) {
    }
    return 0;
}
