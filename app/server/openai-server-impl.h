// The server's inside, shared by its parts: the routes and lifecycle (openai-server.cpp), a generation
// request from its body to the engine's request (openai-request.cpp), and its answer, whole or streamed
// (openai-answer.cpp).
#pragma once

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "app/server/admission.h"
#include "app/server/http-connection.h"
#include "app/server/layout-parsing.h"
#include "app/server/openai-protocol.h"
#include "app/server/openai-server.h"
#include "app/server/server-metrics.h"

namespace folio::server {

using Clock = std::chrono::steady_clock;

// Connections waiting for a thread beyond the pool, and the pool's room for idle and slow connections.
inline constexpr size_t kPendingConnections = 64;
inline constexpr int kSpareConnections = 64;
// How often a request's client is looked at while it waits.
inline constexpr std::chrono::milliseconds kLookEvery{100};

enum class Api { Chat, Completion };

ApiError stopping_error();
// The error a request that did not end well is answered with; while the server stops, a request it cancelled
// says so.
ApiError error_of(const RequestOutput& out, bool stopping);
bool ended_well(const RequestOutput& out);
RequestOutcome outcome_of(const RequestOutput& out);
void send_error(httplib::Response& res, const ApiError& error);
// The same in PaddleX's envelope where the path is /layout-parsing's.
void send_error(httplib::Response& res, const ApiError& error, const std::string& path);

// One request from its arrival to its last byte.
struct Exchange {
    explicit Exchange(std::atomic<int>& count) : n_open(count) { ++n_open; }
    ~Exchange() { --n_open; }
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    std::atomic<int>& n_open;  // the server's count of exchanges not yet answered
    Api api = Api::Chat;
    ResponseHead head;
    GenerationRequest generation;
    RequestHandle handle;
    std::unique_ptr<AdmissionTicket> ticket;  // its place among the requests served
    Clock::time_point arrived;
    std::optional<Clock::time_point> first_token_at;
    Clock::time_point last_write;
    Clock::time_point last_look;               // when the client's connection was last looked at
    std::optional<RequestOutput> pending;      // taken before the headers, sent first
    std::optional<ReasoningStream> reasoning;  // a chat answer's reasoning split from its content
    int64_t n_tokens = 0;
    int64_t n_cached = -1;  // prompt tokens the prefix cache held, once the first token says
    // Ask the document: the request's passages and the pages given and left out of its prompt.
    std::shared_ptr<const DocumentPassages> document;
    std::string streamed_content;  // a stream's content so far, where it has a document
    std::vector<int> document_pages;
    std::vector<int> document_left_out;
    std::vector<int> document_in_part;
    bool prompt_counted = false;
    bool sent_first = false;
    bool recorded = false;
};

struct OpenAiServer::Impl {
    Impl(EngineService& s, ServerParams p, ImageDecoder d, ImageSizeReader r)
        : service(s),
          params(std::move(p)),
          decode(std::move(d)),
          read_size(std::move(r)),
          admission(std::max(1, params.max_concurrency), std::max(0, params.max_queued),
                    params.max_waiting_seconds),
          decode_slots(params.max_decode_threads),
          api(connection_limits(params, false)),
          metrics_api(connection_limits(params, true)) {
        max_image_pixels = params.max_image_pixels > 0 ? params.max_image_pixels
                           : params.image_pixels.max_pixels > 0
                               ? kImagePixelsOverMaxPixels * params.image_pixels.max_pixels
                               : kMaxImagePixels;
        max_image_pixels = std::min(max_image_pixels, kMaxImagePixels);
    }

    static ConnectionLimits connection_limits(const ServerParams& p, bool metrics) {
        ConnectionLimits l;
        const int requests = std::max(1, p.max_concurrency) + std::max(0, p.max_queued);
        l.max_connections = metrics
                                ? 16
                                : static_cast<size_t>(p.max_connections > 0 ? p.max_connections
                                                                            : requests + kSpareConnections);
        l.max_pending = kPendingConnections;
        l.header_timeout = p.header_timeout;
        l.body_timeout = p.body_timeout;
        l.keep_alive_timeout = p.keep_alive_timeout;
        l.max_body_bytes = metrics ? 0 : p.max_body_bytes;
        return l;
    }

    EngineService& service;
    ServerParams params;
    ImageDecoder decode;
    ImageSizeReader read_size;
    int64_t max_image_pixels = 0;
    Admission admission;
    DecodeSlots decode_slots;
    ServerMetrics metrics;
    HttpServer api;
    HttpServer metrics_api;
    std::thread api_thread;
    std::thread metrics_thread;
    int bound_port = -1;
    int bound_metrics_port = -1;
    std::atomic<bool> api_ended{false};  // the listening loops have returned
    std::atomic<bool> metrics_ended{false};
    std::atomic<bool> stopping{false};
    std::atomic<int> n_exchanges{0};  // generation requests not yet answered to their last byte
    int64_t created = 0;

    std::mutex mutex;  // guards what follows
    std::unordered_map<int64_t, RequestHandle> active;
    std::mt19937_64 rng{std::random_device{}()};

    void routes();
    // A place among the requests served (admission), or the ApiError (429, 499, 503) that refuses one, the
    // connection then closed after the response.
    std::unique_ptr<AdmissionTicket> admit(Connection* connection, httplib::Response& res, bool& client_gone);
    // The request's body within max_body_bytes; ApiError 413, 408 or 400 where it cannot be read whole.
    std::string read_body(const httplib::ContentReader& reader, Connection* connection,
                          httplib::Response& res) const;
    // A document file of a request: base64 decoded, or a URL fetched where allowed; ApiError (status) naming
    // param otherwise.
    std::vector<uint8_t> document_file(const std::string& file, bool is_url, const std::string& param,
                                       int status) const;
    // A chat completion to the pipeline's served name: the document's Markdown, whole or a page a chunk.
    void serve_document_chat(const std::shared_ptr<Exchange>& ex, DocumentChatRequest chat,
                             httplib::Response& res);
    std::string pipeline_model_name() const {
        return params.pipeline_model_name.empty() ? model_name() + "-pipeline" : params.pipeline_model_name;
    }
    // POST /layout-parsing through params.document_parser, answered in PaddleX's envelope.
    void serve_layout_parsing(const httplib::Request& req, httplib::Response& res,
                              const httplib::ContentReader& reader);
    void serve_generation(const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader, Api api);
    RequestSpec build_spec(Api kind, std::string_view body, Exchange& ex);
    Image checked_image(const std::vector<uint8_t>& bytes, const std::string& param);
    // An image part's URL (a data URL, or http(s) where allowed) decoded; a video part's frames.
    Image url_image(const std::string& url, const std::string& param);
    Video part_video(const MediaPart& part, const VideoSampling& sampling);
    void check_model(const std::string& model) const;
    // The document NAME.json of the documents folder, as {"document": {"name": NAME}} asks for it; a name
    // that is not a plain file name, or no such document, answers 400 or 404 naming it.
    DocumentPassages named_document(const std::string& name) const;
    // Ask the document: the passages that fit beside the chat's messages, their images and videos and the
    // answer's room open its first user message; the exchange keeps which pages they are. 400 where not even
    // one block fits, 503 where no model is ready to count.
    void add_document(Chat& chat, const DocumentPassages& document,
                      const std::optional<ImagePixelBounds>& pixels, const GenerationRequest& generation,
                      Exchange& ex) const;
    // The pixel bounds a request's mm_processor_kwargs set over the server's, or none; 400 for no range.
    std::optional<ImagePixelBounds> request_pixels(const GenerationRequest& generation) const;
    // The answer's citations of the exchange's document (message_extra["citations"]) and the pages its
    // prompt held and left out (body_extra["document"]).
    void document_fields(const Exchange& ex, const std::string& content, nlohmann::json& message_extra,
                         nlohmann::json& body_extra) const;
    std::optional<RequestOutput> next_output(Exchange& ex, bool& client_gone);
    void stream(const std::shared_ptr<Exchange>& ex, httplib::Response& res);
    bool write_events(Exchange& ex, httplib::DataSink& sink);
    void note_output(Exchange& ex, const RequestOutput& out);
    void record(Exchange& ex, RequestOutcome outcome);
    std::string new_id(const char* prefix);
    // The tokens of the generation request this thread last answered, for the request log; -1: none.
    static thread_local Usage logged_usage;

    std::string model_name() const {
        return params.model_names.empty() ? "default" : params.model_names.front();
    }
};

}  // namespace folio::server
