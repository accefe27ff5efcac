// folio-cli: the engine from the command line. Subcommands: generate, bench.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend.h"
#include "chat-prompt.h"
#include "engine-core.h"
#include "error.h"
#include "image-loader.h"
#include "image-preprocess.h"
#include "model-loader.h"
#include "paddleocr-vl.h"
#include "tokenizer.h"
#include "weight-source.h"

namespace {

using folio::fail;

constexpr const char* kUsage = R"(usage:
  folio-cli generate --model DIR [--image FILE ...] --prompt TEXT [--prompt TEXT ...]
                     [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]
                     [--repetition-penalty R] [--seed S] [--stop TEXT ...] [--threads N]
                     [engine options]
      Runs PaddleOCR-VL on the images with the task prompt ("OCR:", "Table Recognition:",
      "Formula Recognition:", "Chart Recognition:"). One prompt takes every image and streams its text
      to stdout; several prompts run as a batch, each with its own image (one --image per prompt) or all
      with the same one (a single --image), and print their texts when done.
  folio-cli bench --device cpu [--model DIR] [--threads N] [--image-size WxH] [--prefill-tokens N]
                  [--decode-tokens N] [--batch N,N,...] [--pages N [--blocks-per-page N]
                  [--block-tokens N] [--block-image WxH]] [engine options]
      Measures the model (full-size random weights unless --model is given) and prints JSON: the vision
      encoder, prefill and decode at each batch size, and with --pages a document workload (each page
      --blocks-per-page block crops with an OCR prompt and --block-tokens output tokens) in pages/s.

engine options (FastDeploy's names; --max-num-seqs defaults to 8 on the CPU):
  --max-model-len N  --max-num-seqs N  --max-num-batched-tokens N  --block-size N
  --gpu-memory-utilization F  --enable-prefix-caching on|off  --enable-chunked-prefill on|off
  --limit-mm-per-prompt N  --num-gpu-blocks-override N
  --quantization none|wint8|wint4  --quant-group-size 64|128  --quantize-vision on|off
)";

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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

    void allow(const std::vector<const char*>& known) const {
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

constexpr std::initializer_list<const char*> kEngineFlags = {
    "--max-model-len",           "--max-num-seqs",
    "--max-num-batched-tokens",  "--block-size",
    "--gpu-memory-utilization",  "--enable-prefix-caching",
    "--enable-chunked-prefill",  "--limit-mm-per-prompt",
    "--num-gpu-blocks-override", "--quantization",
    "--quant-group-size",        "--quantize-vision"};

folio::EngineConfig engine_config(const Options& opt, const folio::ModelConfig& cfg) {
    folio::EngineConfig c;
    c.max_num_seqs = 8;  // the CPU backend gains little from more, and its cache is planned for all of them
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
    return c;
}

folio::ModelLoadParams load_params(const Options& opt) {
    folio::ModelLoadParams p;
    p.quantization = folio::parse_quantization(opt.text("--quantization", "none"));
    p.group_size = opt.integer("--quant-group-size", p.group_size);
    p.quantize_vision = parse_switch(opt, "--quantize-vision", p.quantize_vision);
    if (p.quantization == folio::Quantization::Wint4 && p.group_size != 64 && p.group_size != 128) {
        fail("--quant-group-size must be 64 or 128, got ", p.group_size);
    }
    return p;
}

std::vector<const char*> with_engine_flags(std::initializer_list<const char*> flags) {
    std::vector<const char*> all(flags);
    all.insert(all.end(), kEngineFlags.begin(), kEngineFlags.end());
    return all;
}

int run_generate(const Options& opt) {
    opt.allow(with_engine_flags({"--model", "--image", "--prompt", "--max-tokens", "--temperature", "--top-k",
                                 "--top-p", "--repetition-penalty", "--seed", "--threads", "--stop"}));
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
    const auto tokenizer = folio::Tokenizer::load(model_dir);
    const folio::ModelConfig& cfg = files->config();
    const folio::EngineConfig engine_cfg = engine_config(opt, cfg);
    const auto backend = folio::make_cpu_backend(static_cast<int>(opt.integer("--threads", 0)));
    const auto weights = folio::make_file_weight_source(*files);
    folio::PaddleOcrVl model(*backend, cfg, *weights, load_params(opt));
    folio::EngineCore engine(model, engine_cfg, tokenizer.get());

    std::vector<int64_t> ids;
    for (size_t r = 0; r < tasks.size(); ++r) {
        std::vector<folio::Image> images;
        for (const auto& path : request_images[r]) {
            images.push_back(folio::load_image(path));
        }
        folio::Request request = base;
        request.images = folio::preprocess_images(images, files->preprocessor());
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

// Decode throughput at one batch size: `batch` requests of n_prompt distinct tokens, timed from the
// step after every request has its first token to the end.
nlohmann::json bench_decode(folio::PaddleOcrVl& model, const folio::EngineConfig& base, int64_t batch,
                            int64_t n_prompt, int64_t n_decode) {
    folio::EngineConfig config = base;
    config.max_num_seqs = batch;
    config.max_num_batched_tokens = std::max(config.max_num_batched_tokens, batch * n_prompt);
    config.max_model_len = n_prompt + n_decode + 1;
    config.enable_prefix_caching = false;
    config.num_gpu_blocks_override =
        batch * ((config.max_model_len + config.block_size - 1) / config.block_size);
    folio::EngineCore engine(model, config);
    const auto& tc = model.config().text;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t b = 0; b < batch; ++b) {
        folio::Request request;
        for (int64_t i = 0; i < n_prompt; ++i) {
            request.prompt.ids.push_back(static_cast<int32_t>((b * n_prompt + i) % tc.vocab_size));
            request.prompt.is_image.push_back(0);
        }
        request.max_tokens = n_decode + 1;
        request.ignore_eos = true;
        engine.submit(std::move(request));
    }
    std::set<int64_t> started;
    while (static_cast<int64_t>(started.size()) < batch) {
        for (const auto& out : engine.step()) {
            if (!out.tokens.empty()) {
                started.insert(out.id);
            }
        }
    }
    const double ttft = seconds_since(start);
    const auto decode_start = std::chrono::steady_clock::now();
    while (engine.has_unfinished()) {
        engine.step();
    }
    const double seconds = seconds_since(decode_start);
    return {{"batch", batch},
            {"n_tokens", batch * n_decode},
            {"seconds", seconds},
            {"tokens_per_second", static_cast<double>(batch * n_decode) / seconds},
            {"prefill_seconds", ttft},
            {"prefill_tokens_per_second", static_cast<double>(batch * n_prompt) / ttft}};
}

struct DocumentWorkload {
    int64_t n_pages = 0;
    int64_t blocks_per_page = 20;
    int64_t block_tokens = 60;
    int block_width = 448;
    int block_height = 112;
};

// Pages turned into block requests as the document pipeline makes them: every block a crop of noise with an
// OCR prompt and a fixed output length, all submitted at once. Preprocessing happens before the clock starts.
nlohmann::json bench_document(folio::PaddleOcrVl& model, const folio::PreprocessorConfig& pre,
                              const folio::EngineConfig& config, const DocumentWorkload& w) {
    const folio::ModelConfig& cfg = model.config();
    std::vector<folio::Request> requests;
    std::mt19937 rng(11);
    for (int64_t b = 0; b < w.n_pages * w.blocks_per_page; ++b) {
        folio::Image crop = folio::make_image(w.block_width, w.block_height);
        for (uint8_t& v : crop.rgb) {
            v = static_cast<uint8_t>(rng() & 0xff);
        }
        folio::Request r;
        r.images = folio::preprocess_images(std::span(&crop, 1), pre);
        const int64_t n_image_tokens =
            r.images.grids[0].n_patches() /
            (int64_t{cfg.vision.spatial_merge_size} * cfg.vision.spatial_merge_size);
        r.prompt.ids = {cfg.text.bos_token_id, cfg.vision_start_token_id};
        r.prompt.ids.insert(r.prompt.ids.end(), static_cast<size_t>(n_image_tokens), cfg.image_token_id);
        r.prompt.ids.push_back(cfg.vision_end_token_id);
        for (int t = 0; t < 6; ++t) {
            r.prompt.ids.push_back(static_cast<int32_t>(3 + rng() % 500));
        }
        r.prompt.is_image.assign(r.prompt.ids.size(), 0);
        std::fill_n(r.prompt.is_image.begin() + 2, n_image_tokens, 1);
        r.max_tokens = w.block_tokens;
        r.ignore_eos = true;
        requests.push_back(std::move(r));
    }
    folio::EngineCore engine(model, config);
    const int64_t n_prompt_tokens = static_cast<int64_t>(requests.front().prompt.ids.size());
    const auto start = std::chrono::steady_clock::now();
    for (folio::Request& r : requests) {
        engine.submit(std::move(r));
    }
    int64_t n_tokens = 0;
    while (engine.has_unfinished()) {
        for (const folio::RequestOutput& out : engine.step()) {
            n_tokens += static_cast<int64_t>(out.tokens.size());
        }
    }
    const double seconds = seconds_since(start);
    const folio::EngineStats stats = engine.stats();
    return {{"pages", w.n_pages},
            {"blocks_per_page", w.blocks_per_page},
            {"block_image", std::to_string(w.block_width) + "x" + std::to_string(w.block_height)},
            {"block_prompt_tokens", n_prompt_tokens},
            {"block_output_tokens", w.block_tokens},
            {"seconds", seconds},
            {"pages_per_second", static_cast<double>(w.n_pages) / seconds},
            {"output_tokens_per_second", static_cast<double>(n_tokens) / seconds},
            {"steps", stats.runner.n_steps},
            {"preemptions", stats.n_preemptions},
            {"kv_blocks", stats.n_kv_blocks}};
}

int run_bench(const Options& opt) {
    opt.allow(with_engine_flags({"--device", "--model", "--threads", "--image-size", "--prefill-tokens",
                                 "--decode-tokens", "--batch", "--pages", "--blocks-per-page",
                                 "--block-tokens", "--block-image"}));
    const std::string device = opt.text("--device", "cpu");
    if (device != "cpu") {
        fail("--device ", device, " is not available in this build (devices: cpu)");
    }
    const std::string size = opt.text("--image-size", "224x224");
    const auto [width, height] = parse_size(size, "--image-size");
    const int64_t n_decode = opt.integer("--decode-tokens", 16);
    const int64_t n_prefill = opt.integer("--prefill-tokens", 16);
    if (n_decode < 1 || n_prefill < 1) {
        fail("--decode-tokens and --prefill-tokens must be at least 1");
    }
    DocumentWorkload document;
    document.n_pages = opt.integer("--pages", 0);
    document.blocks_per_page = opt.integer("--blocks-per-page", document.blocks_per_page);
    document.block_tokens = opt.integer("--block-tokens", document.block_tokens);
    const auto [block_width, block_height] =
        parse_size(opt.text("--block-image", "448x112"), "--block-image");
    document.block_width = block_width;
    document.block_height = block_height;
    if (document.n_pages < 0 || document.blocks_per_page < 1 || document.block_tokens < 1) {
        fail("--pages must not be negative, --blocks-per-page and --block-tokens must be at least 1");
    }
    std::vector<int64_t> batches;
    std::stringstream batch_list(opt.text("--batch", "1"));
    for (std::string item; std::getline(batch_list, item, ',');) {
        try {
            batches.push_back(std::stoll(item));
        } catch (const std::exception&) {
            fail("--batch expects numbers separated by commas, got '", item, "'");
        }
        if (batches.back() < 1) {
            fail("--batch sizes must be at least 1, got ", batches.back());
        }
    }

    const auto backend = folio::make_cpu_backend(static_cast<int>(opt.integer("--threads", 0)));
    std::unique_ptr<folio::ModelFiles> files;
    std::unique_ptr<folio::WeightSource> weights;
    folio::ModelConfig cfg;
    folio::PreprocessorConfig pre;
    if (opt.has("--model")) {
        files = folio::ModelFiles::open(opt.text("--model"));
        cfg = files->config();
        pre = files->preprocessor();
        weights = folio::make_file_weight_source(*files);
    } else {
        cfg = folio::parse_model_config("{}", "full-size defaults");
        pre = folio::parse_preprocessor_config("{}", "reference defaults");
        weights = folio::make_random_weight_source(2026);
    }
    const folio::ModelLoadParams load = load_params(opt);
    auto start = std::chrono::steady_clock::now();
    folio::PaddleOcrVl model(*backend, cfg, *weights, load);
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

    nlohmann::json decode = nlohmann::json::array();
    const folio::EngineConfig engine_cfg = engine_config(opt, cfg);
    for (const int64_t b : batches) {
        decode.push_back(bench_decode(model, engine_cfg, b, n_prefill, n_decode));
    }
    nlohmann::json bytes;
    for (const auto q : {folio::Quantization::None, folio::Quantization::Wint8, folio::Quantization::Wint4}) {
        folio::ModelLoadParams p = load;
        p.quantization = q;
        bytes[folio::quantization_name(q)] = folio::weight_bytes(cfg, p);
    }
    nlohmann::json report = {
        {"device", backend->name()},
        {"model",
         opt.has("--model") ? opt.text("--model") : "full-size PaddleOCR-VL architecture, random weights"},
        {"dtype", "f32"},
        {"quantization", folio::quantization_name(load.quantization)},
        {"n_params", model.n_params()},
        {"weight_bytes", model.n_weight_bytes()},
        {"weight_bytes_by_format", bytes},
        {"load_seconds", load_seconds},
        {"vision",
         {{"image", size},
          {"n_patches", vision.rows()},
          {"seconds", vision_seconds},
          {"patches_per_second", static_cast<double>(vision.rows()) / vision_seconds}}},
        {"decode", decode},
    };
    if (document.n_pages > 0) {
        report["document"] = bench_document(model, pre, engine_cfg, document);
    }
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
