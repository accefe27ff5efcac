#include "engine/tokenizer/sentencepiece-model.h"

#include <bit>
#include <cstring>
#include <optional>

#include "engine/common/error.h"
#include "engine/common/mapped-file.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio {

namespace {

// One field of a protobuf message: its number, wire type and value (a varint or the bytes of a
// length-delimited field; fixed-width values come as their little-endian bits).
struct Field {
    uint32_t number = 0;
    uint32_t wire_type = 0;
    uint64_t varint = 0;
    std::string_view bytes;
};

class ProtoReader {
public:
    ProtoReader(std::string_view data, std::string_view source, std::string_view message)
        : data_(data), source_(source), message_(message) {}

    bool next(Field& field) {
        if (pos_ >= data_.size()) {
            return false;
        }
        const size_t start = pos_;
        const uint64_t key = varint(start);
        field.number = static_cast<uint32_t>(key >> 3);
        field.wire_type = static_cast<uint32_t>(key & 7);
        if (field.number == 0 || (key >> 3) > 0x1FFFFFFF) {
            malformed(start);
        }
        switch (field.wire_type) {
            case 0:
                field.varint = varint(start);
                break;
            case 1:
                field.varint = fixed(start, 8);
                break;
            case 2: {
                const uint64_t length = varint(start);
                if (length > data_.size() - pos_) {
                    malformed(start);
                }
                field.bytes = data_.substr(pos_, static_cast<size_t>(length));
                pos_ += static_cast<size_t>(length);
                break;
            }
            case 5:
                field.varint = fixed(start, 4);
                break;
            default:
                malformed(start);
        }
        return true;
    }

    [[noreturn]] void malformed(size_t at) const {
        fail("tokenizer: ", source_, " is not a SentencePiece model: malformed ", message_, " field at byte ",
             at);
    }

private:
    uint64_t varint(size_t start) {
        uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= data_.size()) {
                malformed(start);
            }
            const auto byte = static_cast<unsigned char>(data_[pos_++]);
            value |= static_cast<uint64_t>(byte & 0x7F) << shift;
            if ((byte & 0x80) == 0) {
                return value;
            }
        }
        malformed(start);
    }
    uint64_t fixed(size_t start, size_t size) {
        if (data_.size() - pos_ < size) {
            malformed(start);
        }
        uint64_t value = 0;
        for (size_t i = size; i-- > 0;) {
            value = (value << 8) | static_cast<unsigned char>(data_[pos_ + i]);
        }
        pos_ += size;
        return value;
    }

    std::string_view data_;
    std::string_view source_;
    std::string_view message_;
    size_t pos_ = 0;
};

int32_t as_int32(const Field& field) {
    return static_cast<int32_t>(static_cast<uint32_t>(field.varint));
}

std::string text_field(const Field& field, std::string_view source, std::string_view name) {
    if (field.wire_type != 2) {
        fail("tokenizer: ", source, ": the SentencePiece ", name, " is not a string");
    }
    if (!is_valid_utf8(field.bytes)) {
        fail("tokenizer: ", source, ": the SentencePiece ", name, " is not valid UTF-8");
    }
    return std::string(field.bytes);
}

SentencePiece parse_piece(std::string_view bytes, std::string_view source, size_t index) {
    SentencePiece piece;
    ProtoReader reader(bytes, source, "piece");
    Field field;
    bool has_piece = false;
    while (reader.next(field)) {
        if (field.number == 1) {
            piece.piece = text_field(field, source, "piece " + std::to_string(index));
            has_piece = true;
        } else if (field.number == 2 && field.wire_type == 5) {
            piece.score = std::bit_cast<float>(static_cast<uint32_t>(field.varint));
        } else if (field.number == 3 && field.wire_type == 0) {
            const uint64_t type = field.varint;
            if (type < 1 || type > 6) {
                fail("tokenizer: ", source, ": piece ", index, " has type ", type, ", not one of 1..6");
            }
            piece.type = static_cast<SentencePiece::Type>(type);
        }
    }
    if (!has_piece) {
        fail("tokenizer: ", source, ": piece ", index, " has no text");
    }
    return piece;
}

void parse_trainer_spec(std::string_view bytes, std::string_view source, SentencePieceModel& model) {
    ProtoReader reader(bytes, source, "trainer_spec");
    Field field;
    while (reader.next(field)) {
        switch (field.number) {
            case 3:
                model.model_type = as_int32(field);
                break;
            case 35:
                model.byte_fallback = field.varint != 0;
                break;
            case 40:
                model.unk_id = as_int32(field);
                break;
            case 41:
                model.bos_id = as_int32(field);
                break;
            case 42:
                model.eos_id = as_int32(field);
                break;
            case 43:
                model.pad_id = as_int32(field);
                break;
            case 45:
                model.unk_piece = text_field(field, source, "unk_piece");
                break;
            case 46:
                model.bos_piece = text_field(field, source, "bos_piece");
                break;
            case 47:
                model.eos_piece = text_field(field, source, "eos_piece");
                break;
            case 48:
                model.pad_piece = text_field(field, source, "pad_piece");
                break;
            default:
                break;
        }
    }
}

void parse_normalizer_spec(std::string_view bytes, std::string_view source, SentencePieceModel& model) {
    ProtoReader reader(bytes, source, "normalizer_spec");
    Field field;
    while (reader.next(field)) {
        if (field.number == 1) {
            model.normalizer_name = text_field(field, source, "normalizer name");
        } else if (field.number == 2 && field.wire_type == 2) {
            model.precompiled_charsmap.assign(field.bytes);
        }
    }
}

}  // namespace

SentencePieceModel parse_sentencepiece_model(std::string_view bytes, std::string_view source) {
    SentencePieceModel model;
    ProtoReader reader(bytes, source, "model");
    Field field;
    while (reader.next(field)) {
        if (field.wire_type != 2) {
            continue;
        }
        if (field.number == 1) {
            model.pieces.push_back(parse_piece(field.bytes, source, model.pieces.size()));
        } else if (field.number == 2) {
            parse_trainer_spec(field.bytes, source, model);
        } else if (field.number == 3) {
            parse_normalizer_spec(field.bytes, source, model);
        }
    }
    if (model.pieces.empty()) {
        fail("tokenizer: ", source, " is not a SentencePiece model: it has no pieces");
    }
    return model;
}

SentencePieceModel read_sentencepiece_model(const std::filesystem::path& path) {
    return parse_sentencepiece_model(read_file_text(path), path.string());
}

}  // namespace folio
