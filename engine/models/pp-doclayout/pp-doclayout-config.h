// PP-DocLayoutV2's and PP-DocLayoutV3's config.json and preprocessor_config.json (transformers 5.17's
// PPDocLayoutV2Config / PPDocLayoutV3Config with their HGNetV2 backbone_config, and the image processors'
// settings) as typed, validated structs. A key that is absent takes transformers' default.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/activation.h"

namespace folio {

enum class LayoutModelKind { V2, V3 };

const char* layout_model_name(LayoutModelKind kind);

// HGNetV2 (transformers' HGNetV2Config): a stem of five convolutions, then stages of blocks whose layers'
// outputs are concatenated and squeezed by two 1x1 convolutions.
struct HgnetConfig {
    std::vector<int> stem_channels{3, 32, 48};     // input, stem width, stem output
    std::vector<int> stem_strides{2, 1, 1, 2, 1};  // stem1, stem2a, stem2b, stem3, stem4
    std::vector<int> stage_in_channels{48, 128, 512, 1024};
    std::vector<int> stage_mid_channels{48, 96, 192, 384};
    std::vector<int> stage_out_channels{128, 512, 1024, 2048};
    std::vector<int> stage_num_blocks{1, 1, 3, 1};
    std::vector<bool> stage_downsample{false, true, true, true};
    std::vector<int> stage_downsample_strides{2, 2, 2, 2};
    std::vector<bool> stage_light_block{false, false, true, true};
    std::vector<int> stage_kernel_size{3, 3, 5, 5};
    std::vector<int> stage_num_layers{6, 6, 6, 6};
    Activation hidden_act = Activation::Relu;  // the stem's activation
    // The stages whose outputs the detector takes (0-based; "stage1" is 0).
    std::vector<int> out_stages;
};

// V2's reading-order network (PPDocLayoutV2ReadingOrderConfig): LayoutLMv3-style layers over the detected
// boxes with a relative 2D position bias, and a global-pointer head.
struct ReadingOrderConfig {
    int hidden_size = 512;
    int num_attention_heads = 8;
    int intermediate_size = 2048;
    int num_hidden_layers = 6;
    Activation hidden_act = Activation::Gelu;
    float layer_norm_eps = 1e-5f;
    int max_position_embeddings = 514;
    int max_2d_position_embeddings = 1024;
    int type_vocab_size = 1;
    int vocab_size = 4;
    int start_token_id = 0;
    int pad_token_id = 1;
    int end_token_id = 2;
    int pred_token_id = 3;
    int coordinate_size = 171;
    int shape_size = 170;
    int num_classes = 20;
    int relation_bias_embed_dim = 16;
    float relation_bias_theta = 10000.0f;
    float relation_bias_scale = 100.0f;
    int global_pointer_head_size = 64;
    bool has_relative_attention_bias = false;
    bool has_spatial_attention_bias = true;
};

struct PpDocLayoutConfig {
    LayoutModelKind kind = LayoutModelKind::V3;
    HgnetConfig backbone;
    std::vector<std::string> labels;  // id2label in id order; num_labels = labels.size()

    // Hybrid encoder.
    int encoder_hidden_dim = 256;
    std::vector<int> encoder_in_channels{512, 1024, 2048};
    std::vector<int> feat_strides{8, 16, 32};
    int encoder_layers = 1;
    int encoder_ffn_dim = 1024;
    int encoder_attention_heads = 8;
    std::vector<int> encode_proj_layers{2};
    float positional_encoding_temperature = 10000.0f;
    Activation encoder_activation = Activation::Gelu;
    Activation activation = Activation::Silu;  // the encoder's convolutions
    bool has_eval_size = false;                // an eval_size turns the AIFI position embedding off
    bool normalize_before = false;
    float hidden_expansion = 1.0f;

    // Decoder.
    int d_model = 256;
    int num_queries = 300;
    std::vector<int> decoder_in_channels{256, 256, 256};
    int decoder_ffn_dim = 1024;
    int num_feature_levels = 3;
    int decoder_n_points = 4;
    int decoder_layers = 6;
    int decoder_attention_heads = 8;
    Activation decoder_activation = Activation::Relu;
    std::optional<std::vector<int>> anchor_image_size;  // height, width

    float layer_norm_eps = 1e-5f;
    float batch_norm_eps = 1e-5f;

    // V3: the mask head and the global-pointer reading order.
    std::vector<int> mask_feature_channels{64, 64};
    int x4_feat_dim = 128;
    int num_prototypes = 32;
    bool mask_enhanced = true;
    int global_pointer_head_size = 64;

    // V2: which detections enter the reading order, and the reading-order network.
    std::vector<float> class_thresholds;  // [num_labels]
    std::vector<int> class_order;         // [num_labels], the reading-order class of each label
    ReadingOrderConfig reading_order;

    int num_labels() const { return static_cast<int>(labels.size()); }
};

// The image processor's settings (PPDocLayoutV2ImageProcessor / PPDocLayoutV3ImageProcessor).
struct LayoutPreprocessConfig {
    int height = 800;
    int width = 800;
    bool do_resize = true;
    int resample = 3;  // PIL's BICUBIC, the only resampling supported
    bool do_rescale = true;
    float rescale_factor = 1.0f / 255.0f;
    bool do_normalize = true;
    std::vector<float> image_mean{0.0f, 0.0f, 0.0f};
    std::vector<float> image_std{1.0f, 1.0f, 1.0f};
};

// Parsing throws std::runtime_error naming origin and the key that is wrong.
PpDocLayoutConfig parse_pp_doclayout_config(std::string_view json_text, const std::string& origin);
LayoutPreprocessConfig parse_layout_preprocess_config(std::string_view json_text, const std::string& origin);

// A layout model's folder: config.json, model.safetensors and preprocessor_config.json. A folder in Paddle's
// inference format (inference.json, inference.pdiparams, inference.yml) is refused with the name of the
// safetensors repository to use instead.
struct LayoutModelFiles {
    std::filesystem::path dir;
    PpDocLayoutConfig config;
    LayoutPreprocessConfig preprocess;
};

LayoutModelFiles open_layout_model_files(const std::filesystem::path& dir);

}  // namespace folio
