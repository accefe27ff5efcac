#include "app/cli/bench.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "app/cli/chat-bench.h"
#include "app/cli/document-bench.h"
#include "app/cli/layout-bench.h"
#include "app/options/device-memory.h"
#include "app/options/engine-options.h"
#include "engine/image/image-preprocess.h"
#include "engine/models/model-registry.h"
#include "engine/models/paddleocr-vl/model-files.h"
#include "engine/service/engine-service.h"

namespace folio::cli {

const char* const kBenchUsage =
    R"(  folio-cli bench [--device cpu|cuda[:N]] [--model DIR] [--threads N] [--image-size WxH]
                  [--prefill-tokens N] [--decode-tokens N] [--batch N,N,...] [--pages N [--block-tokens N]
                  [--block-image WxH [--blocks-per-page N]]] [engine options]
  folio-cli bench --layout-model DIR [--device cpu|cuda[:N]] [--batch N,N,...] [--pages N]
      Measures the model (full-size random weights unless --model is given) and prints JSON: the vision
      encoder, prefill and decode at each batch size, and with --pages a document workload in pages/s: each
      page 20 block crops of the page20 shapes (1000x300, 1000x120, 600x400, 1200x80, 800x800, four of
      each), or --blocks-per-page crops of --block-image, resized within the pipeline's pixel bounds, each
      with a 12-token task prompt and --block-tokens output tokens.
  folio-cli bench --document FILE.pdf [--document ...] --layout-model DIR [--model DIR | --tokenizer DIR]
                  [--block-tokens N] [--dpi N] [--pages-in-flight N] [--layout-batch N] [--render-threads N]
                  [engine options]
      With --layout-model, the layout model instead: --pages pages (default 64) of a 1700x2200 page at each
      batch size (default 1,8,32), in pages/s, with float32 products and then with TF32 convolutions (as
      the document pipeline runs it: uploaded from the host; a single page as a replayed recorded pass, and
      also without), and the image processor's time a page on the host.
      With --document, the document pipeline end to end as `ocr` runs it (render, layout, blocks,
      recognition, assembly; nothing written): pages/s and each page's time in each step. Each block's output
      stops at --block-tokens (default 60); random weights take prompts through --tokenizer's tokenizer.
  folio-cli bench --family ernie-4.5-vl|llama [--num-layers N] | --model DIR   [--device cpu|cuda[:N]]
                  [--batch N,N,...] [--prefill-tokens N] [--decode-tokens N] [--decode-context N]
                  [engine options]
      A chat model (ERNIE-4.5-VL, or Llama as DeepSeek-R1-Distill-Llama-8B; full-size random weights with
      --family, --num-layers of its 28 or 32 where fewer fit): prefill of one --prefill-tokens prompt
      (default 1024), then decode at each --batch size (default 1,8,32) from prompts of --decode-context
      tokens (default 16) for --decode-tokens tokens (default 64), and the batch-1 floor: the bytes of
      weights one token reads over the measured copy bandwidth. --quantization wint8|wint4 and
      --dtype choose the weights' format (bfloat16 on a GPU by default). Each prompt goes in as one step
      unless --max-num-batched-tokens is given, which then sets the step (a long context in chunks).
)";

nlohmann::json bench_decode(EngineService& service, int64_t vocab_size, const EngineConfig& base,
                            int64_t batch, int64_t n_prompt, int64_t n_decode, bool chunked) {
    EngineConfig config = base;
    config.max_num_seqs = batch;
    if (!chunked) {
        config.max_num_batched_tokens = std::max(config.max_num_batched_tokens, batch * n_prompt);
    }
    config.max_num_batched_tokens = std::max(config.max_num_batched_tokens, batch);
    config.max_model_len = n_prompt + n_decode + 1;
    config.enable_prefix_caching = false;
    // The cache as the memory plan makes it (--device-memory, --kv-cache-dtype), no larger than the batch
    // uses; a given --num-gpu-blocks-override stands.
    const int64_t n_blocks_needed =
        batch * ((config.max_model_len + config.block_size - 1) / config.block_size);
    const auto engine_start = std::chrono::steady_clock::now();
    service.reconfigure(config);
    const int64_t n_blocks = service.stats().n_kv_blocks;
    if (n_blocks < n_blocks_needed) {
        std::cerr << "folio-cli bench: batch " << batch << ": the cache holds " << n_blocks << " of the "
                  << n_blocks_needed << " blocks the batch needs; requests wait or are preempted\n";
    }
    const double engine_seconds = seconds_since(engine_start);  // the cache planned, decode steps recorded
    std::atomic<int64_t> n_started{0}, n_tokens{0};
    std::atomic<bool> timing{false};
    // The decode starts when the last request has its first token, taken where the outputs arrive, so that
    // tokens are counted from then even where the whole decode is over before this thread would notice.
    std::atomic<int64_t> decode_start_ns{0};
    std::mutex error_mutex;
    std::string error;  // the first request that ended with an error: why
    std::vector<RequestHandle> handles;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t b = 0; b < batch; ++b) {
        Request request;
        for (int64_t i = 0; i < n_prompt; ++i) {
            request.prompt.ids.push_back(static_cast<int32_t>((b * n_prompt + i) % vocab_size));
            request.prompt.modality.push_back(TokenModality::Text);
        }
        request.max_tokens = n_decode + 1;
        request.ignore_eos = true;
        SubmitOptions options;
        options.on_output = [&, first = true](const RequestOutput& out) mutable {
            if (!out.error.empty()) {
                const std::lock_guard lock(error_mutex);
                error = error.empty() ? out.error : error;
            }
            if (timing) {
                n_tokens += static_cast<int64_t>(out.tokens.size());
            }
            if (first && !out.tokens.empty()) {
                first = false;
                if (++n_started == batch) {
                    decode_start_ns = std::chrono::steady_clock::now().time_since_epoch().count();
                    timing = true;
                    n_tokens += static_cast<int64_t>(out.tokens.size()) - 1;  // any after the first
                }
            }
        };
        handles.push_back(service.submit({std::move(request), {}}, std::move(options)));
    }
    const auto all_finished = [&] {
        return std::all_of(handles.begin(), handles.end(),
                           [](const RequestHandle& h) { return h.finished(); });
    };
    // A request the engine refuses (longer than the cache holds, say) ends without a first token.
    while (!timing && !all_finished()) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const auto failed = [&] {
        const std::lock_guard lock(error_mutex);
        if (!error.empty()) {
            fail("bench: batch ", batch, " of ", n_prompt, "-token prompts: ", error);
        }
    };
    failed();
    const std::chrono::steady_clock::time_point decode_start{
        std::chrono::steady_clock::duration(decode_start_ns.load())};
    const double ttft = std::chrono::duration<double>(decode_start - start).count();
    const RunnerStats before = service.stats().engine.runner;
    while (!all_finished()) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    failed();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - decode_start).count();
    const EngineStats after = service.stats().engine;
    const auto n_timed = n_tokens.load();
    return {{"batch", batch},
            {"kv_blocks", n_blocks},
            {"kv_blocks_needed", n_blocks_needed},
            {"engine_seconds", engine_seconds},
            {"n_tokens", n_timed},
            {"seconds", seconds},
            {"tokens_per_second", static_cast<double>(n_timed) / seconds},
            {"replayed_steps", after.runner.n_replays - before.n_replays},
            {"prefill_seconds", ttft},
            {"prefill_tokens_per_second", static_cast<double>(batch * n_prompt) / ttft},
            {"steps_ahead", after.n_steps_ahead},
            {"decode_model_seconds", after.runner.text_seconds - before.text_seconds},
            {"decode_sample_seconds", after.runner.sample_seconds - before.sample_seconds}};
}

namespace {

// The crops of one page of the standard "page20" workload: five block shapes a layout model finds on a
// page (text lines, a heading, a paragraph, a footer line, a figure), four of each.
std::vector<std::pair<int, int>> page20_blocks() {
    const std::vector<std::pair<int, int>> shapes = {
        {1000, 300}, {1000, 120}, {600, 400}, {1200, 80}, {800, 800}};
    std::vector<std::pair<int, int>> blocks;
    for (int i = 0; i < 4; ++i) {
        blocks.insert(blocks.end(), shapes.begin(), shapes.end());
    }
    return blocks;
}

struct DocumentWorkload {
    int64_t n_pages = 0;
    std::vector<std::pair<int, int>> page_blocks = page20_blocks();  // (width, height) of each block crop
    std::string name = "page20";
    int64_t block_tokens = 60;
    int64_t task_tokens = 12;  // prompt tokens after the image
};

// The pixel bounds within which the document pipeline resizes each block crop.
constexpr int64_t kBlockMinPixels = 112'896;
constexpr int64_t kBlockMaxPixels = 1'003'520;

// Pages turned into block requests as the document pipeline makes them: every block a crop of noise resized
// within the pipeline's pixel bounds, with a task prompt and a fixed output length, all submitted at once to
// the service as one group, the engine rebuilt with the command's options. Preprocessing happens before the
// clock starts.
// One page's block requests of the workload: random crops of its shapes, each a 12-token task prompt.
std::vector<Request> page_requests(const ModelConfig& cfg, const PreprocessorConfig& pre,
                                   const DocumentWorkload& w, std::mt19937& rng, int64_t& n_prompt_tokens) {
    std::vector<Request> requests;
    for (const auto& [width, height] : w.page_blocks) {
        Image crop = make_image(width, height);
        for (uint8_t& v : crop.rgb) {
            v = static_cast<uint8_t>(rng() & 0xff);
        }
        Request r;
        r.images = preprocess_images(std::span(&crop, 1), pre);
        const int64_t n_image_tokens =
            r.images.grids[0].n_patches() /
            (int64_t{cfg.vision.spatial_merge_size} * cfg.vision.spatial_merge_size);
        r.prompt.ids = {cfg.text.bos_token_id, cfg.vision_start_token_id};
        r.prompt.ids.insert(r.prompt.ids.end(), static_cast<size_t>(n_image_tokens), cfg.image_token_id);
        r.prompt.ids.push_back(cfg.vision_end_token_id);
        for (int64_t t = 0; t < w.task_tokens; ++t) {
            r.prompt.ids.push_back(static_cast<int32_t>(3 + rng() % 500));
        }
        r.prompt.modality.assign(r.prompt.ids.size(), TokenModality::Text);
        std::fill_n(r.prompt.modality.begin() + 2, n_image_tokens, TokenModality::Image);
        r.max_tokens = w.block_tokens;
        r.ignore_eos = true;
        n_prompt_tokens += static_cast<int64_t>(r.prompt.ids.size());
        requests.push_back(std::move(r));
    }
    return requests;
}

// Milliseconds from submitting one page's blocks, alone on an idle engine, to the first token of any of them
// (when the page's text starts to appear) and to the first token of its first block in page order: the
// medians over several pages.
struct PageFirstToken {
    double any_block_ms = 0.0;
    double first_block_ms = 0.0;
};

PageFirstToken page_first_token(EngineService& service, const ModelConfig& cfg, const PreprocessorConfig& pre,
                                const DocumentWorkload& w, std::mt19937& rng) {
    constexpr int kPages = 7;
    std::vector<double> any_ms;
    std::vector<double> first_ms;
    for (int page = 0; page < kPages; ++page) {
        int64_t n_tokens = 0;
        std::vector<Request> requests = page_requests(cfg, pre, w, rng, n_tokens);
        const int64_t group = service.create_group();
        auto any = std::make_shared<std::atomic<int64_t>>(0);
        auto first = std::make_shared<std::atomic<int64_t>>(0);
        const auto start = std::chrono::steady_clock::now();
        for (size_t i = 0; i < requests.size(); ++i) {
            SubmitOptions options;
            options.group = group;
            options.on_output = [any, first, start, i](const RequestOutput& out) {
                if (out.tokens.empty()) {
                    return;
                }
                const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now() - start)
                                       .count();
                int64_t none = 0;
                any->compare_exchange_strong(none, ns);
                none = 0;
                if (i == 0) {
                    first->compare_exchange_strong(none, ns);
                }
            };
            service.submit({std::move(requests[i]), {}}, options);
        }
        while (!service.group_progress(group).done()) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        service.forget_group(group);
        if (page > 0) {  // the first warms the single-page path up
            any_ms.push_back(static_cast<double>(any->load()) / 1e6);
            first_ms.push_back(static_cast<double>(first->load()) / 1e6);
        }
    }
    std::sort(any_ms.begin(), any_ms.end());
    std::sort(first_ms.begin(), first_ms.end());
    return {any_ms[any_ms.size() / 2], first_ms[first_ms.size() / 2]};
}

// The decoder's floating-point operations for the block requests, each generating n_generated tokens: its
// layers' products over every token it takes, causal attention over each block's tokens and the LM head over
// the sampled ones.
double decoder_flops(const TextConfig& t, std::span<const Request> blocks, int64_t n_generated) {
    const double hidden = t.hidden_size;
    const double q_dim = static_cast<double>(t.num_attention_heads) * t.head_dim;
    const double kv_dim = static_cast<double>(t.num_key_value_heads) * t.head_dim;
    const double layer_params =
        hidden * (q_dim + 2 * kv_dim) + q_dim * hidden + 3 * hidden * t.intermediate_size;
    double flops = 0;
    for (const Request& r : blocks) {
        // The last token is not fed back.
        const auto n = static_cast<double>(static_cast<int64_t>(r.prompt.ids.size()) + n_generated - 1);
        flops += t.num_hidden_layers * (2 * layer_params * n + 2 * q_dim * n * (n + 1));
        flops += 2 * hidden * t.vocab_size * static_cast<double>(n_generated);
    }
    return flops;
}

nlohmann::json bench_document(EngineService& service, const ModelConfig& cfg, PreprocessorConfig pre,
                              const EngineConfig& config, const DocumentWorkload& w) {
    pre.min_pixels = kBlockMinPixels;
    pre.max_pixels = kBlockMaxPixels;
    std::vector<Request> requests;
    std::mt19937 rng(11);
    int64_t n_prompt_tokens = 0;
    for (int64_t page = 0; page < w.n_pages; ++page) {
        std::vector<Request> blocks = page_requests(cfg, pre, w, rng, n_prompt_tokens);
        std::move(blocks.begin(), blocks.end(), std::back_inserter(requests));
    }
    const double flops = decoder_flops(cfg.text, requests, w.block_tokens);
    // The blocks' own pixel bounds decide the largest image a step takes whole.
    EngineConfig engine = config;
    engine.time_device = true;
    const int64_t factor = int64_t{pre.patch_size} * pre.merge_size;
    engine.max_image_tokens = kBlockMaxPixels / (factor * factor);
    service.reconfigure(engine);
    const int64_t document = service.create_group();
    SubmitOptions options;
    options.group = document;
    const auto start = std::chrono::steady_clock::now();
    for (Request& r : requests) {
        service.submit({std::move(r), {}}, options);
    }
    const double submit_seconds = seconds_since(start);
    GroupProgress progress;
    for (progress = service.group_progress(document); !progress.done();
         progress = service.group_progress(document)) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const double seconds = seconds_since(start);
    if (progress.n_failed > 0) {
        fail(progress.n_failed, " block requests of the document workload failed");
    }
    const EngineStats stats = service.stats().engine;
    const PageFirstToken first_token = page_first_token(service, cfg, pre, w, rng);
    return {{"workload", w.name},
            {"pages", w.n_pages},
            {"blocks_per_page", w.page_blocks.size()},
            {"prompt_tokens", n_prompt_tokens},
            {"block_output_tokens", w.block_tokens},
            {"seconds", seconds},
            {"pages_per_second", static_cast<double>(w.n_pages) / seconds},
            {"output_tokens_per_second", static_cast<double>(progress.n_tokens) / seconds},
            {"steps", stats.runner.n_steps},
            {"decode_steps", stats.runner.n_decode_steps},
            {"replayed_steps", stats.runner.n_replays},
            {"image_patches", stats.runner.n_image_patches},
            // Host time of each part; the device catches up at each step's sampling, inside decoder_seconds.
            {"submit_seconds", submit_seconds},
            {"schedule_seconds", stats.schedule_seconds},
            {"vision_seconds", stats.runner.vision_seconds},
            {"decoder_seconds", stats.runner.text_seconds},
            {"decode_step_seconds", stats.runner.decode_seconds},
            {"sample_seconds", stats.runner.sample_seconds},
            {"update_seconds", stats.update_seconds},
            {"preemptions", stats.n_preemptions},
            // The device's time from the start to the end of each part of the steps, summed over the steps.
            {"vision_device_seconds", stats.runner.vision_device_seconds},
            {"decoder_device_seconds", stats.runner.text_device_seconds},
            {"decode_step_device_seconds", stats.runner.decode_device_seconds},
            // The decoder's products and attention for the workload's tokens, and the LM head on the sampled
            // ones.
            {"decoder_flops", flops},
            {"kv_blocks", stats.n_kv_blocks},
            // One page submitted alone after the workload: its first block's first token (layout excluded).
            {"page_first_token_ms", first_token.any_block_ms},
            {"page_first_block_first_token_ms", first_token.first_block_ms}};
}

}  // namespace

// Floating-point operations per second of a large product with bfloat16 weights: rows through a square
// matrix, the sizes doubled from 512 until one product takes 20 ms or reaches 8192 rows of 4096 (where a GPU
// reaches its rate on the decoder's kind of work; a CPU stops early).
double bf16_product_rate(Backend& backend) {
    constexpr int kRepeats = 10;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-0.02f, 0.02f);
    for (int64_t rows = 512, size = 512;; rows *= 2, size = std::min<int64_t>(size * 2, 4096)) {
        std::vector<float> values(static_cast<size_t>(size * size));
        for (float& v : values) {
            v = dist(rng);
        }
        const Weight w = backend.upload(quantize(values, size, size, Quantization::Bf16, size));
        const Tensor x =
            backend.upload(std::vector<float>(static_cast<size_t>(rows * size), 0.5f), {rows, size});
        const Tensor probe = backend.alloc({1});
        backend.linear(x, w, nullptr);
        backend.download(probe);
        auto start = std::chrono::steady_clock::now();
        backend.linear(x, w, nullptr);
        backend.download(probe);
        if (seconds_since(start) < 0.02 && rows < 8192) {
            continue;
        }
        start = std::chrono::steady_clock::now();
        for (int i = 0; i < kRepeats; ++i) {
            backend.linear(x, w, nullptr);
        }
        backend.download(probe);
        return 2.0 * static_cast<double>(rows * size * size) * kRepeats / seconds_since(start);
    }
}

std::vector<int64_t> parse_batch_sizes(const Options& opt, const std::string& fallback) {
    std::vector<int64_t> batches;
    std::stringstream list(opt.text("--batch", fallback));
    for (std::string item; std::getline(list, item, ',');) {
        try {
            batches.push_back(std::stoll(item));
        } catch (const std::exception&) {
            fail("--batch expects numbers separated by commas, got '", item, "'");
        }
        if (batches.back() < 1) {
            fail("--batch sizes must be at least 1, got ", batches.back());
        }
    }
    return batches;
}

double copy_bandwidth(Backend& backend) {
    constexpr int64_t kFloats = int64_t{128} << 20;  // 512 MiB
    constexpr int kRepeats = 5;
    const Tensor src = backend.alloc({kFloats});
    const Tensor probe = backend.alloc({1});
    backend.copy(src);
    backend.download(probe);  // waits for the device
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRepeats; ++i) {
        backend.copy(src);
    }
    backend.download(probe);
    return 2.0 * kRepeats * kFloats * static_cast<double>(sizeof(float)) / seconds_since(start);
}

int run_bench(const Options& opt) {
    if (wants_chat_bench(opt)) {
        return run_chat_bench(opt);
    }
    opt.allow(with_engine_flags({"--device", "--model", "--threads", "--image-size", "--prefill-tokens",
                                 "--decode-tokens", "--batch", "--pages", "--blocks-per-page",
                                 "--block-tokens", "--block-image", "--layout-model", "--document", "--dpi",
                                 "--pages-in-flight", "--layout-batch", "--render-threads"}));
    if (opt.has("--document")) {
        if (opt.has("--pages") || opt.has("--block-image") || opt.has("--batch")) {
            fail("--document runs the document pipeline; --pages, --block-image and --batch do not apply");
        }
        std::cout << nlohmann::json{{"documents", bench_documents(opt)}}.dump(2) << std::endl;
        return 0;
    }
    for (const char* flag : {"--dpi", "--pages-in-flight", "--layout-batch", "--render-threads"}) {
        if (opt.has(flag)) {
            fail(flag, " goes with --document");
        }
    }
    const std::string size = opt.text("--image-size", "224x224");
    const auto [width, height] = parse_size(size, "--image-size");
    const int64_t n_decode = opt.integer("--decode-tokens", 16);
    const int64_t n_prefill = opt.integer("--prefill-tokens", 16);
    if (n_decode < 2 || n_prefill < 1) {
        fail("--decode-tokens must be at least 2 and --prefill-tokens at least 1");
    }
    DocumentWorkload document;
    document.n_pages = opt.integer("--pages", 0);
    document.block_tokens = opt.integer("--block-tokens", document.block_tokens);
    if (opt.has("--block-image")) {
        const std::string block = opt.text("--block-image");
        const int64_t n_blocks = opt.integer("--blocks-per-page", 20);
        if (n_blocks < 1) {
            fail("--blocks-per-page must be at least 1, got ", n_blocks);
        }
        document.page_blocks.assign(static_cast<size_t>(n_blocks), parse_size(block, "--block-image"));
        document.name = std::to_string(n_blocks) + " x " + block;
    } else if (opt.has("--blocks-per-page")) {
        fail("--blocks-per-page goes with --block-image; the page20 workload has its own 20 blocks");
    }
    if (document.n_pages < 0 || document.block_tokens < 1) {
        fail("--pages must not be negative and --block-tokens must be at least 1");
    }
    const bool layout = opt.has("--layout-model");
    const std::vector<int64_t> batches = parse_batch_sizes(opt, layout ? "1,8,32" : "1");
    if (layout) {
        const std::unique_ptr<Backend> backend = make_backend(opt);
        const nlohmann::json report =
            bench_layout(*backend, opt.text("--layout-model"), batches, opt.integer("--pages", 64));
        std::cout << nlohmann::json{{"layout", report}}.dump(2) << std::endl;
        return 0;
    }

    ModelConfig cfg;
    PreprocessorConfig pre;
    if (opt.has("--model")) {
        const std::unique_ptr<ModelFiles> files = ModelFiles::open(opt.text("--model"));
        cfg = files->config();
        pre = files->preprocessor();
    } else {
        cfg = parse_model_config("{}", "full-size defaults");
        pre = parse_preprocessor_config("{}", "reference defaults");
    }
    const EngineOptions engine_options =
        parse_engine_options(opt, describe_model(opt.has("--model") ? opt.text("--model") : ""));
    apply_preprocessing(engine_options, pre);
    const ModelLoadParams& load = engine_options.load;
    const EngineConfig& engine_cfg = engine_options.engine;
    // The model through the service, as every front end loads it (random weights without --model).
    EngineService service;
    ServiceParams params;
    set_service_devices(params, opt);
    params.models.push_back(
        {ModelRole::Recognition, opt.has("--model") ? std::filesystem::path(opt.text("--model")) : "", load});
    params.engine = engine_cfg;
    auto start = std::chrono::steady_clock::now();
    service.load(std::move(params));
    if (service.wait_loaded(std::chrono::hours(24)) != ServiceState::Ready) {
        fail(service.status().error);
    }
    const double load_seconds = seconds_since(start);

    // Vision: a batch of images of the requested size (patch grid rounded to the 2x2 merge), encoded once to
    // warm up and then timed over several runs, each waited for; and the model's own figures. On the engine
    // thread, which owns the device.
    constexpr int kVisionImages = 8, kVisionRuns = 3;
    const int64_t factor = static_cast<int64_t>(cfg.vision.patch_size) * cfg.vision.spatial_merge_size;
    const std::vector<ImageGrid> grids(kVisionImages,
                                       ImageGrid{1, height / factor * cfg.vision.spatial_merge_size,
                                                 width / factor * cfg.vision.spatial_merge_size});
    const int64_t patch_dim = cfg.vision.patch_dim();
    const std::vector<float> pixels(static_cast<size_t>(kVisionImages * grids[0].n_patches() * patch_dim),
                                    0.1f);
    double vision_seconds = 0.0, bandwidth = 0.0, product_rate = 0.0;
    int64_t n_params = 0, n_weight_bytes = 0, peak_bytes = 0, device_bytes = 0;
    std::string device;
    service.run_on_engine_thread([&](EngineContext& context) {
        auto* model = dynamic_cast<PaddleOcrVl*>(context.models.front()->generative());
        if (!model) {
            fail("bench: the service's model is not PaddleOCR-VL");
        }
        Backend& backend = context.backend;
        const Tensor probe = backend.alloc({1});
        model->encode_vision(pixels, grids);
        backend.download(probe);  // waits for the warm-up
        const auto vision_start = std::chrono::steady_clock::now();
        for (int run = 0; run < kVisionRuns; ++run) {
            model->encode_vision(pixels, grids);
        }
        backend.download(probe);
        vision_seconds = seconds_since(vision_start) / kVisionRuns;
        n_params = model->n_params();
        n_weight_bytes = model->n_weight_bytes();
        device = backend.name();
    });
    const int64_t vision_patches = kVisionImages * grids[0].n_patches();

    nlohmann::json decode = nlohmann::json::array();
    for (const int64_t b : batches) {
        decode.push_back(bench_decode(service, cfg.text.vocab_size, engine_cfg, b, n_prefill, n_decode));
    }
    nlohmann::json document_report;
    if (document.n_pages > 0) {
        document_report = bench_document(service, cfg, pre, engine_cfg, document);
    }
    service.run_on_engine_thread([&](EngineContext& context) {
        bandwidth = copy_bandwidth(context.backend);
        product_rate = bf16_product_rate(context.backend);
        peak_bytes = context.backend.memory_stats().peak;
        device_bytes = context.backend.total_memory();
    });
    nlohmann::json bytes;
    for (const auto q : {Quantization::None, Quantization::Wint8, Quantization::Wint4}) {
        ModelLoadParams p = load;
        p.quantization = q;
        bytes[quantization_name(q)] = weight_bytes(cfg, p);
    }
    const int64_t step_bytes = decode_weight_bytes(cfg, load);
    nlohmann::json report = {
        {"copy_bandwidth_bytes_per_second", bandwidth},
        {"bf16_product_flops_per_second", product_rate},
        {"decode_weight_bytes_per_step", step_bytes},
        {"decode_floor_tokens_per_second", bandwidth / static_cast<double>(step_bytes)},
        {"peak_bytes", peak_bytes},
        {"device_memory_bytes", device_bytes},  // the device's, or --device-memory's
        {"device", device},
        {"devices", engine_device_groups(opt)},  // a copy of the model on each group, split over its devices
        {"model",
         opt.has("--model") ? opt.text("--model") : "full-size PaddleOCR-VL architecture, random weights"},
        {"dtype", load.bf16_weights ? "bf16 weights, f32 activations" : "f32"},
        {"quantization", quantization_name(load.quantization)},
        {"vision_quantization", quantization_name(vision_quantization(load))},
        {"n_params", n_params},
        {"weight_bytes", n_weight_bytes},
        {"weight_bytes_by_format", bytes},
        {"load_seconds", load_seconds},
        {"vision",
         {{"image", size},
          {"images", kVisionImages},
          {"n_patches", vision_patches},
          {"seconds", vision_seconds},
          {"patches_per_second", static_cast<double>(vision_patches) / vision_seconds}}},
        {"decode", decode},
    };
    if (document.n_pages > 0) {
        // The decoder's floor: its operations at the product rate measured above.
        const double floor = document_report["decoder_flops"].get<double>() / product_rate;
        document_report["decoder_floor_seconds"] = floor;
        document_report["decoder_device_over_floor"] =
            document_report["decoder_device_seconds"].get<double>() / floor;
        report["document"] = document_report;
    }
    std::cout << report.dump(2) << std::endl;
    return 0;
}

}  // namespace folio::cli
