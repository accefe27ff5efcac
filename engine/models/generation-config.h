// A model folder's generation_config.json: the sampling its authors chose (temperature, top_p, top_k,
// repetition_penalty, do_sample), the further ids that end an answer and the default length of one. These
// are the defaults of every request to the model; a request's own values win. The file is optional: a folder
// without one has no defaults, and Folio's own apply (greedy decoding, the tokenizer's end of text).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/sampling.h"

namespace folio {

struct GenerationDefaults {
    std::optional<float> temperature;
    std::optional<float> top_p;
    std::optional<int> top_k;  // 0: off
    std::optional<float> repetition_penalty;
    // false: greedy decoding unless a request asks for sampling; the sampling values above are then not
    // applied (transformers ignores them too).
    std::optional<bool> do_sample;
    std::vector<int32_t> eos_token_ids;     // ids that end an answer beside the model's end of text
    std::optional<int64_t> max_new_tokens;  // a request's max_tokens where it gives none
    std::string origin;                     // the file read; empty where none was

    bool empty() const;
};

// Where a model's generation defaults come from (vLLM's --generation-config): the model folder's
// generation_config.json (auto), none (vllm: Folio's own defaults), or another folder's file.
struct GenerationConfigSource {
    enum class Kind { Model, None, Folder };
    Kind kind = Kind::Model;
    std::filesystem::path folder;  // Folder: the folder holding generation_config.json

    // "auto", "vllm" or a folder that holds generation_config.json; throws folio::Error naming the option
    // for anything else.
    static GenerationConfigSource parse(std::string_view value, std::string_view option);
};

// The defaults a generation_config.json's text holds. Unknown keys are ignored; a key of the wrong type or
// out of range throws folio::Error naming `origin` and the key.
GenerationDefaults parse_generation_config(std::string_view text, const std::string& origin);

// The defaults of a model folder as `source` says: its generation_config.json, another folder's, or none.
// A folder without the file has none, except one the source names, which must have it. Errors name the file.
GenerationDefaults load_generation_defaults(const std::filesystem::path& model_dir,
                                            const GenerationConfigSource& source = {});

// Which sampling values a front end leaves to the model's defaults (those the user or client did not give).
struct SamplingDefaultsUse {
    bool temperature = false;
    bool top_p = false;
    bool top_k = false;
    bool repetition_penalty = false;
    bool max_tokens = false;

    static SamplingDefaultsUse all() { return {true, true, true, true, true}; }
};

// `sampling` with the defaults in place of the values `use` leaves to them. do_sample false sets temperature
// 0 (greedy) where the temperature is left to the defaults, and applies none of temperature, top_p and
// top_k; repetition_penalty applies either way, as in transformers.
SamplingParams apply_generation_defaults(const GenerationDefaults& defaults, SamplingParams sampling,
                                         const SamplingDefaultsUse& use);

// Throws folio::Error naming the file where an eos_token_id is not a token of a vocabulary of n_vocab.
void check_generation_token_ids(const GenerationDefaults& defaults, int64_t n_vocab);

// Appends to a model's end-of-text ids those of `extra` it lacks (a family adds generation_config.json's).
template <typename Id>
void add_stop_ids(std::vector<Id>& ids, const std::vector<int32_t>& extra) {
    for (const int32_t id : extra) {
        if (std::find(ids.begin(), ids.end(), static_cast<Id>(id)) == ids.end()) {
            ids.push_back(static_cast<Id>(id));
        }
    }
}

// The defaults in words for logs and `folio-cli model`: "temperature 0.2, top_p 0.8, eos 601", "none".
std::string describe_generation_defaults(const GenerationDefaults& defaults);

}  // namespace folio
