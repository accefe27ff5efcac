// The engine options with FastDeploy's names and formats, for every folio-cli command that runs the engine
// (generate, bench, and later ocr and serve): parsed, checked against FastDeploy's ranges in every
// combination, and turned into the engine's configuration. docs/fastdeploy-options.md tells each option's
// status in Folio.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat-template/chat-template.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/generation-config.h"
#include "engine/models/linear.h"
#include "engine/models/model-description.h"
#include "engine/runtime/engine-core.h"

namespace folio::cli {

class Options;

// Which command reads the options: the server's own options (ports, connection limits) belong to serve.
enum class CommandScope { Offline, Serve };

// How an option's value is written on the command line.
enum class ValueKind {
    Switch,   // bare flag, or true/false/on/off/yes/no/1/0 in any case; --no-NAME for false
    Integer,  // decimal integer
    Real,     // decimal number
    Text,     // a word or path; enumerations compare case-insensitively
    Json,     // a JSON object (some also take their older plain form)
};

// What Folio does with an option.
enum class OptionStatus {
    Implemented,    // behaves as FastDeploy documents it
    NoEffect,       // accepted and checked, changes nothing in Folio (docs say why)
    Refused,        // refused with a message, at least for the values Folio cannot honour yet
    ServeOnly,      // an option of the server; refused by the other commands
    FolioSpecific,  // Folio's own, not in FastDeploy
};

struct EngineOptionInfo {
    std::string_view name;   // FastDeploy's name, e.g. "max_model_len" (--max-model-len on the command line)
    std::string_view group;  // the group FastDeploy's --help puts it in
    ValueKind kind;
    OptionStatus status;
    std::string_view value;          // what --help shows after the flag
    std::string_view folio_default;  // Folio's default, as --help shows it
    std::string_view help;           // one line for --help
};

// Every engine option, in --help order (grouped).
std::span<const EngineOptionInfo> engine_option_table();
// The option named by a command-line flag ("--max-model-len"), or null.
const EngineOptionInfo* find_engine_option(std::string_view flag);
// "max_model_len" -> "--max-model-len".
std::string flag_of(std::string_view name);
// Whether a flag may stand bare (a switch) or as --no-NAME.
bool is_engine_switch(std::string_view flag);
// The engine options' flags, for Options::allow.
std::vector<std::string> engine_flags();

// The --help text of the engine options, grouped as FastDeploy's reference groups them.
std::string engine_usage(CommandScope scope = CommandScope::Offline);

// The engine's settings from the command line.
struct EngineOptions {
    EngineConfig engine;
    ModelLoadParams load;
    std::optional<std::filesystem::path> tokenizer;  // --tokenizer: another folder's tokenizer
    std::optional<int64_t> image_min_pixels;         // mm_processor_kwargs
    std::optional<int64_t> image_max_pixels;
    std::optional<int64_t> video_min_pixels;  // mm_processor_kwargs: a video frame's resize bounds
    std::optional<int64_t> video_max_pixels;
    std::optional<double> video_fps;  // mm_processor_kwargs: how video files are sampled (generate)
    std::optional<int64_t> video_min_frames;
    std::optional<int64_t> video_max_frames;
    ConvPrecision layout_precision = ConvPrecision::Tf32;  // the layout model's convolutions
    std::string reasoning_parser;  // deepseek_r1 or ernie-45-vl (serve splits chat answers); empty: none
    // --chat-template: a template file or the template's text, in place of the model folder's.
    std::shared_ptr<const ChatTemplate> chat_template;
    // --generation-config (vLLM's): where the request defaults come from; auto: the model folder's
    // generation_config.json.
    GenerationConfigSource generation_config;
    // serve only (parsed and checked there)
    std::optional<int> port;
    std::optional<int> metrics_port;
    std::optional<std::string> served_model_name;
    std::string host = "127.0.0.1";
    std::string api_key;  // empty: none
    bool allow_image_urls = false;
    int64_t max_waiting_time = -1;
    int64_t max_concurrency = 512;
    int64_t max_connections = 0;  // 0: from max_concurrency
    std::string metrics_host = "127.0.0.1";
    int64_t max_decode_threads = 4;
    int64_t max_image_pixels = 0;  // 0: from the processor's max_pixels
    bool log_requests = false;
};

// Parses and checks every engine option on the command line; throws folio::Error naming the option and what
// is wrong (or what Folio cannot do yet). The model's description gives the context length the limits are
// checked against; --device picks the defaults that differ between the CPU and the GPU.
EngineOptions parse_engine_options(const Options& opt, const ModelDescription& model,
                                   CommandScope scope = CommandScope::Offline);

// The same options from FastDeploy's names and values as text ({"max_model_len", "4096"}), as a settings
// store keeps them, on a device ("cpu", "cuda" or "cuda:N"): checked exactly as on the command line, the
// message naming the option and its range.
EngineOptions engine_options_from_values(const std::vector<std::pair<std::string, std::string>>& values,
                                         const ModelDescription& model, const std::string& device = "cpu");

// mm_processor_kwargs' pixel bounds applied to the model's preprocessing.
void apply_preprocessing(const EngineOptions& options, PreprocessorConfig& pre);

// A switch's value: true/false/on/off/yes/no/1/0 in any case; nullopt otherwise.
std::optional<bool> parse_bool_word(std::string_view text);
// Whether word, after the switch flag, is its value: a boolean word, or a word of the switch's own
// ("fp8" for --quantize-vision).
bool is_switch_word(std::string_view flag, std::string_view word);

}  // namespace folio::cli
