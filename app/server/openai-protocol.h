// OpenAI's chat and text completion API as the server speaks it: request bodies parsed and checked into typed
// requests (each wrong value an ApiError naming the field), data URLs decoded, and the response bodies,
// stream chunks and error objects written. No HTTP and no engine here, so that it is tested and fuzzed alone.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "app/ask/document-passages.h"
#include "app/server/chat-messages.h"
#include "engine/chat-template/reasoning-parser.h"
#include "engine/runtime/engine-core.h"
#include "engine/service/request-builder.h"

namespace folio::server {

// An error as the API reports it: the HTTP status and OpenAI's error object.
class ApiError : public std::runtime_error {
public:
    ApiError(int status, std::string type, const std::string& message, std::string param = {},
             std::string code = {})
        : std::runtime_error(message),
          status_(status),
          type_(std::move(type)),
          param_(std::move(param)),
          code_(std::move(code)) {}

    int status() const { return status_; }
    const std::string& type() const { return type_; }
    const std::string& param() const { return param_; }  // the field at fault, empty when none
    const std::string& code() const { return code_; }

private:
    int status_;
    std::string type_;
    std::string param_;
    std::string code_;
};

// A JSON value's type as a message says it: "a string", "an array", "a number", ...
const char* json_type_name(const nlohmann::json& value);

// 400 invalid_request_error naming the field.
[[noreturn]] void bad_request(const std::string& message, const std::string& param = {});
// 400 for a field of the wrong JSON type: "param must be WANTED, got a string".
[[noreturn]] void wrong_type(const std::string& param, const char* wanted, const nlohmann::json& value);

// What a chat or text completion asks of the generation, with the defaults of OpenAI's API.
struct GenerationRequest {
    std::string model;                  // empty when the body has none
    std::optional<int64_t> max_tokens;  // max_completion_tokens, else max_tokens
    SamplingParams sampling;            // temperature 1, top_p 1 unless given
    // The values the body left out, which the model's generation_config.json fills in where it has them.
    SamplingDefaultsUse model_defaults = SamplingDefaultsUse::all();
    bool seeded = false;  // a seed was given
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage alone
    bool skip_special_tokens = true;
    bool ignore_eos = false;  // vLLM's extra parameter: generate max_tokens whatever the model says
    std::optional<int64_t> image_min_pixels;  // mm_processor_kwargs
    std::optional<int64_t> image_max_pixels;
    std::optional<double> video_fps;  // mm_processor_kwargs: how this request's video_url parts are sampled
    std::optional<int64_t> video_min_frames;
    std::optional<int64_t> video_max_frames;
    bool enable_thinking = true;  // false where chat_template_kwargs.enable_thinking is: no reasoning parsed
};

struct ChatCompletionRequest {
    GenerationRequest generation;
    std::vector<ChatTurn> messages;  // developer turns as system turns
    // Variables for the chat template (vLLM's and FastDeploy's chat_template_kwargs), such as
    // enable_thinking.
    nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
    // Ask the document (Folio's extension): "document" as the JSON folio-cli ocr writes (its pages, or one
    // page object) or as plain text; the answer comes from its blocks and cites them. {"name": NAME} names
    // a document the server reads from its documents folder instead (document_name).
    std::optional<DocumentPassages> document;
    std::optional<std::string> document_name;
};

struct CompletionRequest {
    GenerationRequest generation;
    std::string prompt;
};

// Parse and check a request body; throw ApiError (400) for malformed JSON, a field of the wrong type or out
// of range, and what Folio does not do (n above 1, log probabilities, tools, penalties other than
// repetition_penalty). Unknown fields are ignored.
ChatCompletionRequest parse_chat_completion(std::string_view body);
CompletionRequest parse_completion(std::string_view body);

// The bytes of a data URL ("data:image/png;base64,...."); throws ApiError (400) naming param for anything
// else: a URL of another scheme, a media type not of the kind ("image" or "video"), a payload that is not
// base64.
std::vector<uint8_t> decode_data_url(std::string_view url, const std::string& param,
                                     std::string_view kind = "image");

// The bytes of base64 text (whitespace and left-out padding allowed); throws ApiError (status) naming param
// and saying that `what` ("the file") is not valid base64 or too large.
std::vector<uint8_t> decode_base64(std::string_view text, const std::string& param, const std::string& what,
                                   int status = 400);
// bytes as base64 text.
std::string encode_base64(std::span<const uint8_t> bytes);

// bytes as a data URL of the media type ("image/png"): what a client sends, for benchmarks and tests.
std::string encode_data_url(std::span<const uint8_t> bytes, std::string_view media_type);

// OpenAI's finish_reason of a request that ended normally: "stop" or "length".
const char* finish_reason_text(FinishReason reason);

struct Usage {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    // Of the prompt, the tokens found in the prefix cache (usage.prompt_tokens_details.cached_tokens); -1:
    // unknown, left out.
    int64_t cached_tokens = -1;
};

// Bodies and stream events. id is the response's ("chatcmpl-...", "cmpl-..."), created its Unix time.
struct ResponseHead {
    std::string id;
    int64_t created = 0;
    std::string model;
};

std::string error_body(const ApiError& error);
// With a reasoning split (--reasoning-parser), the message has its reasoning_content beside the content.
// message_extra: fields added to the answer's message (a document's citations); body_extra: to the body.
std::string chat_completion_body(const ResponseHead& head, const std::string& text, const char* finish_reason,
                                 const Usage& usage, const ReasoningSplit* reasoning = nullptr,
                                 const nlohmann::json& message_extra = nlohmann::json::object(),
                                 const nlohmann::json& body_extra = nlohmann::json::object());
std::string completion_body(const ResponseHead& head, const std::string& text, const char* finish_reason,
                            const Usage& usage);
// One server-sent event "data: {...}\n\n" of a chat stream: the first carries the role, the last the
// finish_reason and the usage; with a reasoning parser the delta carries the reasoning_content it has beside
// its content. delta_extra and chunk_extra: fields added to the delta and the chunk (the last chunk's
// citations and document, as the whole answer has them in its message and body).
std::string chat_chunk_event(const ResponseHead& head, const std::string& text, bool first,
                             const char* finish_reason, const std::optional<Usage>& usage,
                             const std::optional<std::string>& reasoning = std::nullopt,
                             const nlohmann::json& delta_extra = nlohmann::json::object(),
                             const nlohmann::json& chunk_extra = nlohmann::json::object());
std::string completion_chunk_event(const ResponseHead& head, const std::string& text,
                                   const char* finish_reason, const std::optional<Usage>& usage);
// The chunk with no choices and the usage (stream_options.include_usage).
std::string usage_chunk_event(const ResponseHead& head, const char* object, const Usage& usage);
std::string error_event(const ApiError& error);
inline constexpr std::string_view kDoneEvent = "data: [DONE]\n\n";

std::string models_body(const std::vector<std::string>& names, int64_t created, int64_t max_model_len);
// One model, as GET /v1/models/{id} answers.
std::string model_body(const std::string& name, int64_t created, int64_t max_model_len);

}  // namespace folio::server
