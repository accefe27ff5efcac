#include "app/options/engine-options.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <sstream>

#include "app/options/cli-options.h"
#include "engine/backend/quantization.h"
#include "engine/chat-template/reasoning-parser.h"
#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"
#include "engine/image/image.h"
#include "engine/runtime/decode-graphs.h"

namespace folio::cli {

namespace {

// --chat-template's value: a file's path, or (as FastDeploy and vLLM take it) the template's own text.
ChatTemplate parse_chat_template_option(const std::string& value) {
    std::error_code error;
    if (std::filesystem::is_regular_file(value, error)) {
        return ChatTemplate::parse(read_file_text(value), value);
    }
    if (value.find("{{") != std::string::npos || value.find("{%") != std::string::npos) {
        return ChatTemplate::parse(value, "--chat-template");
    }
    fail("--chat-template: no file '", value, "', and the value is no template text (it has no {{ or {%)");
}

using JsonValue = nlohmann::json;

std::string lower(std::string_view text) {
    std::string s(text);
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string dump(const JsonValue& value) {
    return value.dump();
}

// The options on a command line, read by FastDeploy's names.
class Reader {
public:
    explicit Reader(const Options& opt) : opt_(opt) {}

    bool has(std::string_view name) const { return opt_.has(flag_of(name)); }
    std::string text(std::string_view name) const { return opt_.text(flag_of(name)); }

    bool flag(std::string_view name, bool fallback) const {
        if (!has(name)) {
            return fallback;
        }
        const std::string v = text(name);
        if (const auto b = parse_bool_word(v)) {
            return *b;
        }
        fail(flag_of(name), " expects true or false (or on/off), got '", v, "'");
    }

    int64_t integer(std::string_view name, int64_t fallback) const {
        if (!has(name)) {
            return fallback;
        }
        const std::string v = text(name);
        try {
            size_t used = 0;
            const long long n = std::stoll(v, &used);
            if (used == v.size()) {
                return n;
            }
        } catch (const std::exception&) {
        }
        fail(flag_of(name), " expects an integer, got '", v, "'");
    }

    double real(std::string_view name, double fallback) const {
        if (!has(name)) {
            return fallback;
        }
        const std::string v = text(name);
        try {
            size_t used = 0;
            const double x = std::stod(v, &used);
            if (used == v.size() && std::isfinite(x)) {
                return x;
            }
        } catch (const std::exception&) {
        }
        fail(flag_of(name), " expects a number, got '", v, "'");
    }

    // A JSON value as FastDeploy's json.loads reads it.
    JsonValue json(std::string_view name) const {
        const std::string v = text(name);
        std::string problem;
        std::optional<JsonValue> parsed = try_parse_json(v, problem);
        if (!parsed) {
            fail(flag_of(name), " expects JSON, got '", v, "' (", problem, ")");
        }
        return std::move(*parsed);
    }

    JsonValue object(std::string_view name) const {
        JsonValue parsed = json(name);
        if (!parsed.is_object()) {
            fail(flag_of(name), " expects a JSON object such as '{\"key\": value}', got '", text(name), "'");
        }
        return parsed;
    }

private:
    const Options& opt_;
};

int64_t json_integer(const JsonValue& value, std::string_view option, std::string_view key) {
    const std::optional<int64_t> n = json_int64(value);
    if (!n) {
        fail(flag_of(option), ": \"", key, "\" expects an integer, got ", dump(value));
    }
    return *n;
}

bool json_bool(const JsonValue& value, std::string_view option, std::string_view key) {
    if (!value.is_boolean()) {
        fail(flag_of(option), ": \"", key, "\" expects true or false, got ", dump(value));
    }
    return value.get<bool>();
}

// A comma-separated list of ports, each 1..65535.
void check_ports(const std::string& text, std::string_view option) {
    std::stringstream list(text);
    for (std::string item; std::getline(list, item, ',');) {
        int port = 0;
        try {
            size_t used = 0;
            port = std::stoi(item, &used);
            if (used != item.size()) {
                port = 0;
            }
        } catch (const std::exception&) {
        }
        if (port < 1 || port > 65535) {
            fail(flag_of(option), " expects ports 1..65535 separated by commas, got '", text, "'");
        }
    }
}

void parse_server_options(const Reader& r, EngineOptions& out) {
    for (const std::string_view name : {"port", "metrics_port"}) {
        if (r.has(name)) {
            const int64_t port = r.integer(name, 0);
            if (port < 0 || port > 65535) {
                fail(flag_of(name), " must be a port 1..65535 (0: any free port), got ", port);
            }
            (name == "port" ? out.port : out.metrics_port) = static_cast<int>(port);
        }
    }
    for (const std::string_view name :
         {"engine_worker_queue_port", "cache_queue_port", "innode_prefill_ports"}) {
        if (r.has(name)) {
            check_ports(r.text(name), name);
        }
    }
    out.max_waiting_time = r.integer("max_waiting_time", out.max_waiting_time);
    if (out.max_waiting_time < -1) {
        fail("--max-waiting-time must be -1 (no limit) or more, got ", out.max_waiting_time);
    }
    out.max_concurrency = r.integer("max_concurrency", out.max_concurrency);
    if (out.max_concurrency < 1) {
        fail("--max-concurrency must be at least 1, got ", out.max_concurrency);
    }
    if (r.has("served_model_name")) {
        out.served_model_name = r.text("served_model_name");
        if (out.served_model_name->empty()) {
            fail("--served-model-name must not be empty");
        }
    }
    out.max_connections = r.integer("max_connections", out.max_connections);
    if (r.has("max_connections") && out.max_connections < 1) {
        fail("--max-connections must be at least 1, got ", out.max_connections);
    }
    out.max_decode_threads = r.integer("max_decode_threads", out.max_decode_threads);
    if (out.max_decode_threads < 1 || out.max_decode_threads > 1024) {
        fail("--max-decode-threads must be 1 to 1024, got ", out.max_decode_threads);
    }
    out.max_image_pixels = r.integer("max_image_pixels", out.max_image_pixels);
    if (r.has("max_image_pixels") &&
        (out.max_image_pixels < 28 * 28 || out.max_image_pixels > kMaxImagePixels)) {
        fail("--max-image-pixels must be ", 28 * 28, " to ", kMaxImagePixels, ", got ", out.max_image_pixels);
    }
    out.log_requests = r.flag("log_requests", false);
    if (r.has("metrics_host")) {
        out.metrics_host = r.text("metrics_host");
        if (out.metrics_host.empty()) {
            fail("--metrics-host must name an address, for example 127.0.0.1 or 0.0.0.0");
        }
    }
    out.allow_image_urls = r.flag("allow_image_urls", false);
    if (r.has("host")) {
        out.host = r.text("host");
        if (out.host.empty()) {
            fail("--host must name an address, for example 127.0.0.1 or 0.0.0.0");
        }
    }
    if (r.has("api_key")) {
        out.api_key = r.text("api_key");
        if (out.api_key.empty()) {
            fail("--api-key must not be empty");
        }
    }
}

// The options Folio cannot honour yet, refused with what it cannot do.
void refuse_unsupported(const Reader& r, const ModelLoadParams& load) {
    if (r.has("revision") && lower(r.text("revision")) != "master") {
        fail(
            "--revision is not supported: Folio reads the model from the --model folder or repository as it "
            "is on disk (folio-cli model pull ORG/NAME --revision R downloads another revision; got '",
            r.text("revision"), "')");
    }
    // FastDeploy's tool-call parsers of the ERNIE models are accepted: requests that offer tools are refused
    // (400), so no answer holds tool calls to parse. Any other parser, and a parser plugin, is refused.
    if (r.has("tool_call_parser")) {
        const std::string parser = lower(r.text("tool_call_parser"));
        if (parser != "ernie-45-vl-thinking" && parser != "ernie_x1") {
            fail("--tool-call-parser ", r.text("tool_call_parser"),
                 " is not supported yet: Folio has no tool calling (ernie-45-vl-thinking and ernie_x1 are "
                 "accepted, with no effect)");
        }
    }
    if (r.has("tool_parser_plugin")) {
        fail("--tool-parser-plugin is not supported yet: Folio has no tool calling");
    }
    if (r.has("speculative_config")) {
        const JsonValue spec = r.object("speculative_config");
        if (spec.contains("method") && !spec["method"].is_null()) {
            fail("--speculative-config: speculative decoding (method ", dump(spec["method"]),
                 ") is not supported yet");
        }
    }
    if (r.flag("dynamic_load_weight", false)) {
        fail("--dynamic-load-weight is not supported: Folio loads the weights once and does not reload them");
    }
    if (r.has("guided_decoding_backend")) {
        const std::string backend = lower(r.text("guided_decoding_backend"));
        if (backend == "auto" || backend == "xgrammar" || backend == "guidance") {
            fail("--guided-decoding-backend ", r.text("guided_decoding_backend"),
                 " is not supported yet: Folio has no guided decoding (use off)");
        }
        if (backend != "off") {
            fail("--guided-decoding-backend expects off, auto, xgrammar or guidance, got '",
                 r.text("guided_decoding_backend"), "'");
        }
    }
    r.flag("guided_decoding_disable_any_whitespace", false);
    if (r.flag("enable_logprob", false)) {
        fail("--enable-logprob is not supported yet: Folio does not compute log probabilities");
    }
    if (r.has("swap_space")) {
        const double gb = r.real("swap_space", 0.0);
        if (gb < 0) {
            fail("--swap-space must not be negative, got ", gb);
        }
        if (gb > 0) {
            fail("--swap-space ", r.text("swap_space"),
                 " is not supported: Folio keeps the KV cache on the "
                 "device and recomputes preempted sequences (use 0)");
        }
    }
    if (r.has("splitwise_role")) {
        const std::string role = lower(r.text("splitwise_role"));
        if (role == "prefill" || role == "decode") {
            fail("--splitwise-role ", role,
                 " is not supported: Folio runs prefill and decode together (mixed)");
        }
        if (role != "mixed") {
            fail("--splitwise-role expects mixed, prefill or decode, got '", r.text("splitwise_role"), "'");
        }
    }
    if (r.flag("lm_head_fp32", false) && load.bf16_weights) {
        fail(
            "--lm-head-fp32 needs float32 weights (--dtype float32): with bfloat16 weights Folio keeps the "
            "LM "
            "head in bfloat16");
    }
}

// The options Folio accepts without effect: their values are still checked.
void check_without_effect(const Reader& r, const EngineConfig& c) {
    const int64_t warmup = r.integer("use_warmup", 0);
    if (warmup < 0) {
        fail("--use-warmup must be 0 or more, got ", warmup);
    }
    for (const std::string_view name :
         {"enable_mm", "enable_expert_parallel", "disable_custom_all_reduce", "enable_custom_all_reduce"}) {
        r.flag(name, false);
    }
    const double ratio = r.real("kv_cache_ratio", 0.75);
    if (!(ratio > 0.0 && ratio <= 1.0)) {
        fail("--kv-cache-ratio must be in (0, 1], got ", ratio);
    }
    const int64_t static_blocks = r.integer("static_decode_blocks", 2);
    if (static_blocks < 0) {
        fail("--static-decode-blocks must not be negative, got ", static_blocks);
    }
    const int64_t partial = r.integer("max_num_partial_prefills", 1);
    const int64_t long_partial = r.integer("max_long_partial_prefills", 1);
    const int64_t threshold = r.integer("long_prefill_token_threshold", 0);
    if (partial < 1) {
        fail("--max-num-partial-prefills must be at least 1, got ", partial);
    }
    if (long_partial < 1 || long_partial > partial) {
        fail("--max-long-partial-prefills must be between 1 and max_num_partial_prefills (", partial,
             "), got ", long_partial);
    }
    if (threshold < 0) {
        fail("--long-prefill-token-threshold must not be negative, got ", threshold);
    }
    if (partial > 1) {
        if (!c.enable_chunked_prefill) {
            fail("--max-num-partial-prefills ", partial, " needs chunked prefill (--enable-chunked-prefill)");
        }
        if (threshold >= c.max_model_len) {
            fail("--long-prefill-token-threshold ", threshold, " must be below max_model_len ",
                 c.max_model_len);
        }
    }
}

// --limit-mm-per-prompt: FastDeploy's {"image": N, "video": M}, each modality counted alone, or Folio's older
// plain number of images.
void parse_limit_mm(const Reader& r, EngineConfig& c) {
    if (!r.has("limit_mm_per_prompt")) {
        return;
    }
    const JsonValue limits = r.json("limit_mm_per_prompt");
    if (limits.is_number_integer()) {
        c.limit_mm_per_prompt = json_integer(limits, "limit_mm_per_prompt", "images");
    } else if (limits.is_object()) {
        for (const auto& [key, value] : limits.items()) {
            if (key != "image" && key != "video") {
                fail("--limit-mm-per-prompt: unknown modality \"", key, "\" (expected image or video)");
            }
            const int64_t n = json_integer(value, "limit_mm_per_prompt", key);
            if (n < 0) {
                fail("--limit-mm-per-prompt: \"", key, "\" must not be negative, got ", n);
            }
            (key == "image" ? c.limit_mm_per_prompt : c.limit_video_per_prompt) = n;
        }
    } else {
        fail("--limit-mm-per-prompt expects '{\"image\": N, \"video\": N}' or a number, got '",
             r.text("limit_mm_per_prompt"), "'");
    }
    if (c.limit_mm_per_prompt < 0) {
        fail("--limit-mm-per-prompt must not be negative, got ", c.limit_mm_per_prompt);
    }
}

void parse_mm_processor_kwargs(const Reader& r, EngineOptions& out) {
    if (!r.has("mm_processor_kwargs")) {
        return;
    }
    // Keys FastDeploy takes that have no effect here.
    static constexpr std::array<std::string_view, 3> kVideoKeys = {"video_target_frames",
                                                                   "video_frames_sample", "video_max_tokens"};
    const JsonValue kwargs = r.object("mm_processor_kwargs");
    for (const auto& [key, value] : kwargs.items()) {
        if (key == "image_min_pixels" || key == "image_max_pixels" || key == "video_min_pixels" ||
            key == "video_max_pixels") {
            const int64_t n = json_integer(value, "mm_processor_kwargs", key);
            if (n < 1) {
                fail("--mm-processor-kwargs: \"", key, "\" must be at least 1, got ", n);
            }
            (key == "image_min_pixels"   ? out.image_min_pixels
             : key == "image_max_pixels" ? out.image_max_pixels
             : key == "video_min_pixels" ? out.video_min_pixels
                                         : out.video_max_pixels) = n;
        } else if (key == "video_fps") {
            if (!value.is_number() || !(value.get<double>() > 0.0) || !std::isfinite(value.get<double>())) {
                fail("--mm-processor-kwargs: \"video_fps\" must be a number above 0, got ", dump(value));
            }
            out.video_fps = value.get<double>();
        } else if (key == "video_min_frames" || key == "video_max_frames") {
            const int64_t n = json_integer(value, "mm_processor_kwargs", key);
            if (n < 1) {
                fail("--mm-processor-kwargs: \"", key, "\" must be at least 1, got ", n);
            }
            (key == "video_min_frames" ? out.video_min_frames : out.video_max_frames) = n;
        } else if (std::find(kVideoKeys.begin(), kVideoKeys.end(), key) == kVideoKeys.end()) {
            fail("--mm-processor-kwargs: unknown key \"", key,
                 "\" (Folio takes image_min_pixels, image_max_pixels, video_min_pixels, video_max_pixels, "
                 "video_fps, video_min_frames, video_max_frames and, without effect, other video_* keys)");
        }
    }
    if (out.image_min_pixels && out.image_max_pixels && *out.image_min_pixels > *out.image_max_pixels) {
        fail("--mm-processor-kwargs: image_min_pixels ", *out.image_min_pixels, " exceeds image_max_pixels ",
             *out.image_max_pixels);
    }
    if (out.video_min_frames && out.video_max_frames && *out.video_min_frames > *out.video_max_frames) {
        fail("--mm-processor-kwargs: video_min_frames ", *out.video_min_frames, " exceeds video_max_frames ",
             *out.video_max_frames);
    }
}

// --quantization: a name (any case), or FastDeploy's JSON form {"quantization": NAME}, which may also name
// the cache's kv_cache_quant_type (kv_cache_quant_type_option).
Quantization parse_quantization_option(const Reader& r) {
    if (!r.has("quantization")) {
        return Quantization::None;
    }
    std::string name = r.text("quantization");
    if (name.starts_with("{")) {
        const JsonValue q = r.object("quantization");
        for (const auto& [key, value] : q.items()) {
            if (key == "kv_cache_quant_type") {
                continue;
            }
            if (key != "quantization") {
                fail("--quantization: \"", key,
                     "\" is not supported (Folio takes {\"quantization\": NAME} with "
                     "none, wint8 or wint4, and kv_cache_quant_type int8)");
            }
            if (!value.is_string()) {
                fail("--quantization: \"quantization\" expects a name, got ", dump(value));
            }
            name = value.get<std::string>();
        }
    }
    name = lower(name);
    static constexpr std::array<std::string_view, 10> kFastDeployOnly = {
        "wint2",           "w4a8",      "w8a8",  "w4afp8", "wfp8afp8", "block_wise_fp8",
        "tensor_wise_fp8", "mix_quant", "nvfp4", "mxfp4"};
    if (std::find(kFastDeployOnly.begin(), kFastDeployOnly.end(), name) != kFastDeployOnly.end()) {
        fail("--quantization ", name, " is not supported yet (Folio supports none, wint8 and wint4)");
    }
    return parse_quantization(name);
}

// The cache's element type from --kv-cache-dtype (vLLM's auto or int8) and --quantization's
// kv_cache_quant_type (FastDeploy's; int8 here, its scales found as each token is stored rather than read
// from the checkpoint), which must agree where both are given.
KvCacheDtype parse_kv_cache_dtype_option(const Reader& r) {
    std::optional<KvCacheDtype> from_flag, from_quantization;
    if (r.has("kv_cache_dtype")) {
        const std::string name = lower(r.text("kv_cache_dtype"));
        if (name != "auto" && name != "int8") {
            fail("--kv-cache-dtype expects auto or int8, got '", r.text("kv_cache_dtype"), "'");
        }
        from_flag = parse_kv_cache_dtype(name);
    }
    if (r.has("quantization") && r.text("quantization").starts_with("{")) {
        const JsonValue q = r.object("quantization");
        if (q.contains("kv_cache_quant_type")) {
            const JsonValue& type = q.at("kv_cache_quant_type");
            if (!type.is_string() || lower(type.get<std::string>()) != "int8") {
                fail("--quantization: kv_cache_quant_type ", dump(type),
                     " is not supported (Folio supports int8: 8-bit levels with a scale a token and head)");
            }
            from_quantization = KvCacheDtype::Int8;
        }
    }
    if (from_flag && from_quantization && *from_flag != *from_quantization) {
        fail("--kv-cache-dtype ", kv_cache_dtype_name(*from_flag),
             " contradicts --quantization's kv_cache_quant_type int8");
    }
    return from_flag.value_or(from_quantization.value_or(KvCacheDtype::Auto));
}

// --use-cudagraph and --graph-optimization-config, which FastDeploy lets give use_cudagraph twice.
void parse_graph_options(const Reader& r, EngineConfig& c) {
    c.use_cudagraph = r.flag("use_cudagraph", c.use_cudagraph);
    if (!r.has("graph_optimization_config")) {
        return;
    }
    std::optional<int64_t> max_capture_size;
    bool explicit_sizes = false;
    const JsonValue graph = r.object("graph_optimization_config");
    for (const auto& [key, value] : graph.items()) {
        if (key == "use_cudagraph") {
            const bool on = json_bool(value, "graph_optimization_config", key);
            if (r.has("use_cudagraph") && on != c.use_cudagraph) {
                fail("--use-cudagraph ", c.use_cudagraph ? "true" : "false",
                     " contradicts --graph-optimization-config's use_cudagraph ", on ? "true" : "false");
            }
            c.use_cudagraph = on;
        } else if (key == "cudagraph_capture_sizes") {
            if (value.is_null()) {
                continue;
            }
            if (!value.is_array() || value.empty()) {
                fail(
                    "--graph-optimization-config: cudagraph_capture_sizes expects a list of batch sizes, "
                    "got ",
                    dump(value));
            }
            explicit_sizes = true;
            c.cudagraph_capture_sizes.clear();
            for (const JsonValue& size : value) {
                const int64_t n = json_integer(size, "graph_optimization_config", key);
                if (n < 1 || n > c.max_num_seqs) {
                    fail("--graph-optimization-config: capture size ", n,
                         " must be between 1 and max_num_seqs (", c.max_num_seqs, ")");
                }
                c.cudagraph_capture_sizes.push_back(n);
            }
            std::sort(c.cudagraph_capture_sizes.begin(), c.cudagraph_capture_sizes.end());
            c.cudagraph_capture_sizes.erase(
                std::unique(c.cudagraph_capture_sizes.begin(), c.cudagraph_capture_sizes.end()),
                c.cudagraph_capture_sizes.end());
        } else if (key == "max_capture_size") {
            max_capture_size = json_integer(value, "graph_optimization_config", key);
            if (*max_capture_size < 1) {
                fail("--graph-optimization-config: max_capture_size must be at least 1, got ",
                     *max_capture_size);
            }
        } else if (key == "graph_opt_level") {
            const int64_t level = json_integer(value, "graph_optimization_config", key);
            if (level < 0 || level > 2) {
                fail("--graph-optimization-config: graph_opt_level must be 0, 1 or 2, got ", level);
            }
        } else if (key == "cudagraph_only_prefill") {
            if (json_bool(value, "graph_optimization_config", key)) {
                fail(
                    "--graph-optimization-config: cudagraph_only_prefill is not supported: Folio records "
                    "decode "
                    "steps, not prefill");
            }
        } else if (key == "full_cuda_graph" || key == "use_unique_memory_pool" ||
                   key == "cudagraph_copy_inputs") {
            json_bool(value, "graph_optimization_config", key);
        } else if (key == "cudagraph_num_of_warmups") {
            if (json_integer(value, "graph_optimization_config", key) < 0) {
                fail("--graph-optimization-config: cudagraph_num_of_warmups must not be negative");
            }
        } else {
            fail("--graph-optimization-config: unknown key \"", key, "\"");
        }
    }
    if (max_capture_size) {
        if (!explicit_sizes) {
            c.cudagraph_capture_sizes = default_capture_sizes(c.max_num_seqs);
        }
        std::erase_if(c.cudagraph_capture_sizes, [&](int64_t s) { return s > *max_capture_size; });
        if (c.cudagraph_capture_sizes.empty()) {
            fail("--graph-optimization-config: no capture size within max_capture_size ", *max_capture_size);
        }
    }
}

ModelLoadParams parse_load_params(const Reader& r, bool on_cpu) {
    ModelLoadParams p;
    p.quantization = parse_quantization_option(r);
    p.group_size = r.integer("quant_group_size", p.group_size);
    if (r.has("quantize_vision") && lower(r.text("quantize_vision")) == "fp8") {
        p.vision_fp8 = true;
    } else if (r.has("quantize_vision") && !parse_bool_word(r.text("quantize_vision"))) {
        fail("--quantize-vision expects on or off (the language model's quantization) or fp8, got '",
             r.text("quantize_vision"), "'");
    } else {
        p.quantize_vision = r.flag("quantize_vision", p.quantize_vision);
    }
    // bfloat16 weights by default on the GPU, float32 on the CPU reference backend.
    const std::string dtype = r.has("dtype") ? lower(r.text("dtype")) : on_cpu ? "float32" : "bfloat16";
    if (dtype != "float32" && dtype != "bfloat16") {
        fail("--dtype expects float32 or bfloat16, got '", r.text("dtype"), "'");
    }
    p.bf16_weights = dtype == "bfloat16";
    if (p.group_size != 64 && p.group_size != 128) {
        fail("--quant-group-size must be 64 or 128, got ", p.group_size);
    }
    return p;
}

}  // namespace

std::optional<bool> parse_bool_word(std::string_view text) {
    const std::string v = lower(text);
    if (v == "true" || v == "on" || v == "yes" || v == "1") {
        return true;
    }
    if (v == "false" || v == "off" || v == "no" || v == "0") {
        return false;
    }
    return std::nullopt;
}

bool is_switch_word(std::string_view flag, std::string_view word) {
    return parse_bool_word(word).has_value() || (flag == "--quantize-vision" && lower(word) == "fp8");
}

EngineOptions parse_engine_options(const Options& opt, const ModelDescription& model, CommandScope scope) {
    const Reader r(opt);
    const bool on_cpu = engine_devices(opt).front() == "cpu";
    EngineOptions out;

    for (const EngineOptionInfo& info : engine_option_table()) {
        if (info.status == OptionStatus::ServeOnly && scope != CommandScope::Serve && r.has(info.name)) {
            fail(flag_of(info.name),
                 " is an option of folio-cli serve (the server); this command runs the "
                 "engine in its own process and serves nothing");
        }
    }
    if (scope == CommandScope::Serve) {
        parse_server_options(r, out);
    }

    out.load = parse_load_params(r, on_cpu);
    refuse_unsupported(r, out.load);
    if (r.has("chat_template")) {
        out.chat_template =
            std::make_shared<const ChatTemplate>(parse_chat_template_option(r.text("chat_template")));
    }
    if (r.has("generation_config")) {
        out.generation_config =
            GenerationConfigSource::parse(r.text("generation_config"), "--generation-config");
    }
    if (r.has("tokenizer")) {
        if (r.text("tokenizer").empty()) {
            fail("--tokenizer expects a folder, got ''");
        }
        out.tokenizer = r.text("tokenizer");
    }
    if (r.has("layout_precision")) {
        const std::optional<ConvPrecision> precision = find_conv_precision(lower(r.text("layout_precision")));
        if (!precision) {
            fail("--layout-precision expects float32, tf32 or bfloat16, got '", r.text("layout_precision"),
                 "'");
        }
        out.layout_precision = *precision;
    }
    if (r.has("reasoning_parser")) {
        const std::optional<ReasoningFormat> format = find_reasoning_format(r.text("reasoning_parser"));
        if (!format) {
            fail("--reasoning-parser expects ", reasoning_format_names(), ", got '",
                 r.text("reasoning_parser"), "'");
        }
        out.reasoning_parser = reasoning_format_name(*format);
    }

    EngineConfig& c = out.engine;
    if (on_cpu) {
        c.max_num_seqs =
            8;  // the CPU backend gains little from more, and its cache is planned for all of them
    }
    const int64_t context = model.max_context;
    c.max_model_len = std::min<int64_t>(c.max_model_len, context);
    if (r.has("max_model_len")) {
        c.max_model_len = r.integer("max_model_len", c.max_model_len);
        if (c.max_model_len < 16) {
            fail("--max-model-len must be at least 16, got ", c.max_model_len);
        }
        if (c.max_model_len > context) {
            fail("--max-model-len ", c.max_model_len, " exceeds the model's context of ", context, " tokens");
        }
    }
    c.max_num_seqs = r.integer("max_num_seqs", c.max_num_seqs);
    if (c.max_num_seqs < 1 || c.max_num_seqs > 256) {
        fail("--max-num-seqs must be between 1 and 256, got ", c.max_num_seqs);
    }
    c.block_size = r.integer("block_size", c.block_size);
    if (c.block_size < 1) {
        fail("--block-size must be at least 1, got ", c.block_size);
    }
    c.kv_cache_dtype = parse_kv_cache_dtype_option(r);
    c.enable_prefix_caching = r.flag("enable_prefix_caching", c.enable_prefix_caching);
    c.enable_chunked_prefill = r.flag("enable_chunked_prefill", c.enable_chunked_prefill);

    const int64_t most_tokens = c.max_model_len * c.max_num_seqs;
    if (r.has("max_num_batched_tokens")) {
        c.max_num_batched_tokens = r.integer("max_num_batched_tokens", 0);
        const int64_t n = c.max_num_batched_tokens;
        if (n < c.max_num_seqs) {
            fail("--max-num-batched-tokens ", n, " must be at least max_num_seqs (", c.max_num_seqs, ")");
        }
        if (n > most_tokens) {
            fail("--max-num-batched-tokens ", n, " must be at most max_model_len x max_num_seqs (",
                 c.max_model_len, " x ", c.max_num_seqs, " = ", most_tokens, ")");
        }
        if (c.enable_chunked_prefill && n < c.block_size) {
            fail("--max-num-batched-tokens ", n, " must be at least block_size (", c.block_size,
                 ") with chunked prefill");
        }
        if (!c.enable_chunked_prefill && n < c.max_model_len) {
            fail("--max-num-batched-tokens ", n, " must be at least max_model_len (", c.max_model_len,
                 ") without chunked prefill, so that a whole prompt fits one step");
        }
    } else if (c.enable_chunked_prefill) {
        c.max_num_batched_tokens = std::max(std::min(c.max_num_batched_tokens, most_tokens), c.max_num_seqs);
    } else {
        c.max_num_batched_tokens = std::max(c.max_model_len, c.max_num_seqs);
    }

    c.gpu_memory_utilization = r.real("gpu_memory_utilization", c.gpu_memory_utilization);
    if (!(c.gpu_memory_utilization > 0.0 && c.gpu_memory_utilization <= 1.0)) {
        fail("--gpu-memory-utilization must be in (0, 1], got ", c.gpu_memory_utilization);
    }
    if (r.has("num_gpu_blocks_override")) {
        c.num_gpu_blocks_override = r.integer("num_gpu_blocks_override", 0);
        const int64_t per_seq = (c.max_model_len + c.block_size - 1) / c.block_size;
        if (c.num_gpu_blocks_override < per_seq) {
            fail("--num-gpu-blocks-override ", c.num_gpu_blocks_override,
                 " must hold at least one max_model_len sequence: ", per_seq, " blocks of ", c.block_size,
                 " tokens");
        }
    }
    parse_limit_mm(r, c);
    parse_mm_processor_kwargs(r, out);
    parse_graph_options(r, c);
    c.async_scheduling = r.flag("async_scheduling", c.async_scheduling);
    check_without_effect(r, c);
    return out;
}

EngineOptions engine_options_from_values(const std::vector<std::pair<std::string, std::string>>& values,
                                         const ModelDescription& model, const std::string& device) {
    std::vector<std::string> args = {(device.find(',') == std::string::npos ? "--device=" : "--devices=") +
                                     device};
    for (const auto& [name, value] : values) {
        if (find_engine_option(flag_of(name)) == nullptr) {
            fail("unknown engine option ", name);
        }
        args.push_back(flag_of(name) + "=" + value);
    }
    std::vector<char*> argv;
    for (std::string& arg : args) {
        argv.push_back(arg.data());
    }
    const Options opt(static_cast<int>(argv.size()), argv.data(), 0);
    return parse_engine_options(opt, model);
}

void apply_preprocessing(const EngineOptions& options, PreprocessorConfig& pre) {
    if (options.image_min_pixels) {
        pre.min_pixels = *options.image_min_pixels;
    }
    if (options.image_max_pixels) {
        pre.max_pixels = *options.image_max_pixels;
    }
    if (pre.min_pixels > pre.max_pixels) {
        fail("--mm-processor-kwargs: image pixel bounds ", pre.min_pixels, "..", pre.max_pixels,
             " (with the model's preprocessor_config.json) are empty");
    }
    if (options.video_min_pixels || options.video_max_pixels) {
        // A model without bounds of its own for videos resizes them as images.
        const bool own = pre.video_max_pixels > 0;
        pre.video_min_pixels = options.video_min_pixels.value_or(own ? pre.video_min_pixels : pre.min_pixels);
        pre.video_max_pixels = options.video_max_pixels.value_or(own ? pre.video_max_pixels : pre.max_pixels);
        if (pre.video_min_pixels > pre.video_max_pixels) {
            fail("--mm-processor-kwargs: video pixel bounds ", pre.video_min_pixels, "..",
                 pre.video_max_pixels, " (with the model's video_preprocessor_config.json) are empty");
        }
    }
}

}  // namespace folio::cli
