#include "app/cli/serve-command.h"

#include <pthread.h>

#include <csignal>
#include <filesystem>
#include <iostream>

#include "app/cli/cli-service.h"
#include "app/cli/model-command.h"
#include "app/images/image-loader.h"
#include "app/options/engine-options.h"
#include "app/server/openai-server.h"
#include "engine/common/error.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/model-registry.h"
#include "engine/service/engine-service.h"

namespace folio::cli {

const char* const kServeUsage =
    R"(  folio-cli serve --model DIR|ORG/NAME [--host 127.0.0.1] [--port 8180] [--metrics-port 8471]
                  [--api-key KEY] [--served-model-name NAME] [--max-concurrency N] [--allow-image-urls]
                  [--max-waiting-time SECONDS] [--max-body-size SIZE] [--device cpu|cuda[:N]] [--threads N]
                  [engine options]
      Serves the model over OpenAI's API, as FastDeploy serves PaddleOCR-VL: POST /v1/chat/completions
      (text and data: URL images, http(s) image URLs with --allow-image-urls, streamed with "stream": true)
      and /v1/completions, GET /v1/models and /health; GET /metrics in Prometheus' text format on the
      metrics port. Listens on 127.0.0.1 unless --host says otherwise; port 0 takes any free port. With
      --api-key, requests to /v1/ must send "Authorization: Bearer KEY". --max-concurrency requests are
      served at once and as many more wait; beyond them, or past --max-waiting-time, a request is answered
      429. Bodies over --max-body-size (64M) are refused. Ctrl-C (or SIGTERM) stops the server, ending the
      requests in flight.
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

}  // namespace

int run_serve(int argc, char** argv, int first) {
    const Options opt(argc, argv, first);
    if (opt.has("--help")) {
        std::cout << kServeUsage << "\n" << engine_usage(CommandScope::Serve);
        return 0;
    }
    opt.allow(with_engine_flags({"--model", "--device", "--threads", "--max-body-size", "--device-memory"}));
    const std::string model_spec = opt.text("--model");
    const std::filesystem::path model_dir = resolve_model_option(model_spec, opt.has("--tokenizer"));
    const EngineOptions engine_options =
        parse_engine_options(opt, describe_model(model_dir), CommandScope::Serve);

    server::ServerParams params;
    params.host = engine_options.host;
    params.port = engine_options.port.value_or(8180);
    params.metrics_port = engine_options.metrics_port.value_or(8471);
    params.api_key = engine_options.api_key;
    params.fetch_image_urls = engine_options.allow_image_urls;
    params.max_concurrency = static_cast<int>(std::min<int64_t>(engine_options.max_concurrency, 4096));
    params.max_queued = params.max_concurrency;
    params.max_waiting_seconds = engine_options.max_waiting_time;
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
    PreprocessorConfig pre = load_preprocessor_config(model_dir / "preprocessor_config.json");
    apply_preprocessing(engine_options, pre);
    params.image_pixels = {pre.min_pixels, pre.max_pixels};

    // SIGINT and SIGTERM wait for sigwait below: every thread started from here on has them blocked.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    EngineService service;
    load_service(service, opt, model_dir, engine_options);
    server::OpenAiServer server(service, params, [](std::span<const uint8_t> bytes, std::string_view name) {
        return decode_image(bytes, name);
    });
    server.start();
    std::cerr << "folio-cli serve: serving " << params.model_names.front() << " on http://" << params.host
              << ":" << server.port() << "/v1";
    if (server.metrics_port() >= 0) {
        std::cerr << ", metrics on http://" << params.host << ":" << server.metrics_port() << "/metrics";
    }
    std::cerr << "; Ctrl-C stops" << std::endl;

    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::cerr << "folio-cli serve: " << (signal == SIGINT ? "interrupted" : "terminated") << ", stopping"
              << std::endl;
    server.stop();
    service.unload();
    return 0;
}

}  // namespace folio::cli
