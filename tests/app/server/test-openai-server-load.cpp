// The OpenAI-compatible server under a bounded load with the fixture model on the CPU.
#include "openai-server-fixture.h"

namespace openai_server_test {

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

}  // namespace openai_server_test
