// The request builder on the fixture model: chat templates with their keyword arguments, images and videos
// expanded where the model takes them, and the limits it checks.
#include <gtest/gtest.h>

#include "serving-fixture.h"

namespace {

class ServingRequests : public Serving {};

}  // namespace

// A chat's template kwargs (a request's chat_template_kwargs) reach the template as variables beside the
// model's values, over those of the same name, as transformers' apply_chat_template passes them; the chat's
// own messages and generation prompt stay.
TEST_F(ServingRequests, ChatTemplateKwargsAreTemplateVariables) {
    PromptFormat format;
    format.tokenizer = tokenizer_.get();
    format.chat_template = std::make_shared<const ChatTemplate>(ChatTemplate::parse(
        "{{ bos_token }}{% for m in messages %}{{ m['content'][0]['text'] }}{% endfor %}"
        "{% if add_generation_prompt %}Assistant: {% endif %}"
        "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
        "{% else %}<think>\n{% endif %}",
        "inline template"));
    format.template_values = special_token_values(*tokenizer_);
    const ChatMessage hi{ChatMessage::Role::User, "Hi", {}};
    const std::string bos = format.template_values.value("bos_token", "");
    ASSERT_FALSE(bos.empty());
    EXPECT_EQ(render_chat(format, {hi}), bos + "HiAssistant: <think>\n");
    EXPECT_EQ(render_chat(format, {hi}, {{"enable_thinking", false}}),
              bos + "HiAssistant: <think>\n\n</think>\n\n");
    EXPECT_EQ(render_chat(format, {hi}, {{"enable_thinking", true}}), bos + "HiAssistant: <think>\n");
    EXPECT_EQ(render_chat(format, {hi}, {{"bos_token", "[B]"}}), "[B]HiAssistant: <think>\n");
    EXPECT_EQ(render_chat(format, {hi},
                          {{"messages", nlohmann::ordered_json::array()}, {"add_generation_prompt", false}}),
              bos + "HiAssistant: <think>\n");
    try {
        render_chat(format, {hi}, nlohmann::ordered_json::array({1, 2}));
        ADD_FAILURE() << "kwargs that are not an object were taken";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("chat_template_kwargs must be an object"), std::string::npos)
            << e.what();
    }

    // Through the request builder: the prompt's ids are the rendered text's.
    format.special = {files_->config().image_token_id, files_->config().vision_start_token_id,
                      files_->config().vision_end_token_id};
    format.preprocessor = files_->preprocessor();
    format.n_image_tokens = [](const ImageGrid& g) { return g.n_patches() / 4; };
    const RequestBuilder builder(format, {512, 3, 0});
    const Request thinking = builder.build({Chat{{hi}}, {}});
    const Request plain = builder.build({Chat{{hi}, {{"enable_thinking", false}}}, {}});
    EXPECT_EQ(plain.prompt.ids,
              tokenizer_->encode(render_chat(format, {hi}, {{"enable_thinking", false}}), true));
    EXPECT_EQ(thinking.prompt.ids, tokenizer_->encode(render_chat(format, {hi}), true));
    EXPECT_GT(plain.prompt.ids.size(), thinking.prompt.ids.size());

    // Without the generation prompt the text ends with the messages, and the chat may end with the
    // assistant's turn; with it, it may not.
    EXPECT_EQ(render_chat(format, {hi}, nlohmann::ordered_json::object(), false), bos + "Hi<think>\n");
    Chat open{{hi}};
    open.add_generation_prompt = false;
    EXPECT_EQ(builder.build({open, {}}).prompt.ids, tokenizer_->encode(bos + "Hi<think>\n", true));
    const ChatMessage answer{ChatMessage::Role::Assistant, "Yes", {}};
    Chat continued{{hi, answer}};
    continued.add_generation_prompt = false;
    EXPECT_EQ(builder.build({continued, {}}).prompt.ids, tokenizer_->encode(bos + "HiYes<think>\n", true));
    continued.add_generation_prompt = true;
    EXPECT_THROW(builder.build({continued, {}}), Error);
}

// The chat through the folder's chat_template.jinja: one user turn is the single-turn prompt, and a
// conversation alternates "User: ...\n" and "Assistant: ...<|end_of_sentence|>".
TEST_F(ServingRequests, RequestBuilderFollowsTheChatTemplate) {
    const ModelConfig& cfg = files_->config();
    PromptFormat format;
    format.tokenizer = tokenizer_.get();
    format.chat_template = paddleocr_vl_chat_template(files_->dir());
    format.template_values = special_token_values(*tokenizer_);
    EXPECT_EQ(format.chat_template->origin(), (files_->dir() / "chat_template.jinja").string());

    ChatMessage first{ChatMessage::Role::User, "OCR:", {pages_[0]}};
    EXPECT_EQ(render_chat(format, {first}), chat_prompt_text(*format.chat_template, 1, "OCR:"));
    ChatMessage answer{ChatMessage::Role::Assistant, "Hello", {}};
    ChatMessage second{ChatMessage::Role::User, "And this one?", {pages_[1], pages_[2]}};
    EXPECT_EQ(render_chat(format, {first, answer, second}),
              "<|begin_of_sentence|>User: <|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>OCR:\n"
              "Assistant: Hello<|end_of_sentence|>User: <|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>"
              "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>And this one?\nAssistant: ");
    // Without a template a chat is refused with the reason.
    PromptFormat no_template = format;
    no_template.chat_template.reset();
    try {
        render_chat(no_template, {first});
        ADD_FAILURE() << "a chat without a template was rendered";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos) << e.what();
    }

    format.special = {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id};
    format.preprocessor = files_->preprocessor();
    format.n_image_tokens = [](const ImageGrid& g) { return g.n_patches() / 4; };
    const RequestBuilder builder(format, {512, 3, 0});
    const Request task = builder.build({ImageTask{{pages_[1]}, "OCR:"}, {}});
    const Request reference = make_request({pages_[1]}, "OCR:");
    EXPECT_EQ(task.prompt.ids, reference.prompt.ids);
    EXPECT_EQ(task.prompt.modality, reference.prompt.modality);
    EXPECT_EQ(task.images.grids, reference.images.grids);
    EXPECT_EQ(task.image_hashes.size(), 1u) << "hashed where the request is built";
    EXPECT_EQ(task.max_tokens, 512 - static_cast<int64_t>(task.prompt.ids.size()));

    const Request chat = builder.build({Chat{{first, answer, second}}, {}});
    EXPECT_EQ(chat.images.grids.size(), 3u);
    int64_t n_image_tokens = 0;
    for (const ImageGrid& g : chat.images.grids) {
        n_image_tokens += g.n_patches() / 4;
    }
    EXPECT_EQ(std::count(chat.prompt.modality.begin(), chat.prompt.modality.end(), TokenModality::Image),
              n_image_tokens);
    EXPECT_EQ(chat.prompt.ids.front(), tokenizer_->encode("<|begin_of_sentence|>", true).front());
    const auto message = [&](RequestSpec spec) {
        try {
            builder.build(std::move(spec));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(message({ImageTask{{pages_[0], pages_[1], pages_[2], pages_[3]}, "OCR:"}, {}})
                  .find("4 images in one request, more than limit_mm_per_prompt 3"),
              std::string::npos);
    GenerationOptions too_long;
    too_long.max_tokens = 600;
    EXPECT_NE(message({ImageTask{{pages_[0]}, "OCR:"}, too_long}).find("max_tokens 600"), std::string::npos);
    too_long.fit_max_tokens = true;
    const Request fitted = builder.build({ImageTask{{pages_[0]}, "OCR:"}, too_long});
    EXPECT_EQ(fitted.max_tokens, 512 - static_cast<int64_t>(fitted.prompt.ids.size()));
    Image broken = pages_[0];
    broken.rgb.pop_back();
    EXPECT_NE(message({ImageTask{{broken}, "OCR:"}, {}}).find("message 0 image 0"), std::string::npos);
    EXPECT_NE(message({Chat{{first, answer}}, {}}).find("must end with the user's message"),
              std::string::npos);
    EXPECT_EQ(message({RawText{"OCR: plain text"}, {}}), "accepted");

    // A request's own pixel bounds: the image is resized within them, not the model's.
    PreprocessorConfig small = format.preprocessor;
    small.min_pixels = 28 * 28;
    small.max_pixels = 56 * 56;
    const std::vector<Image> one{pages_[1]};
    const ImageGrid expected = preprocess_images(one, small).grids.at(0);
    RequestSpec bounded{ImageTask{{pages_[1]}, "OCR:"}, {}};
    bounded.image_pixels = ImagePixelBounds{small.min_pixels, small.max_pixels};
    const Request resized = builder.build(bounded);
    EXPECT_EQ(resized.images.grids.at(0), expected);
    EXPECT_NE(resized.images.grids.at(0), task.images.grids.at(0));
    // Bounds wholly above the model's give way to its own.
    RequestSpec wide{ImageTask{{pages_[1]}, "OCR:"}, {}};
    wide.image_pixels =
        ImagePixelBounds{format.preprocessor.max_pixels * 2, format.preprocessor.max_pixels * 4};
    EXPECT_EQ(builder.build(wide).images.grids.at(0), task.images.grids.at(0));
    RequestSpec inverted{ImageTask{{pages_[1]}, "OCR:"}, {}};
    inverted.image_pixels = ImagePixelBounds{100, 10};
    EXPECT_NE(message(inverted).find("image pixel bounds 100..10"), std::string::npos);
}

// Videos beside images: a template that places both, the frames cut into a temporal grid, the placeholders
// marked as video, and clear refusals where the model or the template takes no video.
TEST_F(ServingRequests, RequestBuilderTakesVideosWhereTheModelDoes) {
    const ModelConfig& cfg = files_->config();
    PromptFormat format;
    format.tokenizer = tokenizer_.get();
    format.chat_template = std::make_shared<const ChatTemplate>(ChatTemplate::parse(
        "{%- for message in messages -%}{%- for c in message['content'] -%}"
        "{%- if c['type'] == 'image' -%}<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>"
        "{%- elif c['type'] == 'video' -%}<|IMAGE_START|><|VIDEO_PLACEHOLDER|><|IMAGE_END|>"
        "{%- else -%}{{ c['text'] }}{%- endif -%}{%- endfor -%}{%- endfor -%}",
        "video-template"));
    const std::optional<int32_t> video_token = tokenizer_->find_token("<|VIDEO_PLACEHOLDER|>");
    ASSERT_TRUE(video_token.has_value());
    format.special = {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id, *video_token};
    format.preprocessor = files_->preprocessor();
    format.preprocessor.temporal_patch_size = 2;
    format.n_image_tokens = [](const ImageGrid& g) { return g.n_patches() / 4; };
    const RequestBuilder builder(format, {100000, 4, 0});

    // Three frames of one size: padded to four, two temporal patches.
    Video video;
    for (int f = 0; f < 3; ++f) {
        video.frames.push_back(pages_[0]);
        std::fill(video.frames.back().rgb.begin(), video.frames.back().rgb.begin() + 3 * f, uint8_t{40});
    }
    ChatMessage message{ChatMessage::Role::User, "Describe.", {pages_[1]}};
    message.videos = {video};
    const Request r = builder.build({Chat{{message}}, {}});
    ASSERT_EQ(r.images.grids.size(), 2u);
    EXPECT_EQ(r.images.kinds, (std::vector<MediaKind>{MediaKind::Image, MediaKind::Video}));
    const ImageGrid frame = preprocess_images(std::span(&pages_[0], 1), format.preprocessor).grids.at(0);
    EXPECT_EQ(r.images.grids[1], (ImageGrid{2, frame.h, frame.w}));
    const auto n_of = [&](TokenModality m) {
        return std::count(r.prompt.modality.begin(), r.prompt.modality.end(), m);
    };
    EXPECT_EQ(n_of(TokenModality::Image), r.images.grids[0].n_patches() / 4);
    EXPECT_EQ(n_of(TokenModality::Video), r.images.grids[1].n_patches() / 4);
    // The image's run comes first, as the template places it, and the video's placeholders carry its token.
    const auto first_video =
        std::find(r.prompt.modality.begin(), r.prompt.modality.end(), TokenModality::Video);
    const auto last_image =
        std::find(r.prompt.modality.rbegin(), r.prompt.modality.rend(), TokenModality::Image);
    EXPECT_LT(std::distance(r.prompt.modality.begin(), last_image.base()),
              std::distance(r.prompt.modality.begin(), first_video));
    EXPECT_EQ(r.prompt.ids[static_cast<size_t>(first_video - r.prompt.modality.begin())], *video_token);
    EXPECT_EQ(r.image_hashes.size(), 2u);
    // The temporal patches hold consecutive frames: the video's first patch differs from a still of frame 0.
    const std::span<const uint8_t> video_levels = r.images.image_levels(1);
    PreprocessedImages still;
    append_image(still, pages_[0], format.preprocessor, "still");
    EXPECT_EQ(video_levels.size(), 2 * still.levels.size());
    EXPECT_FALSE(std::equal(still.levels.begin(), still.levels.end(), video_levels.begin()));

    const auto message_of = [&](const RequestBuilder& b, RequestSpec spec) {
        try {
            b.build(std::move(spec));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    PromptFormat no_video = format;
    no_video.special.video_token_id = -1;
    EXPECT_NE(
        message_of(RequestBuilder(no_video, {100000, 4, 0}), {Chat{{message}}, {}}).find("takes no video"),
        std::string::npos);
    PromptFormat drops_video = format;
    drops_video.chat_template = paddleocr_vl_chat_template(files_->dir());
    EXPECT_NE(message_of(RequestBuilder(drops_video, {100000, 4, 0}), {Chat{{message}}, {}})
                  .find("0 video placeholders"),
              std::string::npos);
    Video mixed = video;
    mixed.frames[1] = pages_[1];
    ChatMessage bad{ChatMessage::Role::User, "Describe.", {}};
    bad.videos = {mixed};
    EXPECT_NE(message_of(builder, {Chat{{bad}}, {}}).find("message 0 video 0: frame 1"), std::string::npos);
    bad.videos = {Video{}};
    EXPECT_NE(message_of(builder, {Chat{{bad}}, {}}).find("0 frames"), std::string::npos);
    // A step takes a video whole: its frames together within the largest image's tokens.
    ChatMessage only_video{ChatMessage::Role::User, "Describe.", {}, {video}};
    const int64_t video_tokens = r.images.grids[1].n_patches() / 4;
    EXPECT_NE(message_of(RequestBuilder(format, {100000, 4, video_tokens - 1}), {Chat{{only_video}}, {}})
                  .find("video 0 takes " + std::to_string(video_tokens) + " tokens"),
              std::string::npos);
    EXPECT_EQ(message_of(RequestBuilder(format, {100000, 4, video_tokens}), {Chat{{only_video}}, {}}),
              "accepted");
    // Images and videos are counted each on their own: one of each fits limits of one image and one video, a
    // second video does not, and no video fits a video limit of 0 whatever the image limit.
    EXPECT_EQ(message_of(RequestBuilder(format, {100000, 1, 0, 1}), {Chat{{message}}, {}}), "accepted");
    ChatMessage two_videos{ChatMessage::Role::User, "Describe.", {}, {video, video}};
    EXPECT_NE(message_of(RequestBuilder(format, {100000, 4, 0, 1}), {Chat{{two_videos}}, {}})
                  .find("2 videos in one request, more than limit_mm_per_prompt's video limit 1"),
              std::string::npos);
    EXPECT_NE(message_of(RequestBuilder(format, {100000, 4, 0, 0}), {Chat{{only_video}}, {}})
                  .find("1 video in one request, more than limit_mm_per_prompt's video limit 0"),
              std::string::npos);
    ChatMessage two_images{ChatMessage::Role::User, "Describe.", {pages_[0], pages_[1]}, {video}};
    EXPECT_NE(message_of(RequestBuilder(format, {100000, 1, 0, 4}), {Chat{{two_images}}, {}})
                  .find("2 images in one request, more than limit_mm_per_prompt 1"),
              std::string::npos);
}
