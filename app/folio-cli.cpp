// folio-cli: the engine from the command line. Subcommands: generate, bench.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend.h"
#include "chat-prompt.h"
#include "error.h"
#include "generator.h"
#include "image-loader.h"
#include "image-preprocess.h"
#include "kv-cache.h"
#include "model-loader.h"
#include "paddleocr-vl.h"
#include "tokenizer.h"
#include "weight-source.h"

namespace {

using folio::fail;

constexpr const char* kUsage = R"(usage:
  folio-cli generate --model DIR --image FILE [--image FILE ...] --prompt TEXT
                     [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]
                     [--repetition-penalty R] [--seed S] [--threads N]
      Runs PaddleOCR-VL on the images with the task prompt ("OCR:", "Table Recognition:",
      "Formula Recognition:", "Chart Recognition:") and streams the text to stdout.
  folio-cli bench --device cpu [--model DIR] [--threads N] [--image-size WxH] [--decode-tokens N]
      Measures the model (full-size random weights unless --model is given) and prints JSON.
)";

// Command-line options: repeated flags keep every value, in order.
class Options {
public:
    Options(int argc, char** argv, int first) {
        for (int i = first; i < argc; ++i) {
            const std::string flag = argv[i];
            if (!flag.starts_with("--")) {
                fail("unexpected argument '", flag, "'");
            }
            if (flag == "--help") {
                values_[flag].push_back("");
                continue;
            }
            if (i + 1 >= argc) {
                fail("option ", flag, " needs a value");
            }
            values_[flag].push_back(argv[++i]);
        }
    }

    void allow(std::initializer_list<const char*> known) const {
        for (const auto& [flag, _] : values_) {
            if (flag != "--help" && std::find_if(known.begin(), known.end(),
                                                 [&](const char* k) { return flag == k; }) == known.end()) {
                fail("unknown option ", flag);
            }
        }
    }
    bool has(const std::string& flag) const { return values_.contains(flag); }
    std::vector<std::string> all(const std::string& flag) const {
        const auto it = values_.find(flag);
        return it == values_.end() ? std::vector<std::string>{} : it->second;
    }
    std::string text(const std::string& flag, std::optional<std::string> fallback = std::nullopt) const {
        const auto it = values_.find(flag);
        if (it != values_.end()) {
            return it->second.back();
        }
        if (!fallback) {
            fail("missing required option ", flag);
        }
        return *fallback;
    }
    long long integer(const std::string& flag, long long fallback) const {
        return has(flag)
                   ? parse<long long>(flag, [](const std::string& s, size_t* n) { return std::stoll(s, n); })
                   : fallback;
    }
    double real(const std::string& flag, double fallback) const {
        return has(flag)
                   ? parse<double>(flag, [](const std::string& s, size_t* n) { return std::stod(s, n); })
                   : fallback;
    }

private:
    template <typename T, typename F>
    T parse(const std::string& flag, F&& convert) const {
        const std::string s = text(flag);
        try {
            size_t used = 0;
            const T v = convert(s, &used);
            if (used == s.size()) {
                return v;
            }
        } catch (const std::exception&) {
        }
        fail("option ", flag, " expects a number, got '", s, "'");
    }

    std::map<std::string, std::vector<std::string>> values_;
};

int run_generate(const Options& opt) {
    opt.allow({"--model", "--image", "--prompt", "--max-tokens", "--temperature", "--top-k", "--top-p",
               "--repetition-penalty", "--seed", "--threads"});
    const std::filesystem::path model_dir = opt.text("--model");
    const std::string task = opt.text("--prompt");
    folio::GenerateParams params;
    params.max_tokens = static_cast<int>(opt.integer("--max-tokens", 1024));
    params.sampling.temperature = static_cast<float>(opt.real("--temperature", 0.0));
    params.sampling.top_k = static_cast<int>(opt.integer("--top-k", 0));
    params.sampling.top_p = static_cast<float>(opt.real("--top-p", 1.0));
    params.sampling.repetition_penalty = static_cast<float>(opt.real("--repetition-penalty", 1.0));
    params.sampling.seed = static_cast<uint64_t>(opt.integer("--seed", 0));
    folio::validate(params.sampling);
    if (params.max_tokens < 1) {
        fail("--max-tokens must be at least 1, got ", params.max_tokens);
    }

    std::vector<folio::Image> images;
    for (const auto& path : opt.all("--image")) {
        images.push_back(folio::load_image(path));
    }
    const auto files = folio::ModelFiles::open(model_dir);
    const auto tokenizer = folio::Tokenizer::load(model_dir);
    const folio::ModelConfig& cfg = files->config();
    const folio::PreprocessedImages pre = folio::preprocess_images(images, files->preprocessor());
    std::vector<int64_t> n_image_tokens;
    const int64_t merge = static_cast<int64_t>(cfg.vision.spatial_merge_size) * cfg.vision.spatial_merge_size;
    for (const auto& g : pre.grids) {
        n_image_tokens.push_back(g.n_patches() / merge);
    }
    const folio::ChatPromptTokens prompt = folio::build_chat_prompt(
        *tokenizer, {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id}, n_image_tokens,
        task);

    const auto backend = folio::make_cpu_backend(static_cast<int>(opt.integer("--threads", 0)));
    const auto weights = folio::make_file_weight_source(*files);
    folio::PaddleOcrVl model(*backend, cfg, *weights);

    folio::IncrementalDetokenizer detok(*tokenizer);
    const folio::GenerateResult result = folio::generate(model, prompt, pre, params, [&](int32_t token) {
        std::cout << detok.push(token) << std::flush;
        return true;
    });
    std::cout << detok.flush() << std::endl;
    std::cerr << "folio-cli: " << result.tokens.size() << " tokens ("
              << folio::finish_reason_name(result.finish) << "), prompt " << result.n_prompt_tokens
              << " tokens, vision " << result.vision_seconds << " s, prefill " << result.prefill_seconds
              << " s, decode " << result.decode_seconds << " s\n";
    return 0;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run_bench(const Options& opt) {
    opt.allow({"--device", "--model", "--threads", "--image-size", "--decode-tokens"});
    const std::string device = opt.text("--device", "cpu");
    if (device != "cpu") {
        fail("--device ", device, " is not available in this build (devices: cpu)");
    }
    const std::string size = opt.text("--image-size", "224x224");
    const auto x = size.find('x');
    int width = 0, height = 0;
    try {
        width = std::stoi(size.substr(0, x));
        height = std::stoi(size.substr(x + 1));
    } catch (const std::exception&) {
        fail("--image-size expects WxH, got '", size, "'");
    }
    const int n_decode = static_cast<int>(opt.integer("--decode-tokens", 16));
    if (x == std::string::npos || width < 28 || height < 28 || n_decode < 1) {
        fail("--image-size must be at least 28x28 and --decode-tokens at least 1");
    }

    const auto backend = folio::make_cpu_backend(static_cast<int>(opt.integer("--threads", 0)));
    std::unique_ptr<folio::ModelFiles> files;
    std::unique_ptr<folio::WeightSource> weights;
    folio::ModelConfig cfg;
    if (opt.has("--model")) {
        files = folio::ModelFiles::open(opt.text("--model"));
        cfg = files->config();
        weights = folio::make_file_weight_source(*files);
    } else {
        cfg = folio::parse_model_config("{}", "full-size defaults");
        weights = folio::make_random_weight_source(2026);
    }
    auto start = std::chrono::steady_clock::now();
    folio::PaddleOcrVl model(*backend, cfg, *weights);
    const double load_seconds = seconds_since(start);

    // Vision: one image of the requested size, patch grid rounded to the 2x2 merge.
    const int64_t factor = static_cast<int64_t>(cfg.vision.patch_size) * cfg.vision.spatial_merge_size;
    const folio::ImageGrid grid{1, height / factor * cfg.vision.spatial_merge_size,
                                width / factor * cfg.vision.spatial_merge_size};
    const int64_t patch_dim =
        static_cast<int64_t>(cfg.vision.num_channels) * cfg.vision.patch_size * cfg.vision.patch_size;
    std::vector<float> pixels(static_cast<size_t>(grid.n_patches() * patch_dim), 0.1f);
    start = std::chrono::steady_clock::now();
    const folio::Tensor vision = model.encode_vision(pixels, std::span(&grid, 1));
    const double vision_seconds = seconds_since(start);

    // Decode: a short text prompt, then one token at a time.
    const int64_t n_prompt = 16;
    const auto& tc = cfg.text;
    folio::KvCache cache(*backend,
                         {tc.num_hidden_layers, tc.num_key_value_heads, tc.head_dim, n_prompt + n_decode});
    std::vector<int32_t> ids(static_cast<size_t>(n_prompt), tc.bos_token_id);
    std::vector<std::array<int64_t, 3>> pos;
    for (int64_t i = 0; i < n_prompt; ++i) {
        pos.push_back({i, i, i});
    }
    start = std::chrono::steady_clock::now();
    model.forward_text(model.embed(ids), pos, cache, 0);
    const double prefill_seconds = seconds_since(start);
    start = std::chrono::steady_clock::now();
    int32_t token = tc.bos_token_id;
    for (int64_t step = 0; step < n_decode; ++step) {
        const std::array<int64_t, 3> p{n_prompt + step, n_prompt + step, n_prompt + step};
        const folio::Tensor hidden =
            model.forward_text(model.embed(std::span(&token, 1)), std::span(&p, 1), cache, n_prompt + step);
        const std::vector<float> logits = backend->download(model.logits(hidden));
        token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    const double decode_seconds = seconds_since(start);

    const nlohmann::json report = {
        {"device", backend->name()},
        {"model",
         opt.has("--model") ? opt.text("--model") : "full-size PaddleOCR-VL architecture, random weights"},
        {"dtype", "f32"},
        {"n_params", model.n_params()},
        {"weight_bytes", model.n_params() * static_cast<int64_t>(sizeof(float))},
        {"load_seconds", load_seconds},
        {"vision",
         {{"image", size},
          {"n_patches", vision.rows()},
          {"seconds", vision_seconds},
          {"patches_per_second", static_cast<double>(vision.rows()) / vision_seconds}}},
        {"prefill",
         {{"n_tokens", n_prompt},
          {"seconds", prefill_seconds},
          {"tokens_per_second", static_cast<double>(n_prompt) / prefill_seconds}}},
        {"decode",
         {{"batch", 1},
          {"n_tokens", n_decode},
          {"seconds", decode_seconds},
          {"tokens_per_second", n_decode / decode_seconds}}},
    };
    std::cout << report.dump(2) << std::endl;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
        std::cout << kUsage;
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    try {
        const Options options(argc, argv, 2);
        if (options.has("--help")) {
            std::cout << kUsage;
            return 0;
        }
        if (command == "generate") {
            return run_generate(options);
        }
        if (command == "bench") {
            return run_bench(options);
        }
        std::cerr << "folio-cli: unknown command '" << command << "'\n" << kUsage;
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "folio-cli " << command << ": error: " << e.what() << "\n";
        return 1;
    }
}
