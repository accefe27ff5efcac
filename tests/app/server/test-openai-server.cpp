// The OpenAI-compatible server on 127.0.0.1 with the fixture model on the CPU, driven by real clients:
// cpp-httplib's client, curl and Python's standard library. Answers equal the service's own for the same
// requests, alone or concurrent; streams add up; a client that goes away cancels its request; every error is
// an OpenAI error object with its status; overload is answered 429; a bounded load loses nothing and leaves
// every KV block free.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "app/images/image-loader.h"
#include "app/server/openai-protocol.h"
#include "app/server/openai-server.h"
#include "engine/backend/backend.h"
#include "engine/chat-template/chat-template.h"
#include "engine/chat-template/reasoning-parser.h"
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/service/engine-service.h"
#include "engine/tokenizer/tokenizer.h"
#include "temp-dir.h"

namespace {

using namespace folio;
using namespace std::chrono_literals;
using nlohmann::json;
using server::OpenAiServer;
using server::ServerParams;

const std::filesystem::path kModelDir = std::filesystem::path(FOLIO_FIXTURES_DIR) / "paddleocr-vl-tiny";
const std::filesystem::path kClientScript = FOLIO_SERVER_TESTS_DIR "/openai-client.py";

// A PNG of w x h pixels whose pattern depends on seed.
std::vector<uint8_t> png(int w, int h, int seed) {
    cv::Mat image(h, w, CV_8UC3);
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            image.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uint8_t>((x * 7 + seed * 31) % 256),
                                                  static_cast<uint8_t>((y * 5 + seed * 17) % 256),
                                                  static_cast<uint8_t>((x * y + seed) % 256));
        }
    }
    std::vector<uint8_t> bytes;
    cv::imencode(".png", image, bytes);
    return bytes;
}

std::string data_url(const std::vector<uint8_t>& bytes) {
    return server::encode_data_url(bytes, "image/png");
}

json chat(const std::vector<std::string>& image_urls, const std::string& task, int max_tokens,
          const json& extra = json::object()) {
    json content = json::array();
    for (const std::string& url : image_urls) {
        content.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
    }
    content.push_back({{"type", "text"}, {"text", task}});
    json body = {{"messages", {{{"role", "user"}, {"content", content}}}},
                 {"max_tokens", max_tokens},
                 {"temperature", 0}};
    body.update(extra);
    return body;
}

struct Sse {
    std::vector<json> chunks;
    bool done = false;
    std::string text;  // the deltas' content, in order
};

// Server-sent events "data: ...\n\n" read back: JSON chunks and the [DONE] mark; comment lines skipped.
Sse parse_sse(const std::string& stream) {
    Sse sse;
    size_t at = 0;
    while (at < stream.size()) {
        const size_t end = stream.find("\n\n", at);
        const std::string event = stream.substr(at, end == std::string::npos ? std::string::npos : end - at);
        at = end == std::string::npos ? stream.size() : end + 2;
        if (event.rfind("data: ", 0) != 0) {
            continue;
        }
        const std::string data = event.substr(6);
        if (data == "[DONE]") {
            sse.done = true;
            continue;
        }
        json chunk = json::parse(data);
        if (chunk.contains("choices") && !chunk["choices"].empty()) {
            const json& choice = chunk["choices"][0];
            sse.text +=
                choice.contains("delta") ? choice["delta"].value("content", "") : choice.value("text", "");
        }
        sse.chunks.push_back(std::move(chunk));
    }
    return sse;
}

// What a command prints on stdout, and its exit status.
std::pair<std::string, int> run_command(const std::string& command) {
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) {
        return {"", -1};
    }
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        out.append(buffer, n);
    }
    const int status = ::pclose(pipe);
    return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

bool have_command(const std::string& name) {
    return run_command("command -v " + name + " >/dev/null 2>&1").second == 0;
}

int connect_to(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        ADD_FAILURE() << "cannot connect to 127.0.0.1:" << port;
    }
    return fd;
}

bool send_all(int fd, const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            return false;
        }
        sent += static_cast<size_t>(n);
    }
    return true;
}

// One HTTP response read from a raw socket: its status (0: none came), headers and body, and how long it
// took.
struct RawReply {
    int status = 0;
    std::string head;
    std::string body;
    std::chrono::steady_clock::duration took{};
};

RawReply read_reply(int fd, std::chrono::milliseconds timeout = 10000ms) {
    RawReply reply;
    const auto started = std::chrono::steady_clock::now();
    const auto deadline = started + timeout;
    std::string data;
    size_t body_at = std::string::npos;
    size_t length = 0;
    for (;;) {
        if (body_at == std::string::npos) {
            body_at = data.find("\r\n\r\n");
            if (body_at != std::string::npos) {
                reply.head = data.substr(0, body_at);
                body_at += 4;
                std::sscanf(reply.head.c_str(), "HTTP/1.1 %d", &reply.status);
                const size_t cl = reply.head.find("Content-Length: ");
                length = cl == std::string::npos ? 0 : std::stoul(reply.head.substr(cl + 16));
            }
        }
        if (body_at != std::string::npos && data.size() >= body_at + length) {
            reply.body = data.substr(body_at, length);
            break;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            break;
        }
        char buffer[65536];
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
            break;
        }
        data.append(buffer, static_cast<size_t>(n));
    }
    reply.took = std::chrono::steady_clock::now() - started;
    return reply;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the sanitizers' shadow memory and quarantine blur peak memory
#else
constexpr bool kSanitized = false;
#endif

// The process's peak resident memory (VmHWM) in bytes, and a way to start measuring it afresh.
int64_t peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::stoll(line.substr(6)) * 1024;
        }
    }
    return -1;
}

bool reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    return static_cast<bool>(clear);
}

class OpenAiServerTest : public testing::Test {
protected:
    static void SetUpTestSuite() {
        service_ = std::make_unique<EngineService>();
        ServiceParams params;
        params.device.make_backend = [] { return make_cpu_backend(2); };
        params.models.push_back({ModelRole::Recognition, kModelDir, {}});
        params.engine.max_model_len = 4096;
        params.engine.max_num_seqs = 8;
        service_->load(params);
        ASSERT_EQ(service_->wait_loaded(120s), ServiceState::Ready) << service_->status().error;
    }
    static void TearDownTestSuite() { service_.reset(); }

    void SetUp() override {
        if (!service_ || service_->status().state != ServiceState::Ready) {
            GTEST_SKIP() << "the service did not load";
        }
    }

    static ServerParams params() {
        ServerParams p;
        p.port = 0;
        p.metrics_port = 0;
        p.model_names = {"paddleocr-vl-tiny"};
        p.image_pixels = {28 * 28, 1536 * 1536};
        return p;
    }

    static std::optional<server::ImageSize> image_size(std::span<const uint8_t> bytes,
                                                       std::string_view name) {
        const ImageFileInfo info = probe_image(bytes, name);
        return server::ImageSize{info.pages.front().width, info.pages.front().height};
    }

    static std::unique_ptr<OpenAiServer> make_server(ServerParams p) {
        return std::make_unique<OpenAiServer>(
            *service_, std::move(p),
            [](std::span<const uint8_t> bytes, std::string_view name) { return decode_image(bytes, name); },
            image_size);
    }

    std::unique_ptr<OpenAiServer> start(ServerParams p = params()) {
        auto s = make_server(std::move(p));
        s->start();
        return s;
    }

    static httplib::Result post(int port, const std::string& path, const json& body,
                                const httplib::Headers& headers = {}) {
        httplib::Client client("127.0.0.1", port);
        // A sanitized build runs a long prompt many times slower.
        client.set_read_timeout(kSanitized ? 600 : 120, 0);
        return client.Post(path.c_str(), headers, body.dump(), "application/json");
    }

    // The text and token count the service gives for the same chat run alone, its images decoded as the
    // server decodes them.
    struct Alone {
        std::string text;
        int64_t n_tokens = 0;
        int64_t n_prompt = 0;
        FinishReason finish = FinishReason::Error;
    };
    static Alone run_alone(const std::vector<std::vector<uint8_t>>& images, const std::string& task,
                           int max_tokens) {
        Chat c;
        ChatMessage& m = c.messages.emplace_back();
        for (size_t i = 0; i < images.size(); ++i) {
            m.images.push_back(decode_image(images[i], "image"));
        }
        m.text = task;
        GenerationOptions options;
        options.max_tokens = max_tokens;
        RequestHandle handle = service_->submit({std::move(c), options});
        Alone alone;
        while (std::optional<RequestOutput> out = handle.next()) {
            alone.text += out->text;
            alone.n_tokens += static_cast<int64_t>(out->tokens.size());
            if (out->finish) {
                alone.finish = *out->finish;
            }
        }
        alone.n_prompt = handle.n_prompt_tokens();
        return alone;
    }

    static void wait_idle() {
        for (int i = 0; i < 400; ++i) {
            const ServiceStats s = service_->stats();
            if (s.n_running[0] + s.n_running[1] + s.n_waiting[0] + s.n_waiting[1] + s.n_preparing == 0 &&
                s.n_kv_blocks_free == s.n_kv_blocks) {
                return;
            }
            std::this_thread::sleep_for(25ms);
        }
    }

    static std::unique_ptr<EngineService> service_;
};

std::unique_ptr<EngineService> OpenAiServerTest::service_;

TEST_F(OpenAiServerTest, ChatCompletionMatchesTheServiceAlone) {
    const auto server = start();
    const std::vector<uint8_t> image = png(96, 40, 1);
    const Alone alone = run_alone({image}, "OCR:", 12);

    const auto res = post(server->port(), "/v1/chat/completions", chat({data_url(image)}, "OCR:", 12));
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    ASSERT_EQ(res->status, 200) << res->body;
    const json body = json::parse(res->body);
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["model"], "paddleocr-vl-tiny");
    EXPECT_EQ(body["choices"][0]["message"]["content"], alone.text);
    EXPECT_EQ(body["choices"][0]["finish_reason"], alone.finish == FinishReason::Length ? "length" : "stop");
    EXPECT_EQ(body["usage"]["completion_tokens"], alone.n_tokens);
    EXPECT_EQ(body["usage"]["prompt_tokens"], alone.n_prompt);
    EXPECT_GT(alone.n_prompt, 4);
}

// Ask the document through the server: the document's blocks go ahead of the question (the prompt grows by
// them), the answer says which pages it was given and lists its citations, and a document that cannot fit
// beside max_tokens is refused by name.
TEST_F(OpenAiServerTest, AnswersFromADocument) {
    const auto server = start();
    const json question = {{"messages", {{{"role", "user"}, {"content", "What grew?"}}}}, {"max_tokens", 4},
                           {"temperature", 0}};
    const json page = {{"parsing_res_list",
                        json::array({{{"block_content", "Sales grew by 12% in the north."}, {"block_id", 3}},
                                     {{"block_content", "<table><tr><td>North</td><td>40</td></tr></table>"},
                                      {"block_id", 5}}})}};
    json asked = question;
    asked["document"] = json::array({page, page});
    const auto plain = post(server->port(), "/v1/chat/completions", question);
    const auto res = post(server->port(), "/v1/chat/completions", asked);
    ASSERT_TRUE(plain && plain->status == 200);
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    ASSERT_EQ(res->status, 200) << res->body;
    const json body = json::parse(res->body);
    EXPECT_EQ(body["document"]["pages"], json::array({0, 1}));
    EXPECT_EQ(body["document"]["pages_left_out"], json::array());
    EXPECT_TRUE(body["choices"][0]["message"]["citations"].is_array());
    EXPECT_GT(body["usage"]["prompt_tokens"].get<int64_t>(),
              json::parse(plain->body)["usage"]["prompt_tokens"].get<int64_t>() + 30);

    json too_long = asked;
    too_long["max_tokens"] = 4000;  // of the context's 4096
    const auto refused = post(server->port(), "/v1/chat/completions", too_long);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400) << refused->body;
    EXPECT_EQ(json::parse(refused->body)["error"]["param"], "document") << refused->body;
}

TEST_F(OpenAiServerTest, UsageTellsThePromptTokensTheCacheHeld) {
    const auto server = start();
    const std::vector<uint8_t> image = png(420, 280, 5);
    std::vector<int64_t> cached, prompt;
    for (int i = 0; i < 2; ++i) {
        const auto res = post(server->port(), "/v1/chat/completions", chat({data_url(image)}, "OCR:", 4));
        ASSERT_TRUE(res && res->status == 200) << (res ? res->body : httplib::to_string(res.error()));
        const json usage = json::parse(res->body)["usage"];
        cached.push_back(usage["prompt_tokens_details"]["cached_tokens"].get<int64_t>());
        prompt.push_back(usage["prompt_tokens"].get<int64_t>());
    }
    const int64_t block = EngineConfig{}.block_size;
    ASSERT_GT(prompt[0], block) << "a whole block to find again";
    EXPECT_EQ(cached[0], 0);
    // The same request again: every whole block of its prompt before its last token, which is computed to
    // sample from, as OpenAI's prompt_tokens_details says it.
    EXPECT_EQ(cached[1], (prompt[1] - 1) / block * block);
}

TEST_F(OpenAiServerTest, StreamedChunksAddUpToTheWholeAnswer) {
    const auto server = start();
    const std::vector<uint8_t> image = png(80, 56, 2);
    const Alone alone = run_alone({image}, "Table Recognition:", 16);

    const auto res = post(server->port(), "/v1/chat/completions",
                          chat({data_url(image)}, "Table Recognition:", 16,
                               {{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
    const Sse sse = parse_sse(res->body);
    EXPECT_TRUE(sse.done);
    ASSERT_GE(sse.chunks.size(), 2u);
    EXPECT_EQ(sse.text, alone.text);
    EXPECT_EQ(sse.chunks.front()["choices"][0]["delta"]["role"], "assistant");
    const json& last = sse.chunks[sse.chunks.size() - 2];  // the one with the finish reason
    EXPECT_FALSE(last["choices"][0]["finish_reason"].is_null());
    EXPECT_EQ(last["usage"]["completion_tokens"], alone.n_tokens);
    const json& usage = sse.chunks.back();  // include_usage: no choices, the usage
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["prompt_tokens"], alone.n_prompt);
    for (const json& chunk : sse.chunks) {
        EXPECT_EQ(chunk["id"], sse.chunks.front()["id"]);
        EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    }
}

TEST_F(OpenAiServerTest, TextCompletionsStreamAndNot) {
    const auto server = start();
    const json body = {
        {"prompt", "Hello there"}, {"max_tokens", 6}, {"temperature", 0}, {"ignore_eos", true}};
    const auto whole = post(server->port(), "/v1/completions", body);
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const json answer = json::parse(whole->body);
    EXPECT_EQ(answer["object"], "text_completion");
    EXPECT_EQ(answer["usage"]["completion_tokens"], 6);
    EXPECT_EQ(answer["choices"][0]["finish_reason"], "length");

    json streamed = body;
    streamed["stream"] = true;
    const auto res = post(server->port(), "/v1/completions", streamed);
    ASSERT_TRUE(res);
    const Sse sse = parse_sse(res->body);
    EXPECT_TRUE(sse.done);
    EXPECT_EQ(sse.text, answer["choices"][0]["text"]);
}

// A stop string ends the answer at the token that completed it, and usage.completion_tokens counts the tokens
// up to that one, whole and streamed (the last chunk of include_usage), whatever the engine ran past it. A
// character of byte fallback pieces completes a stop string on its last byte, not when a later piece comes.
TEST_F(OpenAiServerTest, UsageAfterAStopStringCountsTheTokensUpToIt) {
    const auto server = start();
    const auto tokenizer = Tokenizer::load(kModelDir);
    constexpr int kTokens = 48;
    struct Case {
        std::string prompt;
        std::string stop;
        size_t n_tokens = 0;  // up to the one that completes the stop string
        std::string text;     // before the stop string
        size_t n_generated = 0;
    };
    std::optional<Case> by_byte;   // completed by a byte piece (the last of a character)
    std::optional<Case> by_piece;  // completed by a piece of the vocabulary
    const auto is_byte = [&](int32_t id) {
        return tokenizer->token_text(id).value_or("").starts_with("<0x");
    };
    for (const char* prompt : {"Hello there", "Hello", "OCR:", "Tables and figures", "a b c", "Stop here"}) {
        GenerationOptions options;
        options.max_tokens = kTokens;
        options.ignore_eos = true;
        RequestHandle handle = service_->submit({RawText{prompt}, options});
        std::vector<int32_t> ids;
        while (std::optional<RequestOutput> out = handle.next()) {
            ids.insert(ids.end(), out->tokens.begin(), out->tokens.end());
        }
        const std::span<const int32_t> all(ids);
        for (size_t k = 2; k + 1 < ids.size(); ++k) {
            const std::string before = tokenizer->decode(all.first(k - 1), true);
            const std::string upto = tokenizer->decode(all.first(k), true);
            if (upto.find("\xEF\xBF\xBD") != std::string::npos || upto.empty()) {
                continue;
            }
            // Its last character, or what its last piece adds.
            size_t start = upto.size() - 1;
            while (start > 0 && (static_cast<unsigned char>(upto[start]) & 0xC0) == 0x80) {
                --start;
            }
            const bool byte_case = is_byte(ids[k - 1]);
            const bool piece_case =
                !is_byte(ids[k - 1]) && upto.starts_with(before) && upto.size() > before.size();
            if (piece_case) {
                start = before.size();
            }
            const std::string stop = upto.substr(start);
            if (!(byte_case || piece_case) || upto.find(stop) != start ||
                stop.find_first_not_of(' ') == std::string::npos) {
                continue;
            }
            std::optional<Case>& slot = byte_case ? by_byte : by_piece;
            if (!slot) {
                slot = Case{prompt, stop, k, upto.substr(0, start), ids.size()};
            }
        }
    }
    ASSERT_TRUE(by_byte) << "no greedy answer of the fixture model has a character of byte pieces";
    ASSERT_TRUE(by_piece);
    for (const Case& c : {*by_byte, *by_piece}) {
        SCOPED_TRACE(c.prompt + " stopping at " + testing::PrintToString(c.stop));
        ASSERT_LT(c.n_tokens, c.n_generated);
        const json body = {{"prompt", c.prompt},
                           {"max_tokens", kTokens},
                           {"ignore_eos", true},
                           {"temperature", 0},
                           {"stop", {c.stop}}};
        const auto whole = post(server->port(), "/v1/completions", body);
        ASSERT_TRUE(whole);
        ASSERT_EQ(whole->status, 200) << whole->body;
        const json answer = json::parse(whole->body);
        EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop");
        EXPECT_EQ(answer["choices"][0]["text"], c.text);
        EXPECT_EQ(answer["usage"]["completion_tokens"], c.n_tokens);

        json streamed = body;
        streamed["stream"] = true;
        streamed["stream_options"] = {{"include_usage", true}};
        const auto res = post(server->port(), "/v1/completions", streamed);
        ASSERT_TRUE(res);
        const Sse sse = parse_sse(res->body);
        ASSERT_TRUE(sse.done);
        EXPECT_EQ(sse.text, c.text);
        ASSERT_GE(sse.chunks.size(), 2u);
        EXPECT_EQ(sse.chunks.back()["usage"]["completion_tokens"], c.n_tokens);
        EXPECT_EQ(sse.chunks[sse.chunks.size() - 2]["choices"][0]["finish_reason"], "stop");
    }
}

// The reasoning and content of a chat stream's deltas, and whether any delta had reasoning_content.
struct StreamedReasoning {
    std::string content;
    std::string reasoning;
    bool has_reasoning_field = false;
};

StreamedReasoning streamed_reasoning(const Sse& sse) {
    StreamedReasoning r;
    for (const json& chunk : sse.chunks) {
        if (!chunk.contains("choices") || chunk["choices"].empty()) {
            continue;
        }
        const json& delta = chunk["choices"][0]["delta"];
        r.content += delta.value("content", "");
        if (delta.contains("reasoning_content")) {
            r.has_reasoning_field = true;
            r.reasoning += delta["reasoning_content"].get<std::string>();
        }
    }
    return r;
}

// With --reasoning-parser a chat answer carries reasoning_content beside content, whole and streamed; the
// fixture model never writes </think>, so deepseek_r1 gives the whole answer as reasoning (content null) and
// ernie-45-vl as content when whole and as reasoning when streamed, as vLLM and FastDeploy do. Without the
// parser, with enable_thinking false in chat_template_kwargs and on /v1/completions nothing changes.
TEST_F(OpenAiServerTest, AReasoningParserSplitsChatAnswers) {
    const std::vector<uint8_t> image = png(72, 48, 21);
    const Alone alone = run_alone({image}, "OCR:", 14);
    ASSERT_FALSE(alone.text.empty());
    ASSERT_EQ(alone.text.find("</think>"), std::string::npos);
    ASSERT_FALSE(alone.text.starts_with("<think>"));
    const json body = chat({data_url(image)}, "OCR:", 14);
    json streamed = body;
    streamed["stream"] = true;
    json not_thinking = body;
    not_thinking["chat_template_kwargs"] = {{"enable_thinking", false}};

    const auto whole_message = [&](int port, const json& request) {
        const auto res = post(port, "/v1/chat/completions", request);
        EXPECT_TRUE(res);
        EXPECT_EQ(res ? res->status : 0, 200) << (res ? res->body : "");
        return res ? json::parse(res->body)["choices"][0]["message"] : json();
    };
    const auto stream_of = [&](int port, const json& request) {
        const auto res = post(port, "/v1/chat/completions", request);
        EXPECT_TRUE(res);
        const Sse sse = parse_sse(res ? res->body : "");
        EXPECT_TRUE(sse.done);
        return streamed_reasoning(sse);
    };

    {
        const auto server = start();
        const json message = whole_message(server->port(), body);
        EXPECT_EQ(message["content"], alone.text);
        EXPECT_FALSE(message.contains("reasoning_content"));
        const StreamedReasoning s = stream_of(server->port(), streamed);
        EXPECT_EQ(s.content, alone.text);
        EXPECT_FALSE(s.has_reasoning_field);
    }
    {
        ServerParams p = params();
        p.reasoning_parser = ReasoningFormat::DeepSeekR1;
        const auto server = start(p);
        const json message = whole_message(server->port(), body);
        EXPECT_TRUE(message["content"].is_null()) << message.dump();
        EXPECT_EQ(message["reasoning_content"], alone.text);
        const StreamedReasoning s = stream_of(server->port(), streamed);
        EXPECT_EQ(s.reasoning, alone.text);
        EXPECT_EQ(s.content, "");

        const json plain = whole_message(server->port(), not_thinking);
        EXPECT_EQ(plain["content"], alone.text);
        EXPECT_FALSE(plain.contains("reasoning_content"));
        json plain_streamed = not_thinking;
        plain_streamed["stream"] = true;
        const StreamedReasoning ps = stream_of(server->port(), plain_streamed);
        EXPECT_EQ(ps.content, alone.text);
        EXPECT_FALSE(ps.has_reasoning_field);

        const auto completion = post(server->port(), "/v1/completions",
                                     {{"prompt", "Hello there"}, {"max_tokens", 6}, {"temperature", 0}});
        ASSERT_TRUE(completion);
        ASSERT_EQ(completion->status, 200) << completion->body;
        EXPECT_FALSE(json::parse(completion->body)["choices"][0].contains("reasoning_content"));
    }
    {
        ServerParams p = params();
        p.reasoning_parser = ReasoningFormat::Ernie45Vl;
        const auto server = start(p);
        const json message = whole_message(server->port(), body);
        EXPECT_EQ(message["content"], alone.text);
        EXPECT_EQ(message["reasoning_content"], "");
        const StreamedReasoning s = stream_of(server->port(), streamed);
        EXPECT_EQ(s.reasoning, alone.text);
        EXPECT_EQ(s.content, "");
    }
}

// chat_template_kwargs reach the chat template as variables: a template that closes the reasoning when
// enable_thinking is false makes a longer prompt, and the answer then has no reasoning_content.
TEST(OpenAiServerTemplateKwargs, ChatTemplateKwargsReachTheTemplate) {
    std::ifstream in(kModelDir / "chat_template.jinja");
    std::stringstream source;
    source << in.rdbuf();
    ASSERT_FALSE(source.str().empty());
    const std::string tmpl = source.str() +
                             "{%- if enable_thinking is defined and not enable_thinking -%}"
                             "{{- '<think>\n\n</think>\n\n' -}}{%- endif -%}";
    EngineService service;
    ServiceParams sp;
    sp.device.make_backend = [] { return make_cpu_backend(2); };
    ModelSlot slot{ModelRole::Recognition, kModelDir, {}};
    slot.chat_template = std::make_shared<const ChatTemplate>(ChatTemplate::parse(tmpl, "kwargs template"));
    sp.models.push_back(std::move(slot));
    sp.engine.max_model_len = 2048;
    sp.engine.max_num_seqs = 4;
    service.load(sp);
    ASSERT_EQ(service.wait_loaded(120s), ServiceState::Ready) << service.status().error;
    ServerParams p;
    p.port = 0;
    p.metrics_port = -1;
    p.image_pixels = {28 * 28, 1536 * 1536};
    p.reasoning_parser = ReasoningFormat::DeepSeekR1;
    OpenAiServer server(
        service, p,
        [](std::span<const uint8_t> bytes, std::string_view name) { return decode_image(bytes, name); },
        [](std::span<const uint8_t>, std::string_view) { return std::optional<server::ImageSize>(); });
    server.start();
    const auto ask = [&](const json& kwargs) {
        json body = {
            {"messages", {{{"role", "user"}, {"content", "Hello"}}}}, {"max_tokens", 4}, {"temperature", 0}};
        if (!kwargs.is_null()) {
            body["chat_template_kwargs"] = kwargs;
        }
        httplib::Client client("127.0.0.1", server.port());
        client.set_read_timeout(120, 0);
        const auto res = client.Post("/v1/chat/completions", body.dump(), "application/json");
        EXPECT_TRUE(res);
        EXPECT_EQ(res ? res->status : 0, 200) << (res ? res->body : "");
        return res ? json::parse(res->body) : json();
    };
    const json thinking = ask(nullptr);
    const json closed = ask({{"enable_thinking", false}});
    const json open = ask({{"enable_thinking", true}});
    EXPECT_GT(closed["usage"]["prompt_tokens"].get<int64_t>(),
              thinking["usage"]["prompt_tokens"].get<int64_t>() + 3);
    EXPECT_EQ(open["usage"]["prompt_tokens"], thinking["usage"]["prompt_tokens"]);
    EXPECT_TRUE(thinking["choices"][0]["message"].contains("reasoning_content"));
    EXPECT_FALSE(closed["choices"][0]["message"].contains("reasoning_content"));
    EXPECT_TRUE(closed["choices"][0]["message"]["content"].is_string());
    // A kwargs value that is not an object is refused.
    httplib::Client client("127.0.0.1", server.port());
    const auto bad = client.Post(
        "/v1/chat/completions",
        json{{"messages", {{{"role", "user"}, {"content", "Hello"}}}}, {"chat_template_kwargs", "yes"}}
            .dump(),
        "application/json");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->body.find("chat_template_kwargs must be an object"), std::string::npos) << bad->body;
    server.stop();
}

TEST_F(OpenAiServerTest, CurlAndPythonsStandardLibraryAreClients) {
    const auto server = start();
    const std::vector<uint8_t> image = png(64, 64, 3);
    const Alone alone = run_alone({image}, "OCR:", 10);
    folio::test::TempDir dir;
    const std::filesystem::path body_file = dir / "body.json";
    std::ofstream(body_file) << chat({data_url(image)}, "OCR:", 10).dump();
    const std::filesystem::path stream_file = dir / "stream.json";
    std::ofstream(stream_file) << chat({data_url(image)}, "OCR:", 10, {{"stream", true}}).dump();
    const std::string url = "http://127.0.0.1:" + std::to_string(server->port()) + "/v1/chat/completions";

    if (have_command("curl")) {
        const auto [out, status] =
            run_command("curl -sS --fail-with-body -H 'Content-Type: application/json' -d @" +
                        body_file.string() + " " + url);
        ASSERT_EQ(status, 0) << out;
        EXPECT_EQ(json::parse(out)["choices"][0]["message"]["content"], alone.text);
        const auto [streamed, stream_status] =
            run_command("curl -sS -N -d @" + stream_file.string() + " " + url);
        ASSERT_EQ(stream_status, 0);
        EXPECT_EQ(parse_sse(streamed).text, alone.text);
        EXPECT_TRUE(parse_sse(streamed).done);
    } else {
        ADD_FAILURE() << "curl is not installed (packaging/install-deps.sh installs it)";
    }

    ASSERT_TRUE(have_command("python3"));
    for (const std::filesystem::path& file : {body_file, stream_file}) {
        const auto [out, status] =
            run_command("python3 " + kClientScript.string() + " " + url + " " + file.string());
        ASSERT_EQ(status, 0) << out;
        const json result = json::parse(out);
        EXPECT_EQ(result["text"], alone.text) << file;
        EXPECT_EQ(result["completion_tokens"], alone.n_tokens) << file;
    }
}

TEST_F(OpenAiServerTest, ConcurrentRequestsMatchRequestsRunAlone) {
    const auto server = start();
    constexpr int kRequests = 12;
    const char* tasks[] = {"OCR:", "Table Recognition:", "Formula Recognition:", "Chart Recognition:"};
    std::vector<std::vector<uint8_t>> images;
    std::vector<Alone> alone;
    for (int i = 0; i < kRequests; ++i) {
        images.push_back(png(40 + 16 * (i % 5), 32 + 12 * (i % 3), 10 + i));
        alone.push_back(run_alone({images.back()}, tasks[i % 4], 8 + 3 * (i % 4)));
    }
    std::vector<std::string> texts(kRequests);
    std::vector<int> statuses(kRequests, 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < kRequests; ++i) {
        threads.emplace_back([&, i] {
            const json extra = i % 2 ? json{{"stream", true}} : json::object();
            const auto res = post(server->port(), "/v1/chat/completions",
                                  chat({data_url(images[i])}, tasks[i % 4], 8 + 3 * (i % 4), extra));
            if (res) {
                statuses[i] = res->status;
                texts[i] =
                    i % 2 ? parse_sse(res->body).text
                          : json::parse(res->body)["choices"][0]["message"]["content"].get<std::string>();
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    for (int i = 0; i < kRequests; ++i) {
        EXPECT_EQ(statuses[i], 200) << "request " << i;
        EXPECT_EQ(texts[i], alone[i].text) << "request " << i;
    }
}

// The receiver stops reading after the first chunk, and the client closes its connection: the request
// ends long before its 4000 tokens.
TEST_F(OpenAiServerTest, ADisconnectMidStreamCancelsTheRequest) {
    const auto server = start();
    const int64_t cancelled_before = service_->stats().n_cancelled;
    const auto started = std::chrono::steady_clock::now();
    httplib::Client client("127.0.0.1", server->port());
    client.set_read_timeout(120, 0);  // the sanitizers run slowly
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = json{{"prompt", "Hello"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}.dump();
    req.set_header("Content-Type", "application/json");
    int n_chunks = 0;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++n_chunks < 2; };
    const httplib::Result res = client.send(req);
    EXPECT_FALSE(res);  // the client gave up
    EXPECT_EQ(n_chunks, 2);
    for (int i = 0; i < 2400 && service_->stats().n_cancelled == cancelled_before; ++i) {
        std::this_thread::sleep_for(25ms);
    }
    const ServiceStats ended = service_->stats();
    EXPECT_EQ(ended.n_cancelled, cancelled_before + 1)
        << "finished " << ended.n_finished << ", failed " << ended.n_failed << ", running "
        << ended.n_running[1] << ", tokens " << ended.engine.runner.n_tokens;
    wait_idle();
    const ServiceStats stats = service_->stats();
    EXPECT_EQ(stats.n_kv_blocks_free, stats.n_kv_blocks);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 60s);
}

struct ErrorCase {
    std::string name;
    std::string path;
    std::string body;
    httplib::Headers headers;
    int status;
    std::string message;  // part of the error's message
};

TEST_F(OpenAiServerTest, ErrorsAreOpenAiErrorObjectsWithTheirStatus) {
    ServerParams p = params();
    p.api_key = "sesame";
    p.max_body_bytes = 256 * 1024;
    const auto server = start(p);
    const httplib::Headers key = {{"Authorization", "Bearer sesame"}};
    const std::string image = data_url(png(32, 32, 4));
    const std::vector<std::string> five(5, image);
    std::string long_prompt;
    for (int i = 0; i < 3000; ++i) {
        long_prompt += "word another ";
    }
    const std::vector<ErrorCase> cases = {
        {"malformed JSON", "/v1/chat/completions", "{\"messages\": [", key, 400, "not valid JSON"},
        {"wrong type", "/v1/chat/completions", chat({image}, "OCR:", 4, {{"max_tokens", "4"}}).dump(), key,
         400, "max_tokens must be an integer"},
        {"too many images", "/v1/chat/completions", chat(five, "OCR:", 4).dump(), key, 400,
         "5 images in one request, more than limit_mm_per_prompt 4"},
        {"prompt over max_model_len", "/v1/completions",
         json{{"prompt", long_prompt}, {"max_tokens", 4}}.dump(), key, 400, "max_model_len"},
        {"undecodable image", "/v1/chat/completions",
         chat({"data:image/png;base64,bm90IGFuIGltYWdl"}, "OCR:", 4).dump(), key, 400,
         "could not be decoded"},
        {"image URL", "/v1/chat/completions", chat({"https://example.com/a.png"}, "OCR:", 4).dump(), key, 400,
         "not fetched"},
        {"body too large", "/v1/completions", json{{"prompt", std::string(300 * 1024, 'a')}}.dump(), key, 413,
         "larger than the 262144 bytes the server takes (--max-body-size)"},
        {"missing key", "/v1/completions", json{{"prompt", "a"}}.dump(), {}, 401, "an API key is required"},
        {"wrong key",
         "/v1/completions",
         json{{"prompt", "a"}}.dump(),
         {{"Authorization", "Bearer open"}},
         401,
         "not valid"},
        {"unknown model", "/v1/completions", json{{"prompt", "a"}, {"model", "gpt-5"}}.dump(), key, 404,
         "the model 'gpt-5' does not exist"},
        {"unknown endpoint", "/v1/embeddings", "{}", key, 404, "no such endpoint: POST /v1/embeddings"},
    };
    for (const ErrorCase& c : cases) {
        httplib::Client client("127.0.0.1", server->port());
        client.set_read_timeout(120, 0);
        const auto res = client.Post(c.path.c_str(), c.headers, c.body, "application/json");
        ASSERT_TRUE(res) << c.name << ": " << httplib::to_string(res.error());
        EXPECT_EQ(res->status, c.status) << c.name << ": " << res->body;
        const json error = json::parse(res->body, nullptr, false);
        ASSERT_TRUE(error.is_object() && error.contains("error")) << c.name << ": " << res->body;
        EXPECT_NE(error["error"]["message"].get<std::string>().find(c.message), std::string::npos)
            << c.name << ": " << res->body;
        EXPECT_TRUE(error["error"].contains("type")) << c.name;
    }
    // The health check needs no key; the API does.
    httplib::Client client("127.0.0.1", server->port());
    client.set_read_timeout(120, 0);  // the sanitizers run slowly
    EXPECT_EQ(client.Get("/health")->status, 200);
    EXPECT_EQ(client.Get("/v1/models")->status, 401);
    const auto models = client.Get("/v1/models", key);
    ASSERT_EQ(models->status, 200);
    EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "paddleocr-vl-tiny");
    wait_idle();
}

// Image URLs are refused unless the server may fetch them; then they are fetched from a server on
// 127.0.0.1 and answered as the same image sent inline, and a URL that fails is a 400 naming it.
TEST_F(OpenAiServerTest, ImageUrlsAreFetchedOnlyWhenAllowed) {
    const std::vector<uint8_t> image = png(72, 40, 5);
    httplib::Server files;
    files.Get("/page.png", [&](const httplib::Request&, httplib::Response& res) {
        res.set_content(std::string(image.begin(), image.end()), "image/png");
    });
    files.Get("/moved.png",
              [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/page.png"); });
    const int files_port = files.bind_to_any_port("127.0.0.1");
    std::thread serving([&] { files.listen_after_bind(); });
    const std::string base = "http://127.0.0.1:" + std::to_string(files_port);
    const Alone alone = run_alone({image}, "OCR:", 10);

    {
        const auto refusing = start();
        const auto res =
            post(refusing->port(), "/v1/chat/completions", chat({base + "/page.png"}, "OCR:", 10));
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, 400);
        EXPECT_NE(res->body.find("--allow-image-urls"), std::string::npos) << res->body;
    }
    ServerParams p = params();
    p.fetch_image_urls = true;
    p.max_body_bytes = 64 * 1024;
    const auto server = start(p);
    for (const char* path : {"/page.png", "/moved.png"}) {
        const auto res = post(server->port(), "/v1/chat/completions", chat({base + path}, "OCR:", 10));
        ASSERT_TRUE(res);
        ASSERT_EQ(res->status, 200) << path << ": " << res->body;
        EXPECT_EQ(json::parse(res->body)["choices"][0]["message"]["content"], alone.text) << path;
    }
    const auto missing = post(server->port(), "/v1/chat/completions", chat({base + "/gone.png"}, "OCR:", 10));
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 400);
    EXPECT_NE(missing->body.find("could not fetch " + base + "/gone.png"), std::string::npos)
        << missing->body;
    files.stop();
    serving.join();
}

// Requests are admitted, not connections: with one place and none waiting, a client holding a connection with
// half its headers sent and an idle keep-alive connection leave the place free; a request that runs holds it,
// and another is answered 429 at once with the counts as they are, then served once the first has gone.
TEST_F(OpenAiServerTest, AdmissionCountsRequestsNotConnections) {
    ServerParams p = params();
    p.max_concurrency = 1;
    p.max_queued = 0;
    const auto server = start(p);
    const int holder = connect_to(server->port());
    const std::string half = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    ASSERT_EQ(::send(holder, half.data(), half.size(), 0), static_cast<ssize_t>(half.size()));
    httplib::Client idle("127.0.0.1", server->port());
    idle.set_keep_alive(true);
    ASSERT_EQ(idle.Get("/health")->status, 200);  // now idle, kept alive
    std::this_thread::sleep_for(200ms);

    const auto served = post(server->port(), "/v1/completions", {{"prompt", "a"}, {"max_tokens", 2}});
    ASSERT_TRUE(served);
    EXPECT_EQ(served->status, 200) << served->body;

    // A long stream holds the one place.
    std::atomic<bool> streaming{false};
    std::atomic<bool> stop_reading{false};
    std::thread runner([&] {
        httplib::Client client("127.0.0.1", server->port());
        client.set_read_timeout(120, 0);
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.body =
            json{{"prompt", "Hello"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}.dump();
        req.set_header("Content-Type", "application/json");
        req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
            streaming = true;
            return !stop_reading.load();
        };
        client.send(req);
    });
    for (int i = 0; i < 2000 && !streaming; ++i) {
        std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(streaming);
    const auto started = std::chrono::steady_clock::now();
    const auto busy = post(server->port(), "/v1/completions", {{"prompt", "a"}, {"max_tokens", 2}});
    ASSERT_TRUE(busy);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
    EXPECT_EQ(busy->status, 429) << busy->body;
    EXPECT_EQ(json::parse(busy->body)["error"]["code"], "too_many_requests");
    EXPECT_NE(busy->body.find("1 requests are being served (1 at most) and 0 wait"), std::string::npos)
        << busy->body;
    EXPECT_EQ(busy->get_header_value("Retry-After"), "1");

    stop_reading = true;
    runner.join();
    ::close(holder);
    // Served again once the stream's client has gone, as Retry-After says.
    int status = 429;
    for (int i = 0; i < 100 && status == 429; ++i) {
        std::this_thread::sleep_for(50ms);
        const auto later = post(server->port(), "/v1/completions", {{"prompt", "a"}, {"max_tokens", 2}});
        status = later ? later->status : -1;
    }
    EXPECT_EQ(status, 200);
    wait_idle();
}

// A port in use is an error naming the address, and the option to change.
TEST_F(OpenAiServerTest, APortInUseIsAClearError) {
    const auto first = start();
    ServerParams p = params();
    p.port = first->port();
    const auto second = make_server(p);
    try {
        second->start();
        FAIL() << "a second server listened on port " << p.port;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(p.port)),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("--port"), std::string::npos) << e.what();
    }
}

// A metric's value in Prometheus' text format: the line "NAME VALUE"; -1 when there is none.
double metric(const std::string& text, const std::string& name) {
    size_t at = 0;
    while (at < text.size()) {
        const size_t end = std::min(text.find('\n', at), text.size());
        const std::string_view line(text.data() + at, end - at);
        if (line.size() > name.size() && line.substr(0, name.size()) == name && line[name.size()] == ' ') {
            return std::stod(std::string(line.substr(name.size() + 1)));
        }
        at = end + 1;
    }
    return -1.0;
}

TEST_F(OpenAiServerTest, MetricsFollowTheRequests) {
    const auto server = start();
    httplib::Client metrics("127.0.0.1", server->metrics_port());
    metrics.set_read_timeout(120, 0);  // the sanitizers run slowly
    const auto before = metrics.Get("/metrics");
    ASSERT_TRUE(before);
    ASSERT_EQ(before->status, 200);
    EXPECT_EQ(metric(before->body, "fastdeploy:requests_number"), 0);
    EXPECT_NE(before->body.find("# TYPE fastdeploy:time_to_first_token_seconds histogram"),
              std::string::npos);

    ASSERT_EQ(post(server->port(), "/v1/completions",
                   {{"prompt", "a b c"}, {"max_tokens", 5}, {"ignore_eos", true}})
                  ->status,
              200);
    ASSERT_EQ(post(server->port(), "/v1/completions", {{"prompt", 3}})->status, 400);
    const std::string text = metrics.Get("/metrics")->body;
    EXPECT_EQ(metric(text, "fastdeploy:requests_number"), 2);
    EXPECT_EQ(metric(text, "fastdeploy:request_success_total"), 1);
    EXPECT_EQ(metric(text, "fastdeploy:generation_tokens_total"), 5);
    EXPECT_GT(metric(text, "fastdeploy:prompt_tokens_total"), 0);
    EXPECT_EQ(metric(text, "fastdeploy:time_to_first_token_seconds_count"), 1);
    EXPECT_EQ(metric(text, "fastdeploy:time_per_output_token_seconds_count"), 1);
    EXPECT_EQ(metric(text, "fastdeploy:e2e_request_latency_seconds_count"), 1);
    EXPECT_EQ(metric(text, "fastdeploy:num_requests_running"), 0);
    EXPECT_GT(metric(text, "fastdeploy:available_gpu_block_num"), 0);
    EXPECT_EQ(metric(text, "fastdeploy:available_gpu_block_num"), metric(text, "folio:kv_blocks"));
}

// A non-streaming request whose client closes its connection is cancelled as it runs, counted cancelled in
// the metrics, and its blocks are freed.
TEST_F(OpenAiServerTest, ANonStreamingRequestWhoseClientGoesAwayIsCancelled) {
    const auto server = start();
    const ServiceStats before = service_->stats();
    const int fd = connect_to(server->port());
    const std::string body = json{{"prompt", "Hello"}, {"max_tokens", 4000}, {"ignore_eos", true}}.dump();
    ASSERT_TRUE(send_all(fd,
                         "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                         "application/json\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" + body));
    for (int i = 0; i < 2000 && service_->stats().engine.runner.n_tokens == before.engine.runner.n_tokens;
         ++i) {
        std::this_thread::sleep_for(5ms);
    }
    ::close(fd);
    for (int i = 0; i < 2400 && service_->stats().n_cancelled == before.n_cancelled; ++i) {
        std::this_thread::sleep_for(25ms);
    }
    const ServiceStats after = service_->stats();
    EXPECT_EQ(after.n_cancelled, before.n_cancelled + 1);
    EXPECT_EQ(after.n_finished, before.n_finished) << "the request ran to its end";
    wait_idle();
    httplib::Client metrics("127.0.0.1", server->metrics_port());
    const std::string text = metrics.Get("/metrics")->body;
    EXPECT_EQ(metric(text, "folio:request_cancelled_total"), 1) << text;
    EXPECT_EQ(metric(text, "fastdeploy:request_success_total"), 0);
    EXPECT_EQ(metric(text, "folio:request_failure_total"), 0);
    const ServiceStats idle = service_->stats();
    EXPECT_EQ(idle.n_kv_blocks_free, idle.n_kv_blocks);
}

struct FramingCase {
    std::string name;
    std::string request;  // sent as it is
    bool shut_write;      // the client then closes its side
    int status;
    std::string message;
};

// Requests whose framing is wrong are answered at once (not after a read timeout), before any body is read.
TEST_F(OpenAiServerTest, MalformedFramingIsAnsweredAtOnce) {
    ServerParams p = params();
    p.max_body_bytes = 1 << 20;
    const auto server = start(p);
    const std::string head =
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
    const std::string body = R"({"prompt": "a", "max_tokens": 2})";
    const std::string n = std::to_string(body.size());
    const std::vector<FramingCase> cases = {
        {"two Content-Length", head + "Content-Length: " + n + "\r\nContent-Length: " + n + "\r\n\r\n" + body,
         false, 400, "more than one Content-Length"},
        {"negative Content-Length", head + "Content-Length: -5\r\n\r\n" + body, false, 400,
         "not a byte count"},
        {"Content-Length not a number", head + "Content-Length: 12abc\r\n\r\n" + body, false, 400,
         "not a byte count"},
        {"Content-Length with chunked",
         head + "Content-Length: " + n + "\r\nTransfer-Encoding: chunked\r\n\r\n", false, 400,
         "both Transfer-Encoding and Content-Length"},
        {"Content-Length over the limit", head + "Content-Length: 300000000\r\n\r\n", false, 413,
         "larger than the 1048576 bytes"},
        {"no length", head + "\r\n" + body, false, 411, "Content-Length"},
        {"body shorter than its length", head + "Content-Length: 100\r\n\r\n" + body, true, 400,
         "could not be read"},
        {"body longer than its length", head + "Content-Length: 10\r\n\r\n" + body, false, 400,
         "not valid JSON"},
        {"malformed chunk", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", false, 400,
         "chunked encoding is malformed"},
    };
    for (const FramingCase& c : cases) {
        const int fd = connect_to(server->port());
        ASSERT_TRUE(send_all(fd, c.request)) << c.name;
        if (c.shut_write) {
            ::shutdown(fd, SHUT_WR);
        }
        const RawReply reply = read_reply(fd);
        ::close(fd);
        EXPECT_EQ(reply.status, c.status) << c.name << ": " << reply.head << reply.body;
        EXPECT_LT(reply.took, 2s) << c.name;
        EXPECT_NE(reply.body.find(c.message), std::string::npos) << c.name << ": " << reply.body;
        EXPECT_TRUE(json::parse(reply.body, nullptr, false).contains("error"))
            << c.name << ": " << reply.body;
    }
    // A chunked body is refused as soon as it goes past the limit, while the client is still sending, and is
    // never held whole.
    ASSERT_TRUE(reset_peak_rss());
    const int64_t peak_before = peak_rss_bytes();
    const int fd = connect_to(server->port());
    ASSERT_TRUE(send_all(fd, head + "Transfer-Encoding: chunked\r\n\r\n"));
    std::atomic<int64_t> sent{0};
    std::thread sender([&] {
        const std::string chunk = "100000\r\n" + std::string(0x100000, 'a') + "\r\n";
        for (int i = 0; i < 300 && send_all(fd, chunk); ++i) {
            sent += 0x100000;
        }
    });
    const RawReply reply = read_reply(fd, 20000ms);
    ::shutdown(fd, SHUT_RDWR);
    sender.join();
    ::close(fd);
    EXPECT_EQ(reply.status, 413) << reply.head << reply.body;
    EXPECT_NE(reply.body.find("larger than the 1048576 bytes"), std::string::npos) << reply.body;
    EXPECT_LT(sent.load(), int64_t{300} << 20) << "the whole body was taken";
    if (!kSanitized) {
        EXPECT_LT(peak_rss_bytes() - peak_before, int64_t{64} << 20);
    }
}

// Headers that come too slowly and bodies that stop coming are answered 408 after their time limits.
TEST_F(OpenAiServerTest, SlowHeadersAndBodiesTimeOut) {
    ServerParams p = params();
    p.header_timeout = 400ms;
    p.body_timeout = 400ms;
    const auto server = start(p);
    const int slow_head = connect_to(server->port());
    ASSERT_TRUE(send_all(slow_head, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    const RawReply head_reply = read_reply(slow_head, 5000ms);
    ::close(slow_head);
    EXPECT_EQ(head_reply.status, 408) << head_reply.body;
    EXPECT_LT(head_reply.took, 2s);

    const int slow_body = connect_to(server->port());
    ASSERT_TRUE(send_all(slow_body,
                         "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"));
    const RawReply body_reply = read_reply(slow_body, 5000ms);
    ::close(slow_body);
    EXPECT_EQ(body_reply.status, 408) << body_reply.body;
    EXPECT_NE(body_reply.body.find("did not arrive in time"), std::string::npos) << body_reply.body;
    EXPECT_LT(body_reply.took, 2s);
}

// A PNG of width x height black pixels, compressed as it is written, never held decoded.
std::vector<uint8_t> black_png(uint32_t width, uint32_t height) {
    std::vector<uint8_t> idat;
    z_stream z{};
    EXPECT_EQ(deflateInit(&z, 9), Z_OK);
    const std::vector<uint8_t> row(1 + size_t{3} * width, 0);
    std::vector<uint8_t> out(1 << 16);
    for (uint32_t y = 0; y < height; ++y) {
        z.next_in = const_cast<uint8_t*>(row.data());
        z.avail_in = static_cast<uInt>(row.size());
        const int flush = y + 1 == height ? Z_FINISH : Z_NO_FLUSH;
        do {
            z.next_out = out.data();
            z.avail_out = static_cast<uInt>(out.size());
            deflate(&z, flush);
            idat.insert(idat.end(), out.data(), out.data() + (out.size() - z.avail_out));
        } while (z.avail_out == 0);
    }
    deflateEnd(&z);
    const auto be32 = [](std::vector<uint8_t>& v, uint32_t x) {
        for (int shift = 24; shift >= 0; shift -= 8) {
            v.push_back(static_cast<uint8_t>(x >> shift));
        }
    };
    std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const auto chunk = [&](const char* type, const std::vector<uint8_t>& data) {
        be32(png, static_cast<uint32_t>(data.size()));
        std::vector<uint8_t> typed(type, type + 4);
        typed.insert(typed.end(), data.begin(), data.end());
        png.insert(png.end(), typed.begin(), typed.end());
        be32(png, static_cast<uint32_t>(crc32(0, typed.data(), static_cast<uInt>(typed.size()))));
    };
    std::vector<uint8_t> header;
    be32(header, width);
    be32(header, height);
    header.insert(header.end(), {8, 2, 0, 0, 0});  // 8-bit RGB
    chunk("IHDR", header);
    chunk("IDAT", idat);
    chunk("IEND", {});
    return png;
}

// Sixteen small PNGs of 16000x16000 pixels at once (1.5 GB each to decode) are refused from their headers,
// since the model sees at most max_pixels of them, and the process's memory hardly moves.
TEST_F(OpenAiServerTest, HugeImagesAreRefusedFromTheirHeaders) {
    const auto server = start();
    EXPECT_EQ(server->max_image_pixels(), server::kImagePixelsOverMaxPixels * 1536 * 1536);
    const std::string url = data_url(black_png(16000, 16000));
    EXPECT_LT(url.size(), size_t{2} << 20);
    const std::string body = chat({url}, "OCR:", 4).dump();
    ASSERT_TRUE(reset_peak_rss());
    const int64_t peak_before = peak_rss_bytes();
    std::vector<int> statuses(16, 0);
    std::vector<std::string> bodies(16);
    std::vector<std::thread> threads;
    for (int i = 0; i < 16; ++i) {
        threads.emplace_back([&, i] {
            httplib::Client client("127.0.0.1", server->port());
            client.set_read_timeout(120, 0);
            const auto res = client.Post("/v1/chat/completions", body, "application/json");
            statuses[i] = res ? res->status : -1;
            bodies[i] = res ? res->body : httplib::to_string(res.error());
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    const int64_t grown = peak_rss_bytes() - peak_before;
    for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(statuses[i], 400) << bodies[i];
        EXPECT_NE(bodies[i].find("16000x16000 pixels, more than the"), std::string::npos) << bodies[i];
    }
    // The bodies, their parsed copies and the decoded payloads: a few MiB each, nothing like a decode (the
    // sanitizers' own memory is left out).
    if (!kSanitized) {
        EXPECT_LT(grown, int64_t{256} << 20) << "peak memory grew by " << (grown >> 20) << " MiB";
    }

    // Below the cap, an image is decoded and served.
    ServerParams p = params();
    p.max_image_pixels = 4000 * 4000;
    const auto lower = start(p);
    const auto small =
        post(lower->port(), "/v1/chat/completions", chat({data_url(black_png(64, 48))}, "OCR:", 4));
    ASSERT_TRUE(small);
    EXPECT_EQ(small->status, 200) << small->body;
    const auto over =
        post(lower->port(), "/v1/chat/completions", chat({data_url(black_png(4001, 4000))}, "OCR:", 4));
    ASSERT_TRUE(over);
    EXPECT_EQ(over->status, 400) << over->body;
    EXPECT_NE(over->body.find("--max-image-pixels"), std::string::npos) << over->body;
}

// A max_tokens over what the context leaves is lowered to it, and the answer ends with finish_reason length;
// a prompt that leaves no room is a 400 with OpenAI's code context_length_exceeded.
TEST_F(OpenAiServerTest, MaxTokensIsClampedToTheRoomLeft) {
    const auto server = start();
    std::string prompt;
    for (int i = 0; i < 390; ++i) {  // about 3,900 tokens, leaving a few hundred to generate
        prompt += "word another ";
    }
    const auto res =
        post(server->port(), "/v1/completions",
             {{"prompt", prompt}, {"max_tokens", 8192}, {"ignore_eos", true}, {"temperature", 0}});
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json answer = json::parse(res->body);
    const int64_t n_prompt = answer["usage"]["prompt_tokens"];
    EXPECT_GT(n_prompt, 3000);
    EXPECT_LT(n_prompt, 4096);
    EXPECT_EQ(answer["usage"]["completion_tokens"], 4096 - n_prompt);
    EXPECT_EQ(answer["choices"][0]["finish_reason"], "length");

    std::string too_long;
    for (int i = 0; i < 3000; ++i) {
        too_long += "word another ";
    }
    const auto refused = post(server->port(), "/v1/completions", {{"prompt", too_long}, {"max_tokens", 4}});
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400);
    const json error = json::parse(refused->body)["error"];
    EXPECT_EQ(error["code"], "context_length_exceeded") << refused->body;
    EXPECT_NE(error["message"].get<std::string>().find("max_model_len"), std::string::npos);
    wait_idle();
}

// GET /v1/models/{id} answers the model's object, or 404 naming the model; a malformed body's error names
// where it went wrong, not the JSON parser's internals.
TEST_F(OpenAiServerTest, ModelByIdAndPlainJsonErrors) {
    ServerParams p = params();
    p.model_names = {"paddleocr-vl-tiny", "PaddlePaddle/PaddleOCR-VL"};
    const auto server = start(p);
    httplib::Client client("127.0.0.1", server->port());
    for (const char* id : {"paddleocr-vl-tiny", "PaddlePaddle/PaddleOCR-VL"}) {
        const auto res = client.Get((std::string("/v1/models/") + id).c_str());
        ASSERT_TRUE(res);
        ASSERT_EQ(res->status, 200) << res->body;
        const json model = json::parse(res->body);
        EXPECT_EQ(model["id"], id);
        EXPECT_EQ(model["object"], "model");
        EXPECT_EQ(model["max_model_len"], 4096);
    }
    const auto missing = client.Get("/v1/models/gpt-5");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    EXPECT_EQ(json::parse(missing->body)["error"]["code"], "model_not_found");

    for (const std::string& body : {std::string("{\"messages\": ["), std::string("{\"prompt\": \"a\" x}")}) {
        const auto res = client.Post("/v1/completions", body, "application/json");
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, 400);
        const std::string message = json::parse(res->body)["error"]["message"];
        EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
        EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
        EXPECT_EQ(message.find("parse_error"), std::string::npos) << message;
    }
}

// Stopping ends a stream in flight with an error event saying so, and answers a request still running 503,
// in well under the time either would have taken.
TEST_F(OpenAiServerTest, StoppingAnswersRequestsInFlight) {
    auto server = start();
    const int port = server->port();
    std::string streamed;
    int stream_status = 0;
    int whole_status = 0;
    std::string whole_body;
    std::atomic<int> n_started{0};
    std::thread stream_client([&] {
        httplib::Client client("127.0.0.1", port);
        client.set_read_timeout(120, 0);
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.body =
            json{{"prompt", "Hello"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}.dump();
        req.set_header("Content-Type", "application/json");
        req.response_handler = [&](const httplib::Response& r) {
            stream_status = r.status;
            return true;
        };
        req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
            if (streamed.empty()) {
                ++n_started;
            }
            streamed.append(data, n);
            return true;
        };
        client.send(req);
    });
    std::thread whole_client([&] {
        ++n_started;
        const auto res =
            post(port, "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 4000}, {"ignore_eos", true}});
        whole_status = res ? res->status : -1;
        whole_body = res ? res->body : "";
    });
    for (int i = 0; i < 2000 && (n_started < 2 || service_->stats().n_running[1] < 2); ++i) {
        std::this_thread::sleep_for(5ms);
    }
    const auto stopping = std::chrono::steady_clock::now();
    server->stop();
    const auto took = std::chrono::steady_clock::now() - stopping;
    stream_client.join();
    whole_client.join();
    EXPECT_LT(took, 5s);
    EXPECT_EQ(stream_status, 200);
    const Sse sse = parse_sse(streamed);
    ASSERT_FALSE(sse.chunks.empty()) << streamed;
    EXPECT_EQ(sse.chunks.back()["error"]["code"], "stopped") << streamed;
    EXPECT_EQ(sse.chunks.back()["error"]["message"], "the server is stopping");
    EXPECT_TRUE(sse.done);
    EXPECT_EQ(whole_status, 503) << whole_body;
    EXPECT_EQ(json::parse(whole_body)["error"]["code"], "stopped") << whole_body;
    wait_idle();
}

// The metrics as strict parsers read them: each family's samples after its HELP and TYPE, a histogram's
// buckets before its _sum and _count, no gauge named _total; token counters move while a request runs.
TEST_F(OpenAiServerTest, MetricsExpositionIsStrictAndCountsTokensAsTheyCome) {
    const auto server = start();
    std::atomic<bool> stop_reading{false};
    std::atomic<int> n_chunks{0};
    std::thread runner([&] {
        httplib::Client client("127.0.0.1", server->port());
        client.set_read_timeout(120, 0);
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.body =
            json{{"prompt", "Hello"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}.dump();
        req.set_header("Content-Type", "application/json");
        req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
            ++n_chunks;
            return !stop_reading.load();
        };
        client.send(req);
    });
    for (int i = 0; i < 2000 && n_chunks < 3; ++i) {
        std::this_thread::sleep_for(5ms);
    }
    httplib::Client metrics("127.0.0.1", server->metrics_port());
    const std::string text = metrics.Get("/metrics")->body;
    stop_reading = true;
    runner.join();
    EXPECT_GT(metric(text, "fastdeploy:generation_tokens_total"), 0) << text;
    EXPECT_GT(metric(text, "fastdeploy:prompt_tokens_total"), 0);
    EXPECT_EQ(metric(text, "fastdeploy:request_success_total"), 0);

    std::string family;
    std::string type;
    bool seen_sum = false;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind("# TYPE ", 0) == 0) {
            std::istringstream words(line.substr(7));
            words >> family >> type;
            seen_sum = false;
            if (type == "gauge") {
                EXPECT_FALSE(family.ends_with("_total")) << family;
            }
            continue;
        }
        if (line.empty() || line[0] == '#') {
            continue;
        }
        const std::string name = line.substr(0, line.find_first_of(" {"));
        EXPECT_EQ(name.rfind(family, 0), 0u) << name << " outside its family " << family;
        if (type == "histogram") {
            if (name == family + "_bucket") {
                EXPECT_FALSE(seen_sum) << "a bucket of " << family << " after its _sum or _count";
            } else {
                seen_sum = true;
            }
        }
    }
    wait_idle();
}

// --log-requests: a line for each request with its method, path, status, tokens and time.
TEST_F(OpenAiServerTest, RequestsAreLoggedWhenAsked) {
    std::mutex mutex;
    std::vector<std::string> lines;
    const LogSink previous = set_log_sink([&](std::string_view line) {
        const std::lock_guard lock(mutex);
        lines.emplace_back(line);
    });
    {
        ServerParams p = params();
        p.log_requests = true;
        const auto server = start(p);
        ASSERT_EQ(post(server->port(), "/v1/completions",
                       {{"prompt", "a b"}, {"max_tokens", 3}, {"ignore_eos", true}})
                      ->status,
                  200);
        ASSERT_EQ(httplib::Client("127.0.0.1", server->port()).Get("/v1/nothing")->status, 404);
    }
    set_log_sink(previous);
    const std::lock_guard lock(mutex);
    std::string all;
    for (const std::string& l : lines) {
        all += l + "\n";
    }
    // A line holding the parts in order and ending in the request's seconds with three decimals.
    const auto logged = [&](std::initializer_list<std::string_view> parts) {
        return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
            size_t at = 0;
            for (const std::string_view part : parts) {
                at = l.find(part, at);
                if (at == std::string::npos) {
                    return false;
                }
                at += part.size();
            }
            const size_t space = l.rfind(' ');
            const std::string_view time =
                space == std::string::npos ? "" : std::string_view(l).substr(space + 1);
            const size_t dot = time.find('.');
            const auto digits = [](std::string_view d) {
                return !d.empty() &&
                       std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
            };
            return space >= at && dot != std::string_view::npos && time.size() == dot + 5 &&
                   time.back() == 's' && digits(time.substr(0, dot)) && digits(time.substr(dot + 1, 3));
        });
    };
    EXPECT_TRUE(logged({"127.0.0.1:", "\"POST /v1/completions\" 200 prompt_tokens=", " completion_tokens=3"}))
        << all;
    EXPECT_TRUE(logged({"\"GET /v1/nothing\" 404"})) << all;
}

// 2,000 requests from 32 keep-alive connections, beside 8 idle keep-alive connections and 4 clients that send
// their requests a byte at a time, with places for exactly the 32 busy ones and none to wait: every request
// answered, none refused (429) while a place is free, none lost, the cache empty after. A suite of its own,
// left out of the ThreadSanitizer run for its time.
using OpenAiServerLoad = OpenAiServerTest;

TEST_F(OpenAiServerLoad, LoadLosesNothingAndLeaksNoBlock) {
    ServerParams p = params();
    p.max_concurrency = 32 + 4;  // the busy connections and the slow clients, one request each at a time
    p.max_queued = 0;
    p.keep_alive_timeout = 600s;  // the idle connections stay for the whole run
    const auto server = start(p);
    constexpr int kConnections = 32;
    constexpr int kPerConnection = 2000 / kConnections + 1;  // 2,016 in all
    std::atomic<int> n_ok{0};
    std::atomic<int> n_tokens{0};
    std::vector<std::string> failures(kConnections);
    std::vector<std::thread> threads;

    // Idle keep-alive connections: one request each, then nothing.
    std::vector<std::unique_ptr<httplib::Client>> idle;
    for (int i = 0; i < 8; ++i) {
        idle.push_back(std::make_unique<httplib::Client>("127.0.0.1", server->port()));
        idle.back()->set_keep_alive(true);
        const auto res = idle.back()->Get("/v1/models");
        ASSERT_TRUE(res && res->status == 200);
    }
    // Slow clients: each request's bytes 2 ms apart, over and over while the busy connections run.
    std::atomic<bool> busy_done{false};
    std::atomic<int> n_slow_ok{0};
    std::vector<std::string> slow_failures(4);
    std::vector<std::thread> slow;
    for (int c = 0; c < 4; ++c) {
        slow.emplace_back([&, c] {
            const std::string body =
                json{{"prompt", "slow " + std::to_string(c)}, {"max_tokens", 2}, {"ignore_eos", true}}.dump();
            const std::string request =
                "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                "application/json\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body;
            const int fd = connect_to(server->port());
            while (!busy_done) {
                for (const char byte : request) {
                    if (!send_all(fd, std::string(1, byte))) {
                        slow_failures[c] = "send failed";
                        ::close(fd);
                        return;
                    }
                    std::this_thread::sleep_for(2ms);
                }
                const RawReply reply = read_reply(fd, 300000ms);
                if (reply.status != 200) {
                    slow_failures[c] = std::to_string(reply.status) + " " + reply.body;
                    break;
                }
                ++n_slow_ok;
            }
            ::close(fd);
        });
    }
    for (int c = 0; c < kConnections; ++c) {
        threads.emplace_back([&, c] {
            httplib::Client client("127.0.0.1", server->port());
            client.set_keep_alive(true);
            client.set_read_timeout(300, 0);
            for (int i = 0; i < kPerConnection; ++i) {
                const json body = {{"prompt", "item " + std::to_string(c * 1000 + i)},
                                   {"max_tokens", 1 + i % 3},
                                   {"ignore_eos", true},
                                   {"stream", i % 4 == 0}};
                const auto res = client.Post("/v1/completions", body.dump(), "application/json");
                if (!res || res->status != 200) {
                    failures[c] = "request " + std::to_string(i) + ": " +
                                  (res ? res->body : httplib::to_string(res.error()));
                    return;
                }
                const int64_t expected = 1 + i % 3;
                if (i % 4 == 0) {
                    const Sse sse = parse_sse(res->body);
                    if (!sse.done || sse.chunks.back()["usage"]["completion_tokens"] != expected) {
                        failures[c] = "stream: " + res->body;
                        return;
                    }
                } else if (json::parse(res->body)["usage"]["completion_tokens"] != expected) {
                    failures[c] = res->body;
                    return;
                }
                n_tokens += static_cast<int>(expected);
                ++n_ok;
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    busy_done = true;
    for (std::thread& t : slow) {
        t.join();
    }
    for (int c = 0; c < kConnections; ++c) {
        EXPECT_EQ(failures[c], "") << "connection " << c;
    }
    for (int c = 0; c < 4; ++c) {
        EXPECT_EQ(slow_failures[c], "") << "slow client " << c;
    }
    EXPECT_GE(n_slow_ok, 4);
    EXPECT_EQ(n_ok, kConnections * kPerConnection);
    for (const auto& client : idle) {  // still open, and served at once
        const auto res = client->Get("/health");
        EXPECT_TRUE(res && res->status == 200);
    }
    wait_idle();
    const ServiceStats stats = service_->stats();
    EXPECT_EQ(stats.n_kv_blocks_free, stats.n_kv_blocks);
    EXPECT_EQ(stats.n_running[0] + stats.n_running[1] + stats.n_waiting[0] + stats.n_waiting[1], 0);
    httplib::Client metrics("127.0.0.1", server->metrics_port());
    metrics.set_read_timeout(120, 0);  // the sanitizers run slowly
    const std::string text = metrics.Get("/metrics")->body;
    EXPECT_EQ(metric(text, "fastdeploy:request_success_total"), kConnections * kPerConnection + n_slow_ok);
    EXPECT_EQ(metric(text, "fastdeploy:generation_tokens_total"), n_tokens.load() + 2 * n_slow_ok);
    EXPECT_EQ(metric(text, "folio:request_failure_total"), 0);
}

}  // namespace
