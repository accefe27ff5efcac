// folio-cli: the engine from the command line. Subcommands: generate, bench, tokenize.
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench.h"
#include "cli-options.h"
#include "engine-core.h"
#include "engine-options.h"
#include "error.h"
#include "image-loader.h"
#include "image-preprocess.h"
#include "model-loader.h"
#include "models/paddleocr-vl/chat-prompt.h"
#include "models/paddleocr-vl/paddleocr-vl.h"
#include "tokenize-command.h"
#include "tokenizer.h"
#include "weight-source.h"

namespace {

using folio::fail;
using folio::seconds_since;
using namespace folio::cli;

constexpr const char* kUsage = R"(usage:
  folio-cli generate --model DIR [--image FILE ...] --prompt TEXT [--prompt TEXT ...]
                     [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]
                     [--repetition-penalty R] [--seed S] [--stop TEXT ...] [--device cpu|cuda[:N]]
                     [--threads N]
                     [engine options]
      Runs PaddleOCR-VL on the images with the task prompt ("OCR:", "Table Recognition:",
      "Formula Recognition:", "Chart Recognition:"). One prompt takes every image and streams its text
      to stdout; several prompts run as a batch, each with its own image (one --image per prompt) or all
      with the same one (a single --image), and print their texts when done.
)";

int run_generate(const Options& opt) {
    opt.allow(
        with_engine_flags({"--model", "--device", "--image", "--prompt", "--max-tokens", "--temperature",
                           "--top-k", "--top-p", "--repetition-penalty", "--seed", "--threads", "--stop"}));
    const std::filesystem::path model_dir = opt.text("--model");
    const std::vector<std::string> tasks = opt.all("--prompt");
    if (tasks.empty()) {
        fail("missing required option --prompt");
    }
    folio::Request base;
    base.max_tokens = opt.integer("--max-tokens", 1024);
    base.sampling.temperature = static_cast<float>(opt.real("--temperature", 0.0));
    base.sampling.top_k = static_cast<int>(opt.integer("--top-k", 0));
    base.sampling.top_p = static_cast<float>(opt.real("--top-p", 1.0));
    base.sampling.repetition_penalty = static_cast<float>(opt.real("--repetition-penalty", 1.0));
    base.sampling.seed = static_cast<uint64_t>(opt.integer("--seed", 0));
    base.stop_strings = opt.all("--stop");

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

    const auto files = folio::ModelFiles::open(model_dir);
    const folio::ModelConfig& cfg = files->config();
    const EngineOptions engine_options = parse_engine_options(opt, cfg);
    folio::PreprocessorConfig preprocessor = files->preprocessor();
    apply_preprocessing(engine_options, preprocessor);
    const auto tokenizer = folio::Tokenizer::load(engine_options.tokenizer.value_or(model_dir));
    const auto backend = make_backend(opt);
    const auto weights = folio::make_file_weight_source(*files);
    folio::PaddleOcrVl model(*backend, cfg, *weights, engine_options.load);
    folio::EngineCore engine(model, engine_options.engine, tokenizer.get());

    std::vector<int64_t> ids;
    for (size_t r = 0; r < tasks.size(); ++r) {
        std::vector<folio::Image> images;
        for (const auto& path : request_images[r]) {
            images.push_back(folio::load_image(path));
        }
        folio::Request request = base;
        request.images = folio::preprocess_images(images, preprocessor);
        std::vector<int64_t> n_image_tokens;
        const int64_t merge =
            static_cast<int64_t>(cfg.vision.spatial_merge_size) * cfg.vision.spatial_merge_size;
        for (const auto& g : request.images.grids) {
            n_image_tokens.push_back(g.n_patches() / merge);
        }
        request.prompt = folio::build_chat_prompt(
            *tokenizer, {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id},
            n_image_tokens, tasks[r]);
        ids.push_back(engine.submit(std::move(request)));
    }

    const bool stream = tasks.size() == 1;
    std::map<int64_t, std::string> texts;
    std::map<int64_t, std::pair<size_t, folio::FinishReason>> done;
    const auto start = std::chrono::steady_clock::now();
    while (engine.has_unfinished()) {
        for (const folio::RequestOutput& out : engine.step()) {
            if (stream) {
                std::cout << out.text << std::flush;
            }
            texts[out.id] += out.text;
            done[out.id].first += out.tokens.size();
            if (out.finish) {
                done[out.id].second = *out.finish;
            }
        }
    }
    const double seconds = seconds_since(start);
    for (size_t r = 0; r < ids.size(); ++r) {
        if (stream) {
            std::cout << std::endl;
        } else {
            std::cout << "=== request " << r << ": " << tasks[r] << "\n" << texts[ids[r]] << "\n";
        }
        std::cerr << "folio-cli: request " << r << ": " << done[ids[r]].first << " tokens ("
                  << folio::finish_reason_name(done[ids[r]].second) << ")\n";
    }
    const folio::EngineStats stats = engine.stats();
    std::cerr << "folio-cli: " << seconds << " s, " << stats.runner.n_steps << " steps, "
              << stats.runner.n_tokens << " tokens through the decoder, " << stats.runner.n_image_patches
              << " image patches, " << stats.n_preemptions << " preemptions, prefix cache "
              << stats.n_prefix_hit_blocks << "/" << stats.n_prefix_lookup_blocks << " blocks hit\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
        std::cout << kUsage << kBenchUsage << kTokenizeUsage << "\n" << engine_usage();
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    try {
        if (command == "tokenize") {
            return run_tokenize(argc, argv, 2);
        }
        const Options options(argc, argv, 2);
        if (options.has("--help")) {
            std::cout << kUsage << kBenchUsage << kTokenizeUsage << "\n" << engine_usage();
            return 0;
        }
        if (command == "generate") {
            return run_generate(options);
        }
        if (command == "bench") {
            return run_bench(options);
        }
        std::cerr << "folio-cli: unknown command '" << command << "'\n"
                  << kUsage << kBenchUsage << kTokenizeUsage << "\n"
                  << engine_usage();
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "folio-cli " << command << ": error: " << e.what() << "\n";
        return 1;
    }
}
