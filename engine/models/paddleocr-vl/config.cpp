#include "engine/models/paddleocr-vl/config.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <numeric>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"

namespace folio {

namespace {

using nlohmann::json;

constexpr std::string_view kActivations[] = {
    "silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "quick_gelu", "relu"};

void require_activation(const ObjectReader& reader, std::string_view key, const std::string& value) {
    if (std::find(std::begin(kActivations), std::end(kActivations), value) == std::end(kActivations)) {
        fail(reader.origin(), ": ", reader.key_name(key), " \"", value,
             "\" is not a known activation (silu, swish, gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, "
             "quick_gelu, relu)");
    }
}

void require_rope_type(const ObjectReader& reader, std::string_view key) {
    const std::string type = reader.string(key, "default");
    if (type != "default" && type != "mrope") {
        fail(reader.origin(), ": ", reader.key_name(key), " \"", type,
             "\" is not supported (PaddleOCR-VL uses \"default\" multimodal RoPE)");
    }
}

std::array<int, 3> read_mrope_section(const ObjectReader& reader, std::string_view key, const json& value) {
    if (!value.is_array() || value.size() != 3) {
        reader.type_error(key, "a list of 3 integers", value);
    }
    std::array<int, 3> section{};
    for (size_t i = 0; i < 3; ++i) {
        if (!value[i].is_number_integer()) {
            reader.type_error(key, "a list of 3 integers", value);
        }
        section[i] = reader.as_integer(key, value[i]);
        if (section[i] < 0) {
            fail(reader.origin(), ": ", reader.key_name(key), " must not be negative, got ",
                 describe_json(value));
        }
    }
    return section;
}

VisionConfig read_vision_config(const ObjectReader& reader) {
    VisionConfig v;
    v.hidden_size = reader.integer("hidden_size", v.hidden_size);
    v.intermediate_size = reader.integer("intermediate_size", v.intermediate_size);
    v.num_hidden_layers = reader.integer("num_hidden_layers", v.num_hidden_layers);
    v.num_attention_heads = reader.integer("num_attention_heads", v.num_attention_heads);
    v.num_channels = reader.integer("num_channels", v.num_channels);
    v.image_size = reader.integer("image_size", v.image_size);
    v.patch_size = reader.integer("patch_size", v.patch_size);
    v.spatial_merge_size = reader.integer("spatial_merge_size", v.spatial_merge_size);
    v.layer_norm_eps = static_cast<float>(reader.number("layer_norm_eps", v.layer_norm_eps));
    v.hidden_act = reader.string("hidden_act", v.hidden_act);
    v.rope_theta = static_cast<float>(reader.number("rope_theta", v.rope_theta));
    if (const auto rope = reader.object("rope_parameters")) {
        v.rope_theta = static_cast<float>(rope->number("rope_theta", v.rope_theta));
    }

    require_positive(reader, {{"hidden_size", v.hidden_size},
                              {"intermediate_size", v.intermediate_size},
                              {"num_hidden_layers", v.num_hidden_layers},
                              {"num_attention_heads", v.num_attention_heads},
                              {"num_channels", v.num_channels},
                              {"image_size", v.image_size},
                              {"patch_size", v.patch_size},
                              {"spatial_merge_size", v.spatial_merge_size}});
    require_positive(reader, "layer_norm_eps", v.layer_norm_eps);
    require_positive(reader, "rope_theta", v.rope_theta);
    require_activation(reader, "hidden_act", v.hidden_act);
    if (v.hidden_size % v.num_attention_heads != 0) {
        fail(reader.origin(), ": ", reader.key_name("num_attention_heads"), " (", v.num_attention_heads,
             ") must divide ", reader.key_name("hidden_size"), " (", v.hidden_size, ")");
    }
    if (v.head_dim() % 4 != 0) {
        fail(reader.origin(), ": the vision head size ", reader.key_name("hidden_size"), " / ",
             reader.key_name("num_attention_heads"), " = ", v.head_dim(),
             " must be a multiple of 4 for the 2D rotary embedding");
    }
    if (v.image_size < v.patch_size) {
        fail(reader.origin(), ": ", reader.key_name("image_size"), " (", v.image_size, ") must be at least ",
             reader.key_name("patch_size"), " (", v.patch_size, ")");
    }
    return v;
}

TextConfig read_text_config(const ObjectReader& reader) {
    TextConfig t;
    t.vocab_size = reader.integer("vocab_size", t.vocab_size);
    t.hidden_size = reader.integer("hidden_size", t.hidden_size);
    t.intermediate_size = reader.integer("intermediate_size", t.intermediate_size);
    t.num_hidden_layers = reader.integer("num_hidden_layers", t.num_hidden_layers);
    t.num_attention_heads = reader.integer("num_attention_heads", t.num_attention_heads);
    t.num_key_value_heads = reader.is_null("num_key_value_heads")
                                ? t.num_attention_heads
                                : reader.integer("num_key_value_heads", t.num_key_value_heads);
    t.max_position_embeddings = reader.integer("max_position_embeddings", t.max_position_embeddings);
    t.rms_norm_eps = static_cast<float>(reader.number("rms_norm_eps", t.rms_norm_eps));
    t.use_bias = reader.boolean("use_bias", t.use_bias);
    t.tie_word_embeddings = reader.boolean("tie_word_embeddings", t.tie_word_embeddings);
    t.hidden_act = reader.string("hidden_act", t.hidden_act);

    require_positive(reader, {{"vocab_size", t.vocab_size},
                              {"hidden_size", t.hidden_size},
                              {"intermediate_size", t.intermediate_size},
                              {"num_hidden_layers", t.num_hidden_layers},
                              {"num_attention_heads", t.num_attention_heads},
                              {"num_key_value_heads", t.num_key_value_heads},
                              {"max_position_embeddings", t.max_position_embeddings}});
    t.head_dim = reader.is_null("head_dim") ? t.hidden_size / t.num_attention_heads
                                            : reader.integer("head_dim", t.head_dim);
    require_positive(reader, "head_dim", t.head_dim);
    require_positive(reader, "rms_norm_eps", t.rms_norm_eps);
    require_activation(reader, "hidden_act", t.hidden_act);
    if (t.head_dim % 2 != 0) {
        fail(reader.origin(), ": ", reader.key_name("head_dim"),
             " must be even for the rotary embedding, got ", t.head_dim);
    }
    if (t.num_attention_heads % t.num_key_value_heads != 0) {
        fail(reader.origin(), ": ", reader.key_name("num_key_value_heads"), " (", t.num_key_value_heads,
             ") must divide ", reader.key_name("num_attention_heads"), " (", t.num_attention_heads, ")");
    }

    // Rotary parameters: rope_parameters (transformers) before rope_theta and rope_scaling (published).
    t.rope_theta = static_cast<float>(reader.number("rope_theta", t.rope_theta));
    const auto rope_scaling = reader.object("rope_scaling");
    const auto rope_parameters = reader.object("rope_parameters");
    if (rope_scaling) {
        require_rope_type(*rope_scaling, "type");
        require_rope_type(*rope_scaling, "rope_type");
        if (const json* value = rope_scaling->find("mrope_section")) {
            t.mrope_section = read_mrope_section(*rope_scaling, "mrope_section", *value);
        }
    }
    if (rope_parameters) {
        require_rope_type(*rope_parameters, "rope_type");
        t.rope_theta = static_cast<float>(rope_parameters->number("rope_theta", t.rope_theta));
        if (const json* value = rope_parameters->find("mrope_section")) {
            t.mrope_section = read_mrope_section(*rope_parameters, "mrope_section", *value);
        }
    }
    require_positive(reader, "rope_theta", t.rope_theta);
    const int mrope_sum = std::accumulate(t.mrope_section.begin(), t.mrope_section.end(), 0);
    if (mrope_sum != t.head_dim / 2) {
        fail(reader.origin(), ": mrope_section [", t.mrope_section[0], ", ", t.mrope_section[1], ", ",
             t.mrope_section[2], "] sums to ", mrope_sum, ", but it must sum to ",
             reader.key_name("head_dim"), " / 2 = ", t.head_dim / 2);
    }

    t.pad_token_id = reader.is_null("pad_token_id") ? -1 : reader.integer("pad_token_id", t.pad_token_id);
    t.bos_token_id = reader.is_null("bos_token_id") ? -1 : reader.integer("bos_token_id", t.bos_token_id);
    if (reader.is_null("eos_token_id")) {
        t.eos_token_ids.clear();
    } else if (const json* eos = reader.find("eos_token_id")) {
        t.eos_token_ids.clear();
        if (eos->is_array()) {
            for (const json& id : *eos) {
                if (!id.is_number_integer()) {
                    reader.type_error("eos_token_id", "an integer or a list of integers", *eos);
                }
                t.eos_token_ids.push_back(reader.as_integer("eos_token_id", id));
            }
        } else if (eos->is_number_integer()) {
            t.eos_token_ids.push_back(reader.as_integer("eos_token_id", *eos));
        } else {
            reader.type_error("eos_token_id", "an integer or a list of integers", *eos);
        }
    }
    for (const auto& [key, id] :
         {std::pair{"pad_token_id", t.pad_token_id}, std::pair{"bos_token_id", t.bos_token_id}}) {
        if (id < -1 || id >= t.vocab_size) {
            fail(reader.origin(), ": ", reader.key_name(key), " ", id, " is outside the vocabulary (",
                 reader.key_name("vocab_size"), " ", t.vocab_size, ")");
        }
    }
    for (const int id : t.eos_token_ids) {
        if (id < 0 || id >= t.vocab_size) {
            fail(reader.origin(), ": ", reader.key_name("eos_token_id"), " ", id,
                 " is outside the vocabulary (", reader.key_name("vocab_size"), " ", t.vocab_size, ")");
        }
    }
    return t;
}

}  // namespace

static ModelConfig read_model_config(const json& root, const std::string& origin) {
    const ObjectReader top(root, "", origin);
    ModelConfig config;
    config.model_type = top.string("model_type", config.model_type);
    if (config.model_type != "paddleocr_vl") {
        fail(origin, ": \"model_type\" \"", config.model_type,
             "\" is not supported (expected \"paddleocr_vl\")");
    }

    const auto text_config = top.object("text_config");
    config.text = read_text_config(text_config ? *text_config : top);
    if (text_config) {
        config.text.tie_word_embeddings = top.boolean("tie_word_embeddings", config.text.tie_word_embeddings);
    }
    const auto vision_config = top.object("vision_config");
    config.vision = vision_config ? read_vision_config(*vision_config) : VisionConfig{};

    config.image_token_id = top.integer("image_token_id", config.image_token_id);
    config.video_token_id = top.integer("video_token_id", config.video_token_id);
    config.vision_start_token_id = top.integer("vision_start_token_id", config.vision_start_token_id);
    config.vision_end_token_id = top.integer("vision_end_token_id", config.vision_end_token_id);
    const std::pair<std::string_view, int> special_ids[] = {
        {"image_token_id", config.image_token_id},
        {"video_token_id", config.video_token_id},
        {"vision_start_token_id", config.vision_start_token_id},
        {"vision_end_token_id", config.vision_end_token_id},
    };
    for (const auto& [key, id] : special_ids) {
        if (id < 0 || id >= config.text.vocab_size) {
            fail(origin, ": \"", key, "\" ", id, " is outside the vocabulary (vocab_size ",
                 config.text.vocab_size, ")");
        }
    }
    return config;
}

ModelConfig parse_model_config(std::string_view json_text, const std::string& origin) {
    const json root = parse_json_object(json_text, origin);
    return read_json_values(origin, [&] { return read_model_config(root, origin); });
}

ModelConfig load_model_config(const std::filesystem::path& config_json) {
    return parse_model_config(read_file_text(config_json), config_json.string());
}

}  // namespace folio
