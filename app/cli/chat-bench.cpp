#include "app/cli/chat-bench.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli/bench.h"
#include "app/options/device-memory.h"
#include "app/options/engine-options.h"
#include "engine/common/clock.h"
#include "engine/common/error.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/ernie45-vl/ernie45-vl.h"
#include "engine/models/llama/config.h"
#include "engine/models/llama/llama.h"
#include "engine/models/model-registry.h"
#include "engine/service/engine-service.h"

namespace folio::cli {

namespace {

constexpr std::string_view kErnie = "ernie-4.5-vl";
constexpr std::string_view kLlama = "llama";

// What the benchmark needs of a chat model's architecture: its vocabulary, depth, the weights a decode step
// reads, and the random model's config.json overrides.
struct BenchArchitecture {
    std::string name;
    std::string random_config = "{}";
    int64_t vocab_size = 0;
    int n_layers = 0;
    std::function<int64_t(const ModelLoadParams&)> step_bytes;
};

// The architecture of --family's full-size model (with --num-layers of its layers) or of --model's folder.
BenchArchitecture bench_architecture(const Options& opt, std::string_view family,
                                     const std::filesystem::path& model_dir) {
    const bool random = model_dir.empty();
    BenchArchitecture out;
    if (family == kErnie) {
        const int64_t max_layers = 28;
        nlohmann::json text = nlohmann::json::object();
        if (random && opt.has("--num-layers")) {
            const int64_t n_layers = opt.integer("--num-layers", 0);
            if (n_layers < 1 || n_layers > max_layers) {
                fail("--num-layers must be 1 to ", max_layers, ", got ", n_layers);
            }
            text["num_hidden_layers"] = n_layers;
        }
        out.random_config = nlohmann::json{{"text_config", text}}.dump();
        const Ernie45VlConfig config = random ? parse_ernie45_vl_config(out.random_config, "--num-layers")
                                              : load_ernie45_vl_config(model_dir / "config.json");
        out.name = "ERNIE-4.5-VL";
        out.vocab_size = config.text.vocab_size;
        out.n_layers = config.text.num_hidden_layers;
        out.step_bytes = [text = config.text](const ModelLoadParams& load) {
            return ernie45_vl_decode_bytes(text, load);
        };
        return out;
    }
    nlohmann::json overrides = nlohmann::json::object();
    if (random && opt.has("--num-layers")) {
        const int64_t max_layers = llama_full_size_config().num_hidden_layers;
        const int64_t n_layers = opt.integer("--num-layers", 0);
        if (n_layers < 1 || n_layers > max_layers) {
            fail("--num-layers must be 1 to ", max_layers, ", got ", n_layers);
        }
        overrides["num_hidden_layers"] = n_layers;
    }
    out.random_config = overrides.dump();
    const LlamaConfig config =
        random ? llama_full_size_config(out.random_config) : load_llama_config(model_dir / "config.json");
    out.name = "Llama (DeepSeek-R1-Distill-Llama-8B)";
    out.vocab_size = config.vocab_size;
    out.n_layers = config.num_hidden_layers;
    out.step_bytes = [config](const ModelLoadParams& load) { return llama_decode_bytes(config, load); };
    return out;
}

}  // namespace

bool wants_chat_bench(const Options& opt) {
    if (opt.has("--family")) {
        return true;
    }
    return opt.has("--model") && !opt.has("--layout-model") && !opt.has("--document") &&
           describe_model(opt.text("--model")).role == ModelRole::Chat;
}

int run_chat_bench(const Options& opt) {
    opt.allow(with_engine_flags({"--device", "--model", "--family", "--num-layers", "--threads", "--batch",
                                 "--prefill-tokens", "--decode-tokens", "--decode-context"}));
    const bool random = !opt.has("--model");
    if (random == !opt.has("--family")) {
        fail(random ? "bench needs --family NAME (random weights) or --model DIR"
                    : "--family and --model exclude each other: --model's folder names its family");
    }
    if (random && opt.text("--family") != kErnie && opt.text("--family") != kLlama) {
        fail("--family: the chat benchmark knows '", kErnie, "' and '", kLlama, "', got '",
             opt.text("--family"), "'");
    }
    if (!random && opt.has("--num-layers")) {
        fail("--num-layers goes with --family: a model folder's config.json says how many layers it has");
    }
    const int64_t n_prefill = opt.integer("--prefill-tokens", 1024);
    const int64_t n_decode = opt.integer("--decode-tokens", 64);
    const int64_t n_context = opt.integer("--decode-context", 16);
    if (n_prefill < 1 || n_decode < 2 || n_context < 1) {
        fail("--prefill-tokens and --decode-context must be at least 1 and --decode-tokens at least 2");
    }
    const std::vector<int64_t> batches = parse_batch_sizes(opt, "1,8,32");

    const std::filesystem::path model_dir =
        random ? std::filesystem::path() : std::filesystem::path(opt.text("--model"));
    const ModelFamily* family = random ? ModelRegistry::builtin().find(opt.text("--family"))
                                       : &ModelRegistry::builtin().family_of(model_dir);
    if (family == nullptr || (family->name() != kErnie && family->name() != kLlama)) {
        fail(model_dir.string(), ": the chat benchmark measures ", kErnie, " and ", kLlama, " models");
    }
    const BenchArchitecture arch = bench_architecture(opt, family->name(), model_dir);
    const ModelDescription description = family->describe(model_dir);
    const EngineOptions engine_options = parse_engine_options(opt, description);
    const ModelLoadParams& load = engine_options.load;
    EngineConfig engine_cfg = engine_options.engine;
    // Prompts run as one chunk each, as long as the prompt, unless --max-num-batched-tokens sets the step
    // (a long context under a memory cap is prefilled in chunks).
    const bool chunked = opt.has("--max-num-batched-tokens");
    if (!chunked) {
        engine_cfg.max_num_batched_tokens = std::max(engine_cfg.max_num_batched_tokens, n_prefill);
    }

    EngineService service;
    ServiceParams params;
    set_service_devices(params, opt);
    ModelSlot slot(ModelRole::Chat, model_dir, load);
    slot.family = std::string(family->name());
    slot.random_config = arch.random_config;
    params.models.push_back(std::move(slot));
    params.engine = engine_cfg;
    const auto start = std::chrono::steady_clock::now();
    service.load(std::move(params));
    if (service.wait_loaded(std::chrono::hours(24)) != ServiceState::Ready) {
        fail(service.status().error);
    }
    const double load_seconds = seconds_since(start);

    const int64_t vocab = arch.vocab_size;
    const nlohmann::json prefill = bench_decode(service, vocab, engine_cfg, 1, n_prefill, 2, chunked);
    nlohmann::json decode = nlohmann::json::array();
    for (const int64_t b : batches) {
        decode.push_back(bench_decode(service, vocab, engine_cfg, b, n_context, n_decode, chunked));
    }
    double bandwidth = 0.0;
    int64_t n_weight_bytes = 0, peak_bytes = 0;
    std::string device;
    service.run_on_engine_thread([&](EngineContext& context) {
        const GenerativeModel* model = context.models.front()->generative();
        if (model == nullptr) {
            fail("bench: the service's model is not generative");
        }
        n_weight_bytes = model->n_weight_bytes();
        bandwidth = copy_bandwidth(context.backend);
        peak_bytes = context.backend.memory_stats().peak;
        device = context.backend.name();
    });
    const int64_t step_bytes = arch.step_bytes(load);
    const double floor = bandwidth / static_cast<double>(step_bytes);
    nlohmann::json report = {
        {"model", random ? "full-size " + arch.name + " architecture, random weights" : opt.text("--model")},
        {"num_hidden_layers", arch.n_layers},
        {"device", device},
        {"quantization", quantization_name(load.quantization)},
        {"dtype", load.bf16_weights ? "bf16 weights, f32 activations" : "f32"},
        {"weight_bytes", n_weight_bytes},
        {"peak_bytes", peak_bytes},
        {"load_seconds", load_seconds},
        {"copy_bandwidth_bytes_per_second", bandwidth},
        {"decode_weight_bytes_per_step", step_bytes},
        {"decode_floor_tokens_per_second", floor},
        {"prefill",
         {{"tokens", n_prefill},
          {"seconds", prefill["prefill_seconds"]},
          {"tokens_per_second", prefill["prefill_tokens_per_second"]}}},
        {"decode", decode},
    };
    if (!decode.empty() && decode.front()["batch"] == 1) {
        report["decode_batch1_floor_over_measured"] =
            floor / decode.front()["tokens_per_second"].get<double>();
    }
    std::cout << report.dump(2) << std::endl;
    return 0;
}

}  // namespace folio::cli
