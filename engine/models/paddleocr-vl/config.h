// PaddleOCR-VL's config.json as typed, validated structs. config.json may be in the published checkpoint's
// layout (text parameters at the top level, rope_theta and rope_scaling.mrope_section beside them,
// vision_config nested) or in transformers' layout (text_config with rope_parameters, vision_config with
// rope_parameters). A key that is absent takes the reference implementation's default.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

struct VisionConfig {
    int hidden_size = 1152;
    int intermediate_size = 4304;
    int num_hidden_layers = 27;
    int num_attention_heads = 16;
    int num_channels = 3;
    int image_size = 384;
    int patch_size = 14;
    int spatial_merge_size = 2;
    float layer_norm_eps = 1e-6f;
    std::string hidden_act = "gelu_pytorch_tanh";
    float rope_theta = 10000.0f;

    int head_dim() const { return hidden_size / num_attention_heads; }
    // Values of one flattened patch, the patch embedding's input.
    int64_t patch_dim() const { return int64_t{num_channels} * patch_size * patch_size; }
};

struct TextConfig {
    int vocab_size = 103424;
    int hidden_size = 1024;
    int intermediate_size = 3072;
    int num_hidden_layers = 18;
    int num_attention_heads = 16;
    int num_key_value_heads = 2;
    int head_dim = 128;
    int max_position_embeddings = 131072;
    float rms_norm_eps = 1e-5f;
    float rope_theta = 500000.0f;
    std::array<int, 3> mrope_section{16, 24, 24};  // temporal, height, width; sums to head_dim / 2
    bool tie_word_embeddings = true;
    bool use_bias = false;
    std::string hidden_act = "silu";
    int pad_token_id = 0;  // -1 where config.json sets it to null
    int bos_token_id = 1;  // -1 where config.json sets it to null
    std::vector<int> eos_token_ids{2};
};

struct ModelConfig {
    std::string model_type = "paddleocr_vl";
    TextConfig text;
    VisionConfig vision;
    int image_token_id = 100295;
    int video_token_id = 100296;
    int vision_start_token_id = 101305;
    int vision_end_token_id = 101306;
};

// `origin` names the file in error messages.
ModelConfig parse_model_config(std::string_view json_text, const std::string& origin);
ModelConfig load_model_config(const std::filesystem::path& config_json);

}  // namespace folio
