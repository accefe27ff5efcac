// ERNIE-4.5-VL's configuration (config.json of Ernie4_5_VLMoeForConditionalGeneration, model_type
// ernie4_5_vl_moe): the ERNIE-4.5 mixture-of-experts decoder with its text and vision expert pools, the
// vision transformer and the resampler that merges its patches, and the multimodal tokens.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

struct Ernie45VlTextConfig {
    int64_t vocab_size = 103424;
    int64_t hidden_size = 2560;
    int64_t intermediate_size = 12288;  // the dense layers' MLP
    int num_hidden_layers = 28;
    int num_attention_heads = 20;
    int num_key_value_heads = 4;
    int64_t head_dim = 128;
    float rms_norm_eps = 1e-5f;
    int64_t max_position_embeddings = 131072;
    float rope_theta = 500000.0f;
    // Frequencies that turn with height, width and time: the first two interleaved (h, w, h, w, ...), time
    // after them.
    std::array<int, 3> mrope_section = {22, 22, 20};
    bool use_bias = false;
    bool tie_word_embeddings = true;
    // The mixture of experts: each pool (text, vision) has n_experts experts of its own intermediate size and
    // a router; every token also passes the shared experts (n_shared times the text experts' size).
    int n_experts = 64;
    int n_experts_per_token = 6;
    std::array<int64_t, 2> moe_intermediate_size = {1536, 512};
    int n_shared_experts = 2;
    float moe_norm_min = 1e-12f;
    std::vector<bool> sparse_layers;  // [num_hidden_layers]: the mixture of experts in place of the MLP
    int32_t bos_token_id = -1;
    std::vector<int32_t> eos_token_ids;
};

struct Ernie45VlVisionConfig {
    int depth = 32;
    int64_t hidden_size = 1280;
    int64_t intermediate_size = 5120;
    int num_heads = 16;
    int in_channels = 3;
    int patch_size = 14;
    int spatial_merge_size = 2;
    int temporal_merge_size = 2;
    float eps = 1e-6f;  // the LayerNorms' (rms_norm_eps in config.json)
    float rope_theta = 10000.0f;
    std::string hidden_act = "quick_gelu";

    int64_t head_dim() const { return hidden_size / num_heads; }
    int64_t patch_dim() const { return int64_t{in_channels} * patch_size * patch_size; }
};

struct Ernie45VlConfig {
    std::string model_type = "ernie4_5_vl_moe";
    Ernie45VlTextConfig text;
    Ernie45VlVisionConfig vision;
    int32_t image_token_id = 100295;
    int32_t image_start_token_id = 101304;
    int32_t image_end_token_id = 101305;
    int32_t video_token_id = 103367;
    int32_t video_start_token_id = 101306;
    int32_t video_end_token_id = 101307;
};

// Parses config.json's text; `origin` names the file in messages. Throws folio::Error naming the key and
// what is wrong for a value of the wrong type or out of range, or sizes that do not fit together.
Ernie45VlConfig parse_ernie45_vl_config(std::string_view text, const std::string& origin);
Ernie45VlConfig load_ernie45_vl_config(const std::filesystem::path& path);

}  // namespace folio
