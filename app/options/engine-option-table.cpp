#include "app/options/engine-options.h"

#include <algorithm>
#include <array>
#include <sstream>

namespace folio::cli {

namespace {

constexpr std::string_view kModel = "Model Configuration";
constexpr std::string_view kParallel = "Parallel Configuration";
constexpr std::string_view kCache = "Cache Configuration";
constexpr std::string_view kPerformance = "Performance Tuning";
constexpr std::string_view kSplitwise = "Splitwise Deployment";
constexpr std::string_view kServer = "Server";
constexpr std::string_view kFolio = "Folio's own";

using enum ValueKind;
using enum OptionStatus;

// FastDeploy's parameter reference (docs/parameters.md), grouped as its --help groups them, then Folio's own.
constexpr std::array kTable = std::to_array<EngineOptionInfo>({
    {"tokenizer", kModel, Text, Implemented, "DIR", "the --model folder",
     "tokenizer folder (generate; bench --document, where it lets random weights take prompts)"},
    {"revision", kModel, Text, Refused, "REV", "master",
     "only master: the model is read from --model; folio-cli model pull --revision downloads another"},
    {"max_model_len", kModel, Integer, Implemented, "N", "16384, or the model's context if less",
     "prompt plus output tokens of a request; 16 up to the model's context"},
    {"block_size", kModel, Integer, Implemented, "N", "64", "tokens per KV-cache block"},
    {"use_warmup", kModel, Integer, NoEffect, "0|1", "0",
     "no effect: the engine always profiles a prefill and records its decode graphs at start"},
    {"limit_mm_per_prompt", kModel, Json, Implemented, "'{\"image\": N, \"video\": M}'|N",
     "{\"image\": 4, \"video\": 1}", "images and videos per request, each counted alone (a number: images)"},
    {"mm_processor_kwargs", kModel, Json, Implemented, "'{\"image_min_pixels\": N, \"video_fps\": F, ...}'",
     "preprocessor_config.json's",
     "pixel bounds of each image's resize; generate: video_fps, video_min_frames, video_max_frames sample "
     "video "
     "files (other video_* keys: no effect)"},
    {"enable_mm", kModel, Switch, NoEffect, "", "on", "no effect: implied by the multimodal model"},
    {"reasoning_parser", kModel, Text, Implemented, "deepseek_r1|ernie-45-vl", "none",
     "serve: chat answers carry reasoning_content beside content (generate prints the whole text)"},
    {"chat_template", kModel, Text, Implemented, "FILE|TEMPLATE", "the model's",
     "a Jinja chat template (a file, or the template's text) in place of the model folder's"},
    {"generation_config", kModel, Text, Implemented, "auto|vllm|DIR", "auto",
     "vLLM's: request defaults from the model folder's generation_config.json (auto), none (vllm), or DIR's"},
    {"tool_call_parser", kModel, Text, NoEffect, "ernie-45-vl-thinking|ernie_x1", "none",
     "no effect: requests with tools are refused, so answers hold no tool calls (other parsers: refused)"},
    {"tool_parser_plugin", kModel, Text, Refused, "FILE", "none", "refused: no tool calls yet"},
    {"speculative_config", kModel, Json, Refused, "'{\"method\": ...}'", "none",
     "refused with a method: no speculative decoding yet"},
    {"dynamic_load_weight", kModel, Switch, Refused, "", "off", "refused on: weights are not reloaded"},
    {"quantization", kModel, Text, Implemented, "none|wint8|wint4|'{\"quantization\": ...}'", "none",
     "weight-only quantization of the language model's linear layers"},
    {"use_cudagraph", kModel, Switch, Implemented, "", "on", "decode steps replayed as CUDA graphs (GPU)"},
    {"graph_optimization_config", kModel, Json, Implemented,
     "'{\"use_cudagraph\": B, \"cudagraph_capture_sizes\": [N, ...]}'", "{\"use_cudagraph\": true}",
     "CUDA graphs and their batch sizes (graph_opt_level: no effect)"},
    {"guided_decoding_backend", kModel, Text, Refused, "off|auto|xgrammar|guidance", "off",
     "only off: no guided decoding yet"},
    {"guided_decoding_disable_any_whitespace", kModel, Switch, NoEffect, "", "off",
     "no effect: no guided decoding"},
    {"enable_logprob", kModel, Switch, Refused, "", "off", "refused on: no log probabilities yet"},
    {"lm_head_fp32", kModel, Switch, Implemented, "", "off",
     "LM head in float32: needs float32 weights (--dtype float32)"},

    {"tensor_parallel_size", kParallel, Integer, Implemented, "N", "1",
     "each engine's generative models split over N devices (-tp N): attention heads, MLP columns and "
     "experts; "
     "decode steps run unrecorded"},
    {"data_parallel_size", kParallel, Integer, Implemented, "N", "1",
     "a copy of the models on each of N devices (cuda:0..N-1, or --devices LIST), requests routed among "
     "them"},
    {"enable_expert_parallel", kParallel, Switch, NoEffect, "", "off",
     "no effect: on one GPU the expert-parallel degree is 1"},
    {"disable_custom_all_reduce", kParallel, Switch, NoEffect, "", "off",
     "no effect: the all-reduce is NCCL's (or the host's)"},
    {"enable_custom_all_reduce", kParallel, Switch, NoEffect, "", "off",
     "no effect: the all-reduce is NCCL's (or the host's)"},
    {"max_num_seqs", kParallel, Integer, Implemented, "N", "256 (8 on the CPU)",
     "sequences per step, 1..256"},
    {"num_gpu_blocks_override", kParallel, Integer, Implemented, "N", "planned from memory",
     "KV-cache blocks, at least one max_model_len sequence's"},
    {"max_num_batched_tokens", kParallel, Integer, Implemented, "N",
     "8192 (max_model_len without chunked prefill)",
     "tokens per step: at least max_num_seqs, at most max_model_len x max_num_seqs"},
    {"gpu_memory_utilization", kParallel, Real, Implemented, "F", "0.9", "fraction of device memory, (0, 1]"},

    {"kv_cache_ratio", kCache, Real, NoEffect, "F", "0.75",
     "no effect: prefill and decode share one block pool; (0, 1]"},
    {"swap_space", kCache, Real, Refused, "GB", "none",
     "only 0: no host-memory KV swap, preempted sequences are recomputed"},
    {"static_decode_blocks", kCache, Integer, NoEffect, "N", "2",
     "no effect: decoding takes blocks as it needs them"},

    {"enable_prefix_caching", kPerformance, Switch, Implemented, "", "on", "share cached prompt prefixes"},
    {"enable_chunked_prefill", kPerformance, Switch, Implemented, "", "on",
     "split long prompts across steps"},
    {"max_num_partial_prefills", kPerformance, Integer, NoEffect, "N", "1",
     "no effect: each step's budget is filled first come first served"},
    {"max_long_partial_prefills", kPerformance, Integer, NoEffect, "N", "1",
     "no effect; at most max_num_partial_prefills"},
    {"long_prefill_token_threshold", kPerformance, Integer, NoEffect, "N", "max_model_len x 0.04",
     "no effect; below max_model_len"},

    {"splitwise_role", kSplitwise, Text, Refused, "mixed|prefill|decode", "mixed",
     "only mixed: no disaggregated prefill and decode"},
    {"innode_prefill_ports", kSplitwise, Text, ServeOnly, "PORT[,PORT...]", "none",
     "serve only, no effect there (no disaggregated prefill)"},

    {"host", kServer, Text, ServeOnly, "ADDRESS", "127.0.0.1",
     "address to listen on (0.0.0.0: every interface)"},
    {"port", kServer, Integer, ServeOnly, "PORT", "8180", "HTTP port"},
    {"metrics_port", kServer, Integer, ServeOnly, "PORT", "8471", "metrics port (Prometheus' /metrics)"},
    {"api_key", kServer, Text, ServeOnly, "KEY", "none", "clients must send Authorization: Bearer KEY"},
    {"allow_image_urls", kServer, Switch, ServeOnly, "", "off", "fetch http(s) image URLs in requests"},
    {"engine_worker_queue_port", kServer, Text, ServeOnly, "PORT[,PORT...]", "none",
     "no effect: the engine runs in the server's process"},
    {"cache_queue_port", kServer, Text, ServeOnly, "PORT[,PORT...]", "none",
     "no effect: the KV cache lives in the server's process"},
    {"max_waiting_time", kServer, Integer, ServeOnly, "SECONDS", "-1",
     "a request waits this long for a place, then 429; -1: no limit"},
    {"max_concurrency", kServer, Integer, ServeOnly, "N", "512",
     "requests served at once (as many more may wait)"},
    {"max_connections", kServer, Integer, ServeOnly, "N", "max_concurrency x 2 + 64",
     "connections open at once, idle and slow ones included"},
    {"metrics_host", kServer, Text, ServeOnly, "ADDRESS", "127.0.0.1", "address the metrics port listens on"},
    {"max_decode_threads", kServer, Integer, ServeOnly, "N", "4",
     "images decoded at once, whatever the requests"},
    {"max_image_pixels", kServer, Integer, ServeOnly, "N", "the processor's max_pixels x 36",
     "larger images are refused from their header, before decoding"},
    {"log_requests", kServer, Switch, ServeOnly, "", "off",
     "a log line per request: method, path, status, tokens, time"},
    {"served_model_name", kServer, Text, ServeOnly, "NAME", "the --model folder's name",
     "model name in the API"},

    {"async_scheduling", kFolio, Switch, FolioSpecific, "", "on",
     "each step queued while the one before runs"},
    {"quant_group_size", kFolio, Integer, FolioSpecific, "64|128", "128", "WINT4 group size"},
    {"quantize_vision", kFolio, Switch, FolioSpecific, "[fp8]", "off",
     "quantize the vision encoder too; fp8: its linear layers in FP8 (E4M3, a scale a channel and a row) on "
     "GPUs of compute capability 8.9 and later"},
    {"dtype", kFolio, Text, FolioSpecific, "float32|bfloat16", "bfloat16 on the GPU, float32 on the CPU",
     "weights left unquantized"},
    {"layout_precision", kFolio, Text, FolioSpecific, "float32|tf32|bfloat16", "tf32",
     "how the layout model's convolutions round their inputs on the GPU: TF32 as torch does by default, "
     "bfloat16 (its linear layers too) faster with a larger error (docs/performance.md), float32 exact"},
    {"kv_cache_dtype", kFolio, Text, FolioSpecific, "auto|int8", "auto",
     "vLLM's: int8 keeps keys and values as 8-bit levels with a scale a token and head, about half the "
     "bytes of bfloat16"},
});

}  // namespace

std::span<const EngineOptionInfo> engine_option_table() {
    return kTable;
}

std::string flag_of(std::string_view name) {
    std::string flag = "--" + std::string(name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

const EngineOptionInfo* find_engine_option(std::string_view flag) {
    for (const EngineOptionInfo& info : kTable) {
        if (flag_of(info.name) == flag) {
            return &info;
        }
    }
    return nullptr;
}

bool is_engine_switch(std::string_view flag) {
    const EngineOptionInfo* info = find_engine_option(flag);
    return info != nullptr && info->kind == ValueKind::Switch;
}

std::vector<std::string> engine_flags() {
    std::vector<std::string> flags;
    for (const EngineOptionInfo& info : kTable) {
        flags.push_back(flag_of(info.name));
    }
    return flags;
}

std::string engine_usage(CommandScope scope) {
    constexpr size_t kIndent = 44;  // where each option's help begins
    constexpr size_t kWidth = 110;  // the lines' width, as the rest of the usage
    const char* serve_note =
        scope == CommandScope::Serve ? "" : " (folio-cli serve only; refused by this command)";
    std::ostringstream out;
    out << "engine options (FastDeploy's names and formats: --name value or --name=value, switches bare or\n"
           "true/false/on/off, --no-NAME; docs/fastdeploy-options.md lists each option's status):\n"
           "  device:\n"
           "    --device-memory SIZE                    plan and allocate as if the CUDA device had SIZE\n"
           "                                            (8GiB, 12G, 4096M): a smaller card on a larger one\n"
           "    --devices LIST                          a copy of the models on each device, in place of\n"
           "                                            --device: cuda:N or N, or cpu, separated by commas\n"
           "                                            (0,1: two cards; 0,0: two engines sharing one)\n";
    std::string_view group;
    for (const EngineOptionInfo& info : kTable) {
        if (info.group != group) {
            out << "  " << info.group << (info.group == kServer ? serve_note : "") << ":\n";
            group = info.group;
        }
        std::string left = "    ";
        left.append(flag_of(info.name));
        if (!info.value.empty()) {
            left.push_back(' ');
            left.append(info.value);
        }
        out << left;
        if (left.size() < kIndent) {
            out << std::string(kIndent - left.size(), ' ');
        } else {
            out << "\n" << std::string(kIndent, ' ');
        }
        // The help and its default as words filling the column up to kWidth, each further line indented.
        const std::string text = std::string(info.help) + " [" + std::string(info.folio_default) + "]";
        size_t column = kIndent;
        size_t start = 0;
        while (start < text.size()) {
            size_t end = text.find(' ', start);
            end = end == std::string::npos ? text.size() : end;
            const size_t word = end - start;
            if (column > kIndent && column + 1 + word > kWidth) {
                out << "\n" << std::string(kIndent, ' ');
                column = kIndent;
            } else if (column > kIndent) {
                out << ' ';
                ++column;
            }
            out << std::string_view(text).substr(start, word);
            column += word;
            start = end + 1;
        }
        out << "\n";
    }
    return out.str();
}

}  // namespace folio::cli
