// A generation request from its body to the engine's request: the model it names, its images checked and
// decoded, its chat (with chat_template_kwargs) or text, and its generation options.
#include <cstdio>
#include <filesystem>

#include "app/server/image-fetch.h"
#include "app/server/openai-server-impl.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"

namespace folio::server {

std::string OpenAiServer::Impl::new_id(const char* prefix) {
    const std::lock_guard lock(mutex);
    char hex[33];
    std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng()));
    return std::string(prefix) + hex;
}

void OpenAiServer::Impl::check_model(const std::string& model) const {
    if (model.empty() || params.model_names.empty() ||
        std::find(params.model_names.begin(), params.model_names.end(), model) != params.model_names.end()) {
        return;
    }
    throw ApiError(
        404, "invalid_request_error",
        "the model '" + model + "' does not exist; this server serves '" + params.model_names.front() + "'",
        "model", "model_not_found");
}

DocumentPassages OpenAiServer::Impl::named_document(const std::string& name) const {
    if (params.documents_dir.empty()) {
        bad_request(
            "documents by name need a documents folder (folio-cli serve --documents-dir DIR); send the "
            "document's JSON or text as \"document\" instead",
            "document.name");
    }
    // A plain file name: no folder part, nothing hidden, nothing that climbs out of the folder.
    const bool plain = !name.empty() && name.size() <= 200 && name.front() != '.' &&
                       name.find_first_of(std::string_view("/\\\0:", 4)) == std::string::npos;
    if (!plain) {
        bad_request(
            "document.name must be a document's file name without .json (no folders), got '" + name + "'",
            "document.name");
    }
    const std::filesystem::path file = params.documents_dir / (name + ".json");
    std::error_code error;
    if (!std::filesystem::is_regular_file(file, error)) {
        throw ApiError(404, "invalid_request_error",
                       "no document named '" + name + "' in the documents folder (" + name + ".json)",
                       "document.name", "document_not_found");
    }
    constexpr uintmax_t kMaxDocumentBytes = uintmax_t{256} << 20;
    if (std::filesystem::file_size(file, error) > kMaxDocumentBytes) {
        bad_request("the document '" + name + "' is larger than 256 MiB", "document.name");
    }
    try {
        return DocumentPassages::from_ocr_json(parse_json(read_file_text(file), file.string()),
                                               name + ".json");
    } catch (const Error& e) {
        bad_request(std::string("the document '") + name + "' cannot be read: " + e.what(), "document.name");
    }
}

// The image's size is read from its header and checked before it is decoded, and at most
// max_decode_threads images are decoded at once, so that the memory decoding takes is bounded.
Image OpenAiServer::Impl::checked_image(const std::vector<uint8_t>& bytes, const std::string& param) {
    std::optional<ImageSize> size;
    try {
        size = read_size(bytes, param);
    } catch (const std::exception& e) {
        bad_request(std::string("the image could not be decoded: ") + e.what(), param);
    }
    if (!size || size->width <= 0 || size->height <= 0) {
        bad_request(param + ": the image's size cannot be read from its header", param);
    }
    if (size->width > max_image_pixels / size->height) {
        bad_request(param + ": the image is " + std::to_string(size->width) + "x" +
                        std::to_string(size->height) + " pixels, more than the " +
                        std::to_string(max_image_pixels) +
                        " this server decodes (--max-image-pixels); the model sees at most " +
                        std::to_string(params.image_pixels.max_pixels) + " pixels of it",
                    param);
    }
    decode_slots.acquire();
    try {
        Image image = decode(bytes, param);
        decode_slots.release();
        return image;
    } catch (const std::exception& e) {
        decode_slots.release();
        bad_request(std::string("the image could not be decoded: ") + e.what(), param);
    }
}

Image OpenAiServer::Impl::url_image(const std::string& url, const std::string& param) {
    const bool remote = url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
    const std::vector<uint8_t> bytes =
        remote && params.fetch_image_urls
            ? fetch_image_url(url, {params.max_body_bytes, params.fetch_timeout, 3}, param)
            : decode_data_url(url, param);
    return checked_image(bytes, param);
}

// A video_url part: a data URL of a video file (or an http(s) URL where image URLs are fetched) sampled as
// sampling says. A video_frames part: its frames decoded as images are, at the rate given.
Video OpenAiServer::Impl::part_video(const MediaPart& part, const VideoSampling& sampling) {
    if (!part.is_frames()) {
        if (!params.decode_video) {
            bad_request(part.param +
                            ": video_url is not taken by this server; send the video's frames as a "
                            "video_frames part",
                        part.param);
        }
        const std::string& url = part.url;
        const bool remote = url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
        const std::vector<uint8_t> bytes =
            remote && params.fetch_image_urls
                ? fetch_image_url(url, {params.max_body_bytes, params.fetch_timeout, 3}, part.param)
                : decode_data_url(url, part.param, "video");
        decode_slots.acquire();
        try {
            Video video = params.decode_video(bytes, part.param, sampling);
            decode_slots.release();
            return video;
        } catch (const std::exception& e) {
            decode_slots.release();
            bad_request(std::string("the video could not be decoded: ") + e.what(), part.param);
        }
    }
    const auto n_frames = static_cast<int64_t>(part.frames.size());
    if (n_frames > sampling.max_frames) {
        bad_request(part.param + ".frames: " + std::to_string(n_frames) + " frames, more than the " +
                        std::to_string(sampling.max_frames) + " a video may have",
                    part.param + ".frames");
    }
    Video video;
    video.fps = part.fps;
    for (size_t f = 0; f < part.frames.size(); ++f) {
        video.frames.push_back(url_image(part.frames[f], part.param + ".frames[" + std::to_string(f) + "]"));
    }
    return video;
}

std::optional<ImagePixelBounds> OpenAiServer::Impl::request_pixels(
    const GenerationRequest& generation) const {
    if (!generation.image_min_pixels && !generation.image_max_pixels) {
        return std::nullopt;
    }
    ImagePixelBounds bounds = params.image_pixels;
    bounds.min_pixels = generation.image_min_pixels.value_or(bounds.min_pixels);
    bounds.max_pixels = generation.image_max_pixels.value_or(bounds.max_pixels);
    if (bounds.min_pixels > bounds.max_pixels) {
        bad_request("mm_processor_kwargs: min_pixels " + std::to_string(bounds.min_pixels) +
                        " is above max_pixels " + std::to_string(bounds.max_pixels),
                    "mm_processor_kwargs");
    }
    return bounds;
}

void OpenAiServer::Impl::add_document(Chat& chat, const DocumentPassages& document,
                                      const std::optional<ImagePixelBounds>& pixels,
                                      const GenerationRequest& generation, Exchange& ex) const {
    // The passages and the messages counted by the model's tokenizer, the images and videos by their sizes.
    const auto not_ready = [](const Error& e) {
        return ApiError(503, "server_error", std::string("the model is not ready: ") + e.what());
    };
    ChatBudget budget;
    for (const ChatMessage& message : chat.messages) {
        budget.messages.push_back(message.text);
    }
    const std::vector<MediaSize> media = media_sizes(chat.messages);
    if (!media.empty()) {
        std::vector<int64_t> counts;
        try {
            counts = service.count_media({}, media, pixels);
        } catch (const Error& e) {
            // The service answers while a model is ready; what it refuses then is the request's.
            if (service.status().state != ServiceState::Ready) {
                throw not_ready(e);
            }
            bad_request(e.what(), "messages");
        }
        for (const int64_t n : counts) {
            budget.media_tokens += n;
        }
    }
    budget.context_len = service.limits().max_model_len;
    budget.answer_room = generation.max_tokens.value_or(budget.context_len / 4);
    const PassageSelection selection =
        document.select_for_chat(budget, [this, &not_ready](const std::vector<std::string>& texts) {
            try {
                return service.count_tokens({}, texts);
            } catch (const Error& e) {
                throw not_ready(e);
            }
        });
    if (selection.text.empty()) {
        bad_request("not even one block of the document fits in the context of " +
                        std::to_string(budget.context_len) + " tokens beside the messages" +
                        (media.empty() ? std::string() : ", their images and videos") + " and max_tokens " +
                        std::to_string(budget.answer_room),
                    "document");
    }
    const auto first_user =
        std::find_if(chat.messages.begin(), chat.messages.end(),
                     [](const ChatMessage& m) { return m.role == ChatMessage::Role::User; });
    if (first_user != chat.messages.end()) {
        first_user->text = selection.text + "\n\n" + first_user->text;
    }
    ex.document_pages = selection.pages;
    ex.document_left_out = selection.left_out;
    ex.document_in_part = selection.in_part;
}

RequestSpec OpenAiServer::Impl::build_spec(Api kind, std::string_view body, Exchange& ex) {
    GenerationRequest& generation = ex.generation;
    RequestSpec spec;
    if (kind == Api::Completion) {
        CompletionRequest request = parse_completion(body);
        generation = std::move(request.generation);
        check_model(generation.model);
        spec.input = RawText{std::move(request.prompt)};
        spec.image_pixels = request_pixels(generation);
    } else {
        ChatCompletionRequest request = parse_chat_completion(body);
        generation = std::move(request.generation);
        check_model(generation.model);
        int64_t n_images = 0, n_videos = 0;
        for (const ChatTurn& turn : request.messages) {
            n_images += static_cast<int64_t>(turn.images.size());
            n_videos += static_cast<int64_t>(turn.videos.size());
        }
        // Counted before anything is decoded.
        try {
            check_media_counts(n_images, n_videos, service.limits());
        } catch (const Error& e) {
            bad_request(e.what(), "messages");
        }
        // The server's video sampling, with what the request's mm_processor_kwargs change.
        VideoSampling sampling = params.video_sampling;
        if (generation.video_fps) {
            sampling.fps = generation.video_fps;
        }
        sampling.min_frames = generation.video_min_frames.value_or(sampling.min_frames);
        sampling.max_frames = generation.video_max_frames.value_or(sampling.max_frames);
        try {
            check_video_sampling(sampling, "mm_processor_kwargs");
        } catch (const Error& e) {
            bad_request(e.what(), "mm_processor_kwargs");
        }
        // The pixel bounds the request's mm_processor_kwargs set, which its images are counted within.
        spec.image_pixels = request_pixels(generation);
        Chat chat;
        chat.template_kwargs = std::move(request.chat_template_kwargs);
        for (ChatTurn& turn : request.messages) {
            ChatMessage& message = chat.messages.emplace_back();
            message.role = turn.role;
            message.text = std::move(turn.text);
            for (const MediaPart& part : turn.images) {
                message.images.push_back(url_image(part.url, part.param));
            }
            for (const MediaPart& part : turn.videos) {
                message.videos.push_back(part_video(part, sampling));
            }
        }
        // Ask the document: the passages that fit beside the messages, their images and videos and the
        // answer open the first user message, the same text for every turn of a conversation while the whole
        // document fits.
        if (request.document_name) {
            request.document = named_document(*request.document_name);
            if (request.document->empty()) {
                bad_request("the document '" + *request.document_name + "' has no text to answer from",
                            "document.name");
            }
        }
        if (request.document) {
            add_document(chat, *request.document, spec.image_pixels, generation, ex);
            ex.document = std::make_shared<const DocumentPassages>(std::move(*request.document));
        }
        spec.input = std::move(chat);
    }
    GenerationOptions& options = spec.options;
    options.max_tokens = generation.max_tokens;
    // A max_tokens over what the context leaves after the prompt is lowered to that, as FastDeploy and vLLM
    // do (PaddleOCR's client asks for 8192); the request then ends with finish_reason "length".
    options.fit_max_tokens = true;
    options.sampling = generation.sampling;
    options.model_defaults = generation.model_defaults;
    if (!generation.seeded) {
        const std::lock_guard lock(mutex);
        options.sampling.seed = rng();
    }
    options.stop_strings = generation.stop;
    options.skip_special_tokens = generation.skip_special_tokens;
    options.ignore_eos = generation.ignore_eos;
    return spec;
}

}  // namespace folio::server
