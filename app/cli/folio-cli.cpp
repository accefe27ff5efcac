// folio-cli: Folio from the command line. Subcommands: ocr, generate, bench, tokenize, layout, model, serve.
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/bench.h"
#include "app/cli/cli-service.h"
#include "app/cli/layout-command.h"
#include "app/cli/model-command.h"
#include "app/cli/ocr-command.h"
#include "app/cli/serve-command.h"
#include "app/cli/server-bench.h"
#include "app/cli/tokenize-command.h"
#include "app/images/image-loader.h"
#include "app/options/cli-options.h"
#include "app/options/engine-options.h"
#include "engine/common/error.h"
#include "engine/models/model-registry.h"
#include "engine/service/engine-service.h"

namespace {

using folio::fail;
using folio::seconds_since;
using namespace folio::cli;

constexpr const char* kUsage = R"(usage:
  folio-cli generate --model DIR|ORG/NAME [--image FILE ...] --prompt TEXT [--prompt TEXT ...]
                     [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]
                     [--repetition-penalty R] [--seed S] [--stop TEXT ...] [--device cpu|cuda[:N]]
                     [--threads N]
                     [engine options]
      Runs PaddleOCR-VL on the images with the task prompt ("OCR:", "Table Recognition:",
      "Formula Recognition:", "Chart Recognition:"). One prompt takes every image and streams its text
      to stdout; several prompts run as a batch, each with its own image (one --image per prompt) or all
      with the same one (a single --image), and print their texts when done. Sampling flags left out take
      the model folder's generation_config.json values (--generation-config vllm: greedy decoding).
      Without --max-tokens a request may run to max_model_len (or the file's max_new_tokens); a
      --max-tokens that does not fit it is refused. --model takes a
      model folder, or a Hub repository already downloaded (folio-cli model pull).
)";

int run_generate(const Options& opt) {
    opt.allow(
        with_engine_flags({"--model", "--device", "--image", "--prompt", "--max-tokens", "--temperature",
                           "--top-k", "--top-p", "--repetition-penalty", "--seed", "--threads", "--stop"}));
    const std::filesystem::path model_dir = resolve_model_option(opt.text("--model"), opt.has("--tokenizer"));
    const std::vector<std::string> tasks = opt.all("--prompt");
    if (tasks.empty()) {
        fail("missing required option --prompt");
    }
    folio::GenerationOptions options;
    if (opt.has("--max-tokens")) {
        options.max_tokens = opt.integer("--max-tokens", 0);
    }
    options.sampling.temperature = static_cast<float>(opt.real("--temperature", 0.0));
    options.sampling.top_k = static_cast<int>(opt.integer("--top-k", 0));
    options.sampling.top_p = static_cast<float>(opt.real("--top-p", 1.0));
    options.sampling.repetition_penalty = static_cast<float>(opt.real("--repetition-penalty", 1.0));
    options.sampling.seed = static_cast<uint64_t>(opt.integer("--seed", 0));
    // What the flags leave out comes from the model's generation_config.json (--generation-config).
    options.model_defaults = {!opt.has("--temperature"), !opt.has("--top-p"), !opt.has("--top-k"),
                              !opt.has("--repetition-penalty"), !opt.has("--max-tokens")};
    options.stop_strings = opt.all("--stop");

    // Which images each prompt takes.
    const std::vector<std::string> image_paths = opt.all("--image");
    std::vector<std::vector<std::string>> request_images(tasks.size());
    if (tasks.size() == 1) {
        request_images[0] = image_paths;
    } else if (image_paths.size() == tasks.size() || image_paths.size() == 1) {
        for (size_t i = 0; i < tasks.size(); ++i) {
            request_images[i] = {image_paths[image_paths.size() == 1 ? 0 : i]};
        }
    } else if (!image_paths.empty()) {
        fail(tasks.size(), " prompts need one --image each or a single --image for all, got ",
             image_paths.size());
    }
    std::vector<folio::RequestSpec> specs;
    for (size_t r = 0; r < tasks.size(); ++r) {
        folio::ImageTask task;
        for (const auto& path : request_images[r]) {
            task.images.push_back(folio::load_image(path));
        }
        task.task = tasks[r];
        specs.push_back({std::move(task), options});
    }

    folio::EngineService service;
    load_service(service, opt, model_dir, parse_engine_options(opt, folio::describe_model(model_dir)));
    const auto start = std::chrono::steady_clock::now();
    std::vector<folio::RequestHandle> handles;
    for (folio::RequestSpec& spec : specs) {
        handles.push_back(service.submit(std::move(spec), {}));
    }
    const bool stream = tasks.size() == 1;
    int status = 0;
    for (size_t r = 0; r < handles.size(); ++r) {
        std::string text;
        size_t n_tokens = 0;
        std::optional<folio::RequestOutput> last;
        while (std::optional<folio::RequestOutput> out = handles[r].next()) {
            if (stream) {
                std::cout << out->text << std::flush;
            }
            text += out->text;
            n_tokens += out->tokens.size();
            last = std::move(out);
        }
        if (stream) {
            std::cout << std::endl;
        } else {
            std::cout << "=== request " << r << ": " << tasks[r] << "\n" << text << "\n";
        }
        const folio::FinishReason finish = last && last->finish ? *last->finish : folio::FinishReason::Error;
        if (last && !last->error.empty()) {
            std::cerr << "folio-cli generate: request " << r << ": error: " << last->error << "\n";
            status = 1;
            continue;
        }
        std::cerr << "folio-cli: request " << r << ": " << n_tokens << " tokens ("
                  << folio::finish_reason_name(finish) << "), prompt " << handles[r].n_prompt_tokens()
                  << " tokens\n";
    }
    const double seconds = seconds_since(start);
    const folio::EngineStats stats = service.stats().engine;
    std::cerr << "folio-cli: " << seconds << " s, " << stats.runner.n_steps << " steps, "
              << stats.runner.n_tokens << " tokens through the decoder, " << stats.runner.n_image_patches
              << " image patches, " << stats.n_preemptions << " preemptions, prefix cache "
              << stats.n_prefix_hit_blocks << "/" << stats.n_prefix_lookup_blocks << " blocks hit\n";
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
        std::cout << kUsage << kOcrUsage << kBenchUsage << kTokenizeUsage << kLayoutUsage << kModelUsage
                  << kServeUsage << kServerBenchUsage << "\n"
                  << engine_usage();
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    try {
        if (command == "tokenize") {
            return run_tokenize(argc, argv, 2);
        }
        if (command == "ocr") {
            return run_ocr(argc, argv, 2);
        }
        if (command == "serve") {
            return run_serve(argc, argv, 2);
        }
        if (command == "layout") {
            return run_layout(argc, argv, 2);
        }
        if (command == "model") {
            if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "help")) {
                std::cout << kModelUsage;
                return 0;
            }
            return run_model(argc, argv, 2);
        }
        const Options options(argc, argv, 2);
        if (options.has("--help")) {
            std::cout << kUsage << kOcrUsage << kBenchUsage << kTokenizeUsage << kLayoutUsage << kModelUsage
                      << kServeUsage << kServerBenchUsage << "\n"
                      << engine_usage();
            return 0;
        }
        if (command == "generate") {
            return run_generate(options);
        }
        if (command == "bench") {
            return options.has("--server") ? run_server_bench(options) : run_bench(options);
        }
        std::cerr << "folio-cli: unknown command '" << command << "'\n"
                  << kUsage << kOcrUsage << kBenchUsage << kTokenizeUsage << kLayoutUsage << kModelUsage
                  << kServeUsage << kServerBenchUsage << "\n"
                  << engine_usage();
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "folio-cli " << command << ": error: " << e.what() << "\n";
        return 1;
    }
}
