// config.json of a Llama-architecture checkpoint (model_type "llama", LlamaForCausalLM; DeepSeek-R1-Distill-
// Llama-8B), as transformers 5.17's LlamaConfig reads it, and the rotary frequencies its rope type makes:
// default, linear, and llama3 (Llama 3.1's long-context scaling).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

enum class LlamaRopeType { Default, Linear, Llama3 };

struct LlamaRope {
    LlamaRopeType type = LlamaRopeType::Default;
    double theta = 10000.0;
    double factor = 1.0;  // linear and llama3
    // llama3: frequencies whose wavelength is above original_max_position_embeddings / low_freq_factor are
    // divided by factor, those below original_max_position_embeddings / high_freq_factor kept, those between
    // blended.
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    int64_t original_max_position_embeddings = 8192;
};

struct LlamaConfig {
    int64_t vocab_size = 32000;
    int64_t hidden_size = 4096;
    int64_t intermediate_size = 11008;
    int num_hidden_layers = 32;
    int num_attention_heads = 32;
    int num_key_value_heads = 32;
    int head_dim = 128;
    int64_t max_position_embeddings = 2048;
    float rms_norm_eps = 1e-6f;
    LlamaRope rope;
    bool tie_word_embeddings = false;
    bool attention_bias = false;
    bool mlp_bias = false;
    std::string hidden_act = "silu";
    int bos_token_id = 1;  // -1 where null
    int pad_token_id = -1;
    std::vector<int> eos_token_ids{2};
};

// Throws folio::Error naming origin and the key at fault: another model_type, sizes that do not fit
// (heads that do not divide, an odd head_dim), a rope type other than default, linear and llama3 (named),
// ids outside the vocabulary. rope_parameters (transformers 5) is read before rope_theta and rope_scaling.
LlamaConfig parse_llama_config(std::string_view json_text, const std::string& origin);
LlamaConfig load_llama_config(const std::string& path);
// DeepSeek-R1-Distill-Llama-8B's architecture with `overrides` (a JSON object of config.json keys: fewer
// layers, say) in place: the full-size model of random weights.
LlamaConfig llama_full_size_config(std::string_view overrides = "{}");

// The head's head_dim / 2 inverse frequencies, 1 / theta^(2i / head_dim) scaled as the rope type says,
// computed in double and rounded once.
std::vector<float> llama_rope_inverse_frequencies(const LlamaConfig& config);

}  // namespace folio
