// Fuzzes the config.json (PaddleOCR-VL, Llama, ERNIE-4.5-VL), preprocessor_config.json and
// generation_config.json parsers: any input either gives a config that satisfies the documented invariants,
// or throws folio::Error.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string_view>
#include <utility>

#include "engine/common/error.h"
#include "engine/image/image-preprocess.h"
#include "engine/image/image.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/generation-config.h"
#include "engine/models/llama/config.h"
#include "engine/models/paddleocr-vl/config.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

void check_model_config(const folio::ModelConfig& config) {
    const folio::TextConfig& t = config.text;
    const folio::VisionConfig& v = config.vision;
    check(t.vocab_size > 0 && t.hidden_size > 0 && t.num_hidden_layers > 0 && t.intermediate_size > 0);
    check(t.num_attention_heads > 0 && t.num_key_value_heads > 0 &&
          t.num_attention_heads % t.num_key_value_heads == 0);
    check(t.head_dim > 0 && t.head_dim % 2 == 0);
    check(std::accumulate(t.mrope_section.begin(), t.mrope_section.end(), 0) == t.head_dim / 2);
    check(t.rms_norm_eps > 0 && t.rope_theta > 0);
    for (const int id : t.eos_token_ids) {
        check(id >= 0 && id < t.vocab_size);
    }
    check(t.pad_token_id >= -1 && t.pad_token_id < t.vocab_size);
    check(t.bos_token_id >= -1 && t.bos_token_id < t.vocab_size);
    for (const int id : {config.image_token_id, config.video_token_id, config.vision_start_token_id,
                         config.vision_end_token_id}) {
        check(id >= 0 && id < t.vocab_size);
    }
    check(v.hidden_size > 0 && v.num_attention_heads > 0 && v.hidden_size % v.num_attention_heads == 0);
    check(v.head_dim() % 4 == 0 && v.patch_size > 0 && v.image_size >= v.patch_size);
    check(v.spatial_merge_size > 0 && v.layer_norm_eps > 0 && v.rope_theta > 0);
}

void check_llama_config(const folio::LlamaConfig& c) {
    check(c.vocab_size > 0 && c.hidden_size > 0 && c.intermediate_size > 0 && c.num_hidden_layers > 0);
    check(c.num_attention_heads > 0 && c.num_key_value_heads > 0 &&
          c.num_attention_heads % c.num_key_value_heads == 0);
    check(c.head_dim > 0 && c.head_dim % 2 == 0 && c.rms_norm_eps > 0 && c.rope.theta > 0 &&
          c.rope.factor > 0);
    for (const int id : c.eos_token_ids) {
        check(id >= 0 && id < c.vocab_size);
    }
    check(c.bos_token_id >= -1 && c.bos_token_id < c.vocab_size);
    if (c.head_dim <= 4096) {
        for (const float f : folio::llama_rope_inverse_frequencies(c)) {
            check(f == f);  // no NaN
        }
    }
}

void check_preprocessor_config(const folio::PreprocessorConfig& config) {
    check(config.min_pixels > 0 && config.min_pixels <= config.max_pixels);
    check(config.max_pixels <= folio::kMaxPreprocessorPixels);
    check(config.patch_size > 0 && config.merge_size > 0 && config.temporal_patch_size > 0);
    check(config.rescale_factor > 0 && config.resample >= 0 && config.resample <= 5);
    for (const float s : config.image_std) {
        check(s > 0);
    }
    // The grids images and videos of a few sizes take (what a prompt's placeholders are counted by): a
    // grid of whole patches within the largest image, or an error.
    for (const auto& [width, height] : {std::pair{1, 1}, std::pair{37, 1000}, std::pair{3000, 20}}) {
        for (const int64_t n_frames : {int64_t{0}, int64_t{1}, int64_t{5}}) {
            try {
                const folio::ImageGrid grid =
                    n_frames == 0 ? folio::image_grid(width, height, config, "image")
                                  : folio::video_grid(width, height, n_frames, config, "video");
                check(grid.t >= 1 && grid.h >= 1 && grid.w >= 1);
                check(grid.h * grid.w * config.patch_size * config.patch_size <= folio::kMaxImagePixels);
                check(grid.t * config.temporal_patch_size >= n_frames);
            } catch (const folio::Error&) {
            }
        }
    }
}

void check_ernie_config(const folio::Ernie45VlConfig& c) {
    const folio::Ernie45VlTextConfig& t = c.text;
    check(t.vocab_size > 0 && t.hidden_size > 0 && t.intermediate_size > 0 && t.num_hidden_layers > 0);
    check(t.num_attention_heads > 0 && t.num_key_value_heads > 0 &&
          t.num_attention_heads % t.num_key_value_heads == 0);
    check(t.head_dim > 0 && t.head_dim % 2 == 0 &&
          t.mrope_section[0] + t.mrope_section[1] + t.mrope_section[2] == t.head_dim / 2);
    check(t.rms_norm_eps > 0 && std::isfinite(t.rms_norm_eps) && t.rope_theta > 0 &&
          std::isfinite(t.rope_theta) && t.max_position_embeddings > 0);
    check(t.n_experts > 0 && t.n_experts_per_token > 0 && t.n_experts_per_token <= t.n_experts &&
          t.n_shared_experts >= 0 && t.moe_intermediate_size[0] > 0 && t.moe_intermediate_size[1] > 0);
    check(t.moe_norm_min > 0 && std::isfinite(t.moe_norm_min));
    check(t.sparse_layers.size() == static_cast<size_t>(t.num_hidden_layers));
    for (const int32_t id : t.eos_token_ids) {
        check(id >= 0 && id < t.vocab_size);
    }
    check(t.bos_token_id >= -1 && t.bos_token_id < t.vocab_size);
    for (const int32_t id : {c.image_token_id, c.image_start_token_id, c.image_end_token_id, c.video_token_id,
                             c.video_start_token_id, c.video_end_token_id}) {
        check(id >= 0 && id < t.vocab_size);
    }
    const folio::Ernie45VlVisionConfig& v = c.vision;
    check(v.depth > 0 && v.hidden_size > 0 && v.intermediate_size > 0 && v.num_heads > 0 &&
          v.hidden_size % v.num_heads == 0 && v.head_dim() % 4 == 0);
    check(v.in_channels > 0 && v.patch_size > 0 && v.spatial_merge_size > 0 && v.temporal_merge_size == 2);
    check(v.eps > 0 && std::isfinite(v.eps) && v.rope_theta > 0 && std::isfinite(v.rope_theta));
}

void check_generation_defaults(const folio::GenerationDefaults& d) {
    check(!d.temperature || (*d.temperature >= 0 && std::isfinite(*d.temperature)));
    check(!d.top_p || (*d.top_p > 0 && *d.top_p <= 1));
    check(!d.top_k || *d.top_k >= 0);
    check(!d.repetition_penalty || (*d.repetition_penalty > 0 && std::isfinite(*d.repetition_penalty)));
    check(!d.max_new_tokens || *d.max_new_tokens >= 1);
    for (const int32_t id : d.eos_token_ids) {
        check(id >= 0);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        check_model_config(folio::parse_model_config(text, "config.json"));
    } catch (const folio::Error&) {
    }
    try {
        check_llama_config(folio::parse_llama_config(text, "config.json"));
    } catch (const folio::Error&) {
    }
    try {
        check_ernie_config(folio::parse_ernie45_vl_config(text, "config.json"));
    } catch (const folio::Error&) {
    }
    try {
        check_generation_defaults(folio::parse_generation_config(text, "generation_config.json"));
    } catch (const folio::Error&) {
    }
    try {
        check_preprocessor_config(folio::parse_preprocessor_config(text, "preprocessor_config.json"));
    } catch (const folio::Error&) {
    }
    return 0;
}
