#include "app/server/openai-protocol.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"

namespace folio::server {

namespace {

using nlohmann::json;

// Stop strings a request may give, as many as vLLM and FastDeploy take in practice, each of bounded length.
constexpr size_t kMaxStopStrings = 16;
constexpr size_t kMaxStopBytes = 1024;

json parse_body(std::string_view body) {
    std::string problem;
    std::optional<json> doc = try_parse_json(body, problem);
    if (!doc) {
        bad_request("the body is " + problem);
    }
    if (!doc->is_object()) {
        bad_request(std::string("the body must be a JSON object, got ") + json_type_name(*doc));
    }
    return std::move(*doc);
}

// The member when present and not null.
const json* member(const json& obj, const char* key) {
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// The member as T when present and not null; a 400 naming it when it has another JSON type.
template <typename T>
std::optional<T> get_as(const json& obj, const char* key, bool (json::*is_type)() const noexcept,
                        const char* wanted) {
    const json* v = member(obj, key);
    if (!v) {
        return std::nullopt;
    }
    if (!(v->*is_type)()) {
        wrong_type(key, wanted, *v);
    }
    return v->get<T>();
}

std::optional<bool> get_bool(const json& obj, const char* key) {
    return get_as<bool>(obj, key, &json::is_boolean, "a boolean");
}

std::optional<int64_t> get_int(const json& obj, const char* key, const std::string& param) {
    const json* v = member(obj, key);
    if (!v) {
        return std::nullopt;
    }
    if (v->is_number_integer()) {
        if (const std::optional<int64_t> n = json_int64(*v)) {
            return n;
        }
        bad_request(param + " must be a 64-bit integer, got " + v->dump(), param);
    }
    if (v->is_number_float()) {
        // JSON has one number type: 4096.0 is an integer, 0.5 is not.
        const double d = v->get<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9.0e15) {
            return static_cast<int64_t>(d);
        }
        bad_request(param + " must be an integer, got " + v->dump(), param);
    }
    wrong_type(param, "an integer", *v);
}

std::optional<double> get_number(const json& obj, const char* key) {
    return get_as<double>(obj, key, &json::is_number, "a number");
}

std::optional<std::string> get_string(const json& obj, const char* key) {
    return get_as<std::string>(obj, key, &json::is_string, "a string");
}

void check_range(double value, double lo, double hi, const char* param, const char* range) {
    if (!(value >= lo && value <= hi)) {
        bad_request(std::string(param) + " must be " + range + ", got " + json(value).dump(), param);
    }
}

void refuse(const std::string& param, const std::string& why) {
    bad_request(param + ": " + why, param);
}

GenerationRequest parse_generation(const json& body) {
    GenerationRequest g;
    if (const auto model = get_string(body, "model")) {
        g.model = *model;
    }
    const auto max_completion = get_int(body, "max_completion_tokens", "max_completion_tokens");
    const auto max_tokens = get_int(body, "max_tokens", "max_tokens");
    g.max_tokens = max_completion ? max_completion : max_tokens;
    g.model_defaults.max_tokens = !g.max_tokens;
    if (g.max_tokens && *g.max_tokens < 1) {
        const char* param = max_completion ? "max_completion_tokens" : "max_tokens";
        bad_request(std::string(param) + " must be at least 1, got " + std::to_string(*g.max_tokens), param);
    }

    // OpenAI's defaults, temperature 1 and top_p 1, where neither the body nor the model's
    // generation_config.json (applied as the engine builds the request) gives a value.
    g.sampling.temperature = 1.0f;
    if (const auto t = get_number(body, "temperature")) {
        check_range(*t, 0.0, 2.0, "temperature", "between 0 and 2");
        g.sampling.temperature = static_cast<float>(*t);
        g.model_defaults.temperature = false;
    }
    if (const auto p = get_number(body, "top_p")) {
        check_range(*p, 0.0, 1.0, "top_p", "between 0 and 1");
        if (*p == 0.0) {
            // Only the most likely token is left (FastDeploy's clients send top_p 0 for greedy decoding).
            g.sampling.temperature = 0.0f;
            g.model_defaults.temperature = false;
        } else {
            g.sampling.top_p = static_cast<float>(*p);
        }
        g.model_defaults.top_p = false;
    }
    if (const auto k = get_int(body, "top_k", "top_k")) {
        if (*k < -1 || *k > std::numeric_limits<int>::max()) {
            bad_request("top_k must be -1 or 0 (off) or a positive count, got " + std::to_string(*k),
                        "top_k");
        }
        g.sampling.top_k = *k <= 0 ? 0 : static_cast<int>(*k);
        g.model_defaults.top_k = false;
    }
    if (const auto r = get_number(body, "repetition_penalty")) {
        if (!(*r > 0.0) || !std::isfinite(*r)) {
            bad_request("repetition_penalty must be a number above 0, got " + json(*r).dump(),
                        "repetition_penalty");
        }
        g.sampling.repetition_penalty = static_cast<float>(*r);
        g.model_defaults.repetition_penalty = false;
    }
    for (const char* penalty : {"frequency_penalty", "presence_penalty"}) {
        if (const auto v = get_number(body, penalty)) {
            check_range(*v, -2.0, 2.0, penalty, "between -2 and 2");
            if (*v != 0.0) {
                refuse(penalty, "not supported; use repetition_penalty");
            }
        }
    }
    if (const json* seed = member(body, "seed")) {
        if (!seed->is_number_integer()) {
            wrong_type("seed", "an integer", *seed);
        }
        g.sampling.seed =
            seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
        g.seeded = true;
    }
    if (const json* stop = member(body, "stop")) {
        if (stop->is_string()) {
            g.stop.push_back(stop->get<std::string>());
        } else if (stop->is_array()) {
            for (const json& s : *stop) {
                if (!s.is_string()) {
                    wrong_type("stop", "a string or an array of strings", s);
                }
                g.stop.push_back(s.get<std::string>());
            }
        } else {
            wrong_type("stop", "a string or an array of strings", *stop);
        }
        if (g.stop.size() > kMaxStopStrings) {
            bad_request("stop takes at most " + std::to_string(kMaxStopStrings) + " strings, got " +
                            std::to_string(g.stop.size()),
                        "stop");
        }
        for (const std::string& s : g.stop) {
            if (s.empty() || s.size() > kMaxStopBytes) {
                bad_request("each stop string must have 1 to " + std::to_string(kMaxStopBytes) + " bytes",
                            "stop");
            }
        }
    }
    if (const auto n = get_int(body, "n", "n"); n && *n != 1) {
        refuse("n", "only 1 is supported, got " + std::to_string(*n));
    }
    g.stream = get_bool(body, "stream").value_or(false);
    if (const json* options = member(body, "stream_options")) {
        if (!options->is_object()) {
            wrong_type("stream_options", "an object", *options);
        }
        if (!g.stream) {
            bad_request("stream_options is only allowed with stream: true", "stream_options");
        }
        if (const json* usage = member(*options, "include_usage")) {
            if (!usage->is_boolean()) {
                wrong_type("stream_options.include_usage", "a boolean", *usage);
            }
            g.include_usage = usage->get<bool>();
        }
    }
    if (get_bool(body, "logprobs").value_or(false)) {
        refuse("logprobs", "log probabilities are not supported");
    }
    if (member(body, "top_logprobs") || member(body, "logit_bias")) {
        refuse(member(body, "top_logprobs") ? "top_logprobs" : "logit_bias", "not supported");
    }
    if (const json* tools = member(body, "tools")) {
        if (!tools->is_array()) {
            wrong_type("tools", "an array", *tools);
        }
        if (!tools->empty()) {
            refuse("tools", "tool calling is not supported");
        }
    }
    if (const json* format = member(body, "response_format")) {
        if (!format->is_object()) {
            wrong_type("response_format", "an object", *format);
        }
        const json* type = member(*format, "type");
        if (!type || !type->is_string() || type->get<std::string>() != "text") {
            refuse("response_format", "only {\"type\": \"text\"} is supported");
        }
    }
    // FastDeploy's and vLLM's extra parameters.
    g.skip_special_tokens = get_bool(body, "skip_special_tokens").value_or(true);
    g.ignore_eos = get_bool(body, "ignore_eos").value_or(false);
    if (get_bool(body, "include_stop_str_in_output").value_or(false)) {
        refuse("include_stop_str_in_output", "not supported: the text ends before the stop string");
    }
    if (const auto min_tokens = get_int(body, "min_tokens", "min_tokens"); min_tokens && *min_tokens != 0) {
        refuse("min_tokens", "not supported");
    }
    if (const json* kwargs = member(body, "mm_processor_kwargs")) {
        if (!kwargs->is_object()) {
            wrong_type("mm_processor_kwargs", "an object", *kwargs);
        }
        for (const auto& [key, value] : kwargs->items()) {
            const std::string param = "mm_processor_kwargs." + key;
            if (key == "video_fps") {
                if (!value.is_number() || !(value.get<double>() > 0.0) ||
                    !std::isfinite(value.get<double>())) {
                    bad_request(param + " must be a number above 0", param);
                }
                g.video_fps = value.get<double>();
                continue;
            }
            if (key != "min_pixels" && key != "max_pixels" && key != "video_min_frames" &&
                key != "video_max_frames") {
                refuse(param,
                       "only min_pixels, max_pixels, video_fps, video_min_frames and video_max_frames are "
                       "taken");
            }
            const std::optional<int64_t> n = get_int(*kwargs, key.c_str(), param);
            if (n && *n < 1) {
                bad_request(param + " must be at least 1, got " + std::to_string(*n), param);
            }
            (key == "min_pixels"         ? g.image_min_pixels
             : key == "max_pixels"       ? g.image_max_pixels
             : key == "video_min_frames" ? g.video_min_frames
                                         : g.video_max_frames) = n;
        }
        if (g.image_min_pixels && g.image_max_pixels && *g.image_min_pixels > *g.image_max_pixels) {
            bad_request("mm_processor_kwargs.min_pixels is above max_pixels", "mm_processor_kwargs");
        }
        if (g.video_min_frames && g.video_max_frames && *g.video_min_frames > *g.video_max_frames) {
            bad_request("mm_processor_kwargs.video_min_frames is above video_max_frames",
                        "mm_processor_kwargs");
        }
    }
    if (const json* kwargs = member(body, "chat_template_kwargs")) {
        if (!kwargs->is_object()) {
            wrong_type("chat_template_kwargs", "an object", *kwargs);
        }
        if (const json* thinking = member(*kwargs, "enable_thinking"); thinking && thinking->is_boolean()) {
            g.enable_thinking = thinking->get<bool>();
        }
    }
    return g;
}

json usage_json(const Usage& usage) {
    json out = {{"prompt_tokens", usage.prompt_tokens},
                {"completion_tokens", usage.completion_tokens},
                {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
    if (usage.cached_tokens >= 0) {
        out["prompt_tokens_details"] = {{"cached_tokens", usage.cached_tokens}};
    }
    return out;
}

json finish_json(const char* finish_reason) {
    return finish_reason ? json(finish_reason) : json(nullptr);
}

std::string event(const json& data) {
    return "data: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

json head_json(const ResponseHead& head, const char* object) {
    return {{"id", head.id}, {"object", object}, {"created", head.created}, {"model", head.model}};
}

std::string dump(const json& j) {
    // Text cut inside a UTF-8 sequence is replaced rather than refused.
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

void bad_request(const std::string& message, const std::string& param) {
    throw ApiError(400, "invalid_request_error", message, param);
}

void wrong_type(const std::string& param, const char* wanted, const nlohmann::json& value) {
    bad_request(param + " must be " + wanted + ", got " + json_type_name(value), param);
}

ChatCompletionRequest parse_chat_completion(std::string_view body) try {
    const json doc = parse_body(body);
    ChatCompletionRequest request;
    const json* messages = member(doc, "messages");
    if (!messages) {
        bad_request("messages is required", "messages");
    }
    if (!messages->is_array()) {
        wrong_type("messages", "an array", *messages);
    }
    request.messages = parse_chat_messages(*messages);
    if (request.messages.empty() || request.messages.back().role != ChatMessage::Role::User) {
        bad_request("messages must end with a user message", "messages");
    }
    request.generation = parse_generation(doc);
    if (const json* kwargs = member(doc, "chat_template_kwargs")) {
        for (const auto& [key, value] : kwargs->items()) {
            request.chat_template_kwargs[key] = nlohmann::ordered_json::parse(value.dump());
        }
    }
    if (const json* document = member(doc, "document")) {
        if (document->is_object() && document->size() == 1 && document->contains("name")) {
            if (!document->at("name").is_string()) {
                wrong_type("document.name", "a string", document->at("name"));
            }
            request.document_name = document->at("name").get<std::string>();
            return request;
        }
        if (document->is_string()) {
            request.document = DocumentPassages::from_text(document->get<std::string>());
        } else if (document->is_array() || document->is_object()) {
            try {
                request.document = DocumentPassages::from_ocr_json(*document, "document");
            } catch (const Error& e) {
                bad_request(e.what(), "document");
            }
        } else {
            wrong_type("document", "the JSON folio-cli ocr writes (an array of pages) or text", *document);
        }
        if (request.document->empty()) {
            bad_request("document has no text to answer from", "document");
        }
    }
    return request;
} catch (const json::exception& e) {
    // Every value is read with its type checked; a read that was not still answers 400.
    bad_request("the body cannot be read: " + json_error_text(e));
}

CompletionRequest parse_completion(std::string_view body) try {
    const json doc = parse_body(body);
    CompletionRequest request;
    const json* prompt = member(doc, "prompt");
    if (!prompt) {
        bad_request("prompt is required", "prompt");
    }
    if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
        request.prompt = (*prompt)[0].get<std::string>();
    } else if (prompt->is_string()) {
        request.prompt = prompt->get<std::string>();
    } else if (prompt->is_array()) {
        refuse("prompt", "one prompt, as a string, is supported");
    } else {
        wrong_type("prompt", "a string", *prompt);
    }
    if (get_bool(doc, "echo").value_or(false)) {
        refuse("echo", "not supported");
    }
    if (member(doc, "suffix")) {
        refuse("suffix", "not supported");
    }
    if (const auto best_of = get_int(doc, "best_of", "best_of"); best_of && *best_of != 1) {
        refuse("best_of", "only 1 is supported");
    }
    request.generation = parse_generation(doc);
    return request;
} catch (const json::exception& e) {
    // Every value is read with its type checked; a read that was not still answers 400.
    bad_request("the body cannot be read: " + json_error_text(e));
}

const char* json_type_name(const nlohmann::json& v) {
    switch (v.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::string:
            return "a string";
        case json::value_t::array:
            return "an array";
        case json::value_t::object:
            return "an object";
        case json::value_t::binary:
            return "binary";
        case json::value_t::discarded:
            return "nothing";
        default:
            return "a number";
    }
}

std::vector<uint8_t> decode_data_url(std::string_view url, const std::string& param, std::string_view kind) {
    constexpr std::string_view kData = "data:";
    const std::string example =
        "(data:" + std::string(kind) + (kind == "video" ? "/mp4" : "/png") + ";base64,...)";
    if (url.substr(0, 7) == "http://" || url.substr(0, 8) == "https://") {
        bad_request(
            param + ": " + std::string(kind) +
                " URLs are not fetched (folio-cli serve --allow-image-urls fetches images); send the " +
                std::string(kind) + " as a data URL " + example,
            param);
    }
    if (url.substr(0, kData.size()) != kData) {
        bad_request(param + ": expected a data URL " + example, param);
    }
    const size_t comma = url.find(',');
    if (comma == std::string_view::npos) {
        bad_request(param + ": the data URL has no ',' before its data", param);
    }
    const std::string_view meta = url.substr(kData.size(), comma - kData.size());
    constexpr std::string_view kBase64 = ";base64";
    if (meta.size() < kBase64.size() || meta.substr(meta.size() - kBase64.size()) != kBase64) {
        bad_request(param + ": the data URL must be base64 " + example, param);
    }
    const std::string_view media = meta.substr(0, meta.size() - kBase64.size());
    if (media.substr(0, kind.size() + 1) != std::string(kind) + "/") {
        bad_request(param + ": the data URL's media type must be " + (kind == "image" ? "an " : "a ") +
                        std::string(kind) + ", got '" + std::string(media) + "'",
                    param);
    }
    std::vector<uint8_t> out = decode_base64(url.substr(comma + 1), param, "the data URL's payload");
    if (out.empty()) {
        bad_request(param + ": the data URL holds no data", param);
    }
    return out;
}

std::vector<uint8_t> decode_base64(std::string_view text, const std::string& param, const std::string& what,
                                   int status) {
    const auto refuse = [&](const std::string& message) {
        throw ApiError(status, "invalid_request_error", param + ": " + message, param);
    };
    if (text.size() > static_cast<size_t>(std::numeric_limits<int>::max() - 4)) {
        refuse(what + " is too large");
    }
    std::string data(text);
    // Padding left out by some encoders is put back: OpenSSL's decoder wants whole groups of four.
    const auto n_symbols = std::count_if(data.begin(), data.end(),
                                         [](char c) { return !std::isspace(static_cast<unsigned char>(c)); });
    if (n_symbols % 4 == 2 || n_symbols % 4 == 3) {
        data.append(static_cast<size_t>(4 - n_symbols % 4), '=');
    }
    std::vector<uint8_t> out(data.size() / 4 * 3 + 3);
    const std::unique_ptr<EVP_ENCODE_CTX, decltype(&EVP_ENCODE_CTX_free)> ctx(EVP_ENCODE_CTX_new(),
                                                                              &EVP_ENCODE_CTX_free);
    if (!ctx) {
        throw std::bad_alloc();
    }
    EVP_DecodeInit(ctx.get());
    int n = 0;
    int tail = 0;
    const bool decoded =
        EVP_DecodeUpdate(ctx.get(), out.data(), &n, reinterpret_cast<const unsigned char*>(data.data()),
                         static_cast<int>(data.size())) >= 0 &&
        EVP_DecodeFinal(ctx.get(), out.data() + n, &tail) == 1;
    if (!decoded) {
        refuse(what + " is not valid base64");
    }
    out.resize(static_cast<size_t>(n + tail));
    return out;
}

std::string encode_base64(std::span<const uint8_t> bytes) {
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max() / 4 * 3)) {
        throw std::length_error("base64: " + std::to_string(bytes.size()) + " bytes are too many to encode");
    }
    std::string b64(4 * ((bytes.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()), bytes.data(),
                                  static_cast<int>(bytes.size()));
    b64.resize(static_cast<size_t>(n));
    return b64;
}

std::string encode_data_url(std::span<const uint8_t> bytes, std::string_view media_type) {
    return "data:" + std::string(media_type) + ";base64," + encode_base64(bytes);
}

const char* finish_reason_text(FinishReason reason) {
    return reason == FinishReason::Length ? "length" : "stop";
}

std::string error_body(const ApiError& error) {
    json e = {{"message", error.what()},
              {"type", error.type()},
              {"param", error.param().empty() ? json(nullptr) : json(error.param())},
              {"code", error.code().empty() ? json(nullptr) : json(error.code())}};
    return dump(json{{"error", std::move(e)}});
}

std::string chat_completion_body(const ResponseHead& head, const std::string& text, const char* finish_reason,
                                 const Usage& usage, const ReasoningSplit* reasoning,
                                 const json& message_extra, const json& body_extra) {
    json message = {{"role", "assistant"}, {"content", text}};
    if (reasoning) {
        message["content"] = reasoning->content_null ? json(nullptr) : json(reasoning->content);
        message["reasoning_content"] = reasoning->reasoning;
    }
    message.update(message_extra);
    json body = head_json(head, "chat.completion");
    body.update(body_extra);
    body["choices"] = json::array({{{"index", 0},
                                    {"message", std::move(message)},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish_json(finish_reason)}}});
    body["usage"] = usage_json(usage);
    return dump(body);
}

std::string completion_body(const ResponseHead& head, const std::string& text, const char* finish_reason,
                            const Usage& usage) {
    json body = head_json(head, "text_completion");
    body["choices"] = json::array({{{"index", 0},
                                    {"text", text},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish_json(finish_reason)}}});
    body["usage"] = usage_json(usage);
    return dump(body);
}

std::string chat_chunk_event(const ResponseHead& head, const std::string& text, bool first,
                             const char* finish_reason, const std::optional<Usage>& usage,
                             const std::optional<std::string>& reasoning, const json& delta_extra,
                             const json& chunk_extra) {
    json delta = {{"content", text}};
    if (first) {
        delta["role"] = "assistant";
    }
    if (reasoning && !reasoning->empty()) {
        delta["reasoning_content"] = *reasoning;
    }
    for (const auto& [key, value] : delta_extra.items()) {
        delta[key] = value;
    }
    json chunk = head_json(head, "chat.completion.chunk");
    for (const auto& [key, value] : chunk_extra.items()) {
        chunk[key] = value;
    }
    chunk["choices"] = json::array({{{"index", 0},
                                     {"delta", std::move(delta)},
                                     {"logprobs", nullptr},
                                     {"finish_reason", finish_json(finish_reason)}}});
    if (usage) {
        chunk["usage"] = usage_json(*usage);
    }
    return event(chunk);
}

std::string completion_chunk_event(const ResponseHead& head, const std::string& text,
                                   const char* finish_reason, const std::optional<Usage>& usage) {
    json chunk = head_json(head, "text_completion");
    chunk["choices"] = json::array({{{"index", 0},
                                     {"text", text},
                                     {"logprobs", nullptr},
                                     {"finish_reason", finish_json(finish_reason)}}});
    if (usage) {
        chunk["usage"] = usage_json(*usage);
    }
    return event(chunk);
}

std::string usage_chunk_event(const ResponseHead& head, const char* object, const Usage& usage) {
    json chunk = head_json(head, object);
    chunk["choices"] = json::array();
    chunk["usage"] = usage_json(usage);
    return event(chunk);
}

std::string error_event(const ApiError& error) {
    return "data: " + error_body(error) + "\n\n";
}

namespace {

json model_json(const std::string& name, int64_t created, int64_t max_model_len) {
    return {{"id", name},          {"object", "model"}, {"created", created},
            {"owned_by", "folio"}, {"root", name},      {"max_model_len", max_model_len}};
}

}  // namespace

std::string models_body(const std::vector<std::string>& names, int64_t created, int64_t max_model_len) {
    json data = json::array();
    for (const std::string& name : names) {
        data.push_back(model_json(name, created, max_model_len));
    }
    return dump(json{{"object", "list"}, {"data", std::move(data)}});
}

std::string model_body(const std::string& name, int64_t created, int64_t max_model_len) {
    return dump(model_json(name, created, max_model_len));
}

}  // namespace folio::server
