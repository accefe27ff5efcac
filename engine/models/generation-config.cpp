#include "engine/models/generation-config.h"

#include <cmath>
#include <sstream>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"

namespace folio {

namespace {

using json = nlohmann::json;

constexpr const char* kFileName = "generation_config.json";

std::optional<double> read_number(const ObjectReader& reader, std::string_view key) {
    const json* value = reader.find(key);
    if (value == nullptr) {
        return std::nullopt;
    }
    return reader.as_number(key, *value);
}

void out_of_range(const ObjectReader& reader, std::string_view key, std::string_view expected, double value) {
    fail(reader.origin(), ": ", reader.key_name(key), " must be ", expected, ", got ", value);
}

}  // namespace

bool GenerationDefaults::empty() const {
    return !temperature && !top_p && !top_k && !repetition_penalty && !do_sample && eos_token_ids.empty() &&
           !max_new_tokens;
}

GenerationConfigSource GenerationConfigSource::parse(std::string_view value, std::string_view option) {
    GenerationConfigSource source;
    if (value == "auto") {
        return source;
    }
    if (value == "vllm") {
        source.kind = Kind::None;
        return source;
    }
    if (value.empty()) {
        fail(option, " expects auto, vllm or a folder holding ", kFileName, ", got nothing");
    }
    source.kind = Kind::Folder;
    source.folder = std::filesystem::path(value);
    std::error_code error;
    if (!std::filesystem::is_regular_file(source.folder / kFileName, error)) {
        fail(option, " ", value, ": no ", kFileName,
             " in that folder (expected auto, vllm or a folder holding ", kFileName, ")");
    }
    return source;
}

GenerationDefaults parse_generation_config(std::string_view text, const std::string& origin) {
    const json root = parse_json_object(text, origin);
    return read_json_values(origin, [&] {
        const ObjectReader reader(root, "", origin);
        GenerationDefaults d;
        d.origin = origin;
        // Each value is checked as the float it becomes, which a number too large or too small changes.
        if (const auto t = read_number(reader, "temperature")) {
            d.temperature = static_cast<float>(*t);
            if (!(*d.temperature >= 0.0f && std::isfinite(*d.temperature))) {
                out_of_range(reader, "temperature", "a finite number >= 0", *t);
            }
        }
        if (const auto p = read_number(reader, "top_p")) {
            d.top_p = static_cast<float>(*p);
            if (!(*d.top_p > 0.0f && *d.top_p <= 1.0f)) {
                out_of_range(reader, "top_p", "in (0, 1]", *p);
            }
        }
        if (const json* k = reader.find("top_k")) {
            const int top_k = reader.as_integer("top_k", *k);
            if (top_k < -1) {
                out_of_range(reader, "top_k", "-1 or 0 (off) or a positive count", top_k);
            }
            d.top_k = top_k <= 0 ? 0 : top_k;
        }
        if (const auto r = read_number(reader, "repetition_penalty")) {
            d.repetition_penalty = static_cast<float>(*r);
            if (!(*d.repetition_penalty > 0.0f && std::isfinite(*d.repetition_penalty))) {
                out_of_range(reader, "repetition_penalty", "a finite number above 0", *r);
            }
        }
        if (reader.find("do_sample") != nullptr) {
            d.do_sample = reader.boolean("do_sample", false);
        }
        if (const json* eos = reader.find("eos_token_id")) {
            const auto add = [&](const json& id) {
                const int value = reader.as_integer("eos_token_id", id);
                if (value < 0) {
                    out_of_range(reader, "eos_token_id", "a token id >= 0", value);
                }
                d.eos_token_ids.push_back(value);
            };
            if (eos->is_array()) {
                for (const json& id : *eos) {
                    add(id);
                }
            } else {
                add(*eos);
            }
        }
        if (const json* n = reader.find("max_new_tokens")) {
            const int64_t value = reader.as_integer64("max_new_tokens", *n);
            if (value < 1) {
                out_of_range(reader, "max_new_tokens", "at least 1", static_cast<double>(value));
            }
            d.max_new_tokens = value;
        }
        return d;
    });
}

GenerationDefaults load_generation_defaults(const std::filesystem::path& model_dir,
                                            const GenerationConfigSource& source) {
    std::filesystem::path dir;
    switch (source.kind) {
        case GenerationConfigSource::Kind::None:
            return {};
        case GenerationConfigSource::Kind::Model:
            if (model_dir.empty()) {
                return {};
            }
            dir = model_dir;
            break;
        case GenerationConfigSource::Kind::Folder:
            dir = source.folder;
            break;
    }
    const std::filesystem::path file = dir / kFileName;
    std::error_code error;
    if (source.kind == GenerationConfigSource::Kind::Model && !std::filesystem::exists(file, error)) {
        return {};
    }
    return parse_generation_config(read_file_text(file), file.string());
}

void check_generation_token_ids(const GenerationDefaults& defaults, int64_t n_vocab) {
    for (const int32_t id : defaults.eos_token_ids) {
        if (id >= n_vocab) {
            fail(defaults.origin, ": \"eos_token_id\" ", id, " is not a token of the model's vocabulary of ",
                 n_vocab);
        }
    }
}

SamplingParams apply_generation_defaults(const GenerationDefaults& defaults, SamplingParams sampling,
                                         const SamplingDefaultsUse& use) {
    if (defaults.do_sample.value_or(true)) {
        if (use.temperature && defaults.temperature) {
            sampling.temperature = *defaults.temperature;
        }
        if (use.top_p && defaults.top_p) {
            sampling.top_p = *defaults.top_p;
        }
        if (use.top_k && defaults.top_k) {
            sampling.top_k = *defaults.top_k;
        }
    } else if (use.temperature) {
        sampling.temperature = 0.0f;
    }
    if (use.repetition_penalty && defaults.repetition_penalty) {
        sampling.repetition_penalty = *defaults.repetition_penalty;
    }
    return sampling;
}

std::string describe_generation_defaults(const GenerationDefaults& d) {
    if (d.empty()) {
        return "none";
    }
    std::ostringstream out;
    const char* sep = "";
    const auto item = [&](const char* name, const auto& value) {
        out << sep << name << " " << value;
        sep = ", ";
    };
    if (d.do_sample) {
        item("do_sample", *d.do_sample ? "true" : "false");
    }
    if (d.temperature) {
        item("temperature", *d.temperature);
    }
    if (d.top_p) {
        item("top_p", *d.top_p);
    }
    if (d.top_k) {
        item("top_k", *d.top_k);
    }
    if (d.repetition_penalty) {
        item("repetition_penalty", *d.repetition_penalty);
    }
    if (!d.eos_token_ids.empty()) {
        std::ostringstream ids;
        for (size_t i = 0; i < d.eos_token_ids.size(); ++i) {
            ids << (i ? "," : "") << d.eos_token_ids[i];
        }
        item("eos", ids.str());
    }
    if (d.max_new_tokens) {
        item("max_new_tokens", *d.max_new_tokens);
    }
    return out.str();
}

}  // namespace folio
