// The server with the ERNIE-4.5-VL fixture model, whose generation_config.json asks for temperature 0.2 and
// top_p 0.8: a request that leaves out temperature, top_p, top_k or repetition_penalty gets the folder's
// values and one that gives them keeps its own; do_sample false makes the default greedy; the file's
// eos_token_id ends an answer and its max_new_tokens bounds one without max_tokens; --generation-config vllm
// (GenerationConfigSource::None) leaves OpenAI's defaults.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/server/openai-protocol.h"
#include "app/server/openai-server.h"
#include "engine/backend/backend.h"
#include "engine/service/engine-service.h"
#include "temp-dir.h"

namespace {

using namespace folio;
using namespace std::chrono_literals;
using nlohmann::json;
using server::OpenAiServer;
using server::ServerParams;

const std::filesystem::path kErnieDir =
    std::filesystem::path(FOLIO_FIXTURES_DIR).parent_path() / "ernie45-vl" / "ernie45-vl-tiny";

// A loaded ERNIE-4.5-VL fixture service with its generation defaults from `source`, and a server over it.
struct Served {
    explicit Served(const GenerationConfigSource& source) {
        ServiceParams params;
        params.device.make_backend = [] { return make_cpu_backend(2); };
        ModelSlot slot{ModelRole::Chat, kErnieDir, {}};
        slot.generation_config = source;
        params.models.push_back(std::move(slot));
        params.engine.max_model_len = 1024;
        params.engine.max_num_seqs = 4;
        service.load(params);
        if (service.wait_loaded(120s) != ServiceState::Ready) {
            error = service.status().error;
            return;
        }
        ServerParams p;
        p.port = 0;
        p.metrics_port = -1;
        p.image_pixels = {28 * 28, 1024 * 1024};
        server = std::make_unique<OpenAiServer>(
            service, p, [](std::span<const uint8_t>, std::string_view) -> Image { return {}; },
            [](std::span<const uint8_t>, std::string_view) { return std::optional<server::ImageSize>(); });
        server->start();
    }

    // The answer to a question with the body's other fields, and its completion tokens and finish reason.
    struct Answer {
        std::string text;
        int64_t n_tokens = 0;
        std::string finish;
    };
    Answer ask(const json& fields) const {
        json body = {{"messages", {{{"role", "user"}, {"content", "What is in the picture?"}}}}};
        body.update(fields);
        httplib::Client client("127.0.0.1", server->port());
        client.set_read_timeout(120, 0);
        const auto result = client.Post("/v1/chat/completions", body.dump(), "application/json");
        EXPECT_TRUE(result);
        if (!result) {
            return {};
        }
        EXPECT_EQ(result->status, 200) << result->body;
        const json answer = json::parse(result->body);
        return {answer["choices"][0]["message"].value("content", ""),
                answer["usage"]["completion_tokens"].get<int64_t>(),
                answer["choices"][0].value("finish_reason", "")};
    }

    EngineService service;
    std::unique_ptr<OpenAiServer> server;
    std::string error;
};

GenerationConfigSource folder_with(const test::TempDir& dir, const std::string& generation_config) {
    std::ofstream(dir.path() / "generation_config.json") << generation_config;
    GenerationConfigSource source;
    source.kind = GenerationConfigSource::Kind::Folder;
    source.folder = dir.path();
    return source;
}

TEST(OpenAiServerDefaults, TheFolderSamplingAppliesUnlessTheRequestGivesItsOwn) {
    const Served served{GenerationConfigSource{}};
    ASSERT_TRUE(served.error.empty()) << served.error;
    const GenerationDefaults& described = served.service.models().at(0).generation;
    ASSERT_TRUE(described.temperature && described.top_p);
    EXPECT_FLOAT_EQ(*described.temperature, 0.2f);
    EXPECT_FLOAT_EQ(*described.top_p, 0.8f);

    // Left out: the folder's temperature 0.2 and top_p 0.8, the same answer as giving them, seed for seed.
    // OpenAI's defaults (temperature 1, top_p 1) sample another answer for some seed.
    int n_differing = 0;
    for (int seed = 1; seed <= 4; ++seed) {
        const json common = {{"max_tokens", 12}, {"seed", seed}};
        json given = common;
        given.update({{"temperature", 0.2}, {"top_p", 0.8}});
        json openai = common;
        openai.update({{"temperature", 1.0}, {"top_p", 1.0}});
        const auto left_out = served.ask(common);
        EXPECT_EQ(left_out.text, served.ask(given).text) << "seed " << seed;
        EXPECT_EQ(left_out.n_tokens, served.ask(given).n_tokens) << "seed " << seed;
        n_differing += left_out.text != served.ask(openai).text ? 1 : 0;
    }
    EXPECT_GT(n_differing, 0);
}

TEST(OpenAiServerDefaults, VllmLeavesOpenAisDefaults) {
    const Served served{GenerationConfigSource::parse("vllm", "--generation-config")};
    ASSERT_TRUE(served.error.empty()) << served.error;
    EXPECT_TRUE(served.service.models().at(0).generation.empty());
    for (int seed = 1; seed <= 3; ++seed) {
        EXPECT_EQ(
            served.ask({{"max_tokens", 12}, {"seed", seed}}).text,
            served.ask({{"max_tokens", 12}, {"seed", seed}, {"temperature", 1.0}, {"top_p", 1.0}}).text);
    }
}

TEST(OpenAiServerDefaults, DoSampleFalseIsGreedyUnlessTheRequestSamples) {
    const test::TempDir dir;
    const Served served{folder_with(dir, R"({"do_sample": false, "temperature": 0.9, "top_p": 0.5})")};
    ASSERT_TRUE(served.error.empty()) << served.error;
    const auto greedy = served.ask({{"max_tokens", 12}, {"temperature", 0}});
    ASSERT_FALSE(greedy.text.empty());
    int n_differing = 0;
    for (int seed = 1; seed <= 4; ++seed) {
        EXPECT_EQ(served.ask({{"max_tokens", 12}, {"seed", seed}}).text, greedy.text) << "seed " << seed;
        // A request that asks for sampling samples, at its own temperature.
        n_differing +=
            served.ask({{"max_tokens", 12}, {"seed", seed}, {"temperature", 1.5}}).text != greedy.text ? 1
                                                                                                       : 0;
    }
    EXPECT_GT(n_differing, 0);
}

TEST(OpenAiServerDefaults, TheFileEosIdsStopAndItsMaxNewTokensBoundsAnAnswer) {
    // A sampled answer whose first three tokens differ and are none of the model's end of text (601), from
    // the service itself: its seed picks the same tokens through the server.
    std::vector<int32_t> tokens;
    int seed = 0;
    {
        Served plain{GenerationConfigSource::parse("vllm", "--generation-config")};
        ASSERT_TRUE(plain.error.empty()) << plain.error;
        for (seed = 1; seed <= 32; ++seed) {
            GenerationOptions options;
            options.max_tokens = 3;
            options.ignore_eos = true;
            options.sampling.temperature = 1.0f;
            options.sampling.seed = static_cast<uint64_t>(seed);
            Chat chat;
            chat.messages.emplace_back(ChatMessage::Role::User, "What is in the picture?");
            RequestHandle handle = plain.service.submit(RequestSpec(chat, options), {});
            tokens.clear();
            while (std::optional<RequestOutput> out = handle.next()) {
                tokens.insert(tokens.end(), out->tokens.begin(), out->tokens.end());
            }
            if (tokens.size() == 3 && tokens[0] != 601 && tokens[1] != 601 && tokens[2] != 601 &&
                tokens[0] != tokens[2] && tokens[1] != tokens[2]) {
                break;
            }
        }
    }
    ASSERT_LE(seed, 32) << "no seed gives three distinct tokens";

    // The file makes the third token an end of text: the answer stops there, the tokenizer's eos still one.
    const test::TempDir eos_dir;
    const Served eos{folder_with(eos_dir, R"({"eos_token_id": [601, )" + std::to_string(tokens[2]) + "]}")};
    ASSERT_TRUE(eos.error.empty()) << eos.error;
    const json sampled = {{"max_tokens", 6}, {"temperature", 1.0}, {"seed", seed}};
    const auto stopped = eos.ask(sampled);
    EXPECT_EQ(stopped.finish, "stop");
    EXPECT_EQ(stopped.n_tokens, 3);
    // ignore_eos generates on.
    json ignoring = sampled;
    ignoring["ignore_eos"] = true;
    EXPECT_EQ(eos.ask(ignoring).n_tokens, 6);

    // An id the model does not have stops the load, naming the file.
    const test::TempDir bad_dir;
    const Served bad{folder_with(bad_dir, R"({"eos_token_id": 9999})")};
    EXPECT_NE(bad.error.find((bad_dir.path() / "generation_config.json").string() +
                             ": \"eos_token_id\" 9999 is not a token of the model's vocabulary of 610"),
              std::string::npos)
        << bad.error;

    // max_new_tokens 2 for a request without max_tokens; a request's max_tokens wins.
    const test::TempDir length_dir;
    const Served bounded{folder_with(length_dir, R"({"do_sample": false, "max_new_tokens": 2})")};
    ASSERT_TRUE(bounded.error.empty()) << bounded.error;
    const auto two = bounded.ask({{"ignore_eos", true}});
    EXPECT_EQ(two.n_tokens, 2);
    EXPECT_EQ(two.finish, "length");
    EXPECT_EQ(bounded.ask({{"ignore_eos", true}, {"max_tokens", 5}}).n_tokens, 5);
}

}  // namespace
