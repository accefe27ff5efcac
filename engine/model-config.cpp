#include "model-config.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <utility>

#include "error.h"
#include "mapped-file.h"

namespace folio {

namespace {

using nlohmann::json;

constexpr std::string_view kActivations[] = {
    "silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "quick_gelu", "relu"};

std::string describe(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 60) {
        text = text.substr(0, 57) + "...";
    }
    return std::string(value.type_name()) + " " + text;
}

json parse_json(std::string_view text, const std::string& origin) {
    json value;
    try {
        value = json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        fail(origin, ": not valid JSON: ", e.what());
    }
    if (!value.is_object()) {
        fail(origin, ": must be a JSON object, got ", describe(value));
    }
    return value;
}

// Reads the keys of one JSON object; `prefix` ("" or "vision_config.") qualifies key names in messages.
// A key that is absent or null reads as its fallback unless a caller asks for the raw value.
class ObjectReader {
public:
    ObjectReader(const json& object, std::string prefix, const std::string& origin)
        : object_(object), prefix_(std::move(prefix)), origin_(origin) {}

    const std::string& origin() const { return origin_; }
    std::string key_name(std::string_view key) const { return "\"" + prefix_ + std::string(key) + "\""; }

    // The value, or nullptr where the key is absent or null.
    const json* find(std::string_view key) const {
        const auto it = object_.find(key);
        return it == object_.end() || it->is_null() ? nullptr : &*it;
    }
    bool is_null(std::string_view key) const {
        const auto it = object_.find(key);
        return it != object_.end() && it->is_null();
    }

    [[noreturn]] void type_error(std::string_view key, std::string_view expected, const json& value) const {
        fail(origin_, ": ", key_name(key), " must be ", expected, ", got ", describe(value));
    }

    int64_t integer64(std::string_view key, int64_t fallback) const {
        const json* value = find(key);
        return value ? as_integer64(key, *value) : fallback;
    }

    int integer(std::string_view key, int fallback) const {
        const json* value = find(key);
        return value ? as_integer(key, *value) : fallback;
    }

    int as_integer(std::string_view key, const json& value) const {
        const int64_t n = as_integer64(key, value);
        if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max()) {
            type_error(key, "a 32-bit integer", value);
        }
        return static_cast<int>(n);
    }

    int64_t as_integer64(std::string_view key, const json& value) const {
        if (value.is_number_unsigned()) {
            const auto n = value.get<uint64_t>();
            if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                type_error(key, "a 64-bit integer", value);
            }
            return static_cast<int64_t>(n);
        }
        if (!value.is_number_integer()) {
            type_error(key, "an integer", value);
        }
        return value.get<int64_t>();
    }

    double number(std::string_view key, double fallback) const {
        const json* value = find(key);
        return value ? as_number(key, *value) : fallback;
    }

    double as_number(std::string_view key, const json& value) const {
        if (!value.is_number()) {
            type_error(key, "a number", value);
        }
        const double x = value.get<double>();
        if (!std::isfinite(x)) {
            type_error(key, "a finite number", value);
        }
        return x;
    }

    bool boolean(std::string_view key, bool fallback) const {
        const json* value = find(key);
        if (value && !value->is_boolean()) {
            type_error(key, "true or false", *value);
        }
        return value ? value->get<bool>() : fallback;
    }

    std::string string(std::string_view key, const std::string& fallback) const {
        const json* value = find(key);
        if (value && !value->is_string()) {
            type_error(key, "a string", *value);
        }
        return value ? value->get<std::string>() : fallback;
    }

    // A nested object's reader, or nullopt where the key is absent or null.
    std::optional<ObjectReader> object(std::string_view key) const {
        const json* value = find(key);
        if (!value) {
            return std::nullopt;
        }
        if (!value->is_object()) {
            type_error(key, "an object", *value);
        }
        return ObjectReader(*value, prefix_ + std::string(key) + ".", origin_);
    }

private:
    const json& object_;
    std::string prefix_;
    const std::string& origin_;
};

void require_positive(const ObjectReader& reader, std::string_view key, double value) {
    if (!(value > 0)) {
        fail(reader.origin(), ": ", reader.key_name(key), " must be positive, got ", value);
    }
}

void require_positive(const ObjectReader& reader,
                      std::initializer_list<std::pair<std::string_view, int>> values) {
    for (const auto& [key, value] : values) {
        require_positive(reader, key, value);
    }
}

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
            fail(reader.origin(), ": ", reader.key_name(key), " must not be negative, got ", describe(value));
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

std::array<float, 3> read_channels(const ObjectReader& reader, std::string_view key,
                                   const std::array<float, 3>& fallback) {
    const json* value = reader.find(key);
    if (!value) {
        return fallback;
    }
    if (value->is_number()) {
        const auto x = static_cast<float>(reader.as_number(key, *value));
        return {x, x, x};
    }
    if (!value->is_array() || value->size() != 3) {
        reader.type_error(key, "a number or a list of 3 numbers", *value);
    }
    std::array<float, 3> channels{};
    for (size_t i = 0; i < 3; ++i) {
        if (!(*value)[i].is_number()) {
            reader.type_error(key, "a number or a list of 3 numbers", *value);
        }
        channels[i] = static_cast<float>(reader.as_number(key, (*value)[i]));
    }
    return channels;
}

}  // namespace

ModelConfig parse_model_config(std::string_view json_text, const std::string& origin) {
    const json root = parse_json(json_text, origin);
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

ModelConfig load_model_config(const std::filesystem::path& config_json) {
    return parse_model_config(read_file_text(config_json), config_json.string());
}

PreprocessorConfig parse_preprocessor_config(std::string_view json_text, const std::string& origin) {
    const json root = parse_json(json_text, origin);
    const ObjectReader reader(root, "", origin);
    PreprocessorConfig config;

    if (const auto size = reader.object("size")) {
        config.min_pixels = size->integer64("shortest_edge", config.min_pixels);
        config.max_pixels = size->integer64("longest_edge", config.max_pixels);
    }
    config.min_pixels = reader.integer64("min_pixels", config.min_pixels);
    config.max_pixels = reader.integer64("max_pixels", config.max_pixels);
    config.patch_size = reader.integer("patch_size", config.patch_size);
    config.merge_size = reader.integer("merge_size", config.merge_size);
    config.temporal_patch_size = reader.integer("temporal_patch_size", config.temporal_patch_size);
    config.image_mean = read_channels(reader, "image_mean", config.image_mean);
    config.image_std = read_channels(reader, "image_std", config.image_std);
    config.rescale_factor = reader.number("rescale_factor", config.rescale_factor);
    config.do_resize = reader.boolean("do_resize", config.do_resize);
    config.do_rescale = reader.boolean("do_rescale", config.do_rescale);
    config.do_normalize = reader.boolean("do_normalize", config.do_normalize);
    config.do_convert_rgb = reader.boolean("do_convert_rgb", config.do_convert_rgb);
    config.resample = reader.integer("resample", config.resample);

    if (config.min_pixels <= 0) {
        fail(origin, ": the smallest pixel count (min_pixels or size.shortest_edge) must be positive, got ",
             config.min_pixels);
    }
    if (config.max_pixels < config.min_pixels || config.max_pixels > kMaxPreprocessorPixels) {
        fail(origin, ": the largest pixel count (max_pixels or size.longest_edge) must be from min_pixels (",
             config.min_pixels, ") to ", kMaxPreprocessorPixels, ", got ", config.max_pixels);
    }
    require_positive(reader, {{"patch_size", config.patch_size},
                              {"merge_size", config.merge_size},
                              {"temporal_patch_size", config.temporal_patch_size}});
    require_positive(reader, "rescale_factor", config.rescale_factor);
    for (const float s : config.image_std) {
        require_positive(reader, "image_std", s);
    }
    if (config.resample < 0 || config.resample > 5) {
        fail(origin, ": \"resample\" must be a PIL resampling filter from 0 to 5, got ", config.resample);
    }
    return config;
}

PreprocessorConfig load_preprocessor_config(const std::filesystem::path& preprocessor_config_json) {
    return parse_preprocessor_config(read_file_text(preprocessor_config_json),
                                     preprocessor_config_json.string());
}

}  // namespace folio
