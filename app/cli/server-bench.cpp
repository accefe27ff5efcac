#include "app/cli/server-bench.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <thread>

#include <QFile>
#include <QStringList>

#include "app/cli/cli-service.h"
#include "app/cli/model-command.h"
#include "app/cli/offscreen-application.h"
#include "app/cli/pipeline-flags.h"
#include "app/images/image-loader.h"
#include "app/options/engine-options.h"
#include "app/pipeline/document-pipeline.h"
#include "app/pipeline/source-input.h"
#include "app/server/openai-protocol.h"
#include "app/server/openai-server.h"
#include "app/server/pipeline-document-parser.h"
#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/model-registry.h"
#include "engine/service/engine-service.h"

namespace folio::cli {

const char* const kServerBenchUsage =
    R"(  folio-cli bench --server N --model DIR|ORG/NAME [--connections N] [--block-image WxH] [--block-tokens N]
                  [--device cpu|cuda[:N]] [engine options]
      The server's overhead: N block-sized requests (a --block-image crop, default
      1000x120, with "OCR:" and --block-tokens output tokens, default 32) from --connections clients at once
      (default 32), first straight to the engine service, then as chat completions over HTTP on 127.0.0.1
      with the crop as a PNG data URL. Prints JSON: requests/s and latency percentiles of each, side by side.
  folio-cli bench --server N --pipeline FILE --model DIR|ORG/NAME [--layout-model DIR|ORG/NAME]
                  [--connections N] [--dpi N] [--max-new-tokens N] [--device cpu|cuda[:N]] [engine options]
  folio-cli bench --server N --pipeline FILE --tokenizer DIR --layout-model DIR|ORG/NAME [...]
      The document pipeline through the server: FILE (a PDF or image) N times, first as folio-cli ocr runs
      the documents (one pipeline, every document's blocks together), then as N POST /layout-parsing
      requests from --connections clients at once (default 4). Prints JSON: pages/s of each, side by side.
      Without --model, the full-size PaddleOCR-VL architecture with random weights.
)";

namespace {

using Clock = std::chrono::steady_clock;

// A PNG of a block-like crop: dark strokes on white.
std::vector<uint8_t> block_png(int width, int height) {
    cv::Mat image(height, width, CV_8UC3, cv::Scalar(255, 255, 255));
    for (int x = 8; x + 6 < width; x += 11) {
        const int top = height / 4 + (x * 7) % std::max(1, height / 4);
        const cv::Rect stroke =
            cv::Rect(x, top, 6, std::max(2, height / 2 - (x % 5))) & cv::Rect(0, 0, width, height);
        image(stroke).setTo(cv::Scalar(20, 20, 20));
    }
    std::vector<uint8_t> bytes;
    if (!cv::imencode(".png", image, bytes)) {
        fail("could not encode the benchmark's block image");
    }
    return bytes;
}

std::string data_url(const std::vector<uint8_t>& bytes) {
    return server::encode_data_url(bytes, "image/png");
}

// Latencies in seconds into requests/s and percentiles in milliseconds.
nlohmann::json summary(std::vector<double> latencies, double seconds, int64_t n_tokens) {
    std::sort(latencies.begin(), latencies.end());
    const auto at = [&](double q) {
        if (latencies.empty()) {
            return 0.0;
        }
        const auto i = static_cast<size_t>(q * static_cast<double>(latencies.size() - 1) + 0.5);
        return latencies[std::min(i, latencies.size() - 1)] * 1000.0;
    };
    return {{"requests", latencies.size()},
            {"seconds", seconds},
            {"requests_per_second", static_cast<double>(latencies.size()) / seconds},
            {"tokens_per_second", static_cast<double>(n_tokens) / seconds},
            {"latency_ms", {{"p50", at(0.5)}, {"p90", at(0.9)}, {"p99", at(0.99)}, {"max", at(1.0)}}}};
}

// Runs `n_requests` calls of `one` (which returns its tokens, or throws) from `n_clients` threads.
nlohmann::json run_clients(int64_t n_requests, int n_clients, const std::function<int64_t(int)>& one) {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> n_tokens{0};
    std::mutex mutex;
    std::vector<double> latencies;
    std::string error;
    const auto start = Clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < n_clients; ++c) {
        threads.emplace_back([&, c] {
            while (next.fetch_add(1) < n_requests) {
                const auto begin = Clock::now();
                try {
                    n_tokens += one(c);
                } catch (const std::exception& e) {
                    const std::lock_guard lock(mutex);
                    error = e.what();
                    return;
                }
                const std::lock_guard lock(mutex);
                latencies.push_back(std::chrono::duration<double>(Clock::now() - begin).count());
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    if (!error.empty()) {
        fail("a benchmark request failed: ", error);
    }
    return summary(std::move(latencies), std::chrono::duration<double>(Clock::now() - start).count(),
                   n_tokens);
}

// The document pipeline in process and through POST /layout-parsing, the same file the same number of times.
int run_pipeline_bench(const Options& opt) {
    opt.allow(with_engine_flags({"--server", "--pipeline", "--model", "--layout-model", "--device",
                                 "--threads", "--connections", "--dpi", "--max-new-tokens", "--device-memory",
                                 "--pages-in-flight", "--render-threads", "--layout-batch"}));
    // Without --model, the full-size PaddleOCR-VL architecture with random weights, its prompts through
    // --tokenizer's tokenizer, as the document benchmark runs it.
    const bool random_weights = !opt.has("--model");
    if (random_weights && (!opt.has("--tokenizer") || !opt.has("--layout-model"))) {
        fail(
            "--pipeline with random weights (no --model) needs --tokenizer DIR for the prompts and "
            "--layout-model DIR|ORG/NAME");
    }
    const std::string model_spec = random_weights ? std::string() : opt.text("--model");
    const std::filesystem::path model_dir =
        random_weights ? std::filesystem::path() : resolve_model_option(model_spec, opt.has("--tokenizer"));
    const std::filesystem::path layout_dir = resolve_layout_model(opt, model_spec);
    const EngineOptions engine_options = parse_engine_options(opt, describe_model(model_dir));
    const int64_t n_documents = opt.integer("--server", 8);
    const int n_clients = static_cast<int>(opt.integer("--connections", 4));
    if (n_documents < 1 || n_documents > 100000 || n_clients < 1 || n_clients > 1024) {
        fail("--server must be in 1..100000 and --connections in 1..1024");
    }
    const QString file = QString::fromStdString(opt.text("--pipeline"));
    QFile input(file);
    if (!input.open(QIODevice::ReadOnly)) {
        fail(file.toStdString(), ": cannot read the file: ", input.errorString().toStdString());
    }
    const QByteArray bytes = input.readAll();
    const OffscreenApplication application("folio-cli");

    PipelineParserParams pipeline;
    pipeline.document = document_options_from(opt);
    apply_pipeline_flags(opt, engine_options, pipeline.pipeline);
    pipeline.pipeline.recognition.maxNewTokens = static_cast<int>(opt.integer("--max-new-tokens", 4096));
    pipeline.maxPages = 100000;
    EngineService service;
    load_service(service, opt, model_dir, engine_options, layout_dir, pipeline.pipeline.layoutBatch);

    // In process: one pipeline over the file n times, as folio-cli ocr runs a list of documents.
    struct PageCounter : PipelineObserver {
        void pageFinished(const DocumentInfo&, const PageResult&) override { ++pages; }
        int64_t pages = 0;
    } counter;
    const QStringList inputs(static_cast<qsizetype>(n_documents), file);
    DocumentPipeline direct_pipeline(service, sourceOpener(pipeline.document, PageRange::parse("all")),
                                     pipeline.pipeline);
    auto start = Clock::now();
    direct_pipeline.run(inputs, counter);
    const double direct_seconds = std::chrono::duration<double>(Clock::now() - start).count();

    server::ServerParams params;
    params.port = 0;
    params.metrics_port = -1;
    params.max_concurrency = n_clients;
    params.max_body_bytes = static_cast<size_t>(bytes.size()) * 2 + (size_t{1} << 20);
    params.document_parser = std::make_shared<PipelineDocumentParser>(service, pipeline);
    server::OpenAiServer server(
        service, params,
        [](std::span<const uint8_t> data, std::string_view name) { return decode_image(data, name); },
        [](std::span<const uint8_t>, std::string_view) -> std::optional<server::ImageSize> {
            return std::nullopt;
        });
    server.start();
    const std::string body = nlohmann::json{
        {"file",
         server::encode_base64(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.constData()),
                                                        static_cast<size_t>(bytes.size())))},
        {"returnMarkdownImages",
         false}}.dump();
    std::vector<std::unique_ptr<httplib::Client>> clients;
    for (int c = 0; c < n_clients; ++c) {
        clients.push_back(std::make_unique<httplib::Client>("127.0.0.1", server.port()));
        clients.back()->set_keep_alive(true);
        clients.back()->set_read_timeout(3600, 0);
    }
    std::atomic<int64_t> http_pages{0};
    start = Clock::now();
    const nlohmann::json http = run_clients(n_documents, n_clients, [&](int c) -> int64_t {
        const httplib::Result res =
            clients[static_cast<size_t>(c)]->Post("/layout-parsing", body, "application/json");
        if (!res || res->status != 200) {
            fail(res ? res->body : httplib::to_string(res.error()));
        }
        const nlohmann::json answer = parse_json_object(res->body, "the server's answer");
        http_pages += static_cast<int64_t>(answer.at("result").at("layoutParsingResults").size());
        return 0;
    });
    const double http_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    server.stop();

    const double direct_rate = static_cast<double>(counter.pages) / direct_seconds;
    const double http_rate = static_cast<double>(http_pages.load()) / http_seconds;
    const nlohmann::json out = {
        {"file", file.toStdString()},
        {"model",
         random_weights ? "full-size PaddleOCR-VL architecture, random weights" : model_dir.string()},
        {"documents", n_documents},
        {"connections", n_clients},
        {"ocr", {{"pages", counter.pages}, {"seconds", direct_seconds}, {"pages_per_second", direct_rate}}},
        {"layout_parsing",
         {{"pages", http_pages.load()},
          {"seconds", http_seconds},
          {"pages_per_second", http_rate},
          {"latency_ms", http["latency_ms"]}}},
        {"pages_per_second_ratio", http_rate / direct_rate}};
    std::cout << out.dump(2) << std::endl;
    return 0;
}

}  // namespace

int run_server_bench(const Options& opt) {
    if (opt.has("--pipeline")) {
        return run_pipeline_bench(opt);
    }
    opt.allow(with_engine_flags({"--server", "--model", "--device", "--threads", "--connections",
                                 "--block-image", "--block-tokens", "--device-memory"}));
    const std::filesystem::path model_dir = resolve_model_option(opt.text("--model"), opt.has("--tokenizer"));
    const EngineOptions engine_options = parse_engine_options(opt, describe_model(model_dir));
    const int64_t n_requests = opt.integer("--server", 2000);
    const int n_clients = static_cast<int>(opt.integer("--connections", 32));
    const int64_t n_tokens = opt.integer("--block-tokens", 32);
    if (n_requests < 1 || n_clients < 1 || n_clients > 1024 || n_tokens < 1) {
        fail("--server and --block-tokens must be at least 1, --connections 1..1024");
    }
    const auto [width, height] = parse_size(opt.text("--block-image", "1000x120"), "--block-image");
    const std::vector<uint8_t> png = block_png(width, height);
    const Image image = decode_image(png, "the benchmark's block");

    EngineService service;
    load_service(service, opt, model_dir, engine_options);
    GenerationOptions generation;
    generation.max_tokens = n_tokens;
    generation.ignore_eos = true;

    // Straight to the service, the crop already decoded (as the document pipeline sends it).
    const nlohmann::json direct = run_clients(n_requests, n_clients, [&](int) {
        RequestHandle handle = service.submit({ImageTask{{image}, "OCR:"}, generation});
        int64_t n = 0;
        while (std::optional<RequestOutput> out = handle.next()) {
            n += static_cast<int64_t>(out->tokens.size());
            if (out->finish && out->error_kind != ErrorKind::None) {
                fail(out->error);
            }
        }
        return n;
    });

    server::ServerParams params;
    params.port = 0;
    params.metrics_port = -1;
    params.max_concurrency = n_clients;
    params.max_decode_threads = n_clients;
    server::OpenAiServer server(
        service, params,
        [](std::span<const uint8_t> bytes, std::string_view name) { return decode_image(bytes, name); },
        [](std::span<const uint8_t> bytes, std::string_view name) -> std::optional<server::ImageSize> {
            const ImageFileInfo info = probe_image(bytes, name);
            return server::ImageSize{info.pages.front().width, info.pages.front().height};
        });
    server.start();
    const std::string body = nlohmann::json{
        {"messages",
         {{{"role", "user"},
           {"content",
            {{{"type", "image_url"}, {"image_url", {{"url", data_url(png)}}}},
             {{"type", "text"}, {"text", "OCR:"}}}}}}},
        {"max_tokens", n_tokens},
        {"temperature", 0},
        {"ignore_eos", true}}.dump();
    std::vector<std::unique_ptr<httplib::Client>> clients;
    for (int c = 0; c < n_clients; ++c) {
        clients.push_back(std::make_unique<httplib::Client>("127.0.0.1", server.port()));
        clients.back()->set_keep_alive(true);
        clients.back()->set_tcp_nodelay(true);
        clients.back()->set_read_timeout(600, 0);
    }
    const nlohmann::json http = run_clients(n_requests, n_clients, [&](int c) {
        const httplib::Result res =
            clients[static_cast<size_t>(c)]->Post("/v1/chat/completions", body, "application/json");
        if (!res || res->status != 200) {
            fail(res ? res->body : httplib::to_string(res.error()));
        }
        static const std::string origin = "the server's answer";
        const nlohmann::json answer = parse_json_object(res->body, origin);
        const std::optional<ObjectReader> usage = ObjectReader(answer, "", origin).object("usage");
        if (!usage) {
            fail(origin, ": no \"usage\"");
        }
        return usage->integer64("completion_tokens", 0);
    });
    server.stop();

    const nlohmann::json out = {
        {"block_image", std::to_string(width) + "x" + std::to_string(height)},
        {"png_bytes", png.size()},
        {"block_tokens", n_tokens},
        {"connections", n_clients},
        {"in_process", direct},
        {"http", http},
        {"server_overhead",
         {{"requests_per_second_ratio",
           http["requests_per_second"].get<double>() / direct["requests_per_second"].get<double>()},
          {"p50_ms", http["latency_ms"]["p50"].get<double>() - direct["latency_ms"]["p50"].get<double>()}}}};
    std::cout << out.dump(2) << std::endl;
    return 0;
}

}  // namespace folio::cli
