// The OpenAI-compatible server's HTTP side with the fixture model: every error is an OpenAI error object with
// its status; image URLs, admission, ports, framing and timeouts; metrics and request logs; stopping.
#include "openai-server-fixture.h"

namespace openai_server_test {

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
    // The handler counts the cancellation once it hears of it, which may come after the service's count.
    httplib::Client metrics("127.0.0.1", server->metrics_port());
    std::string text = metrics.Get("/metrics")->body;
    for (int i = 0; i < 400 && metric(text, "folio:request_cancelled_total") == 0; ++i) {
        std::this_thread::sleep_for(5ms);
        text = metrics.Get("/metrics")->body;
    }
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

// A client that sends a body over the limit whole, without waiting for 100 Continue (as Python's http.client
// does), still reads the 413: the server reads and drops the rest rather than resetting the connection.
TEST_F(OpenAiServerTest, ABodyOverTheLimitSentWholeStillGetsIts413) {
    ServerParams p = params();
    p.max_body_bytes = 1 << 20;
    const auto server = start(p);
    const size_t n_body = size_t{24} << 20;
    const int fd = connect_to(server->port());
    const std::string head =
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(n_body) + "\r\n\r\n";
    const bool sent = send_all(fd, head + std::string(n_body, 'x'));
    const RawReply reply = read_reply(fd);
    ::close(fd);
    EXPECT_TRUE(sent) << "the connection was reset while the body was sent";
    EXPECT_EQ(reply.status, 413) << reply.head << reply.body;
    EXPECT_NE(reply.body.find("larger than the 1048576 bytes"), std::string::npos) << reply.body;
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

}  // namespace openai_server_test
