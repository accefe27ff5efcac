#include "app/server/openai-server.h"

#include <netdb.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "app/server/openai-server-impl.h"
#include "engine/common/error.h"
#include "engine/common/log.h"

namespace folio::server {

thread_local Usage OpenAiServer::Impl::logged_usage{-1, -1};

void send_error(httplib::Response& res, const ApiError& error) {
    res.status = error.status();
    res.set_content(error_body(error), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error, const std::string& path) {
    if (path != kLayoutParsingPath) {
        send_error(res, error);
        return;
    }
    res.status = error.status();
    res.set_content(layout_parsing_error_body(new_log_id(), error.status(), error.what()),
                    "application/json");
}

namespace {

// A 404 for a method and path the server has no endpoint for; the connection closes after it, since a body
// may follow that was not read.
void refuse_endpoint(const httplib::Request& req, httplib::Response& res) {
    if (Connection* connection = current_connection()) {
        connection->close_after(res);
    }
    send_error(res,
               ApiError(404, "invalid_request_error", "no such endpoint: " + req.method + " " + req.path));
}

// The address as a URL writes it: an IPv6 address in brackets.
std::string url_host(const std::string& host) {
    return host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
}

}  // namespace

void OpenAiServer::Impl::routes() {
    api.error_body = [](int status, const std::string& message, const std::string& code,
                        const std::string& path) {
        return path == kLayoutParsingPath
                   ? layout_parsing_error_body(new_log_id(), status, message)
                   : error_body(ApiError(status,
                                         status == 429 ? "rate_limit_exceeded" : "invalid_request_error",
                                         message, {}, code));
    };
    metrics_api.error_body = api.error_body;
    const auto log = [this](const RequestLogEntry& entry) {
        const Usage usage = logged_usage;
        logged_usage = {-1, -1};
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
        const bool layout_parsing = req.path == kLayoutParsingPath;
        if (!params.api_key.empty() && (req.path.rfind("/v1/", 0) == 0 || layout_parsing)) {
            // PaddleOCR's clients send the key as AI Studio takes it ("token KEY"), OpenAI's as a bearer.
            const std::string given = req.get_header_value("Authorization");
            const auto matches = [&given](const std::string& expected) {
                return given.size() == expected.size() &&
                       CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0;
            };
            if (!matches("Bearer " + params.api_key) &&
                !(layout_parsing && matches("token " + params.api_key))) {
                send_error(res,
                           ApiError(401, "invalid_request_error",
                                    given.empty() ? "an API key is required: Authorization: Bearer KEY"
                                                  : "the API key is not valid",
                                    {}, "invalid_api_key"),
                           req.path);
                return httplib::Server::HandlerResponse::Handled;
            }
        }
        // Only the generation endpoints read a body (within its bounds); another request with a body is
        // answered here, before httplib would read it whole, and its connection closed.
        const bool generation = req.method == "POST" && (req.path == "/v1/chat/completions" ||
                                                         req.path == "/v1/completions" || layout_parsing);
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
            send_error(res, ApiError(res.status, "invalid_request_error", message), req.path);
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
        std::vector<std::string> names = {model_name()};
        if (params.document_parser) {
            names.push_back(pipeline_model_name());
        }
        res.set_content(models_body(names, created, service.limits().max_model_len), "application/json");
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
    api.Post(std::string(kLayoutParsingPath),
             [this](const httplib::Request& req, httplib::Response& res,
                    const httplib::ContentReader& reader) { serve_layout_parsing(req, res, reader); });
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

[[noreturn]] void fail_to_listen(const std::string& host, int port, const char* what) {
    const bool metrics = std::string_view(what) == "metrics";
    fail("cannot listen on ", url_host(host), ":", port, " (", what,
         "): the address is in use or not available; choose another with --",
         metrics ? "metrics-port" : "port", " or --", metrics ? "metrics-host" : "host");
}

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
        fail_to_listen(host, port, what);
    }
    return bound;
}

}  // namespace

void check_can_listen(const std::string& host, int port, const char* what) {
    if (port == 0) {
        return;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) {
        fail_to_listen(host, port, what);
    }
    const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            continue;
        }
        const int yes = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // as bind_server binds
        const bool bound = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
        ::close(fd);
        if (bound) {
            return;
        }
    }
    fail_to_listen(host, port, what);
}

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
