// The OpenAI-compatible server tests' fixture: the fixture model loaded once on the CPU, servers started on
// 127.0.0.1, and the clients and helpers the tests share (test-openai-server.cpp: answers;
// test-openai-server- http.cpp: errors, limits, metrics and load).
#pragma once

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

namespace openai_server_test {

using namespace folio;
using namespace std::chrono_literals;
using nlohmann::json;
using server::OpenAiServer;
using server::ServerParams;

inline const std::filesystem::path kModelDir =
    std::filesystem::path(FOLIO_FIXTURES_DIR) / "paddleocr-vl-tiny";
inline const std::filesystem::path kClientScript = FOLIO_SERVER_TESTS_DIR "/openai-client.py";

// A PNG of w x h pixels whose pattern depends on seed.
inline std::vector<uint8_t> png(int w, int h, int seed) {
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

inline std::string data_url(const std::vector<uint8_t>& bytes) {
    return server::encode_data_url(bytes, "image/png");
}

inline json chat(const std::vector<std::string>& image_urls, const std::string& task, int max_tokens,
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
inline Sse parse_sse(const std::string& stream) {
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
inline std::pair<std::string, int> run_command(const std::string& command) {
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

inline bool have_command(const std::string& name) {
    return run_command("command -v " + name + " >/dev/null 2>&1").second == 0;
}

inline int connect_to(int port) {
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

inline bool send_all(int fd, const std::string& data) {
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

inline RawReply read_reply(int fd, std::chrono::milliseconds timeout = 10000ms) {
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
inline int64_t peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::stoll(line.substr(6)) * 1024;
        }
    }
    return -1;
}

inline bool reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    return static_cast<bool>(clear);
}

// A metric's value in Prometheus' text format: the line "NAME VALUE"; -1 when there is none.
inline double metric(const std::string& text, const std::string& name) {
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

    // Each request posted at once from a thread of its own, every other one streamed; each one's status and
    // text.
    struct AtOnce {
        std::vector<int> statuses;
        std::vector<std::string> texts;
    };

    static AtOnce post_at_once(int port, const std::vector<json>& bodies) {
        AtOnce out;
        out.statuses.assign(bodies.size(), 0);
        out.texts.resize(bodies.size());
        std::vector<std::thread> threads;
        for (size_t i = 0; i < bodies.size(); ++i) {
            threads.emplace_back([&, i] {
                json body = bodies[i];
                if (i % 2) {
                    body["stream"] = true;
                }
                const auto res = post(port, "/v1/chat/completions", body);
                if (res) {
                    out.statuses[i] = res->status;
                    out.texts[i] =
                        i % 2 ? parse_sse(res->body).text
                              : json::parse(res->body)["choices"][0]["message"]["content"].get<std::string>();
                }
            });
        }
        for (std::thread& t : threads) {
            t.join();
        }
        return out;
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

    static inline std::unique_ptr<EngineService> service_;
};

}  // namespace openai_server_test
