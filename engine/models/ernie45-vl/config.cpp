#include "engine/models/ernie45-vl/config.h"

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"

namespace folio {

namespace {

using nlohmann::json;

// A token id or a list of them (eos_token_id).
std::vector<int32_t> read_token_ids(const ObjectReader& reader, std::string_view key) {
    const json* value = reader.find(key);
    if (value == nullptr) {
        return {};
    }
    std::vector<int32_t> ids;
    if (value->is_array()) {
        for (const json& v : *value) {
            ids.push_back(reader.as_integer(key, v));
        }
    } else {
        ids.push_back(reader.as_integer(key, *value));
    }
    return ids;
}

template <typename T, size_t N>
std::array<T, N> read_list(const ObjectReader& reader, std::string_view key, std::array<T, N> fallback) {
    const json* value = reader.find(key);
    if (value == nullptr) {
        return fallback;
    }
    if (!value->is_array() || value->size() != N) {
        reader.type_error(key, "a list of " + std::to_string(N) + " integers", *value);
    }
    std::array<T, N> out{};
    for (size_t i = 0; i < N; ++i) {
        out[i] = static_cast<T>(reader.as_integer64(key, (*value)[i]));
        if (out[i] <= 0) {
            fail(reader.origin(), ": ", reader.key_name(key), " must be positive, got ",
                 describe_json(*value));
        }
    }
    return out;
}

Ernie45VlTextConfig read_text_config(const ObjectReader& reader) {
    Ernie45VlTextConfig t;
    t.vocab_size = reader.integer64("vocab_size", t.vocab_size);
    t.hidden_size = reader.integer64("hidden_size", t.hidden_size);
    t.intermediate_size = reader.integer64("intermediate_size", t.intermediate_size);
    t.num_hidden_layers = reader.integer("num_hidden_layers", t.num_hidden_layers);
    t.num_attention_heads = reader.integer("num_attention_heads", t.num_attention_heads);
    t.num_key_value_heads = reader.integer("num_key_value_heads", t.num_key_value_heads);
    require_positive(reader, {{"num_hidden_layers", t.num_hidden_layers},
                              {"num_attention_heads", t.num_attention_heads},
                              {"num_key_value_heads", t.num_key_value_heads}});
    require_positive(reader, "hidden_size", static_cast<double>(t.hidden_size));
    require_positive(reader, "vocab_size", static_cast<double>(t.vocab_size));
    require_positive(reader, "intermediate_size", static_cast<double>(t.intermediate_size));
    t.head_dim = reader.integer64("head_dim", t.hidden_size / t.num_attention_heads);
    t.rms_norm_eps = static_cast<float>(reader.number("rms_norm_eps", t.rms_norm_eps));
    t.max_position_embeddings = reader.integer64("max_position_embeddings", t.max_position_embeddings);
    t.use_bias = reader.boolean("use_bias", t.use_bias);
    t.tie_word_embeddings = reader.boolean("tie_word_embeddings", t.tie_word_embeddings);
    t.rope_theta = static_cast<float>(reader.number("rope_theta", t.rope_theta));
    if (const auto rope = reader.object("rope_parameters")) {
        t.rope_theta = static_cast<float>(rope->number("rope_theta", t.rope_theta));
        const std::string type = rope->string("rope_type", "default");
        if (type != "default") {
            fail(reader.origin(), ": ", rope->key_name("rope_type"), " \"", type,
                 "\" is not supported (ERNIE-4.5-VL uses \"default\" multimodal RoPE)");
        }
        t.mrope_section = read_list(*rope, "mrope_section", t.mrope_section);
    }
    t.n_experts = reader.integer("moe_num_experts", t.n_experts);
    t.n_experts_per_token = reader.integer("moe_k", t.n_experts_per_token);
    t.n_shared_experts = reader.integer("moe_num_shared_experts", t.n_shared_experts);
    t.moe_intermediate_size = read_list(reader, "moe_intermediate_size", t.moe_intermediate_size);
    t.moe_norm_min = static_cast<float>(reader.number("moe_norm_min", t.moe_norm_min));
    require_positive(reader, {{"moe_num_experts", t.n_experts}, {"moe_k", t.n_experts_per_token}});
    if (t.n_experts_per_token > t.n_experts) {
        fail(reader.origin(), ": ", reader.key_name("moe_k"), " ", t.n_experts_per_token,
             " is more than the ", t.n_experts, " experts of ", reader.key_name("moe_num_experts"));
    }
    if (t.n_shared_experts < 0) {
        fail(reader.origin(), ": ", reader.key_name("moe_num_shared_experts"), " must not be negative, got ",
             t.n_shared_experts);
    }
    t.sparse_layers.assign(static_cast<size_t>(t.num_hidden_layers), true);
    t.sparse_layers[0] = false;  // the reference's default: layer 0 dense, the others sparse
    if (const json* types = reader.find("mlp_layer_types")) {
        if (!types->is_array() || types->size() != static_cast<size_t>(t.num_hidden_layers)) {
            reader.type_error("mlp_layer_types",
                              "a list of " + std::to_string(t.num_hidden_layers) + " \"dense\" or \"sparse\"",
                              *types);
        }
        for (size_t l = 0; l < types->size(); ++l) {
            const json& v = (*types)[l];
            const std::string kind = v.is_string() ? v.get<std::string>() : std::string();
            if (kind != "dense" && kind != "sparse") {
                reader.type_error("mlp_layer_types", "\"dense\" or \"sparse\" entries", v);
            }
            t.sparse_layers[l] = kind == "sparse";
        }
    }
    const std::vector<int32_t> bos = read_token_ids(reader, "bos_token_id");
    t.bos_token_id = bos.empty() ? -1 : bos.front();
    t.eos_token_ids = read_token_ids(reader, "eos_token_id");
    require_positive(reader, "rms_norm_eps", t.rms_norm_eps);
    require_positive(reader, "rope_theta", t.rope_theta);
    require_positive(reader, "moe_norm_min", t.moe_norm_min);
    require_positive(reader, "max_position_embeddings", static_cast<double>(t.max_position_embeddings));
    for (const int32_t id : t.eos_token_ids) {
        if (id < 0 || id >= t.vocab_size) {
            fail(reader.origin(), ": ", reader.key_name("eos_token_id"), " ", id,
                 " lies outside the vocabulary of ", t.vocab_size);
        }
    }
    if (t.bos_token_id < -1 || t.bos_token_id >= t.vocab_size) {
        fail(reader.origin(), ": ", reader.key_name("bos_token_id"), " ", t.bos_token_id,
             " lies outside the vocabulary of ", t.vocab_size);
    }

    if (t.hidden_size % t.num_attention_heads != 0 && !reader.find("head_dim")) {
        fail(reader.origin(), ": ", reader.key_name("hidden_size"), " ", t.hidden_size,
             " is not a multiple of ", t.num_attention_heads, " heads");
    }
    if (t.num_attention_heads % t.num_key_value_heads != 0) {
        fail(reader.origin(), ": ", t.num_attention_heads, " attention heads do not share ",
             t.num_key_value_heads, " key/value heads evenly");
    }
    const int64_t n_freq = int64_t{t.mrope_section[0]} + t.mrope_section[1] + t.mrope_section[2];
    if (t.head_dim % 2 != 0 || n_freq != t.head_dim / 2 || t.mrope_section[0] != t.mrope_section[1]) {
        fail(reader.origin(), ": mrope_section ", t.mrope_section[0], ", ", t.mrope_section[1], ", ",
             t.mrope_section[2], " must give equal height and width sections and cover the ", t.head_dim / 2,
             " frequencies of a head of ", t.head_dim);
    }
    return t;
}

Ernie45VlVisionConfig read_vision_config(const ObjectReader& reader) {
    Ernie45VlVisionConfig v;
    v.depth = reader.integer("depth", v.depth);
    v.hidden_size = reader.integer64("hidden_size", v.hidden_size);
    v.intermediate_size = reader.integer64("intermediate_size", v.intermediate_size);
    v.num_heads = reader.integer("num_heads", v.num_heads);
    v.in_channels = reader.integer("in_channels", v.in_channels);
    v.patch_size = reader.integer("patch_size", v.patch_size);
    v.spatial_merge_size = reader.integer("spatial_merge_size", v.spatial_merge_size);
    v.temporal_merge_size = reader.integer("temporal_merge_size", v.temporal_merge_size);
    v.eps = static_cast<float>(reader.number("rms_norm_eps", v.eps));
    v.hidden_act = reader.string("hidden_act", v.hidden_act);
    if (const auto rope = reader.object("rope_parameters")) {
        v.rope_theta = static_cast<float>(rope->number("rope_theta", v.rope_theta));
    }
    require_positive(reader, {{"depth", v.depth},
                              {"num_heads", v.num_heads},
                              {"in_channels", v.in_channels},
                              {"patch_size", v.patch_size},
                              {"spatial_merge_size", v.spatial_merge_size},
                              {"temporal_merge_size", v.temporal_merge_size}});
    require_positive(reader, "hidden_size", static_cast<double>(v.hidden_size));
    require_positive(reader, "intermediate_size", static_cast<double>(v.intermediate_size));
    require_positive(reader, "rms_norm_eps", v.eps);
    require_positive(reader, "rope_theta", v.rope_theta);
    if (v.hidden_size % v.num_heads != 0 || v.head_dim() % 4 != 0) {
        fail(reader.origin(), ": ", reader.key_name("hidden_size"), " ", v.hidden_size, " over ", v.num_heads,
             " heads must give heads of a multiple of 4 values");
    }
    if (v.hidden_act != "quick_gelu" && v.hidden_act != "gelu_pytorch_tanh") {
        fail(reader.origin(), ": ", reader.key_name("hidden_act"), " \"", v.hidden_act,
             "\" is not supported (quick_gelu, gelu_pytorch_tanh)");
    }
    if (v.temporal_merge_size != 2) {
        fail(reader.origin(), ": ", reader.key_name("temporal_merge_size"), " ", v.temporal_merge_size,
             " is not supported (the resampler pairs frames: 2)");
    }
    return v;
}

}  // namespace

Ernie45VlConfig parse_ernie45_vl_config(std::string_view text, const std::string& origin) {
    const json root = parse_json_object(text, origin);
    const ObjectReader reader(root, "", origin);
    Ernie45VlConfig c;
    c.model_type = reader.string("model_type", c.model_type);
    const auto text_reader = reader.object("text_config");
    c.text = read_text_config(text_reader ? *text_reader : reader);
    if (const auto vision = reader.object("vision_config")) {
        c.vision = read_vision_config(*vision);
    } else {
        c.vision = read_vision_config(ObjectReader(json::object(), "vision_config.", origin));
    }
    c.image_token_id = reader.integer("image_token_id", c.image_token_id);
    c.image_start_token_id = reader.integer("image_start_token_id", c.image_start_token_id);
    c.image_end_token_id = reader.integer("image_end_token_id", c.image_end_token_id);
    c.video_token_id = reader.integer("video_token_id", c.video_token_id);
    c.video_start_token_id = reader.integer("video_start_token_id", c.video_start_token_id);
    c.video_end_token_id = reader.integer("video_end_token_id", c.video_end_token_id);
    for (const int32_t id : {c.image_token_id, c.image_start_token_id, c.image_end_token_id, c.video_token_id,
                             c.video_start_token_id, c.video_end_token_id}) {
        if (id < 0 || id >= c.text.vocab_size) {
            fail(origin, ": multimodal token id ", id, " lies outside the vocabulary of ", c.text.vocab_size);
        }
    }
    return c;
}

Ernie45VlConfig load_ernie45_vl_config(const std::filesystem::path& path) {
    return parse_ernie45_vl_config(read_file_text(path), path.string());
}

}  // namespace folio
