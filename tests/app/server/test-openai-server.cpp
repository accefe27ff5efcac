// The OpenAI-compatible server on 127.0.0.1 with the fixture model on the CPU, driven by real clients:
// cpp-httplib's client, curl and Python's standard library. Answers equal the service's own for the same
// requests, alone or concurrent; streams add up; a client that goes away cancels its request; every error is
// an OpenAI error object with its status; overload is answered 429; a bounded load loses nothing and leaves
// every KV block free.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <thread>
#include <vector>

#include "app/images/image-loader.h"
#include "app/server/openai-protocol.h"
#include "app/server/openai-server.h"
#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/service/engine-service.h"
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

    std::unique_ptr<OpenAiServer> start(ServerParams p = params()) {
        auto s = std::make_unique<OpenAiServer>(
            *service_, std::move(p),
            [](std::span<const uint8_t> bytes, std::string_view name) { return decode_image(bytes, name); });
        s->start();
        return s;
    }

    static httplib::Result post(int port, const std::string& path, const json& body,
                                const httplib::Headers& headers = {}) {
        httplib::Client client("127.0.0.1", port);
        client.set_read_timeout(120, 0);
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
         "larger than the server takes"},
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

// One connection served at once and none waiting: while a client holds the one thread (its request's
// headers half sent), another is answered 429, and served once the first has gone.
TEST_F(OpenAiServerTest, OverloadIsAnswered429) {
    ServerParams p = params();
    p.max_concurrency = 1;
    p.max_queued = 0;
    const auto server = start(p);
    const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(holder, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(server->port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(holder, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    const std::string half = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    ASSERT_EQ(::send(holder, half.data(), half.size(), 0), static_cast<ssize_t>(half.size()));
    std::this_thread::sleep_for(200ms);  // the pool's thread reads it

    const auto busy = post(server->port(), "/v1/completions", {{"prompt", "a"}, {"max_tokens", 2}});
    ASSERT_TRUE(busy);
    EXPECT_EQ(busy->status, 429);
    EXPECT_EQ(json::parse(busy->body)["error"]["code"], "too_many_requests");
    EXPECT_EQ(busy->get_header_value("Retry-After"), "1");

    ::close(holder);
    // Served again once the first connection has gone, as Retry-After says.
    int status = 429;
    for (int i = 0; i < 100 && status == 429; ++i) {
        std::this_thread::sleep_for(50ms);
        const auto later = post(server->port(), "/v1/completions", {{"prompt", "a"}, {"max_tokens", 2}});
        status = later ? later->status : -1;
    }
    EXPECT_EQ(status, 200);
}

// A port in use is an error naming the address, and the option to change.
TEST_F(OpenAiServerTest, APortInUseIsAClearError) {
    const auto first = start();
    ServerParams p = params();
    p.port = first->port();
    OpenAiServer second(*service_, p, [](std::span<const uint8_t> bytes, std::string_view name) {
        return decode_image(bytes, name);
    });
    try {
        second.start();
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
    EXPECT_EQ(metric(text, "fastdeploy:available_gpu_block_num"), metric(text, "folio:kv_blocks_total"));
}

// 2,000 requests from 32 keep-alive connections: every one answered, none lost, the cache empty after. A
// suite of its own, left out of the ThreadSanitizer run for its time.
using OpenAiServerLoad = OpenAiServerTest;

TEST_F(OpenAiServerLoad, LoadLosesNothingAndLeaksNoBlock) {
    const auto server = start();
    constexpr int kConnections = 32;
    constexpr int kPerConnection = 2000 / kConnections + 1;  // 2,016 in all
    std::atomic<int> n_ok{0};
    std::atomic<int> n_tokens{0};
    std::vector<std::string> failures(kConnections);
    std::vector<std::thread> threads;
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
    for (int c = 0; c < kConnections; ++c) {
        EXPECT_EQ(failures[c], "") << "connection " << c;
    }
    EXPECT_EQ(n_ok, kConnections * kPerConnection);
    wait_idle();
    const ServiceStats stats = service_->stats();
    EXPECT_EQ(stats.n_kv_blocks_free, stats.n_kv_blocks);
    EXPECT_EQ(stats.n_running[0] + stats.n_running[1] + stats.n_waiting[0] + stats.n_waiting[1], 0);
    httplib::Client metrics("127.0.0.1", server->metrics_port());
    metrics.set_read_timeout(120, 0);  // the sanitizers run slowly
    const std::string text = metrics.Get("/metrics")->body;
    EXPECT_EQ(metric(text, "fastdeploy:request_success_total"), kConnections * kPerConnection);
    EXPECT_EQ(metric(text, "fastdeploy:generation_tokens_total"), n_tokens.load());
}

}  // namespace
