// The parts of a SentencePiece model file (tokenizer.model, a serialized ModelProto) that transformers reads
// when it converts one: the pieces with their scores and types, the trainer's model type, byte fallback and
// special pieces, and the normalizer's precompiled charsmap. Parsed with bounds checks; fields it does not
// need are skipped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

struct SentencePiece {
    enum class Type { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };
    std::string piece;
    float score = 0.0f;
    Type type = Type::Normal;
};

struct SentencePieceModel {
    std::vector<SentencePiece> pieces;
    int model_type = 1;  // 1 unigram, 2 BPE, 3 word, 4 char
    bool byte_fallback = false;
    int32_t unk_id = 0;
    int32_t bos_id = 1;
    int32_t eos_id = 2;
    int32_t pad_id = -1;
    std::string unk_piece = "<unk>";
    std::string bos_piece = "<s>";
    std::string eos_piece = "</s>";
    std::string pad_piece = "<pad>";
    std::string normalizer_name;
    std::string precompiled_charsmap;
};

// Throws naming source when the bytes are not a well-formed ModelProto with at least one piece.
SentencePieceModel parse_sentencepiece_model(std::string_view bytes, std::string_view source);
SentencePieceModel read_sentencepiece_model(const std::filesystem::path& path);

}  // namespace folio
