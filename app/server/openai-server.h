// The local OpenAI-compatible server on the engine service: POST /v1/chat/completions and /v1/completions
// (streamed as server-sent events or whole), GET /v1/models, /v1/models/{id} and /health on the API port, GET
// /metrics in Prometheus' text format on the metrics port. HTTP through cpp-httplib on connections of its own
// (http-connection.h): a bounded pool of connections, idle and slow ones included, with header, body and
// keep-alive time limits; requests, not connections, are admitted: max_concurrency served at once, max_queued
// more wait for a place, and any beyond are answered 429 at once. A request whose client goes away is
// cancelled, streamed or not.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "app/server/document-parser.h"
#include "engine/chat-template/reasoning-parser.h"
#include "engine/image/image.h"
#include "engine/image/video-sampling.h"
#include "engine/service/engine-service.h"
#include "engine/service/request-builder.h"

namespace folio::server {

// Image file bytes to pixels; throws folio::Error naming `name` and what is wrong.
using ImageDecoder = std::function<Image(std::span<const uint8_t> bytes, std::string_view name)>;
// An image file's width and height from its header, without decoding it; nothing when the header does not
// say. Throws folio::Error naming `name` for what is not an image file it knows.
struct ImageSize {
    int64_t width = 0;
    int64_t height = 0;
};
using ImageSizeReader =
    std::function<std::optional<ImageSize>(std::span<const uint8_t> bytes, std::string_view name)>;

// The images' pixel cap where ServerParams::max_image_pixels leaves it to the model: this many times the
// processor's max_pixels (six times the side the model sees each way, an A4 page scanned at 600 dpi for
// PaddleOCR-VL), since preprocessing resizes every image down to max_pixels anyway.
inline constexpr int64_t kImagePixelsOverMaxPixels = 36;

struct ServerParams {
    std::string host = "127.0.0.1";  // an IPv6 address without brackets
    int port = 8180;                 // 0: any free port
    std::string metrics_host = "127.0.0.1";
    int metrics_port = 8471;           // 0: any free port; -1: none
    std::string api_key;               // empty: none asked for
    int max_concurrency = 512;         // requests served at once
    int max_queued = 512;              // requests waiting for a place beyond those; more are answered 429
    int64_t max_waiting_seconds = -1;  // a request that waited longer is answered 429; -1: no limit
    // Connections open at once, idle and slow ones included (each holds a thread); 0: max_concurrency +
    // max_queued + 64. Connections beyond those and 64 more waiting for a thread are answered 429.
    int max_connections = 0;
    std::chrono::milliseconds header_timeout{10000};  // a request's line and headers, from their first byte
    std::chrono::milliseconds body_timeout{60000};    // its body, from the end of its headers
    std::chrono::milliseconds keep_alive_timeout{5000};  // a connection idle between requests is closed
    size_t max_body_bytes = size_t{64} << 20;  // chunked or not, refused before it is read past this
    // Images larger than this (from their headers, before decoding) are refused; 0: kImagePixelsOverMaxPixels
    // times image_pixels.max_pixels.
    int64_t max_image_pixels = 0;
    int max_decode_threads = 4;  // images decoded at once, whatever the number of requests
    bool log_requests = false;   // a line for each request on the log: method, path, status, tokens, time
    // The names a request's "model" may give (the first is the one /v1/models lists); a request without one
    // is served too.
    std::vector<std::string> model_names;
    // The folder a chat request's {"document": {"name": NAME}} reads NAME.json from (what folio-cli ocr
    // writes); empty: documents are only taken in the request.
    std::filesystem::path documents_dir;
    // Images given as http(s) URLs are fetched within these limits when allowed, else refused.
    bool fetch_image_urls = false;
    std::chrono::seconds fetch_timeout{20};
    // The image bounds of the model's preprocessing, filled in where a request's mm_processor_kwargs give
    // one.
    ImagePixelBounds image_pixels;
    // How video files are sampled (video_url parts), and the most frames a video_frames part may have
    // (max_frames).
    VideoSampling video_sampling;
    // Video file bytes to sampled frames, throwing folio::Error naming `name`; empty: video_url parts are
    // refused (video_frames parts are still taken). http(s) video URLs are fetched where image URLs are.
    std::function<Video(std::span<const uint8_t> bytes, std::string_view name, const VideoSampling& sampling)>
        decode_video;
    // --reasoning-parser: chat answers carry reasoning_content beside content, whole and streamed, unless a
    // request's chat_template_kwargs turn enable_thinking off.
    std::optional<ReasoningFormat> reasoning_parser;
    // The document pipeline behind POST /layout-parsing (PaddleOCR's document-parsing API); none: that route
    // answers 404 saying how to serve it (--layout-model).
    std::shared_ptr<DocumentParser> document_parser;
    // The "model" a chat completion names to have its file part parsed by the pipeline into Markdown, listed
    // by /v1/models beside the model; empty: the model's name with "-pipeline".
    std::string pipeline_model_name;
};

class OpenAiServer {
public:
    // The service must be loaded and outlive the server.
    OpenAiServer(EngineService& service, ServerParams params, ImageDecoder decode, ImageSizeReader read_size);
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
    // The pixel cap images are checked against.
    int64_t max_image_pixels() const;
    // Stops listening and ends the requests in flight: a stream with an error event ("the server is
    // stopping"), a request not yet answered with 503 (code "stopped"). Returns once every connection is
    // closed: within about a second, or the write timeout for a client that reads nothing.
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Checks, before a long model load, that host:port can be listened on (port 0 always can): binds a socket
// there and closes it; throws folio::Error as start() would ("cannot listen on ... (WHAT): ...").
void check_can_listen(const std::string& host, int port, const char* what);

}  // namespace folio::server
