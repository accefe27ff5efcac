#include "engine/models/pp-doclayout/pp-doclayout-config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"

namespace folio {

namespace {

using nlohmann::json;

// The keys of one object read into a config's fields, in ranges; absent or null keys keep the field's
// default. `prefix` qualifies names in messages.
class Fields {
public:
    Fields(const json& object, std::string prefix, const std::string& origin)
        : Fields(ObjectReader(object, std::move(prefix), origin)) {}
    explicit Fields(ObjectReader reader) : reader_(std::move(reader)) {}

    const json* find(std::string_view key) const { return reader_.find(key); }
    [[noreturn]] void wrong(std::string_view key, std::string_view expected, const json& value) const {
        reader_.type_error(key, expected, value);
    }

    void read(std::string_view key, int& out, int lo = 0, int hi = 1 << 20) const {
        if (const json* v = find(key)) {
            out = integer(key, *v, lo, hi);
        }
    }
    void read(std::string_view key, float& out, double lo = -1e30, double hi = 1e30) const {
        if (const json* v = find(key)) {
            if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < lo ||
                v->get<double>() > hi) {
                wrong(key, "a number in range", *v);
            }
            out = static_cast<float>(v->get<double>());
        }
    }
    void read(std::string_view key, bool& out) const {
        if (const json* v = find(key)) {
            if (!v->is_boolean()) {
                wrong(key, "true or false", *v);
            }
            out = v->get<bool>();
        }
    }
    void read(std::string_view key, std::vector<int>& out, int lo = 0, int hi = 1 << 20) const {
        if (const json* v = find(key)) {
            out.clear();
            for (const json& e : list(key, *v)) {
                out.push_back(integer(key, e, lo, hi));
            }
        }
    }
    void read(std::string_view key, std::vector<bool>& out) const {
        if (const json* v = find(key)) {
            out.clear();
            for (const json& e : list(key, *v)) {
                if (!e.is_boolean()) {
                    wrong(key, "a list of true or false", *v);
                }
                out.push_back(e.get<bool>());
            }
        }
    }
    void read(std::string_view key, std::vector<float>& out) const {
        if (const json* v = find(key)) {
            out.clear();
            for (const json& e : list(key, *v)) {
                if (!e.is_number() || !std::isfinite(e.get<double>())) {
                    wrong(key, "a list of numbers", *v);
                }
                out.push_back(static_cast<float>(e.get<double>()));
            }
        }
    }
    void read(std::string_view key, Activation& out) const {
        const json* v = find(key);
        if (v == nullptr) {
            return;
        }
        const std::string name = v->is_string() ? v->get<std::string>() : std::string();
        if (name == "relu") {
            out = Activation::Relu;
        } else if (name == "silu" || name == "swish") {
            out = Activation::Silu;
        } else if (name == "gelu") {
            out = Activation::Gelu;
        } else if (name == "sigmoid") {
            out = Activation::Sigmoid;
        } else {
            wrong(key, "one of relu, silu, gelu, sigmoid", *v);
        }
    }
    std::optional<Fields> object(std::string_view key) const {
        std::optional<ObjectReader> nested = reader_.object(key);
        return nested ? std::optional<Fields>(Fields(std::move(*nested))) : std::nullopt;
    }
    std::string string(std::string_view key) const { return reader_.string(key, std::string()); }
    const std::string& origin() const { return reader_.origin(); }

private:
    const json& list(std::string_view key, const json& v) const {
        if (!v.is_array() || v.size() > 4096) {
            wrong(key, "a list", v);
        }
        return v;
    }
    int integer(std::string_view key, const json& v, int lo, int hi) const {
        const std::optional<int64_t> n = json_int64(v);
        if (!n || *n < lo || *n > hi) {
            wrong(key, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", v);
        }
        return static_cast<int>(*n);
    }

    ObjectReader reader_;
};

HgnetConfig parse_backbone(const Fields& f, LayoutModelKind kind) {
    HgnetConfig c;
    const std::string type = f.string("model_type");
    if (!type.empty() && type != "hgnet_v2") {
        fail(f.origin(), ": \"backbone_config.model_type\" must be hgnet_v2, got ", type);
    }
    f.read("stem_channels", c.stem_channels, 1);
    f.read("stem_strides", c.stem_strides, 1, 64);
    f.read("stage_in_channels", c.stage_in_channels, 1);
    f.read("stage_mid_channels", c.stage_mid_channels, 1);
    f.read("stage_out_channels", c.stage_out_channels, 2);
    f.read("stage_num_blocks", c.stage_num_blocks, 1, 64);
    f.read("stage_downsample", c.stage_downsample);
    f.read("stage_downsample_strides", c.stage_downsample_strides, 1, 64);
    f.read("stage_light_block", c.stage_light_block);
    f.read("stage_kernel_size", c.stage_kernel_size, 1, 31);
    f.read("stage_numb_of_layers", c.stage_num_layers, 1, 64);
    f.read("hidden_act", c.hidden_act);
    bool lab = false;
    f.read("use_learnable_affine_block", lab);
    if (lab) {
        fail(f.origin(),
             ": \"backbone_config.use_learnable_affine_block\" is not supported (no PP-DocLayout "
             "checkpoint uses it)");
    }
    if (c.stem_channels.size() != 3 || c.stem_strides.size() != 5) {
        fail(f.origin(), ": \"backbone_config.stem_channels\" needs 3 entries and \"stem_strides\" 5");
    }
    const size_t n = c.stage_in_channels.size();
    if (n == 0 || c.stage_mid_channels.size() != n || c.stage_out_channels.size() != n ||
        c.stage_num_blocks.size() != n || c.stage_downsample.size() != n ||
        c.stage_downsample_strides.size() != n || c.stage_light_block.size() != n ||
        c.stage_kernel_size.size() != n || c.stage_num_layers.size() != n) {
        fail(f.origin(), ": the backbone_config stage lists must all have ", n, " entries");
    }
    for (size_t i = 0; i < n; ++i) {
        const int expected_in = i == 0 ? c.stem_channels[2] : c.stage_out_channels[i - 1];
        if (c.stage_in_channels[i] != expected_in) {
            fail(f.origin(), ": \"backbone_config.stage_in_channels[", i, "]\" is ", c.stage_in_channels[i],
                 " but the layer before gives ", expected_in);
        }
    }
    std::vector<std::string> out_features;
    if (const json* v = f.find("out_features")) {
        if (!v->is_array()) {
            f.wrong("out_features", "a list of stage names", *v);
        }
        for (const json& e : *v) {
            if (!e.is_string()) {
                f.wrong("out_features", "a list of stage names", *v);
            }
            out_features.push_back(e.get<std::string>());
        }
    } else if (kind == LayoutModelKind::V2) {
        out_features = {"stage2", "stage3", "stage4"};
    } else {
        out_features = {"stage1", "stage2", "stage3", "stage4"};
    }
    for (const std::string& name : out_features) {
        const std::string digits = name.rfind("stage", 0) == 0 ? name.substr(5) : std::string();
        const bool numeric = !digits.empty() && digits.size() <= 3 &&
                             digits.find_first_not_of("0123456789") == std::string::npos;
        const int stage = numeric ? std::stoi(digits) : 0;
        if (stage < 1 || stage > static_cast<int>(n)) {
            fail(f.origin(), ": \"backbone_config.out_features\" names ", name,
                 ", not a stage of the backbone");
        }
        c.out_stages.push_back(stage - 1);
    }
    return c;
}

ReadingOrderConfig parse_reading_order(const Fields& f) {
    ReadingOrderConfig c;
    f.read("hidden_size", c.hidden_size, 1);
    f.read("num_attention_heads", c.num_attention_heads, 1, 1024);
    f.read("intermediate_size", c.intermediate_size, 1);
    f.read("num_hidden_layers", c.num_hidden_layers, 0, 256);
    f.read("hidden_act", c.hidden_act);
    f.read("layer_norm_eps", c.layer_norm_eps, 0.0, 1.0);
    f.read("max_position_embeddings", c.max_position_embeddings, 1);
    f.read("max_2d_position_embeddings", c.max_2d_position_embeddings, 1);
    f.read("type_vocab_size", c.type_vocab_size, 1);
    f.read("vocab_size", c.vocab_size, 1);
    f.read("start_token_id", c.start_token_id);
    f.read("pad_token_id", c.pad_token_id);
    f.read("end_token_id", c.end_token_id);
    f.read("pred_token_id", c.pred_token_id);
    f.read("coordinate_size", c.coordinate_size, 1);
    f.read("shape_size", c.shape_size, 1);
    f.read("num_classes", c.num_classes, 1);
    f.read("relation_bias_embed_dim", c.relation_bias_embed_dim, 2);
    f.read("relation_bias_theta", c.relation_bias_theta, 1e-6, 1e30);
    f.read("relation_bias_scale", c.relation_bias_scale);
    f.read("global_pointer_head_size", c.global_pointer_head_size, 1);
    f.read("has_relative_attention_bias", c.has_relative_attention_bias);
    f.read("has_spatial_attention_bias", c.has_spatial_attention_bias);
    if (c.has_relative_attention_bias) {
        fail(f.origin(), ": \"reading_order_config.has_relative_attention_bias\" is not supported");
    }
    if (c.hidden_size % c.num_attention_heads != 0) {
        fail(f.origin(), ": \"reading_order_config.hidden_size\" ", c.hidden_size,
             " is not a multiple of num_attention_heads ", c.num_attention_heads);
    }
    if (c.relation_bias_embed_dim % 2 != 0) {
        fail(f.origin(), ": \"reading_order_config.relation_bias_embed_dim\" must be even");
    }
    for (const int id : {c.start_token_id, c.pad_token_id, c.end_token_id, c.pred_token_id}) {
        if (id >= c.vocab_size) {
            fail(f.origin(), ": a reading_order_config token id ", id, " is outside vocab_size ",
                 c.vocab_size);
        }
    }
    if (c.max_2d_position_embeddings < 1024) {
        fail(f.origin(),
             ": \"reading_order_config.max_2d_position_embeddings\" must be at least 1024 (boxes "
             "are scaled to 0..1000), got ",
             c.max_2d_position_embeddings);
    }
    return c;
}

std::vector<std::string> parse_labels(const Fields& f) {
    std::vector<std::string> labels;
    const json* v = f.find("id2label");
    if (v == nullptr) {
        fail(f.origin(), ": \"id2label\" is missing: the model's labels are needed");
    }
    if (!v->is_object() || v->empty() || v->size() > 1024) {
        f.wrong("id2label", "an object of labels", *v);
    }
    labels.resize(v->size());
    for (auto it = v->begin(); it != v->end(); ++it) {
        char* end = nullptr;
        const long id = std::strtol(it.key().c_str(), &end, 10);
        if (end == it.key().c_str() || *end != '\0' || id < 0 || id >= static_cast<long>(v->size()) ||
            !it->is_string() || !labels[static_cast<size_t>(id)].empty()) {
            fail(f.origin(), ": \"id2label\" must map the ids 0..", v->size() - 1, " to names, got \"",
                 it.key(), "\"");
        }
        labels[static_cast<size_t>(id)] = it->get<std::string>();
    }
    return labels;
}

void check_model(const PpDocLayoutConfig& c, const std::string& origin) {
    auto check = [&](bool ok, auto&&... what) {
        if (!ok) {
            fail(origin, ": ", what...);
        }
    };
    check(c.encoder_in_channels.size() == c.feat_strides.size() && !c.feat_strides.empty(),
          "\"encoder_in_channels\" and \"feat_strides\" must have as many entries");
    const size_t n_levels = c.feat_strides.size();
    const size_t n_backbone = c.backbone.out_stages.size();
    const size_t expected_backbone = c.kind == LayoutModelKind::V3 ? n_levels + 1 : n_levels;
    check(n_backbone == expected_backbone, "the backbone gives ", n_backbone, " feature maps but ",
          layout_model_name(c.kind), " needs ", expected_backbone);
    for (size_t i = 0; i < n_levels; ++i) {
        const int stage = c.backbone.out_stages[n_backbone - n_levels + i];
        check(c.backbone.stage_out_channels[static_cast<size_t>(stage)] == c.encoder_in_channels[i],
              "\"encoder_in_channels[", i, "]\" is ", c.encoder_in_channels[i], " but the backbone gives ",
              c.backbone.stage_out_channels[static_cast<size_t>(stage)]);
        check(c.feat_strides[i] > 0 && (i == 0 || c.feat_strides[i] == 2 * c.feat_strides[i - 1]),
              "\"feat_strides\" must double from level to level");
    }
    for (const int l : c.encode_proj_layers) {
        check(l >= 0 && static_cast<size_t>(l) < n_levels, "\"encode_proj_layers\" names level ", l);
    }
    check(c.encoder_hidden_dim % c.encoder_attention_heads == 0, "\"encoder_hidden_dim\" ",
          c.encoder_hidden_dim, " is not a multiple of encoder_attention_heads");
    check(c.encoder_hidden_dim % 4 == 0, "\"encoder_hidden_dim\" must be a multiple of 4");
    check(c.d_model % c.decoder_attention_heads == 0, "\"d_model\" ", c.d_model,
          " is not a multiple of decoder_attention_heads");
    check(c.decoder_in_channels.size() <= static_cast<size_t>(c.num_feature_levels) &&
              c.decoder_in_channels.size() == n_levels,
          "\"decoder_in_channels\" must have one entry per encoder level");
    for (const int ch : c.decoder_in_channels) {
        check(ch == c.encoder_hidden_dim, "\"decoder_in_channels\" must equal encoder_hidden_dim");
    }
    check(c.d_model == c.encoder_hidden_dim, "\"d_model\" must equal encoder_hidden_dim");
    check(c.num_queries > 0, "\"num_queries\" must be positive");
    if (c.kind == LayoutModelKind::V3) {
        check(c.mask_feature_channels.size() == 2, "\"mask_feature_channels\" needs 2 entries");
        const int x4_stage = c.backbone.out_stages[0];
        check(c.backbone.stage_out_channels[static_cast<size_t>(x4_stage)] == c.x4_feat_dim,
              "\"x4_feat_dim\" is ", c.x4_feat_dim, " but the backbone gives ",
              c.backbone.stage_out_channels[static_cast<size_t>(x4_stage)]);
    } else {
        check(c.class_thresholds.size() == c.labels.size(),
              "\"class_thresholds\" needs one entry per label (", c.labels.size(), "), got ",
              c.class_thresholds.size());
        check(c.class_order.size() == c.labels.size(), "\"class_order\" needs one entry per label (",
              c.labels.size(), "), got ", c.class_order.size());
        for (const int k : c.class_order) {
            check(k >= 0 && k < c.reading_order.num_classes, "\"class_order\" names class ", k,
                  " outside reading_order_config.num_classes");
        }
        check(c.num_queries + 2 + c.reading_order.pad_token_id < c.reading_order.max_position_embeddings,
              "\"reading_order_config.max_position_embeddings\" is too small for num_queries ",
              c.num_queries);
    }
}

}  // namespace

const char* layout_model_name(LayoutModelKind kind) {
    return kind == LayoutModelKind::V2 ? "PP-DocLayoutV2" : "PP-DocLayoutV3";
}

static PpDocLayoutConfig read_pp_doclayout_config(const json& root, const std::string& origin) {
    const Fields f(root, "", origin);
    PpDocLayoutConfig c;
    const std::string type = f.string("model_type");
    if (type == "pp_doclayout_v2") {
        c.kind = LayoutModelKind::V2;
    } else if (type == "pp_doclayout_v3") {
        c.kind = LayoutModelKind::V3;
    } else {
        fail(origin, ": \"model_type\" must be pp_doclayout_v2 or pp_doclayout_v3, got \"", type, "\"");
    }
    const std::optional<Fields> backbone = f.object("backbone_config");
    // Without a backbone_config, transformers' default: HGNetV2-L.
    const json no_backbone = json::object();
    c.backbone =
        parse_backbone(backbone ? *backbone : Fields(no_backbone, "backbone_config.", origin), c.kind);
    c.labels = parse_labels(f);
    f.read("encoder_hidden_dim", c.encoder_hidden_dim, 4);
    f.read("encoder_in_channels", c.encoder_in_channels, 1);
    f.read("feat_strides", c.feat_strides, 1, 1024);
    f.read("encoder_layers", c.encoder_layers, 0, 64);
    f.read("encoder_ffn_dim", c.encoder_ffn_dim, 1);
    f.read("encoder_attention_heads", c.encoder_attention_heads, 1, 1024);
    f.read("encode_proj_layers", c.encode_proj_layers, 0, 16);
    f.read("positional_encoding_temperature", c.positional_encoding_temperature, 1e-6, 1e30);
    f.read("encoder_activation_function", c.encoder_activation);
    f.read("activation_function", c.activation);
    c.has_eval_size = f.find("eval_size") != nullptr;
    f.read("normalize_before", c.normalize_before);
    f.read("hidden_expansion", c.hidden_expansion, 1e-3, 64.0);
    f.read("d_model", c.d_model, 4);
    f.read("num_queries", c.num_queries, 1, 100000);
    f.read("decoder_in_channels", c.decoder_in_channels, 1);
    f.read("decoder_ffn_dim", c.decoder_ffn_dim, 1);
    f.read("num_feature_levels", c.num_feature_levels, 1, 16);
    f.read("decoder_n_points", c.decoder_n_points, 1, 64);
    f.read("decoder_layers", c.decoder_layers, 1, 64);
    f.read("decoder_attention_heads", c.decoder_attention_heads, 1, 1024);
    f.read("decoder_activation_function", c.decoder_activation);
    if (f.find("anchor_image_size") != nullptr) {
        std::vector<int> size;
        f.read("anchor_image_size", size, 1, 1 << 16);
        if (size.size() != 2) {
            fail(origin, ": \"anchor_image_size\" needs a height and a width");
        }
        c.anchor_image_size = size;
    }
    f.read("layer_norm_eps", c.layer_norm_eps, 0.0, 1.0);
    f.read("batch_norm_eps", c.batch_norm_eps, 0.0, 1.0);
    bool learn_initial_query = false;
    f.read("learn_initial_query", learn_initial_query);
    if (learn_initial_query) {
        fail(origin, ": \"learn_initial_query\" is not supported (no PP-DocLayout checkpoint uses it)");
    }
    if (c.kind == LayoutModelKind::V3) {
        f.read("mask_feature_channels", c.mask_feature_channels, 1);
        f.read("x4_feat_dim", c.x4_feat_dim, 1);
        f.read("num_prototypes", c.num_prototypes, 1);
        f.read("mask_enhanced", c.mask_enhanced);
        f.read("global_pointer_head_size", c.global_pointer_head_size, 1);
    } else {
        f.read("class_thresholds", c.class_thresholds);
        f.read("class_order", c.class_order, 0);
        const std::optional<Fields> ro = f.object("reading_order_config");
        c.reading_order = ro ? parse_reading_order(*ro) : ReadingOrderConfig{};
    }
    check_model(c, origin);
    return c;
}

PpDocLayoutConfig parse_pp_doclayout_config(std::string_view json_text, const std::string& origin) {
    const json root = parse_json_object(json_text, origin);
    return read_json_values(origin, [&] { return read_pp_doclayout_config(root, origin); });
}

static LayoutPreprocessConfig read_layout_preprocess_config(const json& root, const std::string& origin) {
    const Fields f(root, "", origin);
    LayoutPreprocessConfig c;
    if (const std::optional<Fields> size = f.object("size")) {
        size->read("height", c.height, 1, 8192);
        size->read("width", c.width, 1, 8192);
    }
    f.read("do_resize", c.do_resize);
    f.read("resample", c.resample, 0, 5);
    f.read("do_rescale", c.do_rescale);
    f.read("rescale_factor", c.rescale_factor, 0.0, 1e6);
    f.read("do_normalize", c.do_normalize);
    f.read("image_mean", c.image_mean);
    f.read("image_std", c.image_std);
    if (c.image_mean.size() != 3 || c.image_std.size() != 3) {
        fail(origin, ": \"image_mean\" and \"image_std\" need 3 entries");
    }
    for (const float s : c.image_std) {
        if (s == 0.0f) {
            fail(origin, ": \"image_std\" must not be 0");
        }
    }
    if (c.do_resize && c.resample != 3) {
        fail(origin, ": \"resample\" ", c.resample,
             " is not supported; the layout models resize bicubically (3)");
    }
    return c;
}

LayoutPreprocessConfig parse_layout_preprocess_config(std::string_view json_text, const std::string& origin) {
    const json root = parse_json_object(json_text, origin);
    return read_json_values(origin, [&] { return read_layout_preprocess_config(root, origin); });
}

LayoutModelFiles open_layout_model_files(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(dir)) {
        fail(dir.string(), ": not a folder");
    }
    if (!fs::exists(dir / "config.json") && fs::exists(dir / "inference.yml")) {
        std::string name = "PP-DocLayoutV3";
        const std::string yml = read_file_text(dir / "inference.yml");
        if (yml.find("PP-DocLayoutV2") != std::string::npos) {
            name = "PP-DocLayoutV2";
        }
        fail(dir.string(),
             ": a layout model in Paddle's inference format (inference.json, inference.pdiparams, "
             "inference.yml); Folio reads the safetensors layout: use PaddlePaddle/",
             name, "_safetensors instead");
    }
    for (const char* file : {"config.json", "model.safetensors", "preprocessor_config.json"}) {
        if (!fs::exists(dir / file)) {
            fail(dir.string(), ": ", file,
                 " is missing; a layout model folder has config.json, model.safetensors "
                 "and preprocessor_config.json");
        }
    }
    LayoutModelFiles files;
    files.dir = dir;
    const fs::path config = dir / "config.json";
    files.config = parse_pp_doclayout_config(read_file_text(config), config.string());
    const fs::path pre = dir / "preprocessor_config.json";
    files.preprocess = parse_layout_preprocess_config(read_file_text(pre), pre.string());
    return files;
}

}  // namespace folio
