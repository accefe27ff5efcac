#include "cli-options.h"

#include <algorithm>

#ifdef FOLIO_WITH_CUDA
#include "backend-cuda.h"
#endif

namespace folio::cli {

const char* const kEngineUsage =
    R"(engine options (FastDeploy's names; --max-num-seqs defaults to 8 on the CPU):
  --max-model-len N  --max-num-seqs N  --max-num-batched-tokens N  --block-size N
  --gpu-memory-utilization F  --enable-prefix-caching on|off  --enable-chunked-prefill on|off
  --limit-mm-per-prompt N  --num-gpu-blocks-override N  --use-cudagraph on|off  --async-scheduling on|off
  --quantization none|wint8|wint4  --quant-group-size 64|128  --quantize-vision on|off
  --dtype float32|bfloat16 (weights not quantized; bfloat16 by default on the GPU)
)";

namespace {

const std::initializer_list<const char*> kEngineFlags = {"--max-model-len",
                                                         "--max-num-seqs",
                                                         "--max-num-batched-tokens",
                                                         "--block-size",
                                                         "--gpu-memory-utilization",
                                                         "--enable-prefix-caching",
                                                         "--enable-chunked-prefill",
                                                         "--limit-mm-per-prompt",
                                                         "--num-gpu-blocks-override",
                                                         "--use-cudagraph",
                                                         "--async-scheduling",
                                                         "--quantization",
                                                         "--quant-group-size",
                                                         "--quantize-vision",
                                                         "--dtype"};

}  // namespace

// "WxH" -> {W, H}, each at least 28 (two patches).
std::pair<int, int> parse_size(const std::string& text, const char* flag) {
    const auto x = text.find('x');
    try {
        size_t n_w = 0, n_h = 0;
        const int w = std::stoi(text.substr(0, x), &n_w);
        const int h = std::stoi(text.substr(x + 1), &n_h);
        if (x != std::string::npos && n_w == x && n_h == text.size() - x - 1 && w >= 28 && h >= 28) {
            return {w, h};
        }
    } catch (const std::exception&) {
    }
    fail(flag, " expects WxH of at least 28x28, got '", text, "'");
}

bool parse_switch(const Options& opt, const std::string& flag, bool fallback) {
    if (!opt.has(flag)) {
        return fallback;
    }
    const std::string v = opt.text(flag);
    if (v == "on" || v == "true" || v == "1") {
        return true;
    }
    if (v == "off" || v == "false" || v == "0") {
        return false;
    }
    fail("option ", flag, " expects on or off, got '", v, "'");
}

EngineConfig engine_config(const Options& opt, const ModelConfig& cfg) {
    EngineConfig c;
    if (opt.text("--device", "cpu") == "cpu") {
        c.max_num_seqs =
            8;  // the CPU backend gains little from more, and its cache is planned for all of them
    }
    c.max_model_len =
        opt.integer("--max-model-len", std::min<int64_t>(c.max_model_len, cfg.text.max_position_embeddings));
    c.max_num_seqs = opt.integer("--max-num-seqs", c.max_num_seqs);
    c.max_num_batched_tokens = opt.integer("--max-num-batched-tokens", c.max_num_batched_tokens);
    c.block_size = opt.integer("--block-size", c.block_size);
    c.gpu_memory_utilization = opt.real("--gpu-memory-utilization", c.gpu_memory_utilization);
    c.enable_prefix_caching = parse_switch(opt, "--enable-prefix-caching", c.enable_prefix_caching);
    c.enable_chunked_prefill = parse_switch(opt, "--enable-chunked-prefill", c.enable_chunked_prefill);
    c.limit_mm_per_prompt = opt.integer("--limit-mm-per-prompt", c.limit_mm_per_prompt);
    c.num_gpu_blocks_override = opt.integer("--num-gpu-blocks-override", c.num_gpu_blocks_override);
    c.use_cudagraph = parse_switch(opt, "--use-cudagraph", c.use_cudagraph);
    c.async_scheduling = parse_switch(opt, "--async-scheduling", c.async_scheduling);
    return c;
}

ModelLoadParams load_params(const Options& opt) {
    ModelLoadParams p;
    p.quantization = parse_quantization(opt.text("--quantization", "none"));
    p.group_size = opt.integer("--quant-group-size", p.group_size);
    p.quantize_vision = parse_switch(opt, "--quantize-vision", p.quantize_vision);
    // bfloat16 weights by default on the GPU, float32 on the CPU reference backend.
    const std::string dtype =
        opt.text("--dtype", opt.text("--device", "cpu") == "cpu" ? "float32" : "bfloat16");
    if (dtype != "float32" && dtype != "bfloat16") {
        fail("--dtype expects float32 or bfloat16, got '", dtype, "'");
    }
    p.bf16_weights = dtype == "bfloat16";
    if (p.quantization == Quantization::Wint4 && p.group_size != 64 && p.group_size != 128) {
        fail("--quant-group-size must be 64 or 128, got ", p.group_size);
    }
    return p;
}

std::vector<const char*> with_engine_flags(std::initializer_list<const char*> flags) {
    std::vector<const char*> all(flags);
    all.insert(all.end(), kEngineFlags.begin(), kEngineFlags.end());
    return all;
}

// --device cpu (default) or cuda[:N].
std::unique_ptr<Backend> make_backend(const Options& opt) {
    const std::string device = opt.text("--device", "cpu");
    if (device == "cpu") {
        return make_cpu_backend(static_cast<int>(opt.integer("--threads", 0)));
    }
#ifdef FOLIO_WITH_CUDA
    if (device == "cuda" || device.starts_with("cuda:")) {
        int index = 0;
        if (device.size() > 5) {
            try {
                size_t used = 0;
                index = std::stoi(device.substr(5), &used);
                if (used != device.size() - 5) {
                    index = -1;
                }
            } catch (const std::exception&) {
                index = -1;
            }
        }
        if (index < 0) {
            fail("--device expects cpu, cuda or cuda:N, got '", device, "'");
        }
        return make_cuda_backend(index);
    }
    fail("--device expects cpu, cuda or cuda:N, got '", device, "'");
#else
    fail("--device ", device, " is not available in this build (devices: cpu)");
#endif
}

}  // namespace folio::cli
