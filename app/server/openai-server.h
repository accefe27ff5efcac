// The local OpenAI-compatible server on the engine service: POST /v1/chat/completions and /v1/completions
// (streamed as server-sent events or whole), GET /v1/models and /health on the API port, GET /metrics in
// Prometheus' text format on the metrics port. HTTP through cpp-httplib; connections are served by a pool
// of max_concurrency threads, max_queued more wait for one, and any beyond are answered 429 at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/image/image.h"
#include "engine/service/engine-service.h"
#include "engine/service/request-builder.h"

namespace folio::server {

// Image file bytes to pixels; throws folio::Error naming `name` and what is wrong.
using ImageDecoder = std::function<Image(std::span<const uint8_t> bytes, std::string_view name)>;

struct ServerParams {
    std::string host = "127.0.0.1";
    int port = 8180;                   // 0: any free port
    int metrics_port = 8471;           // 0: any free port; -1: none
    std::string api_key;               // empty: none asked for
    int max_concurrency = 512;         // requests served at once
    int max_queued = 512;              // connections waiting beyond those; more are answered 429
    int64_t max_waiting_seconds = -1;  // a connection that waited longer is answered 429; -1: no limit
    size_t max_body_bytes = size_t{64} << 20;
    // The names a request's "model" may give (the first is the one /v1/models lists); a request without one
    // is served too.
    std::vector<std::string> model_names;
    // Images given as http(s) URLs are fetched within these limits when allowed, else refused.
    bool fetch_image_urls = false;
    std::chrono::seconds fetch_timeout{20};
    // The image bounds of the model's preprocessing, filled in where a request's mm_processor_kwargs give
    // one.
    ImagePixelBounds image_pixels;
};

class OpenAiServer {
public:
    // The service must be loaded and outlive the server.
    OpenAiServer(EngineService& service, ServerParams params, ImageDecoder decode);
    // Stops.
    ~OpenAiServer();
    OpenAiServer(const OpenAiServer&) = delete;
    OpenAiServer& operator=(const OpenAiServer&) = delete;

    // Binds the ports and serves on threads of its own; throws folio::Error naming the address that could
    // not be bound.
    void start();
    // The ports bound (those asked for, or the free ones found for 0).
    int port() const;
    int metrics_port() const;
    // Stops listening and ends the requests in flight.
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace folio::server
