// The OpenAI-compatible server on 127.0.0.1 with the fixture model on the CPU, driven by real clients:
// cpp-httplib's client, curl and Python's standard library. Answers equal the service's own for the same
// requests, alone or concurrent; streams add up; reasoning is split; a client that goes away cancels its
// request.
#include "openai-server-fixture.h"

namespace openai_server_test {

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
    const json question = {
        {"messages", {{{"role", "user"}, {"content", "What grew?"}}}}, {"max_tokens", 4}, {"temperature", 0}};
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

    // Streamed, the last chunk has the citations in its delta and the pages beside its choices.
    json streamed = asked;
    streamed["stream"] = true;
    const auto events = post(server->port(), "/v1/chat/completions", streamed);
    ASSERT_TRUE(events && events->status == 200);
    const Sse sse = parse_sse(events->body);
    ASSERT_TRUE(sse.done && !sse.chunks.empty());
    const json& last = sse.chunks.back();
    EXPECT_FALSE(last["choices"][0]["finish_reason"].is_null()) << last;
    EXPECT_EQ(last["choices"][0]["delta"]["citations"], body["choices"][0]["message"]["citations"]) << last;
    EXPECT_EQ(last["document"], body["document"]) << last;
    EXPECT_EQ(sse.text, body["choices"][0]["message"]["content"]);

    // Plain text longer than the context is one page of paragraphs: the paragraphs holding the question's
    // words go in, and the page is named as given in part.
    std::string text;
    for (int i = 0; i < 200; ++i) {
        text +=
            "Paragraph " + std::to_string(i) + " is filler that says nothing about the question at all.\n\n";
    }
    text += "Sales grew by 12% in the north.\n";
    json long_text = question;
    long_text["document"] = text;
    const auto cut = post(server->port(), "/v1/chat/completions", long_text);
    ASSERT_TRUE(cut);
    ASSERT_EQ(cut->status, 200) << cut->body;
    const json cut_body = json::parse(cut->body);
    EXPECT_EQ(cut_body["document"]["pages"], json::array({0}));
    EXPECT_EQ(cut_body["document"]["pages_in_part"], json::array({0}));
    EXPECT_EQ(cut_body["document"]["pages_left_out"], json::array());
    EXPECT_LT(cut_body["usage"]["prompt_tokens"].get<int64_t>(), 4096);

    json too_long = asked;
    too_long["max_tokens"] = 4000;  // of the context's 4096
    const auto refused = post(server->port(), "/v1/chat/completions", too_long);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400) << refused->body;
    EXPECT_EQ(json::parse(refused->body)["error"]["param"], "document") << refused->body;
}

// Images beside a document take their room from it: with four images of 64 tokens each the long text's part
// shrinks by about their tokens, so the prompt stays within the context and grows by far less than the
// images.
TEST_F(OpenAiServerTest, ImagesBesideADocumentTakeTheirRoomFromIt) {
    const auto server = start();
    std::string text;
    for (int i = 0; i < 300; ++i) {
        text += "Paragraph " + std::to_string(i) + " is filler that says nothing about the question.\n\n";
    }
    json plain = chat({}, "What grew?", 4);
    plain["document"] = text;
    std::vector<std::string> urls;
    std::vector<MediaSize> sizes;
    for (int i = 0; i < 4; ++i) {
        urls.push_back(data_url(png(400, 400, i)));
        sizes.push_back({MediaKind::Image, 400, 400, 1});
    }
    json with_images = chat(urls, "What grew?", 4);
    with_images["document"] = text;
    const std::vector<int64_t> image_tokens = service_->count_media({}, sizes);
    ASSERT_EQ(image_tokens, std::vector<int64_t>(4, 64)) << "the fixture model's largest image";
    const auto a = post(server->port(), "/v1/chat/completions", plain);
    const auto b = post(server->port(), "/v1/chat/completions", with_images);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->status, 200) << a->body;
    ASSERT_EQ(b->status, 200) << b->body;
    const json without = json::parse(a->body), with = json::parse(b->body);
    EXPECT_EQ(with["document"]["pages_in_part"], json::array({0}));
    const int64_t n_without = without["usage"]["prompt_tokens"], n_with = with["usage"]["prompt_tokens"];
    EXPECT_LE(n_with, 4096 - 4);
    EXPECT_LT(n_with - n_without, 128) << "the images' 256 tokens taken from the document's part";
    EXPECT_GT(n_with, n_without - 64) << "the part shrinks by the images, not by more";

    // An image the request's bounds make smaller takes less of the document's room.
    json smaller = with_images;
    smaller["mm_processor_kwargs"] = {{"max_pixels", 3136}};
    const auto c = post(server->port(), "/v1/chat/completions", smaller);
    ASSERT_TRUE(c);
    ASSERT_EQ(c->status, 200) << c->body;
    EXPECT_LE(json::parse(c->body)["usage"]["prompt_tokens"].get<int64_t>(), 4096 - 4);
}

// A document named by the request, read from the server's documents folder (folio-cli ocr's NAME.json):
// the same prompt as the document sent whole; names that are not plain file names, documents not there and
// servers without the folder are refused naming document.name.
TEST_F(OpenAiServerTest, AnswersFromADocumentNamedInTheDocumentsFolder) {
    const test::TempDir dir;
    const json page = {
        {"parsing_res_list", json::array({{{"block_content", "Revenue rose in March."}, {"block_id", 0}},
                                          {{"block_content", "Costs fell by a third."}, {"block_id", 1}}})}};
    std::ofstream(dir / "report.json") << json::array({page, page}).dump();
    std::ofstream(dir / "broken.json") << R"([{"parsing_res_list": 3}])";
    ServerParams p = params();
    p.documents_dir = dir.path();
    const auto server = start(p);
    const json question = {
        {"messages", {{{"role", "user"}, {"content", "What rose?"}}}}, {"max_tokens", 4}, {"temperature", 0}};
    json by_name = question, sent = question;
    by_name["document"] = {{"name", "report"}};
    sent["document"] = json::array({page, page});
    const auto named = post(server->port(), "/v1/chat/completions", by_name);
    const auto whole = post(server->port(), "/v1/chat/completions", sent);
    ASSERT_TRUE(named && whole);
    ASSERT_EQ(named->status, 200) << named->body;
    ASSERT_EQ(whole->status, 200) << whole->body;
    EXPECT_EQ(json::parse(named->body)["usage"]["prompt_tokens"],
              json::parse(whole->body)["usage"]["prompt_tokens"]);
    EXPECT_EQ(json::parse(named->body)["document"]["pages"], json::array({0, 1}));

    const auto refused = [&](const json& document, int status, const std::string& says) {
        json asked = question;
        asked["document"] = document;
        const auto res = post(server->port(), "/v1/chat/completions", asked);
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, status) << res->body;
        const json error = json::parse(res->body)["error"];
        EXPECT_EQ(error["param"], "document.name") << res->body;
        EXPECT_NE(error["message"].get<std::string>().find(says), std::string::npos) << res->body;
    };
    refused({{"name", "missing"}}, 404, "no document named 'missing'");
    refused({{"name", "../report"}}, 400, "no folders");
    refused({{"name", ".hidden"}}, 400, "no folders");
    refused({{"name", "broken"}}, 400, "cannot be read");
    json not_text = question;
    not_text["document"] = {{"name", 3}};
    const auto wrong = post(server->port(), "/v1/chat/completions", not_text);
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 400) << wrong->body;

    const auto plain_server = start();
    const auto no_folder = post(plain_server->port(), "/v1/chat/completions", by_name);
    ASSERT_TRUE(no_folder);
    EXPECT_EQ(no_folder->status, 400) << no_folder->body;
    EXPECT_NE(no_folder->body.find("--documents-dir"), std::string::npos) << no_folder->body;
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
    std::vector<json> bodies;
    std::vector<Alone> alone;
    for (int i = 0; i < kRequests; ++i) {
        const std::vector<uint8_t> image = png(40 + 16 * (i % 5), 32 + 12 * (i % 3), 10 + i);
        alone.push_back(run_alone({image}, tasks[i % 4], 8 + 3 * (i % 4)));
        bodies.push_back(chat({data_url(image)}, tasks[i % 4], 8 + 3 * (i % 4)));
    }
    const AtOnce answers = post_at_once(server->port(), bodies);
    for (int i = 0; i < kRequests; ++i) {
        EXPECT_EQ(answers.statuses[i], 200) << "request " << i;
        EXPECT_EQ(answers.texts[i], alone[i].text) << "request " << i;
    }
}

// Two engines (data parallelism, two CPU backends each with a copy of the model) behind the server:
// concurrent requests spread over both and answer as the one-engine service answers them alone.
TEST_F(OpenAiServerTest, TwoEnginesAnswerConcurrentRequestsAsOneDoes) {
    EngineService two;
    ServiceParams sp;
    sp.device.name = "cpu:0";
    sp.device.make_backend = [] { return make_cpu_backend(1); };
    DeviceSpec second;
    second.name = "cpu:1";
    second.make_backend = [] { return make_cpu_backend(1); };
    sp.more_devices.push_back(second);
    sp.models.push_back({ModelRole::Recognition, kModelDir, {}});
    sp.engine.max_model_len = 4096;
    sp.engine.max_num_seqs = 8;
    two.load(sp);
    ASSERT_EQ(two.wait_loaded(120s), ServiceState::Ready) << two.status().error;
    OpenAiServer server(
        two, params(),
        [](std::span<const uint8_t> bytes, std::string_view name) { return decode_image(bytes, name); },
        image_size);
    server.start();
    constexpr int kRequests = 8;
    std::vector<json> bodies;
    std::vector<Alone> alone;
    for (int i = 0; i < kRequests; ++i) {
        const std::vector<uint8_t> image = png(40 + 16 * (i % 4), 32 + 12 * (i % 3), 50 + i);
        alone.push_back(run_alone({image}, "OCR:", 10));
        bodies.push_back(chat({data_url(image)}, "OCR:", 10));
    }
    const AtOnce answers = post_at_once(server.port(), bodies);
    for (int i = 0; i < kRequests; ++i) {
        EXPECT_EQ(answers.statuses[i], 200) << "request " << i;
        EXPECT_EQ(answers.texts[i], alone[i].text) << "request " << i;
    }
    const ServiceStats s = two.stats();
    ASSERT_EQ(s.devices.size(), 2u);
    EXPECT_GT(s.devices[0].n_requests, 0);
    EXPECT_GT(s.devices[1].n_requests, 0);
    EXPECT_EQ(s.devices[0].n_requests + s.devices[1].n_requests, kRequests);
    EXPECT_EQ(s.n_kv_blocks_used, 0) << "every block free at the end";
    httplib::Client metrics("127.0.0.1", server.metrics_port());
    const auto text = metrics.Get("/metrics");
    ASSERT_TRUE(text);
    EXPECT_NE(text->body.find("folio:device_requests{device=\"cpu:1\",index=\"1\"} 0"), std::string::npos)
        << text->body;
    EXPECT_NE(text->body.find("folio:device_failed{device=\"cpu:0\",index=\"0\"} 0"), std::string::npos);
    server.stop();
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

}  // namespace openai_server_test
