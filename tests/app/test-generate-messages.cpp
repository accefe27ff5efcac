// folio-cli generate --messages on the ERNIE-4.5-VL fixture: the reference's prompts written as OpenAI
// message files (images as paths, file:// URLs and data URLs, the clip as video_frames) give, through --ids,
// the reference's prompt ids and greedy tokens; --no-generation-prompt ends the prompt where the template
// says; the parts' errors name the file, the message and the part; images and videos are limited apart.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app/server/openai-protocol.h"
#include "engine/tokenizer/tokenizer.h"
#include "fixture-reference.h"
#include "temp-dir.h"

namespace {

using folio::testing::fixtures_dir;
using nlohmann::json;

const std::filesystem::path kErnieDir = fixtures_dir().parent_path() / "ernie45-vl";
const std::filesystem::path kModel = kErnieDir / "ernie45-vl-tiny";

struct CliRun {
    std::string out;  // stdout and stderr
    int status = -1;
};

// Greedy: the fixture's generation_config.json would sample at temperature 0.2.
CliRun folio_cli(const std::string& args) {
    const std::string command = std::string(FOLIO_CLI_PATH) + " generate --model " + kModel.string() +
                                " --temperature 0 " + args + " 2>&1";
    CliRun run;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) {
        return run;
    }
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        run.out.append(buffer, n);
    }
    const int status = ::pclose(pipe);
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
}

// The JSON lines --ids printed, in order.
std::vector<json> id_lines(const std::string& out) {
    std::vector<json> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("{\"prompt_ids\"")) {
            lines.push_back(json::parse(line));
        }
    }
    return lines;
}

std::string quoted(const std::string& s) {
    std::string out = "'";
    for (const char c : s) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

void write_text(const std::filesystem::path& file, const std::string& text) {
    std::ofstream(file) << text;
}

class GenerateMessages : public testing::Test {
protected:
    GenerateMessages()
        : reference_(kErnieDir / "reference.safetensors"),
          meta_(json::parse(std::ifstream(kErnieDir / "reference.json"))) {}

    // The reference's messages as an OpenAI messages file: its images alternately as a path relative to the
    // file (a copy beside it), a percent-encoded file:// URL and a data URL; the clip as video_frames of PNG
    // files.
    std::filesystem::path messages_file(const std::string& key) {
        json messages = json::array();
        for (const json& m : meta_["prompts"][key]["messages"]) {
            json content = json::array();
            for (const json& part : m["content"]) {
                const std::string type = part["type"];
                if (type == "text") {
                    content.push_back(part);
                } else if (type == "image") {
                    content.push_back(
                        {{"type", "image_url"}, {"image_url", {{"url", image_url(part["name"])}}}});
                } else {
                    content.push_back({{"type", "video_frames"}, {"frames", clip_frames()}, {"fps", 2}});
                }
            }
            messages.push_back({{"role", m["role"]}, {"content", content}});
        }
        const std::filesystem::path file = dir_.path() / (key + ".json");
        write_text(file, messages.dump());
        return file;
    }

    std::string image_url(const std::string& name) {
        const std::filesystem::path image = fixtures_dir() / "images" / (name + ".png");
        switch (n_images_++ % 3) {
            case 0:
                std::filesystem::copy_file(image, dir_.path() / (name + ".png"),
                                           std::filesystem::copy_options::overwrite_existing);
                return name + ".png";
            case 1: {
                // A file URL whose name needs percent-encoding.
                const std::filesystem::path copy = dir_.path() / (name + " #1.png");
                std::filesystem::copy_file(image, copy, std::filesystem::copy_options::overwrite_existing);
                std::string url = "file://";
                for (const char c : copy.string()) {
                    url += c == ' ' ? std::string("%20") : c == '#' ? std::string("%23") : std::string(1, c);
                }
                return url;
            }
            default: {
                std::ifstream in(image, std::ios::binary);
                const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
                return folio::server::encode_data_url(bytes, "image/png");
            }
        }
    }

    // The reference clip's frames as PNG files.
    json clip_frames() {
        const std::vector<int64_t> shape = reference_.shape("video_frames.clip");
        const std::vector<int64_t> values = reference_.i64("video_frames.clip");
        const int h = static_cast<int>(shape[1]), w = static_cast<int>(shape[2]);
        json frames = json::array();
        for (int64_t f = 0; f < shape[0]; ++f) {
            cv::Mat bgr(h, w, CV_8UC3);
            for (int y = 0; y < h; ++y) {
                for (int x = 0; x < w; ++x) {
                    const size_t at = static_cast<size_t>(((f * h + y) * w + x) * 3);
                    bgr.at<cv::Vec3b>(y, x) =
                        cv::Vec3b(static_cast<uint8_t>(values[at + 2]), static_cast<uint8_t>(values[at + 1]),
                                  static_cast<uint8_t>(values[at]));
                }
            }
            const std::filesystem::path file = dir_.path() / ("frame" + std::to_string(f) + ".png");
            EXPECT_TRUE(cv::imwrite(file.string(), bgr));
            frames.push_back(file.string());
        }
        return frames;
    }

    // Runs the keys as one batch with the kwargs and checks each request's ids against the reference's.
    void expect_reference(const std::vector<std::string>& keys, const std::string& kwargs) {
        std::string args = "--ids --max-tokens 16";
        for (const std::string& key : keys) {
            args += " --messages " + messages_file(key).string();
            ASSERT_EQ(meta_["prompts"][key]["chat_template_kwargs"].dump(), kwargs) << key;
        }
        if (kwargs != "{}") {
            args += " --chat-template-kwargs " + quoted(kwargs);
        }
        const CliRun run = folio_cli(args);
        ASSERT_EQ(run.status, 0) << run.out;
        const std::vector<json> lines = id_lines(run.out);
        ASSERT_EQ(lines.size(), keys.size()) << run.out;
        for (size_t i = 0; i < keys.size(); ++i) {
            EXPECT_EQ(lines[i]["prompt_ids"].get<std::vector<int64_t>>(),
                      reference_.i64(keys[i] + ".input_ids"))
                << keys[i];
            EXPECT_EQ(lines[i]["ids"].get<std::vector<int64_t>>(), reference_.i64(keys[i] + ".greedy_tokens"))
                << keys[i];
        }
    }

    folio::test::TempDir dir_;
    folio::testing::Reference reference_;
    json meta_;
    int n_images_ = 0;
};

TEST_F(GenerateMessages, ThinkingPromptsGiveTheReferenceIds) {
    expect_reference({"text", "system_text", "two_images"}, "{}");
}

TEST_F(GenerateMessages, ThinkingOffPromptsGiveTheReferenceIds) {
    expect_reference({"text_thinking_off", "one_image", "multi_turn", "video"},
                     R"({"enable_thinking":false})");
}

TEST_F(GenerateMessages, PromptIsOneUserTurnThroughTheTemplate) {
    const CliRun run = folio_cli("--ids --max-tokens 16 --prompt 'Summarise the invoice total.'");
    ASSERT_EQ(run.status, 0) << run.out;
    const std::vector<json> lines = id_lines(run.out);
    ASSERT_EQ(lines.size(), 1u) << run.out;
    EXPECT_EQ(lines[0]["prompt_ids"].get<std::vector<int64_t>>(), reference_.i64("text.input_ids"));
    EXPECT_EQ(lines[0]["ids"].get<std::vector<int64_t>>(), reference_.i64("text.greedy_tokens"));
}

// Without the generation prompt the prompt ends with the user's turn ("User: ...\n"), before the template's
// "Assistant: <think>"; a chat may then end with the assistant's turn, which the model continues.
TEST_F(GenerateMessages, NoGenerationPromptEndsWithTheMessages) {
    const std::string text = meta_["prompts"]["text"]["text"];
    const std::string generation_prompt = "Assistant: <think>";
    ASSERT_TRUE(text.ends_with(generation_prompt)) << text;
    const std::unique_ptr<folio::Tokenizer> tokenizer = folio::Tokenizer::load(kModel);
    const std::vector<int64_t> reference_ids = reference_.i64("text.input_ids");
    ASSERT_EQ(tokenizer->encode(text, true),
              std::vector<int32_t>(reference_ids.begin(), reference_ids.end()));
    const CliRun run =
        folio_cli("--ids --max-tokens 2 --no-generation-prompt --messages " + messages_file("text").string());
    ASSERT_EQ(run.status, 0) << run.out;
    const std::vector<json> lines = id_lines(run.out);
    ASSERT_EQ(lines.size(), 1u) << run.out;
    EXPECT_EQ(lines[0]["prompt_ids"].get<std::vector<int32_t>>(),
              tokenizer->encode(text.substr(0, text.size() - generation_prompt.size()), true));

    const std::filesystem::path continued = dir_.path() / "continued.json";
    write_text(continued, R"({"messages": [{"role": "user", "content": "Hi"},
                                           {"role": "assistant", "content": "Hello"}]})");
    const CliRun open =
        folio_cli("--ids --max-tokens 2 --no-generation-prompt --messages " + continued.string());
    ASSERT_EQ(open.status, 0) << open.out;
    const std::vector<json> open_lines = id_lines(open.out);
    ASSERT_EQ(open_lines.size(), 1u) << open.out;
    const std::string eos = "<|end_of_sentence|>";
    EXPECT_EQ(open_lines[0]["prompt_ids"].get<std::vector<int32_t>>(),
              tokenizer->encode("<|begin_of_sentence|>User: Hi\nAssistant: Hello" + eos, true));
    const CliRun refused = folio_cli("--max-tokens 2 --messages " + continued.string());
    EXPECT_NE(refused.status, 0);
    EXPECT_NE(refused.out.find("a chat must end with the user's message"), std::string::npos) << refused.out;
}

TEST_F(GenerateMessages, ErrorsNameTheFileTheMessageAndThePart) {
    const std::filesystem::path file = dir_.path() / "bad.json";
    const auto error_of = [&](const std::string& messages, const std::string& extra = "") {
        write_text(file, messages);
        const CliRun run = folio_cli("--max-tokens 2 --messages " + file.string() + " " + extra);
        EXPECT_EQ(run.status, 1) << run.out;
        return run.out;
    };
    const std::string at = file.string() + ": messages[1].content[1]";
    std::string out = error_of(R"([{"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "audio_url"}]}])");
    EXPECT_NE(out.find(at + ".type: 'audio_url' is not supported"), std::string::npos) << out;
    out = error_of(R"([{"role": "system", "content": "s"},
        {"role": "user", "content": ["a", {"type": "video_frames", "frames": ["x.png"], "fps": -1}]}])");
    EXPECT_NE(out.find(file.string() + ": messages[1].content[0] must be an object, got a string"),
              std::string::npos)
        << out;
    out = error_of(R"([{"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "missing.png"}}]}])");
    EXPECT_NE(out.find(at + ": "), std::string::npos) << out;
    EXPECT_NE(out.find("missing.png"), std::string::npos) << out;
    out = error_of(R"([{"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}])");
    EXPECT_NE(out.find(at + ": image URLs are not fetched"), std::string::npos) << out;
    out = error_of(R"([{"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "file://server/a.png"}}]}])");
    EXPECT_NE(out.find(at + ": 'file://server/a.png' is not a file URL of this machine"), std::string::npos)
        << out;
    // More frames than the sampling keeps.
    const std::string frames =
        R"([{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text",
        "text": "a"}, {"type": "video_frames", "frames": ["a.png", "b.png", "c.png"], "fps": 2}]}])";
    out = error_of(frames, R"(--mm-processor-kwargs '{"video_min_frames": 1, "video_max_frames": 2}')");
    EXPECT_NE(out.find(at + ".frames: 3 frames, more than the 2 a video may have"), std::string::npos) << out;
    out = error_of("[1, 2");
    EXPECT_NE(out.find(file.string() + ": "), std::string::npos) << out;
    out = error_of(R"({"model": "x"})");
    EXPECT_NE(out.find("expected an array of messages or an object with \"messages\""), std::string::npos)
        << out;
    out = error_of("[]", "--prompt x");
    EXPECT_NE(out.find("--prompt and --messages do not go together"), std::string::npos) << out;
    out = error_of(R"([{"role": "user", "content": "a"}])", "--chat-template-kwargs '[1]'");
    EXPECT_NE(out.find("--chat-template-kwargs expects a JSON object"), std::string::npos) << out;
}

// A video file, by path and as a data URL, sampled as --mm-processor-kwargs says: twice the frames, twice the
// video's placeholder tokens.
TEST_F(GenerateMessages, VideoFilesAreSampledAsTheKwargsSay) {
    const std::filesystem::path clip = fixtures_dir().parent_path() / "video" / "testsrc-64x48-10fps.mp4";
    std::ifstream in(clip, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    const int64_t video_token = meta_["config"]["video_token_id"];
    for (const std::string& url : {clip.string(), folio::server::encode_data_url(bytes, "video/mp4")}) {
        const std::filesystem::path file = dir_.path() / "clip.json";
        write_text(file, json::array({{{"role", "user"},
                                       {"content",
                                        {{{"type", "video_url"}, {"video_url", {{"url", url}}}},
                                         {{"type", "text"}, {"text", "What happens?"}}}}}})
                             .dump());
        std::vector<int64_t> n_video_tokens;
        for (const int n_frames : {2, 4}) {
            const std::string kwargs = "'{\"video_min_frames\": " + std::to_string(n_frames) +
                                       ", \"video_max_frames\": " + std::to_string(n_frames) + "}'";
            const CliRun run = folio_cli("--ids --max-tokens 1 --mm-processor-kwargs " + kwargs +
                                         " --messages " + file.string());
            ASSERT_EQ(run.status, 0) << run.out;
            const std::vector<json> lines = id_lines(run.out);
            ASSERT_EQ(lines.size(), 1u) << run.out;
            const std::vector<int64_t> ids = lines[0]["prompt_ids"];
            n_video_tokens.push_back(std::count(ids.begin(), ids.end(), video_token));
        }
        EXPECT_GT(n_video_tokens[0], 0) << url.substr(0, 64);
        EXPECT_EQ(n_video_tokens[1], 2 * n_video_tokens[0]) << url.substr(0, 64);
    }
}

// --limit-mm-per-prompt counts images and videos each on their own.
TEST_F(GenerateMessages, ImagesAndVideosAreLimitedApart) {
    const std::string image = fixtures_dir() / "images" / "small.png";
    const json frames = clip_frames();
    const auto messages = [&](int n_images, int n_videos) {
        json content = json::array();
        for (int i = 0; i < n_images; ++i) {
            content.push_back({{"type", "image_url"}, {"image_url", {{"url", image}}}});
        }
        for (int v = 0; v < n_videos; ++v) {
            content.push_back({{"type", "video_frames"}, {"frames", frames}, {"fps", 2}});
        }
        content.push_back({{"type", "text"}, {"text", "Describe."}});
        const std::filesystem::path file =
            dir_.path() / ("limit-" + std::to_string(n_images) + "-" + std::to_string(n_videos) + ".json");
        write_text(file, json::array({{{"role", "user"}, {"content", content}}}).dump());
        return file.string();
    };
    const std::string limit = R"( --limit-mm-per-prompt '{"image": 1, "video": 1}')";
    const CliRun both = folio_cli("--ids --max-tokens 1 --messages " + messages(1, 1) + limit);
    EXPECT_EQ(both.status, 0) << both.out;
    EXPECT_EQ(id_lines(both.out).size(), 1u) << both.out;
    const CliRun videos = folio_cli("--max-tokens 1 --messages " + messages(1, 2) + limit);
    EXPECT_EQ(videos.status, 1);
    EXPECT_NE(videos.out.find("2 videos in one request, more than limit_mm_per_prompt's video limit 1"),
              std::string::npos)
        << videos.out;
    const CliRun images = folio_cli("--max-tokens 1 --messages " + messages(2, 0) + limit);
    EXPECT_EQ(images.status, 1);
    EXPECT_NE(images.out.find("2 images in one request, more than limit_mm_per_prompt 1"), std::string::npos)
        << images.out;
    // The default allows one video.
    const CliRun default_limit = folio_cli("--max-tokens 1 --messages " + messages(0, 2));
    EXPECT_NE(
        default_limit.out.find("2 videos in one request, more than limit_mm_per_prompt's video limit 1"),
        std::string::npos)
        << default_limit.out;
}

}  // namespace
