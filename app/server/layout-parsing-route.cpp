// The document pipeline's routes: POST /layout-parsing (PaddleOCR's document-parsing API, answered in
// PaddleX's envelope whatever happens, errorCode being the HTTP status) and a chat completion to the
// pipeline's served name (the document's Markdown, whole or a page a chunk).
#include <atomic>

#include "app/server/image-fetch.h"
#include "app/server/layout-parsing.h"
#include "app/server/openai-server-impl.h"
#include "engine/common/log.h"

namespace folio::server {
namespace {

// Counts the request among those the server waits for as it stops.
class OpenExchange {
public:
    explicit OpenExchange(std::atomic<int>& count) : count_(count) { ++count_; }
    ~OpenExchange() { --count_; }
    OpenExchange(const OpenExchange&) = delete;
    OpenExchange& operator=(const OpenExchange&) = delete;

private:
    std::atomic<int>& count_;
};

// Whether a request's client has gone, looked at no more often than kLookEvery; asked from the parser's
// thread while the connection's waits.
class ClientWatch {
public:
    explicit ClientWatch(Connection* connection) : connection_(connection) {}

    bool look() {
        const int64_t now = Clock::now().time_since_epoch().count();
        if (connection_ && now - last_look_.load() >= std::chrono::nanoseconds(kLookEvery).count()) {
            last_look_ = now;
            if (connection_->peer_closed()) {
                gone_ = true;
            }
        }
        return gone_.load();
    }
    bool gone() const { return gone_.load(); }
    void set_gone() { gone_ = true; }

private:
    Connection* connection_;
    std::atomic<int64_t> last_look_{0};
    std::atomic<bool> gone_{false};
};

// A pipeline request as it ends, among the server's counts: its latency, not its blocks' tokens.
RequestRecord document_record(RequestOutcome outcome, Clock::time_point arrived) {
    RequestRecord record;
    record.outcome = outcome;
    record.generation = false;
    record.seconds_total = std::chrono::duration<double>(Clock::now() - arrived).count();
    return record;
}

ApiError cancelled_error() {
    return ApiError(499, "invalid_request_error", "the client closed the connection", {}, "cancelled");
}

}  // namespace

void OpenAiServer::Impl::serve_layout_parsing(const httplib::Request&, httplib::Response& res,
                                              const httplib::ContentReader& reader) {
    const OpenExchange open(n_exchanges);
    metrics.request_received();
    const Clock::time_point arrived = Clock::now();
    const auto ended = [&](RequestOutcome outcome) {
        metrics.request_ended(document_record(outcome, arrived));
    };
    Connection* connection = current_connection();
    std::string log_id = new_log_id();
    ClientWatch client(connection);
    try {
        if (!params.document_parser) {
            if (connection) {
                connection->close_after(res);
            }
            throw ApiError(404, "invalid_request_error",
                           "this server has no document pipeline: start folio-cli serve with --layout-model "
                           "DIR|ORG/NAME, or serve a recognition model whose layout model is known");
        }
        bool gone = false;
        const std::unique_ptr<AdmissionTicket> ticket = admit(connection, res, gone);
        std::string body = read_body(reader, connection, res);
        LayoutParsingRequest request = parse_layout_parsing_request(body);
        body = std::string();
        if (!request.log_id.empty()) {
            log_id = request.log_id;
        }
        const std::vector<uint8_t> file = document_file(request.file, request.file_is_url, "file", 422);
        request.file = std::string();
        for (const std::string& note : request.ignored) {
            log_info("layout-parsing " + log_id + ": " + note);
        }

        const auto cancelled = [this, &client] { return stopping || client.look(); };
        nlohmann::ordered_json pages = nlohmann::ordered_json::array();
        ParsedDocument document = params.document_parser->parse(
            request, file, [&pages](ParsedPage page) { pages.push_back(std::move(page.result)); }, cancelled);
        if (stopping) {
            throw stopping_error();
        }
        if (client.gone()) {
            throw cancelled_error();
        }
        if (!document.docx.empty() && !pages.empty()) {
            pages.front()["exports"] = {
                {"docx", {{"content", encode_base64(document.docx)}, {"fileName", document.docx_name}}}};
        }
        nlohmann::ordered_json result;
        result["layoutParsingResults"] = std::move(pages);
        result["dataInfo"] = std::move(document.data_info);
        res.status = 200;
        res.set_content(layout_parsing_result_body(log_id, result), "application/json");
        ended(RequestOutcome::Succeeded);
    } catch (const ApiError& e) {
        const ApiError error = stopping && e.status() == 499 ? stopping_error() : e;
        ended(client.gone() || stopping || e.status() == 499 ? RequestOutcome::Cancelled
                                                             : RequestOutcome::Failed);
        if (client.gone() && connection) {
            connection->close_after(res);
        }
        res.status = error.status();
        res.set_content(layout_parsing_error_body(log_id, error.status(), error.what()), "application/json");
    } catch (const std::exception& e) {
        log_info("layout-parsing " + log_id + ": " + e.what());
        ended(RequestOutcome::Failed);
        res.status = 500;
        res.set_content(layout_parsing_error_body(log_id, 500, e.what()), "application/json");
    }
}

std::vector<uint8_t> OpenAiServer::Impl::document_file(const std::string& file, bool is_url,
                                                       const std::string& param, int status) const {
    std::vector<uint8_t> bytes;
    if (is_url) {
        if (!params.fetch_image_urls) {
            throw ApiError(
                status, "invalid_request_error",
                param +
                    ": URLs are fetched only when the server runs with --allow-image-urls; send the "
                    "file as base64",
                param);
        }
        FetchLimits limits;
        limits.max_bytes = params.max_body_bytes;
        limits.timeout = params.fetch_timeout;
        bytes = fetch_image_url(file, limits, param);
    } else {
        bytes = decode_base64(file, param, "the file", status);
    }
    if (bytes.empty()) {
        throw ApiError(status, "invalid_request_error", param + ": the file is empty", param);
    }
    return bytes;
}

void OpenAiServer::Impl::serve_document_chat(const std::shared_ptr<Exchange>& ex, DocumentChatRequest chat,
                                             httplib::Response& res) {
    ex->recorded = true;  // counted here, without token figures
    const auto ended = [this, arrived = ex->arrived](RequestOutcome outcome) {
        metrics.request_ended(document_record(outcome, arrived));
    };
    auto client = std::make_shared<ClientWatch>(current_connection());
    // What a failure is answered with: the server stopping or the client gone before what went wrong.
    const auto failure = [this, client](const std::exception& e) {
        if (stopping) {
            return stopping_error();
        }
        if (client->gone()) {
            return cancelled_error();
        }
        const auto* given = dynamic_cast<const ApiError*>(&e);
        return given ? *given : ApiError(500, "server_error", e.what());
    };
    const auto outcome = [this, client] {
        return client->gone() || stopping ? RequestOutcome::Cancelled : RequestOutcome::Failed;
    };
    const auto cancelled = [this, client] { return stopping || client->look(); };
    // The pipeline's options are the server's: the chat request gives only the document.
    auto request = std::make_shared<LayoutParsingRequest>();
    request->return_markdown_images = false;
    auto file = std::make_shared<std::vector<uint8_t>>();
    try {
        *file = document_file(chat.file, chat.file_is_url, chat.param, 400);
    } catch (const ApiError& e) {
        ended(RequestOutcome::Failed);
        send_error(res, e);
        return;
    }

    if (!chat.stream) {
        std::string text;
        bool first = true;
        try {
            params.document_parser->parse(
                *request, *file,
                [&](ParsedPage page) {
                    text += (first ? "" : "\n\n") + page.markdown;
                    first = false;
                },
                cancelled);
            if (client->gone() || stopping) {
                throw cancelled_error();
            }
        } catch (const std::exception& e) {
            ended(outcome());
            if (client->gone()) {
                if (Connection* connection = current_connection()) {
                    connection->close_after(res);
                }
            }
            send_error(res, failure(e));
            return;
        }
        res.set_content(chat_completion_body(ex->head, text, "stop", Usage{0, 0}), "application/json");
        ended(RequestOutcome::Succeeded);
        return;
    }

    // Each page's Markdown as a chunk as the pipeline finishes it.
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, ex, include_usage = chat.include_usage, request, file, client, cancelled, failure, outcome,
         ended](size_t, httplib::DataSink& sink) {
            bool first = true;
            const auto write = [&](const std::string& event) {
                if (!client->gone() && !sink.write(event.data(), event.size())) {
                    client->set_gone();
                }
            };
            try {
                params.document_parser->parse(
                    *request, *file,
                    [&](ParsedPage page) {
                        write(chat_chunk_event(ex->head, (first ? "" : "\n\n") + page.markdown, first,
                                               nullptr, std::nullopt));
                        first = false;
                    },
                    cancelled);
                if (client->gone() || stopping) {
                    throw cancelled_error();
                }
                write(chat_chunk_event(ex->head, "", first, "stop", std::nullopt));
                if (include_usage) {
                    write(usage_chunk_event(ex->head, "chat.completion.chunk", Usage{0, 0}));
                }
                write(std::string(kDoneEvent));
                ended(RequestOutcome::Succeeded);
            } catch (const std::exception& e) {
                ended(outcome());
                write(error_event(failure(e)));
            }
            file->clear();
            sink.done();
            return true;
        },
        [ex](bool) { ex->ticket.reset(); });
}

}  // namespace folio::server
