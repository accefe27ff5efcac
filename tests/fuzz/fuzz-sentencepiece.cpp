// Fuzzes the SentencePiece model reader and what is built from it: the precompiled charsmap's normalizer and
// a BPE model over the pieces with merges derived from them. Any input either works or throws folio::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "engine/common/error.h"
#include "engine/tokenizer/bpe-model.h"
#include "engine/tokenizer/precompiled-charsmap.h"
#include "engine/tokenizer/sentencepiece-model.h"
#include "engine/tokenizer/unicode-text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const std::string_view samples[] = {"Hello, world!\n\tx  y", "\xEF\xBC\xA1\xEF\xBC\x91 \xE2\x91\xA0",
                                        "e\xCC\x81 \xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB"};
    // The bytes as a charsmap of their own, then as a model.
    try {
        const folio::PrecompiledCharsmap charsmap(bytes, "fuzz/charsmap");
        for (const std::string_view sample : samples) {
            if (!folio::is_valid_utf8(charsmap.normalize(sample))) {
                std::abort();
            }
        }
    } catch (const folio::Error&) {
    }
    try {
        const folio::SentencePieceModel model =
            folio::parse_sentencepiece_model(bytes, "fuzz/tokenizer.model");
        if (!model.precompiled_charsmap.empty()) {
            try {
                const folio::PrecompiledCharsmap charsmap(model.precompiled_charsmap, "fuzz/tokenizer.model");
                for (const std::string_view sample : samples) {
                    if (!folio::is_valid_utf8(charsmap.normalize(sample))) {
                        std::abort();
                    }
                }
            } catch (const folio::Error&) {
            }
        }
        folio::BpeConfig config;
        for (size_t id = 0; id < model.pieces.size(); ++id) {
            config.vocab.emplace_back(model.pieces[id].piece, static_cast<int32_t>(id));
        }
        config.merges = folio::merges_from_vocab(config.vocab);
        config.byte_fallback = model.byte_fallback;
        config.unk_token = model.unk_piece;
        config.fuse_unk = true;
        const folio::BpeModel bpe(std::move(config), "fuzz/tokenizer.model");
        for (const std::string_view sample : samples) {
            std::vector<int32_t> ids;
            bpe.encode(sample, ids);
            for (const int32_t id : ids) {
                if (bpe.id_to_token(id) == nullptr) {
                    std::abort();
                }
            }
        }
    } catch (const folio::Error&) {
    }
    return 0;
}
