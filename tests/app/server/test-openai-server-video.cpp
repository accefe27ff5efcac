// The OpenAI-compatible server on the ERNIE-4.5-VL fixture with videos: video_frames parts (the reference's
// clip as PNG data URLs) give the reference's prompt and the service's own answer; video_url parts take a
// video file's data URL where the server decodes videos and are refused where it does not; images and videos
// are limited each on their own; a part's frames beyond max_frames are refused naming the part.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "app/images/image-loader.h"
#include "app/images/video-loader.h"
#include "app/server/openai-protocol.h"
#include "app/server/openai-server.h"
#include "engine/backend/backend.h"
#include "engine/service/engine-service.h"
#include "fixture-reference.h"

namespace {

using namespace folio;
using namespace std::chrono_literals;
using nlohmann::json;
using server::OpenAiServer;
using server::ServerParams;

const std::filesystem::path kErnieDir = folio::testing::fixtures_dir().parent_path() / "ernie45-vl";

std::vector<uint8_t> file_bytes(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

class OpenAiServerVideo : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        service_ = std::make_unique<EngineService>();
        ServiceParams sp;
        sp.device.make_backend = [] { return make_cpu_backend(2); };
        sp.models.push_back({ModelRole::Chat, kErnieDir / "ernie45-vl-tiny", {}});
        sp.engine.max_model_len = 2048;
        sp.engine.max_num_seqs = 4;
        sp.engine.limit_mm_per_prompt = 1;
        sp.engine.limit_video_per_prompt = 1;
        service_->load(sp);
        ASSERT_EQ(service_->wait_loaded(120s), ServiceState::Ready) << service_->status().error;
    }
    static void TearDownTestSuite() { service_.reset(); }

    OpenAiServerVideo() : reference_(kErnieDir / "reference.safetensors") {
        const std::vector<int64_t> shape = reference_.shape("video_frames.clip");
        const std::vector<int64_t> values = reference_.i64("video_frames.clip");
        const int h = static_cast<int>(shape[1]), w = static_cast<int>(shape[2]);
        for (int64_t f = 0; f < shape[0]; ++f) {
            Image frame = make_image(w, h);
            cv::Mat bgr(h, w, CV_8UC3);
            for (int y = 0; y < h; ++y) {
                for (int x = 0; x < w; ++x) {
                    const size_t at = static_cast<size_t>(((f * h + y) * w + x) * 3);
                    for (size_t c = 0; c < 3; ++c) {
                        frame.rgb[(static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)) *
                                      3 +
                                  c] = static_cast<uint8_t>(values[at + c]);
                    }
                    bgr.at<cv::Vec3b>(y, x) =
                        cv::Vec3b(static_cast<uint8_t>(values[at + 2]), static_cast<uint8_t>(values[at + 1]),
                                  static_cast<uint8_t>(values[at]));
                }
            }
            std::vector<uint8_t> png;
            cv::imencode(".png", bgr, png);
            frame_urls_.push_back(server::encode_data_url(png, "image/png"));
            frames_.push_back(std::move(frame));
        }
    }

    std::unique_ptr<OpenAiServer> start(ServerParams p) {
        p.port = 0;
        p.metrics_port = -1;
        p.image_pixels = {3136, 37632};
        auto s = std::make_unique<OpenAiServer>(
            *service_, std::move(p),
            [](std::span<const uint8_t> bytes, std::string_view name) { return decode_image(bytes, name); },
            [](std::span<const uint8_t> bytes, std::string_view name) {
                const ImageFileInfo info = probe_image(bytes, name);
                return std::optional<server::ImageSize>(
                    server::ImageSize{info.pages.at(0).width, info.pages.at(0).height});
            });
        s->start();
        return s;
    }

    json frames_part() const { return {{"type", "video_frames"}, {"frames", frame_urls_}, {"fps", 2}}; }

    static json body(const json& parts, const std::string& text) {
        json content = parts;
        content.push_back({{"type", "text"}, {"text", text}});
        return {{"messages", {{{"role", "user"}, {"content", content}}}},
                {"max_tokens", 16},
                {"temperature", 0},
                {"chat_template_kwargs", {{"enable_thinking", false}}}};
    }

    static httplib::Result post(const OpenAiServer& s, const json& b) {
        httplib::Client client("127.0.0.1", s.port());
        client.set_read_timeout(120, 0);
        return client.Post("/v1/chat/completions", b.dump(), "application/json");
    }

    static void expect_refused(const httplib::Result& res, const std::string& param,
                               const std::string& message) {
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, 400) << res->body;
        const json error = json::parse(res->body)["error"];
        EXPECT_EQ(error["param"], param) << res->body;
        EXPECT_NE(error["message"].get<std::string>().find(message), std::string::npos) << res->body;
    }

    static std::unique_ptr<EngineService> service_;
    folio::testing::Reference reference_;
    std::vector<Image> frames_;
    std::vector<std::string> frame_urls_;
};

std::unique_ptr<EngineService> OpenAiServerVideo::service_;

// The reference's "video" prompt sent as frames: its prompt length, and the answer the service gives for the
// same chat with the frames as a Video.
TEST_F(OpenAiServerVideo, VideoFramesGiveTheReferencePromptAndTheServicesAnswer) {
    const auto server = start({});
    const auto res = post(*server, body(json::array({frames_part()}), "What happens?"));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json answer = json::parse(res->body);
    EXPECT_EQ(answer["usage"]["prompt_tokens"].get<int64_t>(), reference_.shape("video.input_ids").back());

    Chat chat;
    chat.template_kwargs = {{"enable_thinking", false}};
    chat.messages.emplace_back(ChatMessage::Role::User, "What happens?", std::vector<Image>{},
                               std::vector<Video>{Video{frames_, 2.0}});
    GenerationOptions options;
    options.max_tokens = 16;
    options.sampling.temperature = 0.0f;
    SubmitOptions submit;
    submit.keep_prompt_ids = true;
    RequestHandle handle = service_->submit({std::move(chat), options}, std::move(submit));
    std::string text;
    while (std::optional<RequestOutput> out = handle.next()) {
        ASSERT_TRUE(out->error.empty()) << out->error;
        text += out->text;
    }
    EXPECT_EQ(answer["choices"][0]["message"]["content"].get<std::string>(), text);
    const std::vector<int32_t> ids = handle.prompt_ids();
    EXPECT_EQ(std::vector<int64_t>(ids.begin(), ids.end()), reference_.i64("video.input_ids"));
    server->stop();
}

TEST_F(OpenAiServerVideo, ImagesAndVideosAreLimitedApart) {
    const auto server = start({});
    const json image = {
        {"type", "image_url"},
        {"image_url",
         {{"url", server::encode_data_url(file_bytes(folio::testing::fixtures_dir() / "images" / "small.png"),
                                          "image/png")}}}};
    const auto both = post(*server, body(json::array({image, frames_part()}), "Compare."));
    ASSERT_TRUE(both);
    EXPECT_EQ(both->status, 200) << both->body;
    expect_refused(post(*server, body(json::array({frames_part(), frames_part()}), "Compare.")), "messages",
                   "2 videos in one request, more than limit_mm_per_prompt's video limit 1");
    expect_refused(post(*server, body(json::array({image, image}), "Compare.")), "messages",
                   "2 images in one request, more than limit_mm_per_prompt 1");
    server->stop();
}

TEST_F(OpenAiServerVideo, FramesBeyondMaxFramesAndBadFramesAreRefused) {
    ServerParams p;
    p.video_sampling.min_frames = 1;
    p.video_sampling.max_frames = 4;
    const auto server = start(p);
    expect_refused(post(*server, body(json::array({frames_part()}), "What happens?")),
                   "messages[0].content[0].frames", "5 frames, more than the 4 a video may have");
    json bad = frames_part();
    bad["frames"] = json::array({frame_urls_[0], "data:text/plain;base64,aGVsbG8="});
    expect_refused(post(*server, body(json::array({bad}), "What happens?")),
                   "messages[0].content[0].frames[1]", "the data URL's media type must be an image");
    server->stop();
}

// video_url parts are sampled as the server says, or as a request's mm_processor_kwargs say.
TEST_F(OpenAiServerVideo, VideoUrlsTakeAVideoFilesDataUrlWhereTheServerDecodesVideos) {
    const std::filesystem::path clip =
        folio::testing::fixtures_dir().parent_path() / "video" / "testsrc-64x48-10fps.mp4";
    const json part = {{"type", "video_url"},
                       {"video_url", {{"url", server::encode_data_url(file_bytes(clip), "video/mp4")}}}};
    {
        const auto server = start({});
        expect_refused(post(*server, body(json::array({part}), "What happens?")), "messages[0].content[0]",
                       "video_url is not taken by this server");
        server->stop();
    }
    ServerParams p;
    p.video_sampling = {2.0, 4, 8};
    p.decode_video = [](std::span<const uint8_t> bytes, std::string_view name,
                        const VideoSampling& sampling) { return decode_video(bytes, name, sampling); };
    const auto server = start(p);
    // The clip's 33 frames at 10 fps: 7 frames at the server's 2 fps, padded to 8; 6 where a request allows
    // no more; 4 at a request's 1 fps (the server's minimum), 6 with a request's own minimum of 6. Each pair
    // of frames is the same number of prompt tokens.
    const auto prompt_tokens = [&](const json& kwargs) {
        json b = body(json::array({part}), "What happens?");
        if (!kwargs.empty()) {
            b["mm_processor_kwargs"] = kwargs;
        }
        const auto res = post(*server, b);
        EXPECT_TRUE(res);
        EXPECT_EQ(res ? res->status : 0, 200) << (res ? res->body : "");
        return res && res->status == 200 ? json::parse(res->body)["usage"]["prompt_tokens"].get<int64_t>()
                                         : -1;
    };
    const int64_t eight = prompt_tokens(json::object());
    const int64_t six = prompt_tokens({{"video_max_frames", 6}});
    const int64_t four = prompt_tokens({{"video_fps", 1}});
    EXPECT_GT(six - four, 0);
    EXPECT_EQ(eight - six, six - four);
    EXPECT_EQ(prompt_tokens({{"video_fps", 1}, {"video_min_frames", 6}}), six);
    expect_refused(post(*server,
                        [&] {
                            json b = body(json::array({part}), "What happens?");
                            b["mm_processor_kwargs"] = {{"video_min_frames", 9}, {"video_max_frames", 8}};
                            return b;
                        }()),
                   "mm_processor_kwargs", "video_min_frames is above video_max_frames");
    expect_refused(post(*server,
                        [&] {
                            json b = body(json::array({part}), "What happens?");
                            b["mm_processor_kwargs"] = {{"video_fps", 0}};
                            return b;
                        }()),
                   "mm_processor_kwargs.video_fps", "must be a number above 0");
    json image_as_video = part;
    image_as_video["video_url"]["url"] = server::encode_data_url(
        file_bytes(folio::testing::fixtures_dir() / "images" / "small.png"), "image/png");
    expect_refused(post(*server, body(json::array({image_as_video}), "What happens?")),
                   "messages[0].content[0]", "the data URL's media type must be a video");
    server->stop();
}

}  // namespace
