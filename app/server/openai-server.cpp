#include "app/server/openai-server.h"

#include <httplib.h>
#include <openssl/crypto.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>

#include "app/server/image-fetch.h"
#include "app/server/openai-protocol.h"
#include "app/server/server-metrics.h"
#include "engine/common/error.h"
#include "engine/common/log.h"

namespace folio::server {

namespace {

using Clock = std::chrono::steady_clock;

// Requests one connection may carry before the server closes it.
constexpr size_t kKeepAliveRequests = 10000;

// Set while a pool thread serves a connection that is to be answered 429 (the queue was full, or it waited
// longer than max_waiting_time).
thread_local bool t_refuse = false;

// httplib's task queue with bounds: n threads serve connections, up to max_queued more wait for one, and a
// connection beyond that is served at once on the accepting thread with t_refuse set, so that it is answered
// 429 and closed. The accepting thread is held meanwhile, which leaves further connections in the kernel's
// backlog: nothing grows without bound.
class BoundedPool : public httplib::TaskQueue {
public:
    BoundedPool(size_t n_threads, size_t max_queued, int64_t max_waiting_seconds)
        : n_threads_(n_threads), max_queued_(max_queued), max_waiting_seconds_(max_waiting_seconds) {
        for (size_t i = 0; i < n_threads; ++i) {
            threads_.emplace_back([this] { work(); });
        }
    }
    ~BoundedPool() override { shutdown(); }
    BoundedPool(const BoundedPool&) = delete;
    BoundedPool& operator=(const BoundedPool&) = delete;

    void enqueue(std::function<void()> fn) override {
        {
            const std::lock_guard lock(mutex_);
            // An idle thread takes it at once; otherwise it waits while the queue has room.
            if (!stopping_ && queue_.size() + n_busy_ < n_threads_ + max_queued_) {
                queue_.push_back({std::move(fn), Clock::now()});
                ready_.notify_one();
                return;
            }
        }
        run(fn, true);
    }

    void shutdown() override {
        {
            const std::lock_guard lock(mutex_);
            if (stopping_ && threads_.empty()) {
                return;
            }
            stopping_ = true;
            ready_.notify_all();
        }
        for (std::thread& t : threads_) {
            if (t.joinable()) {
                t.join();
            }
        }
        threads_.clear();
    }

private:
    struct Task {
        std::function<void()> fn;
        Clock::time_point queued;
    };

    static void run(const std::function<void()>& fn, bool refuse) {
        t_refuse = refuse;
        fn();
        t_refuse = false;
    }

    void work() {
        for (;;) {
            Task task;
            {
                std::unique_lock lock(mutex_);
                ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
                if (queue_.empty()) {
                    return;
                }
                task = std::move(queue_.front());
                queue_.pop_front();
                ++n_busy_;
            }
            const bool late = max_waiting_seconds_ >= 0 &&
                              Clock::now() - task.queued > std::chrono::seconds(max_waiting_seconds_);
            run(task.fn, late);
            const std::lock_guard lock(mutex_);
            --n_busy_;
        }
    }

    const size_t n_threads_;
    const size_t max_queued_;
    const int64_t max_waiting_seconds_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Task> queue_;
    bool stopping_ = false;
    size_t n_busy_ = 0;  // threads serving a connection
    std::vector<std::thread> threads_;
};

enum class Api { Chat, Completion };

ApiError error_of(const RequestOutput& out) {
    switch (out.error_kind) {
        case ErrorKind::InvalidRequest:
            return ApiError(400, "invalid_request_error", out.error);
        case ErrorKind::Stopped:
            return ApiError(503, "server_error", "the server is stopping", {}, "stopped");
        case ErrorKind::OutOfMemory:
            return ApiError(503, "server_error", "the device ran out of memory: " + out.error, {},
                            "out_of_memory");
        case ErrorKind::DeviceLost:
            return ApiError(503, "server_error", "the device failed: " + out.error, {}, "device_lost");
        default:
            break;
    }
    if (out.finish == FinishReason::Cancelled) {
        return ApiError(503, "server_error", "the request was cancelled", {}, "cancelled");
    }
    return ApiError(500, "server_error", out.error.empty() ? "the request failed" : out.error);
}

bool ended_well(const RequestOutput& out) {
    return out.finish && (*out.finish == FinishReason::Stop || *out.finish == FinishReason::Length);
}

void send_error(httplib::Response& res, const ApiError& error) {
    res.status = error.status();
    res.set_content(error_body(error), "application/json");
}

}  // namespace

// One request from its arrival to its last byte.
struct Exchange {
    Api api = Api::Chat;
    ResponseHead head;
    GenerationRequest generation;
    RequestHandle handle;
    Clock::time_point arrived;
    std::optional<Clock::time_point> first_token_at;
    Clock::time_point last_write;
    std::optional<RequestOutput> pending;  // taken before the headers, sent first
    int64_t n_tokens = 0;
    bool sent_first = false;
    bool recorded = false;
};

struct OpenAiServer::Impl {
    Impl(EngineService& s, ServerParams p, ImageDecoder d)
        : service(s), params(std::move(p)), decode(std::move(d)) {}

    EngineService& service;
    ServerParams params;
    ImageDecoder decode;
    ServerMetrics metrics;
    httplib::Server api;
    httplib::Server metrics_api;
    std::thread api_thread;
    std::thread metrics_thread;
    int bound_port = -1;
    int bound_metrics_port = -1;
    std::atomic<bool> api_ended{false};  // the listening loops have returned
    std::atomic<bool> metrics_ended{false};
    int64_t created = 0;

    std::mutex mutex;  // guards what follows
    std::unordered_map<int64_t, RequestHandle> active;
    std::mt19937_64 rng{std::random_device{}()};
    bool stopped = false;

    void routes();
    void serve_generation(const httplib::Request& req, httplib::Response& res, Api api);
    RequestSpec build_spec(Api kind, std::string_view body, GenerationRequest& generation);
    void check_model(const std::string& model) const;
    void stream(const std::shared_ptr<Exchange>& ex, httplib::Response& res);
    bool write_events(Exchange& ex, httplib::DataSink& sink);
    void note_output(Exchange& ex, const RequestOutput& out);
    void record(Exchange& ex, bool succeeded);
    std::string new_id(const char* prefix);
};

std::string OpenAiServer::Impl::new_id(const char* prefix) {
    const std::lock_guard lock(mutex);
    char hex[33];
    std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng()));
    return std::string(prefix) + hex;
}

void OpenAiServer::Impl::check_model(const std::string& model) const {
    if (model.empty() || params.model_names.empty() ||
        std::find(params.model_names.begin(), params.model_names.end(), model) != params.model_names.end()) {
        return;
    }
    throw ApiError(
        404, "invalid_request_error",
        "the model '" + model + "' does not exist; this server serves '" + params.model_names.front() + "'",
        "model", "model_not_found");
}

RequestSpec OpenAiServer::Impl::build_spec(Api kind, std::string_view body, GenerationRequest& generation) {
    RequestSpec spec;
    if (kind == Api::Completion) {
        CompletionRequest request = parse_completion(body);
        generation = std::move(request.generation);
        check_model(generation.model);
        spec.input = RawText{std::move(request.prompt)};
    } else {
        ChatCompletionRequest request = parse_chat_completion(body);
        generation = std::move(request.generation);
        check_model(generation.model);
        int64_t n_images = 0;
        for (const ChatTurn& turn : request.messages) {
            n_images += static_cast<int64_t>(turn.image_urls.size());
        }
        const int64_t limit = service.limits().limit_mm_per_prompt;
        if (n_images > limit) {
            bad_request(std::to_string(n_images) + " images in one request, more than limit_mm_per_prompt " +
                            std::to_string(limit),
                        "messages");
        }
        Chat chat;
        for (size_t m = 0; m < request.messages.size(); ++m) {
            ChatTurn& turn = request.messages[m];
            ChatMessage& message = chat.messages.emplace_back();
            message.role = turn.role;
            message.text = std::move(turn.text);
            for (size_t i = 0; i < turn.image_urls.size(); ++i) {
                const std::string param =
                    "messages[" + std::to_string(m) + "] image " + std::to_string(i + 1);
                const std::string& url = turn.image_urls[i];
                const bool remote = url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
                const std::vector<uint8_t> bytes =
                    remote && params.fetch_image_urls
                        ? fetch_image_url(url, {params.max_body_bytes, params.fetch_timeout, 3}, param)
                        : decode_data_url(url, param);
                try {
                    message.images.push_back(decode(bytes, param));
                } catch (const std::exception& e) {
                    bad_request(std::string("the image could not be decoded: ") + e.what(), param);
                }
            }
        }
        spec.input = std::move(chat);
    }
    GenerationOptions& options = spec.options;
    options.max_tokens = generation.max_tokens;
    options.sampling = generation.sampling;
    if (!generation.seeded) {
        const std::lock_guard lock(mutex);
        options.sampling.seed = rng();
    }
    options.stop_strings = generation.stop;
    options.skip_special_tokens = generation.skip_special_tokens;
    options.ignore_eos = generation.ignore_eos;
    if (generation.image_min_pixels || generation.image_max_pixels) {
        ImagePixelBounds bounds = params.image_pixels;
        bounds.min_pixels = generation.image_min_pixels.value_or(bounds.min_pixels);
        bounds.max_pixels = generation.image_max_pixels.value_or(bounds.max_pixels);
        if (bounds.min_pixels > bounds.max_pixels) {
            bad_request("mm_processor_kwargs: min_pixels " + std::to_string(bounds.min_pixels) +
                            " is above max_pixels " + std::to_string(bounds.max_pixels),
                        "mm_processor_kwargs");
        }
        spec.image_pixels = bounds;
    }
    return spec;
}

void OpenAiServer::Impl::note_output(Exchange& ex, const RequestOutput& out) {
    if (!out.tokens.empty() && !ex.first_token_at) {
        ex.first_token_at = Clock::now();
    }
    ex.n_tokens += static_cast<int64_t>(out.tokens.size());
}

void OpenAiServer::Impl::record(Exchange& ex, bool succeeded) {
    if (ex.recorded) {
        return;
    }
    ex.recorded = true;
    {
        const std::lock_guard lock(mutex);
        active.erase(ex.handle.id());
    }
    RequestRecord r;
    r.succeeded = succeeded;
    r.n_prompt_tokens = std::max<int64_t>(0, ex.handle.n_prompt_tokens());
    r.n_generated_tokens = ex.n_tokens;
    const auto seconds = [&](Clock::time_point t) {
        return std::chrono::duration<double>(t - ex.arrived).count();
    };
    r.seconds_total = seconds(Clock::now());
    r.seconds_to_first_token = ex.first_token_at ? seconds(*ex.first_token_at) : -1.0;
    r.max_tokens = ex.generation.max_tokens.value_or(service.limits().max_model_len - r.n_prompt_tokens);
    metrics.request_ended(r);
}

void OpenAiServer::Impl::serve_generation(const httplib::Request& req, httplib::Response& res, Api kind) {
    metrics.request_received();
    auto ex = std::make_shared<Exchange>();
    ex->api = kind;
    ex->arrived = Clock::now();
    ex->head.id = new_id(kind == Api::Chat ? "chatcmpl-" : "cmpl-");
    ex->head.created =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    try {
        RequestSpec spec = build_spec(kind, req.body, ex->generation);
        ex->head.model = ex->generation.model.empty() && !params.model_names.empty()
                             ? params.model_names.front()
                             : ex->generation.model;
        {
            const std::lock_guard lock(mutex);
            if (stopped) {
                throw ApiError(503, "server_error", "the server is stopping", {}, "stopped");
            }
        }
        try {
            ex->handle = service.submit(std::move(spec), {});
        } catch (const Error& e) {
            throw ApiError(503, "server_error", std::string("the model is not ready: ") + e.what());
        }
        {
            const std::lock_guard lock(mutex);
            active.emplace(ex->handle.id(), ex->handle);
            if (stopped) {
                ex->handle.cancel();
            }
        }
        // The first output before the headers: a refusal (a prompt over max_model_len, ...) is a status.
        ex->pending = ex->handle.next();
        if (!ex->pending) {
            throw ApiError(500, "server_error", "the request ended without an output");
        }
        note_output(*ex, *ex->pending);
        if (ex->pending->finish && !ended_well(*ex->pending)) {
            throw error_of(*ex->pending);
        }
    } catch (const ApiError& e) {
        record(*ex, false);
        send_error(res, e);
        return;
    }

    if (ex->generation.stream) {
        stream(ex, res);
        return;
    }
    std::string text;
    RequestOutput last = std::move(*ex->pending);
    ex->pending.reset();
    text += last.text;
    while (!last.finish) {
        std::optional<RequestOutput> out = ex->handle.next();
        if (!out) {
            break;
        }
        note_output(*ex, *out);
        text += out->text;
        last = std::move(*out);
    }
    if (!ended_well(last)) {
        record(*ex, false);
        send_error(res, error_of(last));
        return;
    }
    const Usage usage{std::max<int64_t>(0, ex->handle.n_prompt_tokens()), ex->n_tokens};
    const char* finish = finish_reason_text(*last.finish);
    res.set_content(kind == Api::Chat ? chat_completion_body(ex->head, text, finish, usage)
                                      : completion_body(ex->head, text, finish, usage),
                    "application/json");
    record(*ex, true);
}

// Writes the outputs that have come as events; false once the stream is over or the client is gone.
bool OpenAiServer::Impl::write_events(Exchange& ex, httplib::DataSink& sink) {
    std::optional<RequestOutput> out;
    if (ex.pending) {
        out = std::move(ex.pending);
        ex.pending.reset();
    } else {
        out = ex.handle.wait_for(std::chrono::milliseconds(250));
        if (out) {
            note_output(ex, *out);
        }
    }
    if (!out) {
        // Nothing new: a comment line now and then finds a client that has gone.
        if (Clock::now() - ex.last_write > std::chrono::seconds(1)) {
            ex.last_write = Clock::now();
            if (!sink.write(": keep-alive\n\n", 14)) {
                ex.handle.cancel();
                return false;
            }
        }
        return true;
    }
    std::string events;
    const bool ended = out->finish.has_value();
    if (ended && !ended_well(*out)) {
        events = error_event(error_of(*out));
        events += kDoneEvent;
        record(ex, false);
    } else {
        std::optional<Usage> usage;
        const char* finish = ended ? finish_reason_text(*out->finish) : nullptr;
        if (ended) {
            usage = Usage{std::max<int64_t>(0, ex.handle.n_prompt_tokens()), ex.n_tokens};
        }
        if (!out->text.empty() || ended || !ex.sent_first) {
            events = ex.api == Api::Chat ? chat_chunk_event(ex.head, out->text, !ex.sent_first, finish, usage)
                                         : completion_chunk_event(ex.head, out->text, finish, usage);
            ex.sent_first = true;
        }
        if (ended) {
            if (ex.generation.include_usage) {
                events += usage_chunk_event(
                    ex.head, ex.api == Api::Chat ? "chat.completion.chunk" : "text_completion", *usage);
            }
            events += kDoneEvent;
        }
    }
    if (!events.empty()) {
        ex.last_write = Clock::now();
        if (!sink.write(events.data(), events.size())) {
            ex.handle.cancel();
            record(ex, false);
            return false;
        }
    }
    if (ended) {
        record(ex, ended_well(*out));
        sink.done();
    }
    return true;
}

void OpenAiServer::Impl::stream(const std::shared_ptr<Exchange>& ex, httplib::Response& res) {
    ex->last_write = Clock::now();
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [this, ex](size_t, httplib::DataSink& sink) { return write_events(*ex, sink); },
        [this, ex](bool success) {
            // A stream that did not end well (the client went away, a write failed) ends its request.
            if (!success || !ex->recorded) {
                ex->handle.cancel();
                record(*ex, false);
            }
        });
}

void OpenAiServer::Impl::routes() {
    api.new_task_queue = [this] {
        const auto n_threads = static_cast<size_t>(std::max(1, params.max_concurrency));
        // httplib takes the queue and deletes it when it stops.
        return new BoundedPool(n_threads, static_cast<size_t>(std::max(0, params.max_queued)),  // NOLINT
                               params.max_waiting_seconds);
    };
    api.set_payload_max_length(params.max_body_bytes);
    // Clients such as PaddleOCR's keep their connections for many requests.
    api.set_keep_alive_max_count(kKeepAliveRequests);
    // Responses and stream events go out as they are written, not held for the client's acknowledgement.
    api.set_tcp_nodelay(true);
    api.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (t_refuse) {
            res.set_header("Connection", "close");
            res.set_header("Retry-After", "1");
            send_error(res, ApiError(429, "rate_limit_exceeded",
                                     "the server is busy: " + std::to_string(params.max_concurrency) +
                                         " requests are being served and the queue is full; try again later",
                                     {}, "too_many_requests"));
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!params.api_key.empty() && req.path.rfind("/v1/", 0) == 0) {
            const std::string expected = "Bearer " + params.api_key;
            const std::string given = req.get_header_value("Authorization");
            if (given.size() != expected.size() ||
                CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0) {
                send_error(res, ApiError(401, "invalid_request_error",
                                         given.empty() ? "an API key is required: Authorization: Bearer KEY"
                                                       : "the API key is not valid",
                                         {}, "invalid_api_key"));
                return httplib::Server::HandlerResponse::Handled;
            }
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    api.set_error_handler(
        httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty() || res.is_chunked_content_provider_) {
                return httplib::Server::HandlerResponse::Unhandled;
            }
            std::string message;
            switch (res.status) {
                case 404:
                    message = "no such endpoint: " + req.method + " " + req.path;
                    break;
                case 413:
                    message = "the request body is larger than the server takes";
                    break;
                case 400:
                    message = "the request is malformed";
                    break;
                default:
                    message = "HTTP error " + std::to_string(res.status);
                    break;
            }
            send_error(res, ApiError(res.status, "invalid_request_error", message));
            return httplib::Server::HandlerResponse::Handled;
        }));
    api.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
        std::string what = "internal error";
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            what = x.what();
        } catch (...) {
        }
        log_info("server: a handler threw: " + what);
        send_error(res, ApiError(500, "server_error", what));
    });
    api.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        const ServiceStatus status = service.status();
        const bool healthy = status.state == ServiceState::Ready && status.can_continue;
        res.status = healthy ? 200 : 503;
        res.set_content(healthy ? "" : std::string("not ready: ") + service_state_name(status.state),
                        "text/plain");
    });
    api.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(models_body({params.model_names.empty() ? "default" : params.model_names.front()},
                                    created, service.limits().max_model_len),
                        "application/json");
    });
    api.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
        serve_generation(req, res, Api::Chat);
    });
    api.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
        serve_generation(req, res, Api::Completion);
    });
    metrics_api.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics.text(service.stats()), "text/plain; version=0.0.4");
    });
}

OpenAiServer::OpenAiServer(EngineService& service, ServerParams params, ImageDecoder decode)
    : impl_(std::make_unique<Impl>(service, std::move(params), std::move(decode))) {
    impl_->created =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    impl_->routes();
}

OpenAiServer::~OpenAiServer() {
    stop();
}

namespace {

int bind_server(httplib::Server& server, const std::string& host, int port, const char* what) {
    // httplib listens with a backlog of 5, which drops connections that many clients open at once: the
    // socket is kept as it is made, and listened on again with the system's backlog once bound.
    int fd = -1;
    server.set_socket_options([&fd](int sock) {
        const int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        fd = sock;
    });
    const int bound =
        port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
    if (bound >= 0 && fd >= 0) {
        ::listen(fd, SOMAXCONN);
    }
    server.set_socket_options([](int sock) {
        const int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    if (bound < 0) {
        fail("cannot listen on ", host, ":", port, " (", what,
             "): the address is in use or not available; choose another with --",
             std::string_view(what) == "metrics" ? "metrics-port" : "port");
    }
    return bound;
}

}  // namespace

void OpenAiServer::start() {
    Impl& s = *impl_;
    s.bound_port = bind_server(s.api, s.params.host, s.params.port, "API");
    if (s.params.metrics_port >= 0) {
        s.bound_metrics_port = bind_server(s.metrics_api, s.params.host, s.params.metrics_port, "metrics");
        s.metrics_thread = std::thread([&s] {
            s.metrics_api.listen_after_bind();
            s.metrics_ended = true;
        });
    }
    s.api_thread = std::thread([&s] {
        s.api.listen_after_bind();
        s.api_ended = true;
    });
    // httplib's stop() does nothing before its loop runs: a server stopped at once would listen on.
    while (!(s.api.is_running() || s.api_ended) ||
           (s.metrics_thread.joinable() && !(s.metrics_api.is_running() || s.metrics_ended))) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

int OpenAiServer::port() const {
    return impl_->bound_port;
}

int OpenAiServer::metrics_port() const {
    return impl_->bound_metrics_port;
}

void OpenAiServer::stop() {
    Impl& s = *impl_;
    {
        const std::lock_guard lock(s.mutex);
        s.stopped = true;
        for (auto& [id, handle] : s.active) {
            handle.cancel();
        }
    }
    s.api.stop();
    s.metrics_api.stop();
    if (s.api_thread.joinable()) {
        s.api_thread.join();
    }
    if (s.metrics_thread.joinable()) {
        s.metrics_thread.join();
    }
}

}  // namespace folio::server
