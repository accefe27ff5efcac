// A tokenizer as the tokenizers library runs it, in the SentencePiece-style and byte-level families: added
// tokens split off, the pieces between them normalized, pre-tokenized by Metaspace or by regular-expression
// splits and ByteLevel, encoded by BPE; ids decoded through the decoder's steps. The pipeline is read from a
// model folder's files by read_tokenizer_pipeline.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer/added-vocabulary.h"
#include "engine/tokenizer/bpe-model.h"
#include "engine/tokenizer/byte-level.h"
#include "engine/tokenizer/normalizer.h"
#include "engine/tokenizer/token-decoder.h"

namespace folio {

struct MetaspaceSplit {
    std::string replacement = "\xE2\x96\x81";  // "▁"
    PrependScheme prepend_scheme = PrependScheme::Always;
    bool split = true;
};

// A Split pre-tokenizer (invert false).
struct SplitRule {
    std::shared_ptr<const RegexSplitter> pattern;
    SplitBehavior behavior = SplitBehavior::Isolated;
};

// Split pre-tokenizers in order, then ByteLevel: each piece gets a leading space where add_prefix_space is
// set and it has none, is split by GPT-2's expression where use_regex is set, and its bytes become code
// points.
struct ByteLevelSplit {
    std::vector<SplitRule> splits;
    bool add_prefix_space = false;
    bool use_regex = true;
};

struct TokenizerPipeline {
    Normalizer normalizer;
    std::optional<MetaspaceSplit> pre_tokenizer;
    std::optional<ByteLevelSplit> byte_level;  // in place of Metaspace
    std::unique_ptr<BpeModel> model;
    TokenDecoder decoder;
    std::vector<AddedToken> added_tokens;
    // The post-processor's template for one sequence: ids before and after it.
    std::vector<int32_t> prefix_ids;
    std::vector<int32_t> suffix_ids;
    // Named tokens of the configuration (bos_token, eos_token, pad_token, unk_token), as their text.
    std::optional<std::string> bos_token;
    std::optional<std::string> eos_token;
    std::optional<std::string> pad_token;
    // Ids the SentencePiece model names, where no configuration names the token.
    int32_t spm_bos_id = -1;
    int32_t spm_eos_id = -1;
    int32_t spm_pad_id = -1;
    std::string description;  // the class transformers would use and the files it reads
};

// Reads the tokenizer of a model folder as transformers 5.17's AutoTokenizer would build it: tokenizer.json
// as it is (TokenizersBackend), tokenizer.model converted with its own normalizer (TokenizersBackend, which
// a model folder of PaddleOCR-VL or ERNIE-4.5 always gets), or LlamaTokenizer's rules over the vocabulary of
// either file. Throws naming the file and what is wrong.
TokenizerPipeline read_tokenizer_pipeline(const std::filesystem::path& model_dir);

// tokenizer.json (its text given): the pipeline it describes, with the BPE model's configuration apart (the
// pipeline's model is left for the caller to build), since LlamaTokenizer takes only the vocabulary.
struct TokenizerJson {
    TokenizerPipeline pipeline;
    BpeConfig bpe;
    bool has_merges = false;
    bool has_post_processor = false;
};
TokenizerJson parse_tokenizer_json(std::string_view text, std::string_view source);

}  // namespace folio
