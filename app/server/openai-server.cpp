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

#include "app/server/http-connection.h"
#include "app/server/image-fetch.h"
#include "app/server/openai-protocol.h"
#include "app/server/server-metrics.h"
#include "engine/common/error.h"
#include "engine/common/log.h"

namespace folio::server {

namespace {

using Clock = std::chrono::steady_clock;

// Connections waiting for a thread beyond the pool, and the pool's room for idle and slow connections.
constexpr size_t kPendingConnections = 64;
constexpr int kSpareConnections = 64;

// Places for requests: max_serving served at once, up to max_waiting more waiting for one (each at most
// max_waiting_seconds, -1 for no limit); a request beyond those is refused at once.
class Admission {
public:
    Admission(int max_serving, int max_waiting, int64_t max_waiting_seconds)
        : max_serving_(max_serving), max_waiting_(max_waiting), max_waiting_seconds_(max_waiting_seconds) {}

    enum class Result { Admitted, Full, TimedOut, Stopping, ClientGone };

    // Waits for a place while the client is there; client_gone is asked now and then.
    Result enter(const std::function<bool()>& client_gone) {
        std::unique_lock lock(mutex_);
        if (stopping_) {
            return Result::Stopping;
        }
        if (n_serving_ < max_serving_ && waiting_.empty()) {
            ++n_serving_;
            return Result::Admitted;
        }
        if (static_cast<int>(waiting_.size()) >= max_waiting_) {
            return Result::Full;
        }
        const auto until = max_waiting_seconds_ >= 0
                               ? Clock::now() + std::chrono::seconds(max_waiting_seconds_)
                               : Clock::time_point::max();
        const uint64_t ticket = next_ticket_++;
        waiting_.push_back(ticket);
        Result result = Result::Admitted;
        for (;;) {
            // First come, first served: a free place goes to the request that has waited longest.
            if (n_serving_ < max_serving_ && waiting_.front() == ticket) {
                break;
            }
            if (stopping_) {
                result = Result::Stopping;
                break;
            }
            if (Clock::now() >= until) {
                result = Result::TimedOut;
                break;
            }
            lock.unlock();
            const bool gone = client_gone && client_gone();
            lock.lock();
            if (gone) {
                result = Result::ClientGone;
                break;
            }
            changed_.wait_until(lock, std::min(until, Clock::now() + std::chrono::milliseconds(200)));
        }
        waiting_.erase(std::find(waiting_.begin(), waiting_.end(), ticket));
        if (result == Result::Admitted) {
            ++n_serving_;
        }
        changed_.notify_all();
        return result;
    }

    void leave() {
        const std::lock_guard lock(mutex_);
        --n_serving_;
        changed_.notify_all();
    }

    void stop() {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
        changed_.notify_all();
    }

    std::pair<int, int> counts() {
        const std::lock_guard lock(mutex_);
        return {n_serving_, static_cast<int>(waiting_.size())};
    }

private:
    const int max_serving_;
    const int max_waiting_;
    const int64_t max_waiting_seconds_;
    std::mutex mutex_;
    std::condition_variable changed_;
    int n_serving_ = 0;
    std::deque<uint64_t> waiting_;  // the waiting requests' tickets, oldest first
    uint64_t next_ticket_ = 0;
    bool stopping_ = false;
};

// A place among the requests served, given back when the exchange ends (a stream's after its last event).
class AdmissionTicket {
public:
    explicit AdmissionTicket(Admission& admission) : admission_(&admission) {}
    ~AdmissionTicket() { admission_->leave(); }
    AdmissionTicket(const AdmissionTicket&) = delete;
    AdmissionTicket& operator=(const AdmissionTicket&) = delete;

private:
    Admission* admission_;
};

// A count of threads that may decode images at once.
class DecodeSlots {
public:
    explicit DecodeSlots(int n) : n_free_(std::max(1, n)) {}
    void acquire() {
        std::unique_lock lock(mutex_);
        freed_.wait(lock, [&] { return n_free_ > 0; });
        --n_free_;
    }
    void release() {
        const std::lock_guard lock(mutex_);
        ++n_free_;
        freed_.notify_one();
    }

private:
    std::mutex mutex_;
    std::condition_variable freed_;
    int n_free_;
};

enum class Api { Chat, Completion };

ApiError stopping_error() {
    return ApiError(503, "server_error", "the server is stopping", {}, "stopped");
}

// The error a request that did not end well is answered with; while the server stops, a request it cancelled
// says so.
ApiError error_of(const RequestOutput& out, bool stopping) {
    if (stopping && (out.finish == FinishReason::Cancelled || out.error_kind == ErrorKind::Stopped)) {
        return stopping_error();
    }
    switch (out.error_kind) {
        case ErrorKind::InvalidRequest:
            // A prompt that leaves no room in the context, as OpenAI's API names it.
            if (out.error.find("max_model_len") != std::string::npos) {
                return ApiError(400, "invalid_request_error", out.error, "messages",
                                "context_length_exceeded");
            }
            return ApiError(400, "invalid_request_error", out.error);
        case ErrorKind::Stopped:
            return stopping_error();
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

// A 404 for a method and path the server has no endpoint for; the connection closes after it, since a body
// may follow that was not read.
void refuse_endpoint(const httplib::Request& req, httplib::Response& res) {
    if (Connection* connection = current_connection()) {
        connection->close_after(res);
    }
    send_error(res,
               ApiError(404, "invalid_request_error", "no such endpoint: " + req.method + " " + req.path));
}

// The tokens of the generation request this thread last answered, for the request log; -1: none.
thread_local Usage t_logged_usage{-1, -1};

// The address as a URL writes it: an IPv6 address in brackets.
std::string url_host(const std::string& host) {
    return host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
}

}  // namespace

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
    void serve_generation(const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader, Api api);
    RequestSpec build_spec(Api kind, std::string_view body, GenerationRequest& generation);
    Image checked_image(const std::vector<uint8_t>& bytes, const std::string& param);
    void check_model(const std::string& model) const;
    std::optional<RequestOutput> next_output(Exchange& ex, bool& client_gone);
    void stream(const std::shared_ptr<Exchange>& ex, httplib::Response& res);
    bool write_events(Exchange& ex, httplib::DataSink& sink);
    void note_output(Exchange& ex, const RequestOutput& out);
    void record(Exchange& ex, RequestOutcome outcome);
    std::string new_id(const char* prefix);
    std::string model_name() const {
        return params.model_names.empty() ? "default" : params.model_names.front();
    }
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

// The image's size is read from its header and checked before it is decoded, and at most
// max_decode_threads images are decoded at once, so that the memory decoding takes is bounded.
Image OpenAiServer::Impl::checked_image(const std::vector<uint8_t>& bytes, const std::string& param) {
    std::optional<ImageSize> size;
    try {
        size = read_size(bytes, param);
    } catch (const std::exception& e) {
        bad_request(std::string("the image could not be decoded: ") + e.what(), param);
    }
    if (!size || size->width <= 0 || size->height <= 0) {
        bad_request(param + ": the image's size cannot be read from its header", param);
    }
    if (size->width > max_image_pixels / size->height) {
        bad_request(param + ": the image is " + std::to_string(size->width) + "x" +
                        std::to_string(size->height) + " pixels, more than the " +
                        std::to_string(max_image_pixels) +
                        " this server decodes (--max-image-pixels); the model sees at most " +
                        std::to_string(params.image_pixels.max_pixels) + " pixels of it",
                    param);
    }
    decode_slots.acquire();
    try {
        Image image = decode(bytes, param);
        decode_slots.release();
        return image;
    } catch (const std::exception& e) {
        decode_slots.release();
        bad_request(std::string("the image could not be decoded: ") + e.what(), param);
    }
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
        chat.template_kwargs = std::move(request.chat_template_kwargs);
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
                message.images.push_back(checked_image(bytes, param));
            }
        }
        spec.input = std::move(chat);
    }
    GenerationOptions& options = spec.options;
    options.max_tokens = generation.max_tokens;
    // A max_tokens over what the context leaves after the prompt is lowered to that, as FastDeploy and vLLM
    // do (PaddleOCR's client asks for 8192); the request then ends with finish_reason "length".
    options.fit_max_tokens = true;
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
    if (!ex.prompt_counted && ex.handle.n_prompt_tokens() > 0) {
        ex.prompt_counted = true;
        metrics.prompt_tokens(ex.handle.n_prompt_tokens());
    }
    if (!out.tokens.empty() && !ex.first_token_at) {
        ex.first_token_at = Clock::now();
    }
    ex.n_tokens += static_cast<int64_t>(out.tokens.size());
    metrics.generated_tokens(static_cast<int64_t>(out.tokens.size()));
}

void OpenAiServer::Impl::record(Exchange& ex, RequestOutcome outcome) {
    if (ex.recorded) {
        return;
    }
    ex.recorded = true;
    {
        const std::lock_guard lock(mutex);
        active.erase(ex.handle.id());
    }
    RequestRecord r;
    r.outcome = outcome;
    r.n_prompt_tokens = std::max<int64_t>(0, ex.handle.n_prompt_tokens());
    r.n_generated_tokens = ex.n_tokens;
    const auto seconds = [&](Clock::time_point t) {
        return std::chrono::duration<double>(t - ex.arrived).count();
    };
    r.seconds_total = seconds(Clock::now());
    r.seconds_to_first_token = ex.first_token_at ? seconds(*ex.first_token_at) : -1.0;
    r.max_tokens = ex.generation.max_tokens.value_or(service.limits().max_model_len - r.n_prompt_tokens);
    metrics.request_ended(r);
    t_logged_usage = {r.n_prompt_tokens, r.n_generated_tokens};
}

namespace {

RequestOutcome outcome_of(const RequestOutput& out) {
    if (ended_well(out)) {
        return RequestOutcome::Succeeded;
    }
    return out.finish == FinishReason::Cancelled ? RequestOutcome::Cancelled : RequestOutcome::Failed;
}

}  // namespace

// The request's next output; while none comes, whether its client has closed the connection is looked at
// now and then, and a request whose client has gone is cancelled (its final output follows).
std::optional<RequestOutput> OpenAiServer::Impl::next_output(Exchange& ex, bool& client_gone) {
    constexpr auto kLookEvery = std::chrono::milliseconds(100);
    Connection* connection = current_connection();
    for (;;) {
        if (!client_gone && connection && Clock::now() - ex.last_look >= kLookEvery) {
            ex.last_look = Clock::now();
            if (connection->peer_closed()) {
                client_gone = true;
                ex.handle.cancel();
            }
        }
        std::optional<RequestOutput> out = ex.handle.wait_for(kLookEvery);
        if (out) {
            return out;
        }
        if (ex.handle.finished()) {
            return ex.handle.poll();
        }
    }
}

void OpenAiServer::Impl::serve_generation(const httplib::Request&, httplib::Response& res,
                                          const httplib::ContentReader& reader, Api kind) {
    metrics.request_received();
    Connection* connection = current_connection();
    auto ex = std::make_shared<Exchange>(n_exchanges);
    ex->api = kind;
    ex->arrived = Clock::now();
    ex->head.id = new_id(kind == Api::Chat ? "chatcmpl-" : "cmpl-");
    ex->head.created =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    bool client_gone = false;
    try {
        // A place among the requests served, before the body is read: a refused request's body is left unread
        // and its connection closed.
        const Admission::Result admitted =
            admission.enter([connection] { return connection && connection->peer_closed(); });
        if (admitted != Admission::Result::Admitted) {
            if (connection) {
                connection->close_after(res);
            }
            const auto [n_serving, n_waiting] = admission.counts();
            switch (admitted) {
                case Admission::Result::Stopping:
                    throw stopping_error();
                case Admission::Result::ClientGone:
                    client_gone = true;
                    throw ApiError(499, "invalid_request_error", "the client closed the connection", {},
                                   "cancelled");
                case Admission::Result::TimedOut:
                    res.set_header("Retry-After", "1");
                    throw ApiError(429, "rate_limit_exceeded",
                                   "the server is busy: the request waited " +
                                       std::to_string(params.max_waiting_seconds) +
                                       " s for a place (--max-waiting-time); try again later",
                                   {}, "too_many_requests");
                default:
                    res.set_header("Retry-After", "1");
                    throw ApiError(429, "rate_limit_exceeded",
                                   "the server is busy: " + std::to_string(n_serving) +
                                       " requests are being served (" +
                                       std::to_string(params.max_concurrency) + " at most) and " +
                                       std::to_string(n_waiting) + " wait for a place (" +
                                       std::to_string(params.max_queued) + " at most); try again later",
                                   {}, "too_many_requests");
            }
        }
        ex->ticket = std::make_unique<AdmissionTicket>(admission);

        // The body, chunked or not, within max_body_bytes: reading stops as soon as it goes past.
        std::string body;
        bool too_large = false;
        const bool read = reader([&](const char* data, size_t n) {
            if (body.size() + n > params.max_body_bytes) {
                too_large = true;
                return false;
            }
            body.append(data, n);
            return true;
        });
        if (!read) {
            if (connection) {
                connection->close_after(res);
            }
            if (too_large) {
                throw ApiError(413, "invalid_request_error",
                               "the request body is larger than the " +
                                   std::to_string(params.max_body_bytes) +
                                   " bytes the server takes (--max-body-size)",
                               {}, "body_too_large");
            }
            if (connection && connection->timed_out()) {
                throw ApiError(408, "invalid_request_error", "the request body did not arrive in time", {},
                               "request_timeout");
            }
            throw ApiError(
                400, "invalid_request_error",
                "the request body could not be read: it ended early or its chunked encoding is malformed");
        }
        if (connection) {
            connection->set_body_read();
        }

        RequestSpec spec = build_spec(kind, body, ex->generation);
        if (kind == Api::Chat && params.reasoning_parser && ex->generation.enable_thinking) {
            ex->reasoning.emplace(*params.reasoning_parser);
        }
        body.clear();
        body.shrink_to_fit();
        ex->head.model = ex->generation.model.empty() ? model_name() : ex->generation.model;
        if (stopping) {
            throw stopping_error();
        }
        try {
            ex->handle = service.submit(std::move(spec), {});
        } catch (const Error& e) {
            throw ApiError(503, "server_error", std::string("the model is not ready: ") + e.what());
        }
        {
            const std::lock_guard lock(mutex);
            active.emplace(ex->handle.id(), ex->handle);
            if (stopping) {
                ex->handle.cancel();
            }
        }
        // The first output before the headers: a refusal (a prompt over max_model_len, ...) is a status.
        ex->pending = next_output(*ex, client_gone);
        if (!ex->pending) {
            throw ApiError(500, "server_error", "the request ended without an output");
        }
        note_output(*ex, *ex->pending);
        if (ex->pending->finish && !ended_well(*ex->pending)) {
            throw error_of(*ex->pending, stopping);
        }
    } catch (const ApiError& e) {
        record(*ex, client_gone ? RequestOutcome::Cancelled : RequestOutcome::Failed);
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
        std::optional<RequestOutput> out = next_output(*ex, client_gone);
        if (!out) {
            break;
        }
        note_output(*ex, *out);
        text += out->text;
        last = std::move(*out);
    }
    if (client_gone) {
        // Nobody reads this; the status is the request log's.
        record(*ex, RequestOutcome::Cancelled);
        connection->close_after(res);
        send_error(
            res, ApiError(499, "invalid_request_error", "the client closed the connection", {}, "cancelled"));
        return;
    }
    if (!ended_well(last)) {
        record(*ex, outcome_of(last));
        send_error(res, error_of(last, stopping));
        return;
    }
    const Usage usage{std::max<int64_t>(0, ex->handle.n_prompt_tokens()), ex->n_tokens};
    const char* finish = finish_reason_text(*last.finish);
    std::optional<ReasoningSplit> reasoning;
    if (ex->reasoning) {
        reasoning = split_reasoning(*params.reasoning_parser, text);
    }
    res.set_content(kind == Api::Chat ? chat_completion_body(ex->head, text, finish, usage,
                                                             reasoning ? &*reasoning : nullptr)
                                      : completion_body(ex->head, text, finish, usage),
                    "application/json");
    record(*ex, RequestOutcome::Succeeded);
}

// Writes the outputs that have come as events; false once the stream is over or the client is gone.
bool OpenAiServer::Impl::write_events(Exchange& ex, httplib::DataSink& sink) {
    std::optional<RequestOutput> out;
    if (ex.pending) {
        out = std::move(ex.pending);
        ex.pending.reset();
    } else {
        out = ex.handle.wait_for(std::chrono::milliseconds(100));
        if (out) {
            note_output(ex, *out);
        }
    }
    // A client that has closed its connection is looked for now and then, and a comment line sent while
    // nothing new comes finds one that has gone without closing.
    const Connection* connection = current_connection();
    if (connection && Clock::now() - ex.last_look >= std::chrono::milliseconds(100)) {
        ex.last_look = Clock::now();
        if (connection->peer_closed()) {
            ex.handle.cancel();
            record(ex, RequestOutcome::Cancelled);
            return false;
        }
    }
    if (!out) {
        if (Clock::now() - ex.last_write > std::chrono::seconds(1)) {
            ex.last_write = Clock::now();
            if (!sink.write(": keep-alive\n\n", 14)) {
                ex.handle.cancel();
                record(ex, RequestOutcome::Cancelled);
                return false;
            }
        }
        return true;
    }
    std::string events;
    const bool ended = out->finish.has_value();
    if (ended && !ended_well(*out)) {
        events = error_event(error_of(*out, stopping));
        events += kDoneEvent;
    } else {
        std::optional<Usage> usage;
        const char* finish = ended ? finish_reason_text(*out->finish) : nullptr;
        if (ended) {
            usage = Usage{std::max<int64_t>(0, ex.handle.n_prompt_tokens()), ex.n_tokens};
        }
        std::string text = std::move(out->text);
        std::optional<std::string> reasoning;
        if (ex.reasoning) {
            ReasoningSplit split = ex.reasoning->push(text);
            if (ended) {
                const ReasoningSplit rest = ex.reasoning->finish();
                split.reasoning += rest.reasoning;
                split.content += rest.content;
            }
            text = std::move(split.content);
            reasoning = std::move(split.reasoning);
        }
        if (!text.empty() || (reasoning && !reasoning->empty()) || ended || !ex.sent_first) {
            events = ex.api == Api::Chat
                         ? chat_chunk_event(ex.head, text, !ex.sent_first, finish, usage, reasoning)
                         : completion_chunk_event(ex.head, text, finish, usage);
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
            record(ex, ended ? outcome_of(*out) : RequestOutcome::Cancelled);
            return false;
        }
    }
    if (ended) {
        record(ex, outcome_of(*out));
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
                record(*ex, RequestOutcome::Cancelled);
            }
            ex->ticket.reset();
        });
}

void OpenAiServer::Impl::routes() {
    api.error_body = [](int status, const std::string& message, const std::string& code) {
        return error_body(ApiError(status, status == 429 ? "rate_limit_exceeded" : "invalid_request_error",
                                   message, {}, code));
    };
    metrics_api.error_body = api.error_body;
    const auto log = [this](const RequestLogEntry& entry) {
        const Usage usage = t_logged_usage;
        t_logged_usage = {-1, -1};
        if (!params.log_requests) {
            return;
        }
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.3f", entry.seconds);
        std::string line = "request: " + entry.remote + " \"" + entry.method + " " + entry.path + "\" " +
                           std::to_string(entry.status);
        if (usage.prompt_tokens >= 0) {
            line += " prompt_tokens=" + std::to_string(usage.prompt_tokens) +
                    " completion_tokens=" + std::to_string(usage.completion_tokens);
        }
        log_info(line + " " + seconds + "s");
    };
    api.on_response = log;
    metrics_api.on_response = log;

    api.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
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
        // Only the generation endpoints read a body (within its bounds); another request with a body is
        // answered here, before httplib would read it whole, and its connection closed.
        const bool generation =
            req.method == "POST" && (req.path == "/v1/chat/completions" || req.path == "/v1/completions");
        if (!generation && (req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                            req.method == "DELETE")) {
            refuse_endpoint(req, res);
            return httplib::Server::HandlerResponse::Handled;
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
        const bool healthy = status.state == ServiceState::Ready && status.can_continue && !stopping;
        res.status = healthy ? 200 : 503;
        res.set_content(healthy    ? ""
                        : stopping ? std::string("stopping")
                                   : std::string("not ready: ") + service_state_name(status.state),
                        "text/plain");
    });
    api.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(models_body({model_name()}, created, service.limits().max_model_len),
                        "application/json");
    });
    api.Get("/v1/models/(.+)", [this](const httplib::Request& req, httplib::Response& res) {
        const std::string id = req.matches[1];
        const bool known = params.model_names.empty()
                               ? id == model_name()
                               : std::find(params.model_names.begin(), params.model_names.end(), id) !=
                                     params.model_names.end();
        if (!known) {
            send_error(res, ApiError(404, "invalid_request_error",
                                     "the model '" + id + "' does not exist; this server serves '" +
                                         model_name() + "'",
                                     "model", "model_not_found"));
            return;
        }
        res.set_content(model_body(id, created, service.limits().max_model_len), "application/json");
    });
    api.Post("/v1/chat/completions",
             [this](const httplib::Request& req, httplib::Response& res,
                    const httplib::ContentReader& reader) { serve_generation(req, res, reader, Api::Chat); });
    api.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res,
                                       const httplib::ContentReader& reader) {
        serve_generation(req, res, reader, Api::Completion);
    });
    metrics_api.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
        if (req.method != "GET" && req.method != "HEAD") {
            refuse_endpoint(req, res);
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    metrics_api.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics.text(service.stats()), "text/plain; version=0.0.4; charset=utf-8");
    });
}

OpenAiServer::OpenAiServer(EngineService& service, ServerParams params, ImageDecoder decode,
                           ImageSizeReader read_size)
    : impl_(std::make_unique<Impl>(service, std::move(params), std::move(decode), std::move(read_size))) {
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
        const bool metrics = std::string_view(what) == "metrics";
        fail("cannot listen on ", url_host(host), ":", port, " (", what,
             "): the address is in use or not available; choose another with --",
             metrics ? "metrics-port" : "port", " or --", metrics ? "metrics-host" : "host");
    }
    return bound;
}

}  // namespace

void OpenAiServer::start() {
    Impl& s = *impl_;
    s.bound_port = bind_server(s.api, s.params.host, s.params.port, "API");
    if (s.params.metrics_port >= 0) {
        s.bound_metrics_port =
            bind_server(s.metrics_api, s.params.metrics_host, s.params.metrics_port, "metrics");
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

int64_t OpenAiServer::max_image_pixels() const {
    return impl_->max_image_pixels;
}

void OpenAiServer::stop() {
    Impl& s = *impl_;
    // Idle connections close, requests still arriving are refused, waiting ones get 503, and those being
    // served are cancelled: each answers the stop (an error event or 503) before its connection closes.
    s.stopping = true;
    s.api.begin_stop();
    s.metrics_api.begin_stop();
    s.admission.stop();
    {
        const std::lock_guard lock(s.mutex);
        for (auto& [id, handle] : s.active) {
            handle.cancel();
        }
    }
    // httplib stops writing streams once its listening socket is closed: the answers go out first (a client
    // that reads nothing is given up on after a while).
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (s.n_exchanges > 0 && Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
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
