// The engine options with FastDeploy's names: every option in each of its formats, the range edges and the
// combinations FastDeploy checks, the refusals and their messages, and the docs' table of every option.
#include <gtest/gtest.h>

#include <cstdlib>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app/options/cli-options.h"
#include "app/options/device-memory.h"
#include "app/options/engine-options.h"
#include "engine/common/error.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/paddleocr-vl/config.h"
#include "temp-dir.h"

namespace {

using folio::cli::CommandScope;
using folio::cli::EngineOptions;
using folio::cli::Options;

constexpr int64_t kContext = 16384;

folio::ModelDescription model_config() {
    folio::ModelDescription model;
    model.max_context = kContext;
    return model;
}

Options make_options(const std::vector<std::string>& args) {
    std::vector<std::string> storage = {"folio-cli", "generate"};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : storage) {
        argv.push_back(s.data());
    }
    return Options(static_cast<int>(argv.size()), argv.data(), 2);
}

EngineOptions parse(const std::vector<std::string>& args, CommandScope scope = CommandScope::Offline) {
    const Options opt = make_options(args);
    opt.allow(folio::cli::with_engine_flags({"--device", "--model", "--image", "--prompt", "--max-tokens"}));
    return folio::cli::parse_engine_options(opt, model_config(), scope);
}

std::string error_of(const std::vector<std::string>& args, CommandScope scope = CommandScope::Offline) {
    try {
        parse(args, scope);
    } catch (const folio::Error& e) {
        return e.what();
    }
    return "(accepted)";
}

// --chat-template takes a file or the template's text; a broken template is refused with its line.
TEST(EngineOptionsTest, ChatTemplateFromAFileOrItsText) {
    const nlohmann::ordered_json context = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
    const EngineOptions text = parse({"--chat-template", "{{ messages[0]['content'] | upper }}!"});
    ASSERT_TRUE(text.chat_template);
    EXPECT_EQ(text.chat_template->render(context), "HI!");
    EXPECT_FALSE(parse({}).chat_template);

    const folio::test::TempDir dir;
    const std::string file = (dir / "custom.jinja").string();
    std::ofstream(file) << "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}\n";
    const EngineOptions from_file = parse({"--chat-template", file});
    ASSERT_TRUE(from_file.chat_template);
    EXPECT_EQ(from_file.chat_template->origin(), file);
    EXPECT_EQ(from_file.chat_template->render(context), "<user>hi");

    std::ofstream(file) << "fine\n{% if %}";
    const std::string broken = error_of({"--chat-template", file});
    EXPECT_NE(broken.find(file + ":2:"), std::string::npos) << broken;
}

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const auto& a : args) {
        s += a + " ";
    }
    return s;
}

// A command line accepted, and what it sets.
struct Accepted {
    std::vector<std::string> args;
    std::function<bool(const EngineOptions&)> check;
};

// A command line refused, and a part of the message.
struct Refused {
    std::vector<std::string> args;
    std::string message;
};

const std::vector<Accepted>& accepted_cases() {
    using E = const EngineOptions&;
    static const std::vector<Accepted> cases = {
        // defaults: Folio's on the CPU
        {{},
         [](E o) {
             return o.engine.max_num_seqs == 8 && o.engine.max_model_len == 16384 &&
                    o.engine.enable_prefix_caching && o.engine.enable_chunked_prefill &&
                    o.engine.use_cudagraph && o.engine.limit_mm_per_prompt == 4 &&
                    o.engine.limit_video_per_prompt == 1 && o.engine.max_num_batched_tokens == 8192 &&
                    !o.load.bf16_weights;
         }},
        {{"--device", "cuda"}, [](E o) { return o.engine.max_num_seqs == 256 && o.load.bf16_weights; }},
        // the vision encoder: the language model's quantization, or FP8 of its own
        {{"--quantize-vision"}, [](E o) { return o.load.quantize_vision && !o.load.vision_fp8; }},
        {{"--quantize-vision", "FP8"}, [](E o) { return o.load.vision_fp8 && !o.load.quantize_vision; }},
        {{"--quantize-vision=fp8"}, [](E o) { return o.load.vision_fp8; }},
        {{"--quantize-vision", "off"}, [](E o) { return !o.load.quantize_vision && !o.load.vision_fp8; }},
        // the layout model's convolutions: TF32 unless told
        {{}, [](E o) { return o.layout_precision == folio::ConvPrecision::Tf32; }},
        {{"--layout-precision", "BFloat16"},
         [](E o) { return o.layout_precision == folio::ConvPrecision::Bfloat16; }},
        {{"--layout-precision=float32"}, [](E o) { return o.layout_precision == folio::ConvPrecision::Float32; }},
        // the cache's elements: vLLM's flag or FastDeploy's kv_cache_quant_type
        {{}, [](E o) { return o.engine.kv_cache_dtype == folio::KvCacheDtype::Auto; }},
        {{"--kv-cache-dtype", "INT8"},
         [](E o) { return o.engine.kv_cache_dtype == folio::KvCacheDtype::Int8; }},
        {{"--quantization", R"({"quantization": "wint4", "kv_cache_quant_type": "int8"})"},
         [](E o) {
             return o.engine.kv_cache_dtype == folio::KvCacheDtype::Int8 &&
                    o.load.quantization == folio::Quantization::Wint4;
         }},
        {{"--kv-cache-dtype", "int8", "--quantization",
          R"({"quantization": "wint8", "kv_cache_quant_type": "int8"})"},
         [](E o) { return o.engine.kv_cache_dtype == folio::KvCacheDtype::Int8; }},
        // switches: bare, any case, words, =value, --no-
        {{"--enable-prefix-caching"}, [](E o) { return o.engine.enable_prefix_caching; }},
        {{"--enable-prefix-caching", "False"}, [](E o) { return !o.engine.enable_prefix_caching; }},
        {{"--enable-prefix-caching=OFF"}, [](E o) { return !o.engine.enable_prefix_caching; }},
        {{"--enable_prefix_caching=false"}, [](E o) { return !o.engine.enable_prefix_caching; }},
        {{"--no-enable-prefix-caching"}, [](E o) { return !o.engine.enable_prefix_caching; }},
        {{"--no-enable-prefix-caching", "--enable-prefix-caching"},
         [](E o) { return o.engine.enable_prefix_caching; }},
        {{"--enable-chunked-prefill", "off", "--max-num-batched-tokens", "16384"},
         [](E o) { return !o.engine.enable_chunked_prefill && o.engine.max_num_batched_tokens == 16384; }},
        {{"--enable-chunked-prefill", "0"},
         [](E o) {  // FastDeploy's default without chunking: max_model_len
             return !o.engine.enable_chunked_prefill && o.engine.max_num_batched_tokens == 16384;
         }},
        {{"--enable-chunked-prefill", "--max-num-batched-tokens", "384"},
         [](E o) { return o.engine.enable_chunked_prefill && o.engine.max_num_batched_tokens == 384; }},
        {{"--use-cudagraph", "TRUE"}, [](E o) { return o.engine.use_cudagraph; }},
        {{"--use-cudagraph", "no"}, [](E o) { return !o.engine.use_cudagraph; }},
        {{"--use-cudagraph=On"}, [](E o) { return o.engine.use_cudagraph; }},
        {{"--async-scheduling", "off"}, [](E o) { return !o.engine.async_scheduling; }},
        {{"--enable-mm"}, [](E) { return true; }},
        {{"--enable-mm", "true"}, [](E) { return true; }},
        {{"--enable-expert-parallel", "--disable-custom-all-reduce", "--enable-custom-all-reduce"},
         [](E) { return true; }},
        {{"--guided-decoding-disable-any-whitespace"}, [](E) { return true; }},
        {{"--dynamic-load-weight", "false", "--enable-logprob=false"}, [](E) { return true; }},
        {{"--lm-head-fp32"}, [](E o) { return !o.load.bf16_weights; }},
        {{"--lm_head-fp32", "--dtype", "FLOAT32", "--device", "cuda"},
         [](E o) { return !o.load.bf16_weights; }},
        // integers: both forms, range edges
        {{"--max-model-len", "16"}, [](E o) { return o.engine.max_model_len == 16; }},
        {{"--max-model-len=16384"}, [](E o) { return o.engine.max_model_len == 16384; }},
        {{"--max-num-seqs=32"}, [](E o) { return o.engine.max_num_seqs == 32; }},
        {{"--max-num-seqs", "1"}, [](E o) { return o.engine.max_num_seqs == 1; }},
        {{"--max-num-seqs", "256"}, [](E o) { return o.engine.max_num_seqs == 256; }},
        {{"--max-model-len", "16", "--max-num-seqs", "1"},  // the default token budget follows the limits
         [](E o) { return o.engine.max_num_batched_tokens == 16; }},
        {{"--block-size", "1"}, [](E o) { return o.engine.block_size == 1; }},
        {{"--block-size=16", "--max-num-batched-tokens", "16"},
         [](E o) { return o.engine.block_size == 16; }},
        {{"--max-num-seqs", "8", "--max-num-batched-tokens", "8", "--block-size", "8"},
         [](E o) { return o.engine.max_num_batched_tokens == 8; }},
        {{"--max-model-len", "64", "--max-num-seqs", "2", "--max-num-batched-tokens", "128"},
         [](E o) { return o.engine.max_num_batched_tokens == 128; }},
        {{"--num-gpu-blocks-override", "256"}, [](E o) { return o.engine.num_gpu_blocks_override == 256; }},
        {{"--num-gpu-blocks-override=4", "--max-model-len", "256"},
         [](E o) { return o.engine.num_gpu_blocks_override == 4; }},
        {{"--tensor-parallel-size", "1", "--data-parallel-size=1"}, [](E) { return true; }},
        {{"-tp", "1"}, [](E) { return true; }},
        {{"--use-warmup", "1"}, [](E) { return true; }},
        {{"--static-decode-blocks", "0"}, [](E) { return true; }},
        {{"--max-num-partial-prefills", "4", "--max-long-partial-prefills", "4",
          "--long-prefill-token-threshold", "16383"},
         [](E) { return true; }},
        {{"--max-long-partial-prefills=1"}, [](E) { return true; }},
        {{"--quant-group-size", "64", "--quantization", "wint4"},
         [](E o) { return o.load.group_size == 64 && o.load.quantization == folio::Quantization::Wint4; }},
        // reals
        {{"--gpu-memory-utilization", "1"}, [](E o) { return o.engine.gpu_memory_utilization == 1.0; }},
        {{"--gpu-memory-utilization=0.001"}, [](E o) { return o.engine.gpu_memory_utilization == 0.001; }},
        {{"--kv-cache-ratio", "1.0"}, [](E) { return true; }},
        {{"--kv-cache-ratio", "0.75"}, [](E) { return true; }},
        {{"--swap-space", "0"}, [](E) { return true; }},
        // enumerations in any case
        {{"--quantization", "WINT4"}, [](E o) { return o.load.quantization == folio::Quantization::Wint4; }},
        {{"--quantization=wint8"}, [](E o) { return o.load.quantization == folio::Quantization::Wint8; }},
        {{"--quantization", "None"}, [](E o) { return o.load.quantization == folio::Quantization::None; }},
        {{"--quantization", R"({"quantization": "WINT8"})"},
         [](E o) { return o.load.quantization == folio::Quantization::Wint8; }},
        {{"--dtype", "BFloat16"}, [](E o) { return o.load.bf16_weights; }},
        {{"--guided-decoding-backend", "OFF"}, [](E) { return true; }},
        {{"--splitwise-role", "Mixed"}, [](E) { return true; }},
        {{"--reasoning-parser", "ernie-45-vl"}, [](E o) { return o.reasoning_parser == "ernie-45-vl"; }},
        {{"--reasoning-parser=DeepSeek_R1"}, [](E o) { return o.reasoning_parser == "deepseek_r1"; }},
        {{"--reasoning-parser", "ERNIE-45-VL"}, [](E o) { return o.reasoning_parser == "ernie-45-vl"; }},
        {{"--revision", "master"}, [](E) { return true; }},
        {{"--tokenizer", "/some/folder"}, [](E o) { return o.tokenizer && *o.tokenizer == "/some/folder"; }},
        // JSON options
        {{"--limit-mm-per-prompt", R"({"image": 100, "video": 100})"},
         [](E o) { return o.engine.limit_mm_per_prompt == 100; }},
        {{"--limit-mm-per-prompt={\"image\": 0}"}, [](E o) { return o.engine.limit_mm_per_prompt == 0; }},
        {{"--limit-mm-per-prompt", R"({"video": 3})"},
         [](E o) { return o.engine.limit_mm_per_prompt == 4 && o.engine.limit_video_per_prompt == 3; }},
        {{"--limit-mm-per-prompt", R"({"image": 2, "video": 0})"},
         [](E o) { return o.engine.limit_mm_per_prompt == 2 && o.engine.limit_video_per_prompt == 0; }},
        {{"--limit-mm-per-prompt", "2"}, [](E o) { return o.engine.limit_mm_per_prompt == 2; }},
        {{"--mm-processor-kwargs", R"({"image_min_pixels": 3136, "image_max_pixels": 1003520})"},
         [](E o) { return o.image_min_pixels == 3136 && o.image_max_pixels == 1003520; }},
        {{"--mm-processor-kwargs", R"({"video_max_frames": 30, "video_fps": 2})"},
         [](E o) {
             return !o.image_min_pixels && !o.image_max_pixels && o.video_fps == 2.0 &&
                    o.video_max_frames == 30 && !o.video_min_frames;
         }},
        {{"--graph-optimization-config", R"({"use_cudagraph": false, "graph_opt_level": 2})"},
         [](E o) { return !o.engine.use_cudagraph; }},
        {{"--graph-optimization-config", R"({"use_cudagraph":true, "graph_opt_level":0})", "--use-cudagraph"},
         [](E o) { return o.engine.use_cudagraph; }},
        {{"--graph-optimization-config", R"({"cudagraph_capture_sizes": [4, 1, 2, 4]})"},
         [](E o) {
             return o.engine.cudagraph_capture_sizes == std::vector<int64_t>{1, 2, 4};
         }},
        {{"--max-num-seqs", "64", "--graph-optimization-config", R"({"max_capture_size": 16})"},
         [](E o) {
             return o.engine.cudagraph_capture_sizes == std::vector<int64_t>{1, 2, 4, 8, 16};
         }},
        {{"--graph-optimization-config", R"({"full_cuda_graph": true, "cudagraph_only_prefill": false})"},
         [](E) { return true; }},
        {{"--speculative-config", "{}"}, [](E) { return true; }},
        {{"--speculative-config", R"({"method": null})"}, [](E) { return true; }},
        // repeated: the last wins, as with FastDeploy's parser
        {{"--max-num-seqs", "4", "--max-num-seqs", "6"}, [](E o) { return o.engine.max_num_seqs == 6; }},
    };
    return cases;
}

const std::vector<Refused>& refused_cases() {
    static const std::vector<Refused> cases = {
        // range edges
        {{"--max-model-len", "15"}, "--max-model-len must be at least 16, got 15"},
        {{"--max-model-len", "16385"}, "--max-model-len 16385 exceeds the model's context of 16384 tokens"},
        {{"--max-num-seqs", "0"}, "--max-num-seqs must be between 1 and 256, got 0"},
        {{"--max-num-seqs=257"}, "--max-num-seqs must be between 1 and 256, got 257"},
        {{"--block-size", "0"}, "--block-size must be at least 1, got 0"},
        {{"--gpu-memory-utilization", "0"}, "--gpu-memory-utilization must be in (0, 1], got 0"},
        {{"--gpu-memory-utilization", "1.5"}, "--gpu-memory-utilization must be in (0, 1], got 1.5"},
        {{"--gpu-memory-utilization", "1.5", "--num-gpu-blocks-override", "1024"},
         "--gpu-memory-utilization must be in (0, 1], got 1.5"},
        {{"--gpu-memory-utilization", "nan"}, "--gpu-memory-utilization expects a number, got 'nan'"},
        {{"--num-gpu-blocks-override", "255"},
         "--num-gpu-blocks-override 255 must hold at least one max_model_len "
         "sequence: 256 blocks of 64 tokens"},
        {{"--max-num-seqs", "16", "--max-num-batched-tokens", "15"},
         "--max-num-batched-tokens 15 must be at least max_num_seqs (16)"},
        {{"--max-model-len", "16", "--max-num-seqs", "2", "--max-num-batched-tokens", "33"},
         "--max-num-batched-tokens 33 must be at most max_model_len x max_num_seqs (16 x 2 = 32)"},
        {{"--max-num-batched-tokens", "63"}, "--max-num-batched-tokens 63 must be at least block_size (64)"},
        {{"--enable-chunked-prefill", "false", "--max-num-batched-tokens", "16383"},
         "must be at least max_model_len (16384) without chunked prefill"},
        {{"--kv-cache-ratio", "0"}, "--kv-cache-ratio must be in (0, 1], got 0"},
        {{"--kv-cache-ratio", "1.01"}, "--kv-cache-ratio must be in (0, 1], got 1.01"},
        {{"--swap-space", "-1"}, "--swap-space must not be negative"},
        {{"--static-decode-blocks", "-1"}, "--static-decode-blocks must not be negative"},
        {{"--use-warmup", "-1"}, "--use-warmup must be 0 or more"},
        {{"--max-num-partial-prefills", "0"}, "--max-num-partial-prefills must be at least 1, got 0"},
        {{"--max-long-partial-prefills", "2"},
         "--max-long-partial-prefills must be between 1 and "
         "max_num_partial_prefills (1), got 2"},
        {{"--max-num-partial-prefills", "2", "--enable-chunked-prefill", "false", "--max-num-batched-tokens",
          "16384"},
         "--max-num-partial-prefills 2 needs chunked prefill"},
        {{"--max-num-partial-prefills", "2", "--long-prefill-token-threshold", "16384"},
         "--long-prefill-token-threshold 16384 must be below max_model_len 16384"},
        {{"--long-prefill-token-threshold", "-1"}, "--long-prefill-token-threshold must not be negative"},
        {{"--quant-group-size", "32"}, "--quant-group-size must be 64 or 128, got 32"},
        // formats
        {{"--max-num-seqs", "8x"}, "--max-num-seqs expects an integer, got '8x'"},
        {{"--max-num-seqs"}, "option --max-num-seqs needs a value"},
        {{"--enable-prefix-caching=maybe"},
         "--enable-prefix-caching expects true or false (or on/off), got 'maybe'"},
        {{"--no-enable-prefix-caching=true"}, "option --no-enable-prefix-caching takes no value"},
        {{"--enable-prefix-caching", "maybe"}, "unexpected argument 'maybe'"},
        {{"--limit-mm-per-prompt", "{image: 1}"}, "--limit-mm-per-prompt expects JSON, got '{image: 1}'"},
        {{"--limit-mm-per-prompt", R"({"audio": 1})"}, "--limit-mm-per-prompt: unknown modality \"audio\""},
        {{"--limit-mm-per-prompt", R"({"image": -1})"},
         "--limit-mm-per-prompt: \"image\" must not be negative"},
        {{"--limit-mm-per-prompt", R"({"image": 1.5})"},
         "--limit-mm-per-prompt: \"image\" expects an integer"},
        {{"--limit-mm-per-prompt", R"(["image"])"}, "--limit-mm-per-prompt expects '{\"image\": N"},
        {{"--mm-processor-kwargs", R"({"image_min_pixels": 0})"},
         "--mm-processor-kwargs: \"image_min_pixels\" must be at least 1, got 0"},
        {{"--mm-processor-kwargs", R"({"image_min_pixels": 9, "image_max_pixels": 8})"},
         "image_min_pixels 9 exceeds image_max_pixels 8"},
        {{"--mm-processor-kwargs", R"({"resize": 1})"}, "--mm-processor-kwargs: unknown key \"resize\""},
        {{"--mm-processor-kwargs", R"({"video_fps": 0})"},
         "--mm-processor-kwargs: \"video_fps\" must be a number above 0, got 0"},
        {{"--mm-processor-kwargs", R"({"video_min_frames": 9, "video_max_frames": 8})"},
         "--mm-processor-kwargs: video_min_frames 9 exceeds video_max_frames 8"},
        {{"--mm-processor-kwargs", "3"}, "--mm-processor-kwargs expects a JSON object"},
        {{"--graph-optimization-config", R"({"graph_opt_level": 3})"},
         "graph_opt_level must be 0, 1 or 2, got 3"},
        {{"--graph-optimization-config", R"({"use_cudagraph": 1})"},
         "\"use_cudagraph\" expects true or false"},
        {{"--graph-optimization-config", R"({"cudagraph_capture_sizes": [0]})"},
         "capture size 0 must be between 1 and max_num_seqs (8)"},
        {{"--graph-optimization-config", R"({"cudagraph_capture_sizes": [9]})"},
         "capture size 9 must be between 1 and max_num_seqs (8)"},
        {{"--graph-optimization-config", R"({"cudagraph_only_prefill": true})"},
         "cudagraph_only_prefill is not supported"},
        {{"--graph-optimization-config", R"({"magic": true})"},
         "--graph-optimization-config: unknown key \"magic\""},
        {{"--use-cudagraph", "false", "--graph-optimization-config", R"({"use_cudagraph": true})"},
         "--use-cudagraph false contradicts --graph-optimization-config's use_cudagraph true"},
        {{"--quantization", "int3"}, "unknown quantization \"int3\" (expected none, wint8 or wint4)"},
        {{"--quantize-vision=fp4"},
         "--quantize-vision expects on or off (the language model's quantization) or fp8, got 'fp4'"},
        {{"--quantization", "W4A8"},
         "--quantization w4a8 is not supported yet (Folio supports none, wint8 and wint4)"},
        {{"--quantization", R"({"quantization": "wint4", "kv_cache_quant_type": "block_wise_fp8"})"},
         "--quantization: kv_cache_quant_type \"block_wise_fp8\" is not supported (Folio supports int8"},
        {{"--quantization", R"({"quantization": "wint4", "kv_cache_scale": 1})"},
         "--quantization: \"kv_cache_scale\" is not supported"},
        {{"--kv-cache-dtype", "fp8"}, "--kv-cache-dtype expects auto or int8, got 'fp8'"},
        {{"--layout-precision", "fp16"}, "--layout-precision expects float32, tf32 or bfloat16, got 'fp16'"},
        {{"--kv-cache-dtype", "auto", "--quantization",
          R"({"quantization": "wint4", "kv_cache_quant_type": "int8"})"},
         "--kv-cache-dtype auto contradicts --quantization's kv_cache_quant_type int8"},
        {{"--dtype", "float16"}, "--dtype expects float32 or bfloat16, got 'float16'"},
        {{"--reasoning-parser", "deepseek"},
         "--reasoning-parser expects deepseek_r1, ernie-45-vl or ernie-45-vl-thinking, got 'deepseek'"},
        {{"--reasoning-parser", "qwen3"},
         "--reasoning-parser expects deepseek_r1, ernie-45-vl or ernie-45-vl-thinking, got 'qwen3'"},
        {{"--guided-decoding-backend", "outlines"},
         "--guided-decoding-backend expects off, auto, xgrammar or guidance"},
        {{"--splitwise-role", "both"}, "--splitwise-role expects mixed, prefill or decode, got 'both'"},
        {{"--tensor-parallel-size", "0"}, "--tensor-parallel-size must be at least 1, got 0"},
        {{"-tp", "65"}, "--tensor-parallel-size 65: at most 64 devices"},
        {{"-tp", "2", "--devices", "0,1,2"},
         "--devices names 3 devices where --data-parallel-size 1 times --tensor-parallel-size 2 needs 2"},
        {{"-tp", "8", "--data-parallel-size", "9"},
         "--data-parallel-size 9 times --tensor-parallel-size 8 is 72 devices; at most 64"},
        {{"--data-parallel-size=0"}, "--data-parallel-size must be 1 to 64, got 0"},
        {{"--data-parallel-size=2", "--devices", "0,1,2"},
         "--data-parallel-size 2 and --devices with 3 devices disagree"},
        {{"--devices", "0,gpu1"},
         "--devices expects a list of cpu, cuda:N or N separated by commas, got 'gpu1'"},
        {{"--devices", "0,"}, "got ''"},
        {{"--device", "cuda", "--devices", "0,1"}, "--device and --devices name the devices twice"},
        {{"--speculative-config", R"({"method": "mtp", "num_speculative_tokens": 1})"},
         "--speculative-config: speculative decoding (method \"mtp\") is not supported yet"},
        {{"--guided-decoding-backend", "XGrammar"},
         "--guided-decoding-backend XGrammar is not supported yet"},
        {{"--enable-logprob"},
         "--enable-logprob is not supported yet: Folio does not compute log probabilities"},
        {{"--swap-space", "4"}, "--swap-space 4 is not supported: Folio keeps the KV cache on the device"},
        {{"--dynamic-load-weight"}, "--dynamic-load-weight is not supported"},
        {{"--splitwise-role", "prefill"}, "--splitwise-role prefill is not supported"},
        {{"--chat-template", "x.jinja"},
         "--chat-template: no file 'x.jinja', and the value is no template text (it has no {{ or {%)"},
        {{"--tool-call-parser", "qwen3"},
         "--tool-call-parser qwen3 is not supported yet: Folio has no tool calling"},
        {{"--tool-parser-plugin", "p.py"}, "--tool-parser-plugin is not supported yet"},
        {{"--revision", "v1.0"},
         "--revision is not supported: Folio reads the model from the --model folder"},
        {{"--lm-head-fp32", "--device", "cuda"}, "--lm-head-fp32 needs float32 weights (--dtype float32)"},
        // the server's options belong to serve
        {{"--port", "8180"}, "--port is an option of folio-cli serve"},
        {{"--metrics-port=8181"}, "--metrics-port is an option of folio-cli serve"},
        {{"--engine-worker-queue-port", "8182"},
         "--engine-worker-queue-port is an option of folio-cli serve"},
        {{"--cache-queue-port", "8183"}, "--cache-queue-port is an option of folio-cli serve"},
        {{"--max-waiting-time", "10"}, "--max-waiting-time is an option of folio-cli serve"},
        {{"--max-concurrency", "10"}, "--max-concurrency is an option of folio-cli serve"},
        {{"--served-model-name", "ocr"}, "--served-model-name is an option of folio-cli serve"},
        {{"--innode-prefill-ports", "8190"}, "--innode-prefill-ports is an option of folio-cli serve"},
        // unknown options stay unknown
        {{"--max-num-sequences", "8"}, "unknown option --max-num-sequences"},
    };
    return cases;
}

TEST(EngineOptions, AcceptsEachFormatAndRangeEdge) {
    for (const Accepted& c : accepted_cases()) {
        SCOPED_TRACE(joined(c.args));
        EngineOptions o;
        ASSERT_NO_THROW(o = parse(c.args));
        EXPECT_TRUE(c.check(o));
    }
}

TEST(EngineOptions, RefusesWithMessage) {
    for (const Refused& c : refused_cases()) {
        SCOPED_TRACE(joined(c.args));
        EXPECT_NE(error_of(c.args).find(c.message), std::string::npos) << error_of(c.args);
    }
}

// Every option of the table takes the formats of its kind.
TEST(EngineOptions, EveryOptionParsesInItsFormats) {
    // A value each option accepts on generate (beyond the defaults), by FastDeploy's name.
    const std::map<std::string, std::string> sample = {
        {"tokenizer", "/tmp"},
        {"revision", "master"},
        {"max_model_len", "2048"},
        {"block_size", "32"},
        {"use_warmup", "1"},
        {"limit_mm_per_prompt", R"({"image": 2})"},
        {"mm_processor_kwargs", R"({"image_max_pixels": 1000000})"},
        {"reasoning_parser", "ernie-45-vl"},
        {"generation_config", "vllm"},
        {"tool_call_parser", "ernie-45-vl-thinking"},
        {"speculative_config", "{}"},
        {"quantization", "wint8"},
        {"graph_optimization_config", R"({"use_cudagraph": false})"},
        {"guided_decoding_backend", "off"},
        {"tensor_parallel_size", "1"},
        {"data_parallel_size", "1"},
        {"max_num_seqs", "4"},
        {"num_gpu_blocks_override", "512"},
        {"max_num_batched_tokens", "1024"},
        {"gpu_memory_utilization", "0.5"},
        {"kv_cache_ratio", "0.5"},
        {"swap_space", "0"},
        {"static_decode_blocks", "1"},
        {"max_num_partial_prefills", "1"},
        {"max_long_partial_prefills", "1"},
        {"long_prefill_token_threshold", "100"},
        {"splitwise_role", "mixed"},
        {"quant_group_size", "64"},
        {"dtype", "float32"},
        {"kv_cache_dtype", "int8"},
        {"layout_precision", "bfloat16"},
    };
    // Options refused whatever their value, or outside serve (chat_template: "1" is neither a file nor a
    // template).
    const std::vector<std::string> always_refused = {"chat_template", "generation_config", "tool_call_parser",
                                                     "tool_parser_plugin"};
    // Switches refused when on.
    const std::vector<std::string> refused_on = {"dynamic_load_weight", "enable_logprob"};
    for (const auto& info : folio::cli::engine_option_table()) {
        const std::string name(info.name);
        const std::string flag = folio::cli::flag_of(name);
        SCOPED_TRACE(flag);
        if (info.status == folio::cli::OptionStatus::ServeOnly ||
            std::find(always_refused.begin(), always_refused.end(), name) != always_refused.end()) {
            EXPECT_NE(error_of({flag, "1"}), "(accepted)");
            continue;
        }
        std::string underscored = "--" + name;
        if (info.kind == folio::cli::ValueKind::Switch) {
            const bool on_ok = std::find(refused_on.begin(), refused_on.end(), name) == refused_on.end();
            for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
                     {flag}, {flag, "TRUE"}, {flag + "=on"}, {underscored}}) {
                EXPECT_EQ(error_of(args) == "(accepted)", on_ok) << joined(args) << error_of(args);
            }
            for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
                     {flag, "false"}, {flag, "Off"}, {flag + "=FALSE"}, {"--no-" + flag.substr(2)}}) {
                EXPECT_EQ(error_of(args), "(accepted)") << joined(args);
            }
            EXPECT_NE(error_of({flag + "=perhaps"}), "(accepted)");
            continue;
        }
        ASSERT_TRUE(sample.contains(name)) << "no sample value for " << name;
        const std::string& v = sample.at(name);
        EXPECT_EQ(error_of({flag, v}), "(accepted)");
        EXPECT_EQ(error_of({flag + "=" + v}), "(accepted)");
        EXPECT_EQ(error_of({underscored, v}), "(accepted)");
        EXPECT_NE(error_of({flag}), "(accepted)");  // a value is needed
        if (info.kind == folio::cli::ValueKind::Integer || info.kind == folio::cli::ValueKind::Real) {
            EXPECT_NE(error_of({flag, "x"}), "(accepted)");
        }
        if (info.kind == folio::cli::ValueKind::Json) {
            EXPECT_NE(error_of({flag, "{"}), "(accepted)");
        }
    }
}

// --generation-config as vLLM takes it: auto (the model folder's file), vllm (none), or a folder holding one.
TEST(EngineOptions, GenerationConfigIsAutoVllmOrAFolder) {
    using Kind = folio::GenerationConfigSource::Kind;
    EXPECT_EQ(parse({}).generation_config.kind, Kind::Model);
    EXPECT_EQ(parse({"--generation-config", "auto"}).generation_config.kind, Kind::Model);
    EXPECT_EQ(parse({"--generation-config=vllm"}).generation_config.kind, Kind::None);
    const std::string ernie = std::string(FOLIO_FIXTURES_DIR) + "/../ernie45-vl/ernie45-vl-tiny";
    const EngineOptions folder = parse({"--generation_config", ernie});
    EXPECT_EQ(folder.generation_config.kind, Kind::Folder);
    EXPECT_EQ(folder.generation_config.folder, ernie);
    EXPECT_EQ(
        error_of({"--generation-config", "/nonexistent"}),
        "--generation-config /nonexistent: no generation_config.json in that folder (expected auto, vllm "
        "or a folder holding generation_config.json)");
}

TEST(EngineOptions, ServerOptionsParseOnServe) {
    const EngineOptions o =
        parse({"--port", "8180", "--metrics-port=8181", "--engine-worker-queue-port", "8182",
               "--cache-queue-port", "8183,8184", "--max-waiting-time", "-1", "--max-concurrency", "512",
               "--served-model-name", "ocr", "--host", "0.0.0.0", "--api-key", "secret"},
              CommandScope::Serve);
    EXPECT_EQ(o.port, 8180);
    EXPECT_EQ(o.metrics_port, 8181);
    EXPECT_EQ(o.served_model_name, "ocr");
    EXPECT_EQ(o.host, "0.0.0.0");
    EXPECT_EQ(o.api_key, "secret");
    EXPECT_EQ(parse({}, CommandScope::Serve).host, "127.0.0.1");
    EXPECT_EQ(parse({"--port", "0"}, CommandScope::Serve).port, 0);
    EXPECT_NE(error_of({"--port", "-1"}, CommandScope::Serve)
                  .find("--port must be a port 1..65535 (0: any free port), got -1"),
              std::string::npos);
    EXPECT_NE(error_of({"--api-key", ""}, CommandScope::Serve).find("--api-key must not be empty"),
              std::string::npos);
    EXPECT_NE(error_of({"--port", "65536"}, CommandScope::Serve).find("got 65536"), std::string::npos);
    EXPECT_NE(error_of({"--cache-queue-port", "8183,x"}, CommandScope::Serve).find("expects ports 1..65535"),
              std::string::npos);
    EXPECT_NE(
        error_of({"--max-waiting-time", "-2"}, CommandScope::Serve).find("must be -1 (no limit) or more"),
        std::string::npos);
    EXPECT_NE(error_of({"--max-concurrency", "0"}, CommandScope::Serve).find("must be at least 1"),
              std::string::npos);
}

// The pixel bounds of mm_processor_kwargs reach the preprocessing.
TEST(EngineOptions, ImagePixelBoundsApply) {
    folio::PreprocessorConfig pre;
    folio::cli::apply_preprocessing(parse({"--mm-processor-kwargs", R"({"image_max_pixels": 200704})"}), pre);
    EXPECT_EQ(pre.max_pixels, 200704);
    EXPECT_EQ(pre.min_pixels, 384 * 384);
    folio::PreprocessorConfig small;
    EXPECT_THROW(folio::cli::apply_preprocessing(
                     parse({"--mm-processor-kwargs", R"({"image_max_pixels": 100})"}), small),
                 folio::Error);
}

// A video frame's bounds: over the model's own where it has them, else from the images' for the bound not
// given.
TEST(EngineOptions, VideoPixelBoundsApply) {
    folio::PreprocessorConfig ernie;
    ernie.video_min_pixels = 3136;
    ernie.video_max_pixels = 9408;
    folio::cli::apply_preprocessing(parse({"--mm-processor-kwargs", R"({"video_max_pixels": 200704})"}),
                                    ernie);
    EXPECT_EQ(ernie.video_max_pixels, 200704);
    EXPECT_EQ(ernie.video_min_pixels, 3136);
    EXPECT_EQ(ernie.max_pixels, 1536 * 1536);  // the images' untouched
    folio::PreprocessorConfig plain;
    folio::cli::apply_preprocessing(parse({"--mm-processor-kwargs", R"({"video_min_pixels": 50176})"}),
                                    plain);
    EXPECT_EQ(plain.video_min_pixels, 50176);
    EXPECT_EQ(plain.video_max_pixels, plain.max_pixels);
    folio::PreprocessorConfig empty = ernie;
    EXPECT_THROW(
        folio::cli::apply_preprocessing(
            parse({"--mm-processor-kwargs", R"({"video_min_pixels": 300000, "video_max_pixels": 9408})"}),
            empty),
        folio::Error);
}

// --help lists every option (the server's on serve), under FastDeploy's groups.
TEST(EngineOptions, HelpListsEveryOption) {
    const std::string offline = folio::cli::engine_usage();
    const std::string serve = folio::cli::engine_usage(CommandScope::Serve);
    for (const auto& info : folio::cli::engine_option_table()) {
        const std::string flag = folio::cli::flag_of(info.name);
        EXPECT_NE(serve.find(flag), std::string::npos) << flag;
        EXPECT_NE(offline.find(flag), std::string::npos) << flag;
        EXPECT_NE(serve.find(std::string(info.group)), std::string::npos) << info.group;
    }
    // Each help fills lines of at most 110 columns, all its words kept in order.
    const auto words = [](const std::string& text) {
        std::string joined;
        std::istringstream in(text);
        for (std::string word; in >> word;) {
            joined += word + ' ';
        }
        return joined;
    };
    std::istringstream lines(serve);
    for (std::string line; std::getline(lines, line);) {
        EXPECT_LE(line.size(), 110u) << line;
    }
    for (const auto& info : folio::cli::engine_option_table()) {
        const std::string help = words(std::string(info.help) + " [" + std::string(info.folio_default) + "]");
        EXPECT_NE(words(serve).find(help), std::string::npos) << help;
    }
}

// The engines' devices: --device alone, --devices LIST, or --data-parallel-size N from --device's on.
TEST(EngineOptions, DevicesForDataParallelism) {
    using V = std::vector<std::string>;
    const auto devices = [](const std::vector<std::string>& args) {
        return folio::cli::engine_devices(make_options(args));
    };
    EXPECT_EQ(devices({}), V{"cpu"});
    EXPECT_EQ(devices({"--device", "cuda:1"}), V{"cuda:1"});
    EXPECT_EQ(devices({"--devices", "0,1,cuda:3"}), (V{"cuda:0", "cuda:1", "cuda:3"}));
    EXPECT_EQ(devices({"--devices", "0,0"}), (V{"cuda:0", "cuda:0"})) << "two engines sharing a card";
    EXPECT_EQ(devices({"--devices", "cpu,cpu", "--data-parallel-size", "2"}), (V{"cpu", "cpu"}));
    EXPECT_EQ(devices({"--data-parallel-size", "3", "--device", "cuda"}), (V{"cuda:0", "cuda:1", "cuda:2"}));
    EXPECT_EQ(devices({"--data-parallel-size", "2", "--device", "cuda:2"}), (V{"cuda:2", "cuda:3"}));
    EXPECT_EQ(devices({"--data-parallel-size", "2"}), (V{"cpu", "cpu"}));
    EXPECT_EQ(parse({"--devices", "cpu,cpu"}).engine.max_num_seqs, 8) << "CPU defaults for CPU engines";
    EXPECT_THROW(devices({"--devices", "0,1", "--data-parallel-size", "65"}), folio::Error);
    std::string list;
    for (int i = 0; i < 65; ++i) {
        if (i > 0) {
            list += ',';
        }
        list += std::to_string(i);
    }
    EXPECT_THROW(devices({"--devices", list}), folio::Error);
}

// Tensor parallelism: each engine's ranks, runs of --tensor-parallel-size devices.
TEST(EngineOptions, DeviceGroupsForTensorParallelism) {
    using G = std::vector<std::vector<std::string>>;
    const auto groups = [](const std::vector<std::string>& args) {
        return folio::cli::engine_device_groups(make_options(args));
    };
    EXPECT_EQ(groups({}), (G{{"cpu"}}));
    EXPECT_EQ(groups({"-tp", "2"}), (G{{"cpu", "cpu"}})) << "two CPU ranks";
    EXPECT_EQ(groups({"--tensor-parallel-size", "2", "--device", "cuda"}), (G{{"cuda:0", "cuda:1"}}));
    EXPECT_EQ(groups({"-tp", "2", "--device", "cuda:2"}), (G{{"cuda:2", "cuda:3"}}));
    EXPECT_EQ(groups({"-tp", "2", "--devices", "0,0"}), (G{{"cuda:0", "cuda:0"}})) << "two ranks on one card";
    EXPECT_EQ(groups({"-tp", "2", "--devices", "0,1,2,3"}), (G{{"cuda:0", "cuda:1"}, {"cuda:2", "cuda:3"}}))
        << "two engines of two ranks";
    EXPECT_EQ(groups({"-tp", "2", "--data-parallel-size", "2", "--device", "cuda"}),
              (G{{"cuda:0", "cuda:1"}, {"cuda:2", "cuda:3"}}));
    EXPECT_EQ(groups({"-tp", "4", "--data-parallel-size", "2"}),
              (G{{"cpu", "cpu", "cpu", "cpu"}, {"cpu", "cpu", "cpu", "cpu"}}));
    EXPECT_EQ(folio::cli::engine_devices(make_options({"-tp", "2", "--devices", "3,1"})),
              (std::vector<std::string>{"cuda:3", "cuda:1"}));
}

// How an engine's ranks sum: on the host where they share a card or run on the CPU (NCCL takes one rank a
// device), through NCCL on cards of their own; a missing NCCL is named with the way to get one.
TEST(EngineOptions, RanksOnCardsOfTheirOwnSumThroughNccl) {
    using folio::cli::collective_group_maker;
    EXPECT_FALSE(collective_group_maker({"cpu", "cpu"}));
    EXPECT_FALSE(collective_group_maker({"cuda:0", "cuda:0"}));
    EXPECT_FALSE(collective_group_maker({"cuda", "cuda:0"})) << "cuda is cuda:0";
    EXPECT_FALSE(collective_group_maker({"cuda:1"})) << "one rank sums nothing";
    const auto maker = collective_group_maker({"cuda:0", "cuda:1"});
#ifdef FOLIO_WITH_CUDA
    ASSERT_TRUE(maker);
    ::setenv("FOLIO_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    try {
        (void)maker(2);
        FAIL() << "an NCCL group without NCCL";
    } catch (const folio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("NCCL library /nonexistent/libnccl.so.2 cannot be opened"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("FOLIO_NCCL_LIBRARY"), std::string::npos) << e.what();
    }
    ::unsetenv("FOLIO_NCCL_LIBRARY");
#else
    EXPECT_FALSE(maker) << "no CUDA, no NCCL";
#endif
}

// docs/fastdeploy-options.md has a row for every option.
TEST(EngineOptions, DocsTableListsEveryOption) {
    std::ifstream in(std::string(FOLIO_FIXTURES_DIR) + "/../../../docs/fastdeploy-options.md");
    ASSERT_TRUE(in) << "docs/fastdeploy-options.md";
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& info : folio::cli::engine_option_table()) {
        EXPECT_NE(text.str().find("| `" + std::string(info.name) + "`"), std::string::npos) << info.name;
    }
}

}  // namespace

TEST(EngineOptions, ValuesByNameAsASettingsStoreKeepsThem) {
    using folio::cli::engine_options_from_values;
    const EngineOptions o = engine_options_from_values({{"max_model_len", "4096"},
                                                        {"max_num_seqs", "16"},
                                                        {"enable_prefix_caching", "false"},
                                                        {"gpu_memory_utilization", "0.5"},
                                                        {"quantization", "wint8"}},
                                                       model_config(), "cuda:0");
    EXPECT_EQ(o.engine.max_model_len, 4096);
    EXPECT_EQ(o.engine.max_num_seqs, 16);
    EXPECT_FALSE(o.engine.enable_prefix_caching);
    EXPECT_DOUBLE_EQ(o.engine.gpu_memory_utilization, 0.5);
    EXPECT_EQ(o.load.quantization, folio::Quantization::Wint8);
    EXPECT_TRUE(o.load.bf16_weights);  // the GPU's default
    EXPECT_FALSE(engine_options_from_values({}, model_config(), "cpu").load.bf16_weights);
    const auto message = [](const std::vector<std::pair<std::string, std::string>>& values) {
        try {
            engine_options_from_values(values, model_config());
        } catch (const folio::Error& e) {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    EXPECT_EQ(message({{"gpu_memory_utilization", "1.5"}}),
              "--gpu-memory-utilization must be in (0, 1], got 1.5");
    EXPECT_EQ(message({{"max_num_seqs", "0"}}), "--max-num-seqs must be between 1 and 256, got 0");
    EXPECT_EQ(message({{"no_such_option", "1"}}), "unknown engine option no_such_option");
}

// --device-memory: sizes in binary units, refused where malformed and on the CPU.
TEST(DeviceMemoryOption, SizesInBinaryUnits) {
    using folio::cli::parse_byte_size;
    EXPECT_EQ(parse_byte_size("--device-memory", "8GiB"), int64_t{8} << 30);
    EXPECT_EQ(parse_byte_size("--device-memory", "12G"), int64_t{12} << 30);
    EXPECT_EQ(parse_byte_size("--device-memory", "4096M"), int64_t{4096} << 20);
    EXPECT_EQ(parse_byte_size("--device-memory", "1.5GB"), int64_t{3} << 29);
    EXPECT_EQ(parse_byte_size("--device-memory", "65536"), 65536);
    for (const char* bad : {"", "G", "-1G", "0", "8X", "8GiBs", "1e30"}) {
        try {
            parse_byte_size("--device-memory", bad);
            FAIL() << "accepted '" << bad << "'";
        } catch (const folio::Error& e) {
            EXPECT_NE(std::string(e.what()).find("--device-memory expects a size"), std::string::npos)
                << e.what();
        }
    }
    EXPECT_THROW(folio::cli::device_memory_limit(make_options({"--device-memory", "8G"})), folio::Error);
    EXPECT_EQ(folio::cli::device_memory_limit(make_options({"--device", "cuda:0", "--device-memory", "8G"})),
              int64_t{8} << 30);
    EXPECT_EQ(folio::cli::device_memory_limit(make_options({"--device", "cuda:0"})), 0);
}
