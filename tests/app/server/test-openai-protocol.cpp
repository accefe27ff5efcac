// OpenAI's request bodies into typed requests and back: every field's types and ranges, the refusals, data
// URLs, and the response bodies and stream events read back as JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "app/server/openai-protocol.h"

namespace {

using folio::server::ApiError;
using nlohmann::json;
namespace srv = folio::server;

// A chat body with one user turn holding an image and a task, plus the fields given.
std::string chat_body(const json& fields = json::object()) {
    json body = {{"model", "ocr"},
                 {"messages",
                  {{{"role", "user"},
                    {"content",
                     {{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,iVBORw0KGgo="}}}},
                      {{"type", "text"}, {"text", "OCR:"}}}}}}}};
    body.update(fields);
    return body.dump();
}

TEST(OpenAiProtocol, ParsesAChatWithAnImageAndTheDefaults) {
    const srv::ChatCompletionRequest r = srv::parse_chat_completion(chat_body());
    ASSERT_EQ(r.messages.size(), 1u);
    EXPECT_EQ(r.messages[0].role, folio::ChatMessage::Role::User);
    EXPECT_EQ(r.messages[0].text, "OCR:");
    ASSERT_EQ(r.messages[0].images.size(), 1u);
    EXPECT_EQ(r.messages[0].images[0].url, "data:image/png;base64,iVBORw0KGgo=");
    EXPECT_EQ(r.messages[0].images[0].param, "messages[0].content[0]");
    EXPECT_TRUE(r.messages[0].videos.empty());
    const srv::GenerationRequest& g = r.generation;
    EXPECT_EQ(g.model, "ocr");
    EXPECT_FALSE(g.max_tokens.has_value());
    EXPECT_EQ(g.sampling.temperature, 1.0f);  // OpenAI's defaults
    EXPECT_EQ(g.sampling.top_p, 1.0f);
    EXPECT_FALSE(g.seeded);
    EXPECT_FALSE(g.stream);
    EXPECT_TRUE(g.skip_special_tokens);
}

TEST(OpenAiProtocol, ParsesEverySamplingField) {
    const srv::GenerationRequest g =
        srv::parse_chat_completion(
            chat_body({{"max_tokens", 10},
                       {"max_completion_tokens", 4096.0},
                       {"temperature", 0.5},
                       {"top_p", 0.9},
                       {"top_k", 20},
                       {"repetition_penalty", 1.05},
                       {"seed", 7},
                       {"stop", {"</s>", "\n\n"}},
                       {"n", 1},
                       {"stream", true},
                       {"stream_options", {{"include_usage", true}}},
                       {"skip_special_tokens", false},
                       {"ignore_eos", true},
                       {"mm_processor_kwargs", {{"min_pixels", 3136}, {"max_pixels", 1003520}}},
                       {"frequency_penalty", 0},
                       {"user", "someone"}}))
            .generation;
    EXPECT_EQ(g.max_tokens, 4096);  // max_completion_tokens over max_tokens
    EXPECT_FLOAT_EQ(g.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(g.sampling.top_p, 0.9f);
    EXPECT_EQ(g.sampling.top_k, 20);
    EXPECT_FLOAT_EQ(g.sampling.repetition_penalty, 1.05f);
    EXPECT_TRUE(g.seeded);
    EXPECT_EQ(g.sampling.seed, 7u);
    EXPECT_EQ(g.stop, (std::vector<std::string>{"</s>", "\n\n"}));
    EXPECT_TRUE(g.stream);
    EXPECT_TRUE(g.include_usage);
    EXPECT_FALSE(g.skip_special_tokens);
    EXPECT_TRUE(g.ignore_eos);
    EXPECT_EQ(g.image_min_pixels, 3136);
    EXPECT_EQ(g.image_max_pixels, 1003520);
}

// PaddleOCR's FastDeploy client asks for greedy decoding with temperature 1 and top_p 0.
TEST(OpenAiProtocol, ReadsADocumentToAnswerFrom) {
    const json messages = json::array({{{"role", "user"}, {"content", "Where?"}}});
    const auto with = [&](const json& document) {
        return srv::parse_chat_completion(json{{"messages", messages}, {"document", document}}.dump());
    };
    const srv::ChatCompletionRequest text = with("First.\n\nSecond.");
    ASSERT_TRUE(text.document);
    EXPECT_EQ(text.document->passages().size(), 2u);
    const json page = {{"parsing_res_list", json::array({{{"block_content", "A block."}, {"block_id", 4}}})}};
    const srv::ChatCompletionRequest ocr = with(json::array({page, page}));
    ASSERT_TRUE(ocr.document);
    EXPECT_EQ(ocr.document->passages().back().ref, "p2.b1");
    EXPECT_FALSE(srv::parse_chat_completion(json{{"messages", messages}}.dump()).document);
    for (const json& bad : {json(5), json(""), json::array({{{"parsing_res_list", 1}}})}) {
        try {
            with(bad);
            ADD_FAILURE() << bad.dump() << " accepted";
        } catch (const srv::ApiError& e) {
            EXPECT_EQ(e.status(), 400);
            EXPECT_EQ(e.param(), "document") << e.what();
        }
    }
}

TEST(OpenAiProtocol, TopPZeroIsGreedy) {
    const srv::GenerationRequest g =
        srv::parse_chat_completion(chat_body({{"temperature", 1}, {"top_p", 0}, {"top_k", -1}})).generation;
    EXPECT_EQ(g.sampling.temperature, 0.0f);
    EXPECT_EQ(g.sampling.top_k, 0);
    EXPECT_NO_THROW(folio::validate(g.sampling));
}

TEST(OpenAiProtocol, SystemTurnsGoToTheTemplate) {
    const json body = {
        {"messages",
         {{{"role", "system"}, {"content", "be brief"}},
          {{"role", "user"}, {"content", "hello"}},
          {{"role", "assistant"}, {"content", {{{"type", "text"}, {"text", "hi"}}}}},
          {{"role", "user"},
           {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}}}}};
    const srv::ChatCompletionRequest r = srv::parse_chat_completion(body.dump());
    ASSERT_EQ(r.messages.size(), 4u);
    EXPECT_EQ(r.messages[0].role, folio::ChatMessage::Role::System);
    EXPECT_EQ(r.messages[0].text, "be brief");
    EXPECT_EQ(r.messages[1].text, "hello");
    EXPECT_EQ(r.messages[2].role, folio::ChatMessage::Role::Assistant);
    EXPECT_EQ(r.messages[2].text, "hi");
    EXPECT_EQ(r.messages[3].text, "ab");
}

// Every part kind in one turn: the images in order, then the videos in order (a file's and frames), the texts
// joined; the parts' places are kept for errors.
TEST(OpenAiProtocol, ParsesEveryPartKind) {
    const json messages = json::parse(R"([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [
            {"type": "video_frames", "frames": ["f0.png", "f1.png", "f2.png"], "fps": 2.5},
            {"type": "image_url", "image_url": {"url": "a.png"}},
            {"type": "text", "text": "Compare "},
            {"type": "video_url", "video_url": {"url": "clip.mp4"}},
            {"type": "image_url", "image_url": "b.png"},
            {"type": "text", "text": "them."}]}])");
    const std::vector<srv::ChatTurn> turns = srv::parse_chat_messages(messages);
    ASSERT_EQ(turns.size(), 2u);
    EXPECT_EQ(turns[0].role, folio::ChatMessage::Role::System);
    EXPECT_EQ(turns[0].text, "be brief");
    const srv::ChatTurn& user = turns[1];
    EXPECT_EQ(user.text, "Compare them.");
    ASSERT_EQ(user.images.size(), 2u);
    EXPECT_EQ(user.images[0].url, "a.png");
    EXPECT_EQ(user.images[0].param, "messages[1].content[1]");
    EXPECT_EQ(user.images[1].url, "b.png");
    EXPECT_EQ(user.images[1].param, "messages[1].content[4]");
    ASSERT_EQ(user.videos.size(), 2u);
    EXPECT_TRUE(user.videos[0].is_frames());
    EXPECT_EQ(user.videos[0].frames, (std::vector<std::string>{"f0.png", "f1.png", "f2.png"}));
    EXPECT_EQ(user.videos[0].fps, 2.5);
    EXPECT_EQ(user.videos[0].param, "messages[1].content[0]");
    EXPECT_FALSE(user.videos[1].is_frames());
    EXPECT_EQ(user.videos[1].url, "clip.mp4");
    EXPECT_EQ(user.videos[1].param, "messages[1].content[3]");
    // A chat body takes the same parts.
    const srv::ChatCompletionRequest r = srv::parse_chat_completion(json{{"messages", messages}}.dump());
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[1].videos.size(), 2u);
    // The turns alone may end with the assistant's (a prompt continued); a chat body may not.
    EXPECT_EQ(srv::parse_chat_messages(json::parse(R"([{"role": "assistant", "content": "x"}])")).size(), 1u);
}

TEST(OpenAiProtocol, ParsesATextCompletion) {
    EXPECT_EQ(srv::parse_completion(R"({"prompt": "Hello", "max_tokens": 3})").prompt, "Hello");
    EXPECT_EQ(srv::parse_completion(R"({"prompt": ["Hello"]})").prompt, "Hello");
}

struct BadBody {
    const char* name;
    std::string body;
    bool chat;
    std::string param;    // the field the error names
    std::string message;  // part of its message
};

class OpenAiProtocolRefuses : public testing::TestWithParam<BadBody> {};

TEST_P(OpenAiProtocolRefuses, WithA400NamingTheField) {
    const BadBody& b = GetParam();
    try {
        if (b.chat) {
            srv::parse_chat_completion(b.body);
        } else {
            srv::parse_completion(b.body);
        }
        FAIL() << "accepted " << b.body;
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 400);
        EXPECT_EQ(e.type(), "invalid_request_error");
        EXPECT_EQ(e.param(), b.param);
        EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, OpenAiProtocolRefuses,
    testing::Values(
        BadBody{"malformed", R"({"messages": [)", true, "", "the body is not valid JSON: line 1, column 15"},
        BadBody{"number_overflow", R"({"messages": [], "max_tokens": 1e999})", true, "",
                "the body is not valid JSON: line 1, column 32: a number too large for a double: 1e999"},
        BadBody{"huge_integer", chat_body({{"max_tokens", 18446744073709551615ull}}), true, "max_tokens",
                "max_tokens must be a 64-bit integer, got 18446744073709551615"},
        BadBody{"not_an_object", "[1, 2]", true, "", "must be a JSON object, got an array"},
        BadBody{"no_messages", "{}", true, "messages", "messages is required"},
        BadBody{"messages_number", R"({"messages": 3})", true, "messages", "must be an array, got a number"},
        BadBody{"bad_role", R"({"messages": [{"role": "tool", "content": "x"}]})", true, "messages[0].role",
                "'tool' is not supported"},
        BadBody{"ends_with_assistant", R"({"messages": [{"role": "assistant", "content": "x"}]})", true,
                "messages", "must end with a user message"},
        BadBody{"content_number", R"({"messages": [{"role": "user", "content": 5}]})", true,
                "messages[0].content", "a string or an array of parts"},
        BadBody{"part_type", R"({"messages": [{"role": "user", "content": [{"type": "audio"}]}]})", true,
                "messages[0].content[0].type", "'audio' is not supported"},
        BadBody{
            "image_url_number",
            R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": 1}}]}]})",
            true, "messages[0].content[0].image_url.url", "must be a string, got a number"},
        BadBody{"image_url_missing",
                R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true,
                "messages[0].content[0].image_url", "is required"},
        BadBody{"video_url_number",
                R"({"messages": [{"role": "user", "content": [{"type": "video_url", "video_url": 3}]}]})",
                true, "messages[0].content[0].video_url", "an object with a url, got a number"},
        BadBody{"part_not_object",
                R"({"messages": [{"role": "user", "content": ["hi", {"type": "video_frames", "fps": 2}]}]})",
                true, "messages[0].content[0]", "must be an object, got a string"},
        BadBody{
            "frames_empty",
            R"({"messages": [{"role": "user", "content": [{"type": "video_frames", "frames": [], "fps": 2}]}]})",
            true, "messages[0].content[0].frames", "at least one frame"},
        BadBody{"frame_number",
                R"({"messages": [{"role": "user", "content": [{"type": "video_frames", "frames": ["a", 5],
                    "fps": 2}]}]})",
                true, "messages[0].content[0].frames[1]", "must be an image URL, got a number"},
        BadBody{"fps_missing",
                R"({"messages": [{"role": "user", "content": [{"type": "video_frames", "frames": ["a"]}]}]})",
                true, "messages[0].content[0].fps", "the rate the frames were taken at"},
        BadBody{
            "fps_zero",
            R"({"messages": [{"role": "user", "content": [{"type": "video_frames", "frames": ["a"], "fps": 0}]}]})",
            true, "messages[0].content[0].fps", "above 0, got 0"},
        BadBody{"assistant_image",
                R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": [{"type":
                    "image_url", "image_url": {"url": "x"}}]}, {"role": "user", "content": "b"}]})",
                true, "messages[1].content[0]", "only user messages may hold images and videos"},
        BadBody{"text_number",
                R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]})", true,
                "messages[0].content[0].text", "must be a string, got a number"},
        BadBody{"max_tokens_text", chat_body({{"max_tokens", "ten"}}), true, "max_tokens",
                "must be an integer, got a string"},
        BadBody{"max_tokens_fraction", chat_body({{"max_tokens", 1.5}}), true, "max_tokens",
                "must be an integer"},
        BadBody{"max_tokens_zero", chat_body({{"max_completion_tokens", 0}}), true, "max_completion_tokens",
                "at least 1"},
        BadBody{"temperature_text", chat_body({{"temperature", "hot"}}), true, "temperature",
                "must be a number"},
        BadBody{"temperature_range", chat_body({{"temperature", 3}}), true, "temperature", "between 0 and 2"},
        BadBody{"top_p_range", chat_body({{"top_p", 1.5}}), true, "top_p", "between 0 and 1"},
        BadBody{"top_k_range", chat_body({{"top_k", -2}}), true, "top_k", "-1 or 0"},
        BadBody{"penalty_zero", chat_body({{"repetition_penalty", 0}}), true, "repetition_penalty",
                "above 0"},
        BadBody{"presence_penalty", chat_body({{"presence_penalty", 0.5}}), true, "presence_penalty",
                "not supported"},
        BadBody{"seed_text", chat_body({{"seed", "x"}}), true, "seed", "must be an integer"},
        BadBody{"stop_number", chat_body({{"stop", 3}}), true, "stop", "a string or an array of strings"},
        BadBody{"stop_empty", chat_body({{"stop", {""}}}), true, "stop", "1 to 1024 bytes"},
        BadBody{"n_two", chat_body({{"n", 2}}), true, "n", "only 1 is supported"},
        BadBody{"stream_text", chat_body({{"stream", "yes"}}), true, "stream", "must be a boolean"},
        BadBody{"stream_options_alone", chat_body({{"stream_options", {{"include_usage", true}}}}), true,
                "stream_options", "only allowed with stream"},
        BadBody{"logprobs", chat_body({{"logprobs", true}}), true, "logprobs", "not supported"},
        BadBody{"tools", chat_body({{"tools", {{{"type", "function"}}}}}), true, "tools", "not supported"},
        BadBody{"response_format", chat_body({{"response_format", {{"type", "json_object"}}}}), true,
                "response_format", "only {\"type\": \"text\"}"},
        BadBody{"mm_kwargs_key", chat_body({{"mm_processor_kwargs", {{"fps", 2}}}}), true,
                "mm_processor_kwargs.fps", "only min_pixels, max_pixels, video_fps, video_min_frames and"},
        BadBody{"mm_kwargs_video_fps", chat_body({{"mm_processor_kwargs", {{"video_fps", -1}}}}), true,
                "mm_processor_kwargs.video_fps", "must be a number above 0"},
        BadBody{"mm_kwargs_frames", chat_body({{"mm_processor_kwargs", {{"video_max_frames", 0}}}}), true,
                "mm_processor_kwargs.video_max_frames", "must be at least 1"},
        BadBody{"mm_kwargs_frames_order",
                chat_body({{"mm_processor_kwargs", {{"video_min_frames", 9}, {"video_max_frames", 8}}}}),
                true, "mm_processor_kwargs", "video_min_frames is above video_max_frames"},
        BadBody{"mm_kwargs_order",
                chat_body({{"mm_processor_kwargs", {{"min_pixels", 10}, {"max_pixels", 5}}}}), true,
                "mm_processor_kwargs", "above max_pixels"},
        BadBody{"stop_in_output", chat_body({{"include_stop_str_in_output", true}}), true,
                "include_stop_str_in_output", "not supported"},
        BadBody{"prompt_missing", "{}", false, "prompt", "prompt is required"},
        BadBody{"prompt_tokens", R"({"prompt": [1, 2, 3]})", false, "prompt", "one prompt, as a string"},
        BadBody{"prompt_number", R"({"prompt": 3})", false, "prompt", "must be a string"},
        BadBody{"echo", R"({"prompt": "a", "echo": true})", false, "echo", "not supported"}),
    [](const testing::TestParamInfo<BadBody>& p) { return std::string(p.param.name); });

TEST(OpenAiProtocol, EncodedDataUrlsDecodeToTheSameBytes) {
    for (size_t n : {1, 2, 3, 4, 100, 4097}) {
        std::vector<uint8_t> bytes(n);
        for (size_t i = 0; i < n; ++i) {
            bytes[i] = static_cast<uint8_t>(i * 37 + n);
        }
        const std::string url = srv::encode_data_url(bytes, "image/webp");
        EXPECT_EQ(url.rfind("data:image/webp;base64,", 0), 0u);
        EXPECT_EQ(srv::decode_data_url(url, "image"), bytes) << n;
    }
}

TEST(OpenAiProtocol, DecodesDataUrls) {
    EXPECT_EQ(srv::decode_data_url("data:image/png;base64,aGVsbG8=", "image"),
              (std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o'}));
    EXPECT_EQ(srv::decode_data_url("data:image/jpeg;base64,aGVsbG8", "image").size(),
              5u);  // padding left out

    const auto refused = [](const std::string& url) {
        try {
            srv::decode_data_url(url, "messages[0] image 1");
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status(), 400);
            EXPECT_EQ(e.param(), "messages[0] image 1");
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(refused("https://example.com/a.png").find("image URLs are not fetched"), std::string::npos);
    EXPECT_NE(refused("file:///etc/passwd").find("expected a data URL"), std::string::npos);
    EXPECT_NE(refused("data:image/png,raw").find("must be base64"), std::string::npos);
    EXPECT_NE(refused("data:text/plain;base64,aGVsbG8=").find("must be an image"), std::string::npos);
    EXPECT_NE(refused("data:image/png;base64,@@@@").find("not valid base64"), std::string::npos);
    EXPECT_NE(refused("data:image/png;base64,").find("holds no data"), std::string::npos);
    EXPECT_NE(refused("data:image/png;base64").find("no ','"), std::string::npos);
}

TEST(OpenAiProtocol, WritesBodiesAndEventsAsOpenAiDoes) {
    const srv::ResponseHead head{"chatcmpl-1", 1700000000, "ocr"};
    const json body = json::parse(srv::chat_completion_body(head, "text", "stop", {26, 8}));
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["choices"][0]["message"]["content"], "text");
    EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(body["usage"]["total_tokens"], 34);
    EXPECT_FALSE(body["usage"].contains("prompt_tokens_details")) << "unknown: left out";
    const json cached = json::parse(srv::chat_completion_body(head, "text", "stop", {26, 8, 16}));
    EXPECT_EQ(cached["usage"]["prompt_tokens_details"]["cached_tokens"], 16);

    const std::string first = srv::chat_chunk_event(head, "te", true, nullptr, std::nullopt);
    ASSERT_EQ(first.substr(0, 6), "data: ");
    ASSERT_EQ(first.substr(first.size() - 2), "\n\n");
    const json chunk = json::parse(first.substr(6));
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_EQ(chunk["choices"][0]["delta"]["role"], "assistant");
    EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
    EXPECT_FALSE(chunk.contains("usage"));
    const json last =
        json::parse(srv::chat_chunk_event(head, "xt", false, "length", srv::Usage{3, 4}).substr(6));
    EXPECT_FALSE(last["choices"][0]["delta"].contains("role"));
    EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(last["usage"]["completion_tokens"], 4);

    // Text cut inside a UTF-8 sequence still makes valid JSON.
    EXPECT_NO_THROW(json::parse(srv::completion_body(head, "\xe4\xb8", "stop", {1, 1})));

    const json error = json::parse(
        srv::error_body(ApiError(404, "invalid_request_error", "no model", "model", "model_not_found")));
    EXPECT_EQ(error["error"]["message"], "no model");
    EXPECT_EQ(error["error"]["param"], "model");
    EXPECT_EQ(error["error"]["code"], "model_not_found");
    const json models = json::parse(srv::models_body({"ocr"}, 1, 4096));
    EXPECT_EQ(models["data"][0]["id"], "ocr");
    EXPECT_EQ(models["data"][0]["max_model_len"], 4096);
}

// chat_template_kwargs come through as the template's variables, enable_thinking read from them; a value
// that is not an object is refused.
TEST(OpenAiProtocol, ChatTemplateKwargs) {
    const srv::ChatCompletionRequest plain = srv::parse_chat_completion(chat_body());
    EXPECT_TRUE(plain.chat_template_kwargs.empty());
    EXPECT_TRUE(plain.generation.enable_thinking);
    const srv::ChatCompletionRequest r = srv::parse_chat_completion(
        chat_body({{"chat_template_kwargs", {{"enable_thinking", false}, {"style", {{"depth", 2}}}}}}));
    EXPECT_FALSE(r.generation.enable_thinking);
    EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
    EXPECT_EQ(r.chat_template_kwargs["style"]["depth"], 2);
    EXPECT_TRUE(srv::parse_chat_completion(chat_body({{"chat_template_kwargs", {{"enable_thinking", true}}}}))
                    .generation.enable_thinking);
    try {
        srv::parse_chat_completion(chat_body({{"chat_template_kwargs", json::array()}}));
        ADD_FAILURE() << "chat_template_kwargs as an array was taken";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 400);
        EXPECT_EQ(e.param(), "chat_template_kwargs");
    }
}

// With a reasoning split the message has reasoning_content beside content (null where deepseek_r1 found no
// content), and a delta carries the reasoning it has.
TEST(OpenAiProtocol, WritesReasoningContent) {
    const srv::ResponseHead head{"chatcmpl-2", 1700000000, "ocr"};
    const folio::ReasoningSplit split{"thought", "answer", false};
    json message = json::parse(srv::chat_completion_body(head, "thought</think>answer", "stop", {1, 2},
                                                         &split))["choices"][0]["message"];
    EXPECT_EQ(message["content"], "answer");
    EXPECT_EQ(message["reasoning_content"], "thought");
    const folio::ReasoningSplit no_content{"thought", "", true};
    message = json::parse(
        srv::chat_completion_body(head, "thought", "stop", {1, 2}, &no_content))["choices"][0]["message"];
    EXPECT_TRUE(message["content"].is_null());
    EXPECT_EQ(message["reasoning_content"], "thought");

    json delta = json::parse(srv::chat_chunk_event(head, "", true, nullptr, std::nullopt, "thou")
                                 .substr(6))["choices"][0]["delta"];
    EXPECT_EQ(delta["reasoning_content"], "thou");
    EXPECT_EQ(delta["content"], "");
    delta = json::parse(srv::chat_chunk_event(head, "ans", false, nullptr, std::nullopt, "")
                            .substr(6))["choices"][0]["delta"];
    EXPECT_FALSE(delta.contains("reasoning_content"));
    EXPECT_EQ(delta["content"], "ans");
}

}  // namespace
