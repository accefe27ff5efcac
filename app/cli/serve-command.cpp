#include "app/cli/serve-command.h"

#include <pthread.h>

#include <csignal>
#include <filesystem>
#include <iostream>

#include "app/cli/cli-service.h"
#include "app/cli/messages-file.h"
#include "app/cli/model-command.h"
#include "app/cli/offscreen-application.h"
#include "app/cli/pipeline-flags.h"
#include "app/images/image-loader.h"
#include "app/images/video-loader.h"
#include "app/options/engine-options.h"
#include "app/server/openai-server.h"
#include "app/server/pipeline-document-parser.h"
#include "engine/chat-template/reasoning-parser.h"
#include "engine/common/error.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/model-registry.h"
#include "engine/service/engine-service.h"

namespace folio::cli {

const char* const kServeUsage =
    R"(  folio-cli serve --model DIR|ORG/NAME [--host 127.0.0.1] [--port 8180] [--metrics-host 127.0.0.1]
                  [--metrics-port 8471] [--api-key KEY] [--served-model-name NAME] [--max-concurrency N]
                  [--max-waiting-time SECONDS] [--max-connections N] [--max-body-size SIZE]
                  [--max-image-pixels N] [--max-decode-threads N] [--allow-image-urls] [--log-requests]
                  [--reasoning-parser deepseek_r1|ernie-45-vl] [--documents-dir DIR]
                  [--layout-model DIR|ORG/NAME] [--max-pages N] [--max-new-tokens N] [--dpi N]
                  [--pages-in-flight N]
                  [--device cpu|cuda[:N]] [--threads N] [engine options]
      Serves the model over OpenAI's API, as FastDeploy serves PaddleOCR-VL: POST /v1/chat/completions
      (text and data: URL images, http(s) image URLs with --allow-image-urls, streamed with "stream": true)
      and /v1/completions, GET /v1/models, /v1/models/{id} and /health; GET /metrics in Prometheus' text
      format on the metrics port. Listens on 127.0.0.1 unless --host says otherwise (it warns when another
      address is served without --api-key); the metrics stay on 127.0.0.1 unless --metrics-host says
      otherwise; port 0 takes any free port. With --api-key, requests to /v1/ must send
      "Authorization: Bearer KEY". --max-concurrency requests are served at once and as many more wait for
      a place; beyond them, or past --max-waiting-time, a request is answered 429. Idle and slow connections
      do not take a place: they have --max-connections of their own, 10 s to send a request's headers, 60 s
      for its body and 5 s idle between requests. Bodies over --max-body-size (64M, chunked or not) are
      refused before they are read; images over --max-image-pixels (36 times the processor's max_pixels)
      are refused from their header, and --max-decode-threads (4) are decoded at once. A max_tokens over
      what the context leaves is lowered to it. A request whose client disconnects is cancelled.
      --log-requests logs a line per request. --reasoning-parser splits each chat answer at </think> into
      reasoning_content and content, as vLLM (deepseek_r1) and FastDeploy (ernie-45-vl) do, unless the
      request's chat_template_kwargs set enable_thinking false. SIGINT (Ctrl-C) or SIGTERM stops the server
      within a few seconds: streams in flight end with an error event, other requests with 503.
      Chat messages take text, image_url, video_url (a data URL of a video file, sampled as
      --mm-processor-kwargs' video_fps, video_min_frames and video_max_frames say) and video_frames parts
      ({"type": "video_frames", "frames": [data URL, ...], "fps": F}); --limit-mm-per-prompt counts images
      and videos each on their own.
      Ask the document: a chat request's "document" (Folio's extension) is the JSON folio-cli ocr writes, or
      plain text, or {"name": NAME} for NAME.json in --documents-dir (a folio-cli ocr output folder). Its
      blocks open the first user message as far as the context allows, pages nearest the question's words
      first; the answer's message lists the blocks it cites ("citations") and the body says which pages
      were given and left out ("document").
      Documents: with a layout model (--layout-model, or the one paired with the recognition model when it
      is on disk) the server also answers PaddleOCR's document-parsing API, POST /layout-parsing, as
      PaddleX serves PaddleOCR-VL: a PDF or image as base64 (or an http(s) URL with --allow-image-urls),
      each page's Markdown, figures and prunedResult (what folio-cli ocr writes), Word with
      "outputFormats": ["docx"]. A file over --max-pages (100) is refused; pages render at --dpi and each
      block stops at --max-new-tokens (4096) as ocr's do. A chat completion whose model is the pipeline's
      name (the model's with "-pipeline", also in /v1/models) and whose message has a PDF or page image as
      a "file" or "image_url" part answers with the document's Markdown, a page a chunk when streamed.
      Fields and errors: docs/layout-parsing.md.
)";
namespace {

// The name clients give as "model": --served-model-name, else the Hub repository or the folder's name.
std::string served_name(const EngineOptions& options, const std::string& model_spec,
                        const std::filesystem::path& model_dir) {
    if (options.served_model_name) {
        return *options.served_model_name;
    }
    if (!std::filesystem::exists(model_spec)) {
        return model_spec;  // ORG/NAME
    }
    const std::filesystem::path folder = std::filesystem::path(model_spec).lexically_normal();
    const std::string name = (folder.has_filename() ? folder : folder.parent_path()).filename().string();
    return name.empty() ? model_dir.filename().string() : name;
}

// Whether an address reaches this machine only: 127.0.0.0/8, ::1 or localhost.
bool is_loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

// The address as a URL writes it: an IPv6 address in brackets.
std::string url_host(const std::string& host) {
    return host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
}

// An image file's size from its header (a multi-page file's first page, which is the one decoded).
std::optional<server::ImageSize> read_image_size(std::span<const uint8_t> bytes, std::string_view name) {
    const ImageFileInfo info = probe_image(bytes, name);
    if (info.pages.empty() || info.pages.front().width <= 0 || info.pages.front().height <= 0) {
        return std::nullopt;
    }
    return server::ImageSize{info.pages.front().width, info.pages.front().height};
}

}  // namespace

int run_serve(int argc, char** argv, int first) {
    const Options opt(argc, argv, first);
    if (opt.has("--help")) {
        std::cout << kServeUsage << "\n" << engine_usage(CommandScope::Serve);
        return 0;
    }
    opt.allow(
        with_engine_flags({"--model", "--device", "--threads", "--max-body-size", "--device-memory",
                           "--documents-dir", "--layout-model", "--max-pages", "--dpi", "--pages-in-flight",
                           "--render-threads", "--layout-batch", "--max-new-tokens"}));
    const std::string model_spec = opt.text("--model");
    const std::filesystem::path model_dir = resolve_model_option(model_spec, opt.has("--tokenizer"));
    const ModelDescription described = describe_model(model_dir);
    const EngineOptions engine_options = parse_engine_options(opt, described, CommandScope::Serve);

    server::ServerParams params;
    // An IPv6 address may come in brackets, as a URL writes it.
    const auto bare = [](std::string host) {
        return host.size() > 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2)
                                                                            : host;
    };
    params.host = bare(engine_options.host);
    params.port = engine_options.port.value_or(8180);
    params.metrics_port = engine_options.metrics_port.value_or(8471);
    params.api_key = engine_options.api_key;
    params.fetch_image_urls = engine_options.allow_image_urls;
    params.metrics_host = bare(engine_options.metrics_host);
    params.max_concurrency = static_cast<int>(std::min<int64_t>(engine_options.max_concurrency, 4096));
    params.max_queued = params.max_concurrency;
    params.max_waiting_seconds = engine_options.max_waiting_time;
    params.max_connections = static_cast<int>(std::min<int64_t>(engine_options.max_connections, 16384));
    params.max_decode_threads = static_cast<int>(engine_options.max_decode_threads);
    params.max_image_pixels = engine_options.max_image_pixels;
    params.log_requests = engine_options.log_requests;
    if (!engine_options.reasoning_parser.empty()) {
        params.reasoning_parser = find_reasoning_format(engine_options.reasoning_parser);
    }
    if (opt.has("--documents-dir")) {
        params.documents_dir = opt.text("--documents-dir");
        std::error_code error;
        if (!std::filesystem::is_directory(params.documents_dir, error)) {
            fail("--documents-dir ", params.documents_dir.string(), ": ",
                 std::filesystem::exists(params.documents_dir, error) ? "is not a folder" : "does not exist");
        }
    }
    if (opt.has("--max-body-size")) {
        const int64_t bytes = parse_byte_size("--max-body-size", opt.text("--max-body-size"));
        if (bytes < 1024) {
            fail("--max-body-size must be at least 1K, got ", bytes, " bytes");
        }
        params.max_body_bytes = static_cast<size_t>(bytes);
    }
    params.model_names = {served_name(engine_options, model_spec, model_dir)};
    if (params.model_names.front() != model_spec) {
        params.model_names.push_back(model_spec);
    }
    if (described.takes(Modality::Image)) {
        // The folder's image pixel bounds, else the reference processor's defaults.
        const std::filesystem::path file = model_dir / "preprocessor_config.json";
        std::error_code error;
        PreprocessorConfig pre = std::filesystem::exists(file, error)
                                     ? load_preprocessor_config(file)
                                     : parse_preprocessor_config("{}", "reference defaults");
        apply_preprocessing(engine_options, pre);
        params.image_pixels = {pre.min_pixels, pre.max_pixels};
    }
    params.video_sampling = video_sampling(model_dir, engine_options);
    params.decode_video = [](std::span<const uint8_t> bytes, std::string_view name,
                             const VideoSampling& sampling) { return decode_video(bytes, name, sampling); };

    // SIGINT and SIGTERM wait for sigwait below: every thread started from here on has them blocked.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    // PaddleOCR's document-parsing API where a layout model is named, or paired with the model and on disk.
    std::optional<std::filesystem::path> layout_dir;
    if (opt.has("--layout-model")) {
        layout_dir = resolve_layout_model(opt, model_spec);
    } else if (described.takes(Modality::Image)) {
        std::string why;
        layout_dir = find_paired_layout_model(model_spec, why);
        if (!layout_dir && !why.empty()) {
            std::cerr << "folio-cli serve: note: no /layout-parsing: " << why
                      << " (name a layout model with --layout-model)" << std::endl;
        }
    } else if (opt.has("--max-pages")) {
        fail("--max-pages applies to /layout-parsing, which needs --layout-model");
    }
    PipelineParserParams pipeline;
    std::unique_ptr<OffscreenApplication> application;
    if (layout_dir) {
        const int64_t max_pages = opt.integer("--max-pages", pipeline.maxPages);
        if (max_pages < 1 || max_pages > 100000) {
            fail("--max-pages must be in 1..100000, got ", max_pages);
        }
        pipeline.maxPages = static_cast<int>(max_pages);
        pipeline.document = document_options_from(opt);
        apply_pipeline_flags(opt, engine_options, pipeline.pipeline);
        const int64_t max_new_tokens =
            opt.integer("--max-new-tokens", pipeline.pipeline.recognition.maxNewTokens);
        if (max_new_tokens < 1 || max_new_tokens > (int64_t{1} << 20)) {
            fail("--max-new-tokens must be in 1..1048576, got ", max_new_tokens);
        }
        pipeline.pipeline.recognition.maxNewTokens = static_cast<int>(max_new_tokens);
        // Page images are painted (visualize) and Word documents written through Qt's GUI classes.
        application = std::make_unique<OffscreenApplication>(argv[0]);
    }

    // A port in use is said before the model loads, which can take minutes, not after.
    server::check_can_listen(params.host, params.port, "API");
    if (params.metrics_port >= 0) {
        server::check_can_listen(params.metrics_host, params.metrics_port, "metrics");
    }
    EngineService service;
    load_service(service, opt, model_dir, engine_options, layout_dir, pipeline.pipeline.layoutBatch);
    if (layout_dir) {
        params.document_parser = std::make_shared<PipelineDocumentParser>(service, pipeline);
    }
    server::OpenAiServer server(
        service, params,
        [](std::span<const uint8_t> bytes, std::string_view name) { return decode_image(bytes, name); },
        read_image_size);
    server.start();
    std::cerr << "folio-cli serve: serving " << params.model_names.front();
    if (const auto groups = engine_device_groups(opt); groups.size() > 1 || groups.front().size() > 1) {
        // "on 2 engines (cuda:0, cuda:1)", "on 1 engine of 2 ranks (cuda:0+cuda:1)"
        std::cerr << " on " << groups.size() << (groups.size() > 1 ? " engines" : " engine");
        if (groups.front().size() > 1) {
            std::cerr << " of " << groups.front().size() << " ranks";
        }
        std::cerr << " (";
        for (size_t i = 0; i < groups.size(); ++i) {
            for (size_t r = 0; r < groups[i].size(); ++r) {
                std::cerr << (r ? "+" : i ? ", " : "") << groups[i][r];
            }
        }
        std::cerr << ")";
    }
    std::cerr << " on http://" << url_host(params.host) << ":" << server.port() << "/v1";
    if (server.metrics_port() >= 0) {
        std::cerr << ", metrics on http://" << url_host(params.metrics_host) << ":" << server.metrics_port()
                  << "/metrics";
    }
    if (params.document_parser) {
        std::cerr << ", documents on http://" << url_host(params.host) << ":" << server.port()
                  << "/layout-parsing";
    }
    std::cerr << "; Ctrl-C stops" << std::endl;
    if (!is_loopback(params.host) && params.api_key.empty()) {
        std::cerr << "folio-cli serve: warning: listening on " << url_host(params.host)
                  << " without --api-key: anyone who can reach this address can use the model" << std::endl;
    }
    if (server.metrics_port() >= 0 && !is_loopback(params.metrics_host)) {
        std::cerr << "folio-cli serve: warning: the metrics on " << url_host(params.metrics_host)
                  << " are open to anyone who can reach this address (they take no API key)" << std::endl;
    }

    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::cerr << "folio-cli serve: " << (signal == SIGINT ? "interrupted" : "terminated") << ", stopping"
              << std::endl;
    server.stop();
    service.unload();
    std::cerr << "folio-cli serve: stopped" << std::endl;
    return 0;
}

}  // namespace folio::cli
