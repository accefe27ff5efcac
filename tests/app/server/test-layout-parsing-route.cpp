// POST /layout-parsing through the real server with a fake document parser: the envelope, the file as base64
// and as a URL, the limits, the API key in both forms PaddleOCR's clients send, a client that goes away and
// a server that stops while a document is parsed.
#include <httplib.h>

#include "openai-server-fixture.h"

namespace openai_server_test {
namespace {

using server::ApiError;
using server::LayoutParsingRequest;
using server::ParsedDocument;
using server::ParsedPage;

// Two pages whose Markdown names them, and a Word file of four bytes; or, when slow, nothing until the run
// is cancelled.
class FakeParser : public server::DocumentParser {
public:
    ParsedDocument parse(const LayoutParsingRequest& request, std::span<const uint8_t> file,
                         const std::function<void(ParsedPage page)>& on_page,
                         const std::function<bool()>& cancelled) override {
        {
            const std::lock_guard lock(mutex);
            bytes.assign(file.begin(), file.end());
            seen = request;
        }
        started = true;
        if (slow) {
            while (!cancelled()) {
                std::this_thread::sleep_for(10ms);
            }
            saw_cancel = true;
            throw ApiError(499, "invalid_request_error", "the request was cancelled", {}, "cancelled");
        }
        for (int i = 0; i < 2; ++i) {
            ParsedPage page;
            page.markdown = "page " + std::to_string(i);
            page.result = {
                {"prunedResult", {{"page_index", i}}},
                {"markdown", {{"text", page.markdown}, {"images", nlohmann::ordered_json::object()}}}};
            on_page(std::move(page));
        }
        ParsedDocument document;
        document.data_info = {{"numPages", 2}, {"pages", json::array()}, {"type", "pdf"}};
        if (request.docx) {
            document.docx = {'P', 'K', 3, 4};
            document.docx_name = "document.docx";
        }
        return document;
    }

    std::mutex mutex;
    std::vector<uint8_t> bytes;
    LayoutParsingRequest seen;
    bool slow = false;
    std::atomic<bool> started{false};
    std::atomic<bool> saw_cancel{false};
};

class LayoutParsingRouteTest : public OpenAiServerTest {
protected:
    ServerParams with_parser() {
        ServerParams p = params();
        p.document_parser = parser_;
        return p;
    }

    static std::string b64(const std::vector<uint8_t>& bytes) { return server::encode_base64(bytes); }

    std::shared_ptr<FakeParser> parser_ = std::make_shared<FakeParser>();
    const std::vector<uint8_t> file_ = {'%', 'P', 'D', 'F', '-', '1', '.', '7', 0, 255};
};

// The envelope of a reply, which every answer of the route has.
json envelope(const httplib::Result& r) {
    EXPECT_TRUE(r);
    if (!r) {
        return json::object();
    }
    const json body = json::parse(r->body);
    EXPECT_TRUE(body.contains("logId") && body["logId"].is_string()) << r->body;
    EXPECT_EQ(body.value("errorCode", -1), r->status == 200 ? 0 : r->status) << r->body;
    return body;
}

TEST_F(LayoutParsingRouteTest, AnswersEachPageInOrderInPaddleXsEnvelope) {
    auto s = start(with_parser());
    const auto r = post(s->port(), "/layout-parsing",
                        {{"file", b64(file_)},
                         {"fileType", 0},
                         {"logId", "req-1"},
                         {"outputFormats", {"docx"}},
                         {"useChartRecognition", true}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json body = envelope(r);
    EXPECT_EQ(body["logId"], "req-1");
    EXPECT_EQ(body["errorMsg"], "Success");
    const json& pages = body["result"]["layoutParsingResults"];
    ASSERT_EQ(pages.size(), 2U);
    EXPECT_EQ(pages[0]["markdown"]["text"], "page 0");
    EXPECT_EQ(pages[1]["prunedResult"]["page_index"], 1);
    EXPECT_EQ(body["result"]["dataInfo"]["type"], "pdf");
    EXPECT_EQ(pages[0]["exports"]["docx"]["fileName"], "document.docx");
    EXPECT_EQ(pages[0]["exports"]["docx"]["content"], b64({'P', 'K', 3, 4}));
    EXPECT_FALSE(pages[1].contains("exports"));
    const std::lock_guard lock(parser_->mutex);
    EXPECT_EQ(parser_->bytes, file_);
    EXPECT_EQ(parser_->seen.use_chart_recognition, true);
}

TEST_F(LayoutParsingRouteTest, WithoutAParserSaysHowToServeOne) {
    auto s = start();
    const auto r = post(s->port(), "/layout-parsing", {{"file", b64(file_)}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    EXPECT_NE(envelope(r)["errorMsg"].get<std::string>().find("--layout-model"), std::string::npos);
}

TEST_F(LayoutParsingRouteTest, RefusalsAreEnvelopedWithTheirStatus) {
    auto s = start(with_parser());
    struct Case {
        json body;
        int status;
        const char* says;
    };
    const std::vector<Case> cases = {
        {{{"fileType", 0}}, 422, "file: is required"},
        {{{"file", "@@@@"}}, 422, "not valid base64"},
        {{{"file", "http://127.0.0.1:1/a.pdf"}}, 422, "--allow-image-urls"},
        {{{"file", b64(file_)}, {"topP", 3}}, 422, "topP"},
        {{{"file", b64(file_)}, {"useDocUnwarping", true}}, 422, "unwarping"},
    };
    for (const Case& c : cases) {
        const auto r = post(s->port(), "/layout-parsing", c.body);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, c.status) << c.body.dump();
        EXPECT_NE(envelope(r)["errorMsg"].get<std::string>().find(c.says), std::string::npos) << r->body;
    }
    // Not JSON at all.
    httplib::Client client("127.0.0.1", s->port());
    const auto r = client.Post("/layout-parsing", "{nope", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 422);
    EXPECT_EQ(envelope(r)["errorCode"], 422);
}

TEST_F(LayoutParsingRouteTest, ABodyOverTheLimitIsRefusedBeforeItIsRead) {
    ServerParams p = with_parser();
    p.max_body_bytes = 4096;
    auto s = start(p);
    const auto r = post(s->port(), "/layout-parsing", {{"file", std::string(8192, 'A')}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_NE(envelope(r)["errorMsg"].get<std::string>().find("larger than"), std::string::npos) << r->body;
    EXPECT_FALSE(parser_->started);
}

TEST_F(LayoutParsingRouteTest, AUrlIsFetchedWhereAllowed) {
    httplib::Server files;
    const std::string pdf(file_.begin(), file_.end());
    files.Get("/doc.pdf", [&](const httplib::Request&, httplib::Response& res) {
        res.set_content(pdf, "application/pdf");
    });
    const int files_port = files.bind_to_any_port("127.0.0.1");
    std::thread files_thread([&] { files.listen_after_bind(); });
    while (!files.is_running()) {
        std::this_thread::sleep_for(1ms);
    }

    ServerParams p = with_parser();
    p.fetch_image_urls = true;
    auto s = start(p);
    const std::string url = "http://127.0.0.1:" + std::to_string(files_port) + "/doc.pdf";
    const auto r = post(s->port(), "/layout-parsing", {{"file", url}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    {
        const std::lock_guard lock(parser_->mutex);
        EXPECT_EQ(parser_->bytes, file_);
    }
    const auto missing = post(s->port(), "/layout-parsing",
                              {{"file", "http://127.0.0.1:" + std::to_string(files_port) + "/none.pdf"}});
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 400) << missing->body;
    EXPECT_NE(envelope(missing)["errorMsg"].get<std::string>().find("404"), std::string::npos)
        << missing->body;
    files.stop();
    files_thread.join();
}

TEST_F(LayoutParsingRouteTest, TheApiKeyIsTakenAsABearerOrAsAiStudiosToken) {
    ServerParams p = with_parser();
    p.api_key = "sesame";
    auto s = start(p);
    const json body = {{"file", b64(file_)}};
    const auto none = post(s->port(), "/layout-parsing", body);
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 401);
    EXPECT_EQ(envelope(none)["errorCode"], 401);
    const auto wrong = post(s->port(), "/layout-parsing", body, {{"Authorization", "token open"}});
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401);
    for (const char* given : {"token sesame", "Bearer sesame"}) {
        const auto r = post(s->port(), "/layout-parsing", body, {{"Authorization", given}});
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200) << given << ": " << r->body;
    }
}

// Whether the flag comes true within five seconds.
bool within_5s(const std::atomic<bool>& flag) {
    for (int i = 0; i < 500 && !flag; ++i) {
        std::this_thread::sleep_for(10ms);
    }
    return flag;
}

std::string raw_request(const json& body) {
    const std::string text = body.dump();
    return "POST /layout-parsing HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
           "application/json\r\nContent-Length: " +
           std::to_string(text.size()) + "\r\n\r\n" + text;
}

TEST_F(LayoutParsingRouteTest, AClientThatGoesAwayCancelsItsDocument) {
    parser_->slow = true;
    auto s = start(with_parser());
    const int fd = connect_to(s->port());
    ASSERT_TRUE(send_all(fd, raw_request({{"file", b64(file_)}})));
    ASSERT_TRUE(within_5s(parser_->started));
    ::close(fd);
    EXPECT_TRUE(within_5s(parser_->saw_cancel));
}

TEST_F(LayoutParsingRouteTest, AServerThatStopsAnswers503) {
    parser_->slow = true;
    auto s = start(with_parser());
    const int fd = connect_to(s->port());
    ASSERT_TRUE(send_all(fd, raw_request({{"file", b64(file_)}})));
    ASSERT_TRUE(within_5s(parser_->started));
    std::thread stopper([&] { s->stop(); });
    const RawReply reply = read_reply(fd);
    stopper.join();
    ::close(fd);
    EXPECT_EQ(reply.status, 503) << reply.head;
    const json body = json::parse(reply.body);
    EXPECT_EQ(body["errorCode"], 503);
    EXPECT_TRUE(parser_->saw_cancel);
}

json document_chat(const std::vector<uint8_t>& file, bool stream) {
    const json part = {
        {"type", "file"},
        {"file", {{"file_data", "data:application/pdf;base64," + server::encode_base64(file)}}}};
    return {{"model", "paddleocr-vl-tiny-pipeline"},
            {"messages", {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Convert"}}, part}}}}},
            {"stream", stream}};
}

TEST_F(LayoutParsingRouteTest, AChatToThePipelinesNameAnswersWithTheMarkdown) {
    auto s = start(with_parser());
    const auto whole = post(s->port(), "/v1/chat/completions", document_chat(file_, false));
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const json body = json::parse(whole->body);
    EXPECT_EQ(body["model"], "paddleocr-vl-tiny-pipeline");
    EXPECT_EQ(body["choices"][0]["message"]["content"], "page 0\n\npage 1");
    {
        const std::lock_guard lock(parser_->mutex);
        EXPECT_EQ(parser_->bytes, file_);
    }

    const auto streamed = post(s->port(), "/v1/chat/completions", document_chat(file_, true));
    ASSERT_TRUE(streamed);
    ASSERT_EQ(streamed->status, 200);
    const Sse sse = parse_sse(streamed->body);
    EXPECT_TRUE(sse.done);
    EXPECT_EQ(sse.text, "page 0\n\npage 1");
    ASSERT_GE(sse.chunks.size(), 3U);
    EXPECT_EQ(sse.chunks[0]["choices"][0]["delta"]["content"], "page 0");
    EXPECT_EQ(sse.chunks.back()["choices"][0]["finish_reason"], "stop");

    httplib::Client client("127.0.0.1", s->port());
    const auto models = client.Get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_EQ(json::parse(models->body)["data"][1]["id"], "paddleocr-vl-tiny-pipeline");
}

TEST_F(LayoutParsingRouteTest, AChatToTheModelItselfIsNotADocument) {
    auto s = start(with_parser());
    const auto r = post(s->port(), "/v1/chat/completions",
                        {{"model", "paddleocr-vl-tiny"},
                         {"messages", {{{"role", "user"}, {"content", "hello"}}}},
                         {"max_tokens", 2}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_FALSE(parser_->started);
}

TEST_F(LayoutParsingRouteTest, AStreamedDocumentWhoseClientGoesAwayIsCancelled) {
    parser_->slow = true;
    auto s = start(with_parser());
    const int fd = connect_to(s->port());
    const std::string body = document_chat(file_, true).dump();
    ASSERT_TRUE(send_all(fd,
                         "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         "Content-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" + body));
    ASSERT_TRUE(within_5s(parser_->started));
    ::close(fd);
    EXPECT_TRUE(within_5s(parser_->saw_cancel));
}

}  // namespace
}  // namespace openai_server_test
