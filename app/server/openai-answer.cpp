// A generation request's answer: submitted, its outputs collected into one body or written as server-sent
// events (with the reasoning split where the server has a parser), its client watched and its end recorded.
#include "app/server/openai-server-impl.h"
#include "engine/common/error.h"

namespace folio::server {

ApiError stopping_error() {
    return ApiError(503, "server_error", "the server is stopping", {}, "stopped");
}

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

RequestOutcome outcome_of(const RequestOutput& out) {
    if (ended_well(out)) {
        return RequestOutcome::Succeeded;
    }
    return out.finish == FinishReason::Cancelled ? RequestOutcome::Cancelled : RequestOutcome::Failed;
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
    if (out.n_cached_tokens >= 0) {
        ex.n_cached = out.n_cached_tokens;
    }
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
    logged_usage = {r.n_prompt_tokens, r.n_generated_tokens};
}

// The request's next output; while none comes, whether its client has closed the connection is looked at
// now and then, and a request whose client has gone is cancelled (its final output follows).
std::optional<RequestOutput> OpenAiServer::Impl::next_output(Exchange& ex, bool& client_gone) {
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

std::unique_ptr<AdmissionTicket> OpenAiServer::Impl::admit(Connection* connection, httplib::Response& res,
                                                           bool& client_gone) {
    // A place among the requests served, before the body is read: a refused request's body is left unread
    // and its connection closed.
    const Admission::Result admitted =
        admission.enter([connection] { return connection && connection->peer_closed(); });
    if (admitted == Admission::Result::Admitted) {
        return std::make_unique<AdmissionTicket>(admission);
    }
    if (connection) {
        connection->close_after(res);
    }
    const auto [n_serving, n_waiting] = admission.counts();
    switch (admitted) {
        case Admission::Result::Stopping:
            throw stopping_error();
        case Admission::Result::ClientGone:
            client_gone = true;
            throw ApiError(499, "invalid_request_error", "the client closed the connection", {}, "cancelled");
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
                               " requests are being served (" + std::to_string(params.max_concurrency) +
                               " at most) and " + std::to_string(n_waiting) + " wait for a place (" +
                               std::to_string(params.max_queued) + " at most); try again later",
                           {}, "too_many_requests");
    }
}

std::string OpenAiServer::Impl::read_body(const httplib::ContentReader& reader, Connection* connection,
                                          httplib::Response& res) const {
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
                           "the request body is larger than the " + std::to_string(params.max_body_bytes) +
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
    return body;
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
        ex->ticket = admit(connection, res, client_gone);
        std::string body = read_body(reader, connection, res);
        if (kind == Api::Chat && params.document_parser) {
            if (std::optional<DocumentChatRequest> document =
                    parse_document_chat(body, pipeline_model_name())) {
                body = std::string();
                ex->head.model = pipeline_model_name();
                serve_document_chat(ex, std::move(*document), res);
                return;
            }
        }

        RequestSpec spec = build_spec(kind, body, *ex);
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
    const Usage usage{std::max<int64_t>(0, ex->handle.n_prompt_tokens()), ex->n_tokens, ex->n_cached};
    const char* finish = finish_reason_text(*last.finish);
    std::optional<ReasoningSplit> reasoning;
    if (ex->reasoning) {
        reasoning = split_reasoning(*params.reasoning_parser, text);
    }
    // Ask the document: the blocks the answer cites, and the pages its prompt held and left out.
    nlohmann::json message_extra = nlohmann::json::object(), body_extra = nlohmann::json::object();
    if (ex->document) {
        document_fields(*ex, reasoning ? reasoning->content : text, message_extra, body_extra);
    }
    res.set_content(kind == Api::Chat
                        ? chat_completion_body(ex->head, text, finish, usage,
                                               reasoning ? &*reasoning : nullptr, message_extra, body_extra)
                        : completion_body(ex->head, text, finish, usage),
                    "application/json");
    record(*ex, RequestOutcome::Succeeded);
}

void OpenAiServer::Impl::document_fields(const Exchange& ex, const std::string& content,
                                         nlohmann::json& message_extra, nlohmann::json& body_extra) const {
    nlohmann::json citations = nlohmann::json::array();
    for (const Citation& c : find_citations(content, *ex.document)) {
        for (size_t i = 0; i < c.refs.size(); ++i) {
            if (const Passage* p = c.known[i] ? ex.document->find(c.refs[i]) : nullptr) {
                citations.push_back({{"ref", p->ref}, {"page_index", p->page}, {"block_id", p->block_id}});
            } else {
                citations.push_back({{"ref", c.refs[i]}, {"page_index", nullptr}, {"block_id", nullptr}});
            }
        }
    }
    message_extra["citations"] = std::move(citations);
    body_extra["document"] = {{"pages", ex.document_pages},
                              {"pages_in_part", ex.document_in_part},
                              {"pages_left_out", ex.document_left_out}};
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
            usage = Usage{std::max<int64_t>(0, ex.handle.n_prompt_tokens()), ex.n_tokens, ex.n_cached};
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
        // Ask the document: the answer's content gathered, its citations on the last chunk.
        nlohmann::json delta_extra = nlohmann::json::object(), chunk_extra = nlohmann::json::object();
        if (ex.document) {
            ex.streamed_content += text;
            if (ended) {
                document_fields(ex, ex.streamed_content, delta_extra, chunk_extra);
            }
        }
        if (!text.empty() || (reasoning && !reasoning->empty()) || ended || !ex.sent_first) {
            events = ex.api == Api::Chat ? chat_chunk_event(ex.head, text, !ex.sent_first, finish, usage,
                                                            reasoning, delta_extra, chunk_extra)
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

}  // namespace folio::server
