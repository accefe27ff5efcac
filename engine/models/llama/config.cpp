#include "engine/models/llama/config.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"

namespace folio {

namespace {

using nlohmann::json;

LlamaRope read_rope(const ObjectReader& top) {
    LlamaRope rope;
    rope.theta = top.number("rope_theta", rope.theta);
    // transformers 5 writes rope_parameters (rope_theta inside); older files rope_scaling (null: default).
    const std::optional<ObjectReader> params =
        top.find("rope_parameters") != nullptr ? top.object("rope_parameters") : top.object("rope_scaling");
    if (params) {
        std::string type = params->string("rope_type", "");
        if (type.empty()) {
            type = params->string("type", "default");
        }
        rope.theta = params->number("rope_theta", rope.theta);
        if (type == "default") {
            rope.type = LlamaRopeType::Default;
        } else if (type == "linear") {
            rope.type = LlamaRopeType::Linear;
            rope.factor = params->number("factor", rope.factor);
        } else if (type == "llama3") {
            rope.type = LlamaRopeType::Llama3;
            rope.factor = params->number("factor", rope.factor);
            rope.low_freq_factor = params->number("low_freq_factor", rope.low_freq_factor);
            rope.high_freq_factor = params->number("high_freq_factor", rope.high_freq_factor);
            rope.original_max_position_embeddings =
                params->integer64("original_max_position_embeddings", rope.original_max_position_embeddings);
            require_positive(*params, "low_freq_factor", rope.low_freq_factor);
            require_positive(*params, "original_max_position_embeddings",
                             static_cast<double>(rope.original_max_position_embeddings));
            if (!(rope.high_freq_factor > rope.low_freq_factor)) {
                fail(top.origin(), ": ", params->key_name("high_freq_factor"), " ", rope.high_freq_factor,
                     " must be above ", params->key_name("low_freq_factor"), " ", rope.low_freq_factor);
            }
        } else {
            fail(top.origin(), ": the rope type \"", type,
                 "\" is not supported (Folio reads default, linear and llama3)");
        }
        require_positive(*params, "factor", rope.factor);
    }
    require_positive(top, "rope_theta", rope.theta);
    return rope;
}

LlamaConfig read_llama_config(const json& root, const std::string& origin) {
    const ObjectReader top(root, "", origin);
    const std::string model_type = top.string("model_type", "");
    if (model_type != "llama") {
        fail(origin, ": \"model_type\" \"", model_type, "\" is not \"llama\"");
    }
    LlamaConfig c;
    c.vocab_size = top.integer64("vocab_size", c.vocab_size);
    c.hidden_size = top.integer64("hidden_size", c.hidden_size);
    c.intermediate_size = top.integer64("intermediate_size", c.intermediate_size);
    c.num_hidden_layers = top.integer("num_hidden_layers", c.num_hidden_layers);
    c.num_attention_heads = top.integer("num_attention_heads", c.num_attention_heads);
    c.num_key_value_heads = top.is_null("num_key_value_heads")
                                ? c.num_attention_heads
                                : top.integer("num_key_value_heads", c.num_key_value_heads);
    c.max_position_embeddings = top.integer64("max_position_embeddings", c.max_position_embeddings);
    c.rms_norm_eps = static_cast<float>(top.number("rms_norm_eps", c.rms_norm_eps));
    c.tie_word_embeddings = top.boolean("tie_word_embeddings", c.tie_word_embeddings);
    c.attention_bias = top.boolean("attention_bias", c.attention_bias);
    c.mlp_bias = top.boolean("mlp_bias", c.mlp_bias);
    c.hidden_act = top.string("hidden_act", c.hidden_act);
    for (const auto& [key, value] :
         {std::pair{"vocab_size", c.vocab_size}, std::pair{"hidden_size", c.hidden_size},
          std::pair{"intermediate_size", c.intermediate_size},
          std::pair{"max_position_embeddings", c.max_position_embeddings}}) {
        require_positive(top, key, static_cast<double>(value));
    }
    if (c.vocab_size > (int64_t{1} << 24) || c.hidden_size > (int64_t{1} << 20) ||
        c.intermediate_size > (int64_t{1} << 22)) {
        fail(origin, ": sizes past what Folio reads: vocab_size ", c.vocab_size, ", hidden_size ",
             c.hidden_size, ", intermediate_size ", c.intermediate_size);
    }
    require_positive(top, {{"num_hidden_layers", c.num_hidden_layers},
                           {"num_attention_heads", c.num_attention_heads},
                           {"num_key_value_heads", c.num_key_value_heads}});
    c.head_dim = top.is_null("head_dim") ? static_cast<int>(c.hidden_size / c.num_attention_heads)
                                         : top.integer("head_dim", c.head_dim);
    require_positive(top, "head_dim", c.head_dim);
    require_positive(top, "rms_norm_eps", c.rms_norm_eps);
    if (c.head_dim % 2 != 0) {
        fail(origin, ": \"head_dim\" must be even for the rotary embedding, got ", c.head_dim);
    }
    if (c.num_attention_heads % c.num_key_value_heads != 0) {
        fail(origin, ": \"num_key_value_heads\" (", c.num_key_value_heads,
             ") must divide \"num_attention_heads\" (", c.num_attention_heads, ")");
    }
    if (c.hidden_act != "silu") {
        fail(origin, ": \"hidden_act\" \"", c.hidden_act,
             "\" is not supported (Llama's MLP is SwiGLU: silu)");
    }
    c.rope = read_rope(top);

    c.bos_token_id = top.is_null("bos_token_id") ? -1 : top.integer("bos_token_id", c.bos_token_id);
    c.pad_token_id = top.is_null("pad_token_id") ? -1 : top.integer("pad_token_id", c.pad_token_id);
    if (top.is_null("eos_token_id")) {
        c.eos_token_ids.clear();
    } else if (const json* eos = top.find("eos_token_id")) {
        c.eos_token_ids.clear();
        if (eos->is_array()) {
            for (const json& id : *eos) {
                c.eos_token_ids.push_back(top.as_integer("eos_token_id", id));
            }
        } else {
            c.eos_token_ids.push_back(top.as_integer("eos_token_id", *eos));
        }
    }
    std::vector<std::pair<const char*, int>> ids = {{"bos_token_id", c.bos_token_id},
                                                    {"pad_token_id", c.pad_token_id}};
    for (const int id : c.eos_token_ids) {
        ids.emplace_back("eos_token_id", id);
    }
    for (const auto& [key, id] : ids) {
        if (id < -1 || id >= c.vocab_size || (id == -1 && std::string_view(key) == "eos_token_id")) {
            fail(origin, ": \"", key, "\" ", id, " is outside the vocabulary (\"vocab_size\" ", c.vocab_size,
                 ")");
        }
    }
    return c;
}

}  // namespace

LlamaConfig parse_llama_config(std::string_view json_text, const std::string& origin) {
    const json root = parse_json_object(json_text, origin);
    return read_json_values(origin, [&] { return read_llama_config(root, origin); });
}

LlamaConfig load_llama_config(const std::string& path) {
    return parse_llama_config(read_file_text(path), path);
}

std::vector<float> llama_rope_inverse_frequencies(const LlamaConfig& config) {
    const LlamaRope& r = config.rope;
    const int half = config.head_dim / 2;
    std::vector<float> out(static_cast<size_t>(half));
    const double low_wavelen = static_cast<double>(r.original_max_position_embeddings) / r.low_freq_factor;
    const double high_wavelen = static_cast<double>(r.original_max_position_embeddings) / r.high_freq_factor;
    for (int i = 0; i < half; ++i) {
        const double base = 1.0 / std::pow(r.theta, 2.0 * i / config.head_dim);
        double f = base;
        if (r.type == LlamaRopeType::Linear) {
            f = base / r.factor;
        } else if (r.type == LlamaRopeType::Llama3) {
            const double wavelen = 2.0 * std::numbers::pi / base;
            if (wavelen > low_wavelen) {
                f = base / r.factor;
            } else if (wavelen >= high_wavelen) {
                // Between the two: blended from the scaled to the kept frequency.
                const double smooth =
                    (static_cast<double>(r.original_max_position_embeddings) / wavelen - r.low_freq_factor) /
                    (r.high_freq_factor - r.low_freq_factor);
                f = (1.0 - smooth) * base / r.factor + smooth * base;
            }
        }
        out[static_cast<size_t>(i)] = static_cast<float>(f);
    }
    return out;
}

LlamaConfig llama_full_size_config(std::string_view overrides) {
    static constexpr std::string_view kFullSize = R"({
      "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 128256, "hidden_size": 4096,
      "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
      "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
      "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192},
      "tie_word_embeddings": false, "bos_token_id": 128000, "eos_token_id": 128001})";
    json config = parse_json_object(kFullSize, "full-size defaults");
    config.merge_patch(parse_json_object(overrides, "the random model's config"));
    return parse_llama_config(config.dump(), "full-size defaults");
}

}  // namespace folio
