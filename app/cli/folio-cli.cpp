// folio-cli: Folio from the command line. Subcommands: ocr, generate, bench, tokenize, layout, model, serve.
#include <algorithm>
#include <array>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/bench.h"
#include "app/cli/cli-service.h"
#include "app/cli/document-prompt.h"
#include "app/cli/layout-command.h"
#include "app/cli/messages-file.h"
#include "app/cli/model-command.h"
#include "app/cli/ocr-command.h"
#include "app/cli/serve-command.h"
#include "app/cli/server-bench.h"
#include "app/cli/tokenize-command.h"
#include "app/images/image-loader.h"
#include "app/options/cli-options.h"
#include "app/options/engine-options.h"
#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/models/model-registry.h"
#include "engine/service/engine-service.h"

namespace {

using folio::fail;
using folio::seconds_since;
using namespace folio::cli;

constexpr const char* kUsage = R"(usage:
  folio-cli generate --model DIR|ORG/NAME [--image FILE ...] --prompt TEXT [--prompt TEXT ...]
                     [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]
                     [--repetition-penalty R] [--seed S] [--stop TEXT ...] [--device cpu|cuda[:N]]
                     [--threads N] [--chat-template-kwargs JSON] [--no-generation-prompt] [--ids]
                     [--document FILE] [engine options]
  folio-cli generate --model DIR|ORG/NAME --messages FILE.json [--messages FILE.json ...] [the same options]
      Each --prompt is one user turn through the model's chat template, with the images (PaddleOCR-VL's
      task prompts: "OCR:", "Table Recognition:", "Formula Recognition:", "Chart Recognition:"). One
      prompt takes every image and streams its text to stdout; several prompts run as a batch, each with
      its own image (one --image per prompt) or all with the same one (a single --image), and print their
      texts when done. Each --messages file is one chat request: OpenAI's messages (a JSON array, or an
      object with "messages"), roles system, user and assistant, content a string or an array of parts
      {"type": "text", "text": T}, {"type": "image_url", "image_url": {"url": PATH|data URL}},
      {"type": "video_url", "video_url": {"url": PATH}} and {"type": "video_frames", "frames": [PATH, ...],
      "fps": F} (frames as images, with the rate they were taken at); paths relative to the file's folder,
      or file:// URLs. --chat-template-kwargs gives the template variables ('{"enable_thinking": false}');
      --no-generation-prompt leaves the assistant's turn unopened; --mm-processor-kwargs' video_fps,
      video_min_frames and video_max_frames sample video files (defaults from the model's
      video_preprocessor_config.json). --ids prints one JSON line a request, {"prompt_ids": [...], "ids":
      [...]}: the prompt's ids with images and videos expanded, and the generated ids. Without --max-tokens
      a request may run to max_model_len (or the file's max_new_tokens); a --max-tokens that does not fit it
      is refused. Sampling flags left out take the model folder's generation_config.json values
      (--generation-config vllm: greedy decoding). --model takes a
      model folder, or a Hub repository already downloaded (folio-cli model pull).
      --document FILE asks each request about a document: the JSON folio-cli ocr wrote (NAME.json) or a
      text file (a paragraph a block). Its blocks open the first user message behind references such as
      [p3.b5], and the model is asked to cite them; a document longer than the context gives the whole
      pages holding most of the prompt's words, then single blocks ranked the same way (counted by the
      model's tokenizer, beside --max-tokens or a quarter of the context). After each answer a line on
      stderr names the pages given and the blocks the answer cites, with their page and block id.
)";

// The requests --prompt (with --image) or --messages give, as chats.
std::vector<folio::Chat> generate_chats(const Options& opt, const folio::cli::EngineOptions& engine_options,
                                        const std::filesystem::path& model_dir) {
    const std::vector<std::string> tasks = opt.all("--prompt");
    const std::vector<std::string> files = opt.all("--messages");
    if (tasks.empty() == files.empty()) {
        fail(tasks.empty() ? "missing required option --prompt or --messages"
                           : "--prompt and --messages do not go together; give the prompt as a user message");
    }
    nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
    if (opt.has("--chat-template-kwargs")) {
        std::string problem;
        const std::optional<nlohmann::json> parsed =
            folio::try_parse_json(opt.text("--chat-template-kwargs"), problem);
        if (!parsed || !parsed->is_object()) {
            fail("--chat-template-kwargs expects a JSON object such as '{\"enable_thinking\": false}', got '",
                 opt.text("--chat-template-kwargs"), "'", parsed ? "" : " (" + problem + ")");
        }
        kwargs = nlohmann::ordered_json::parse(parsed->dump());
    }
    const bool generation_prompt = !opt.has("--no-generation-prompt");
    std::vector<folio::Chat> chats;
    const auto add = [&](std::vector<folio::ChatMessage> messages) {
        folio::Chat& chat = chats.emplace_back();
        chat.messages = std::move(messages);
        chat.template_kwargs = kwargs;
        chat.add_generation_prompt = generation_prompt;
    };
    if (!files.empty()) {
        if (opt.has("--image")) {
            fail("--image goes with --prompt; with --messages give images as image_url parts");
        }
        const folio::VideoSampling sampling = video_sampling(model_dir, engine_options);
        for (const std::string& file : files) {
            add(load_messages_file(file, sampling));
        }
        return chats;
    }
    // Which images each prompt takes.
    const std::vector<std::string> image_paths = opt.all("--image");
    std::vector<std::vector<std::string>> request_images(tasks.size());
    if (tasks.size() == 1) {
        request_images[0] = image_paths;
    } else if (image_paths.size() == tasks.size() || image_paths.size() == 1) {
        for (size_t i = 0; i < tasks.size(); ++i) {
            request_images[i] = {image_paths[image_paths.size() == 1 ? 0 : i]};
        }
    } else if (!image_paths.empty()) {
        fail(tasks.size(), " prompts need one --image each or a single --image for all, got ",
             image_paths.size());
    }
    for (size_t r = 0; r < tasks.size(); ++r) {
        folio::ChatMessage message(folio::ChatMessage::Role::User, tasks[r]);
        for (const auto& path : request_images[r]) {
            message.images.push_back(folio::load_image(path));
        }
        add({std::move(message)});
    }
    return chats;
}

int run_generate(const Options& opt) {
    opt.allow(with_engine_flags({"--model", "--device", "--image", "--prompt", "--messages", "--max-tokens",
                                 "--temperature", "--top-k", "--top-p", "--repetition-penalty", "--seed",
                                 "--threads", "--stop", "--chat-template-kwargs", "--no-generation-prompt",
                                 "--ids", "--document"}));
    const std::filesystem::path model_dir = resolve_model_option(opt.text("--model"), opt.has("--tokenizer"));
    folio::GenerationOptions options;
    if (opt.has("--max-tokens")) {
        options.max_tokens = opt.integer("--max-tokens", 0);
    }
    options.sampling.temperature = static_cast<float>(opt.real("--temperature", 0.0));
    options.sampling.top_k = static_cast<int>(opt.integer("--top-k", 0));
    options.sampling.top_p = static_cast<float>(opt.real("--top-p", 1.0));
    options.sampling.repetition_penalty = static_cast<float>(opt.real("--repetition-penalty", 1.0));
    options.sampling.seed = static_cast<uint64_t>(opt.integer("--seed", 0));
    // What the flags leave out comes from the model's generation_config.json (--generation-config).
    options.model_defaults = {!opt.has("--temperature"), !opt.has("--top-p"), !opt.has("--top-k"),
                              !opt.has("--repetition-penalty"), !opt.has("--max-tokens")};
    options.stop_strings = opt.all("--stop");

    const folio::cli::EngineOptions engine_options =
        parse_engine_options(opt, folio::describe_model(model_dir));
    std::vector<folio::Chat> chats = generate_chats(opt, engine_options, model_dir);
    // What each request is called in the batch's output: its prompt or its file.
    const std::vector<std::string> names =
        opt.has("--messages") ? opt.all("--messages") : opt.all("--prompt");
    const bool ids = opt.has("--ids");
    // Ask the document: read before the model loads, so that a bad file costs no loading.
    std::optional<folio::DocumentPassages> document;
    const std::filesystem::path document_file =
        opt.has("--document") ? opt.text("--document") : std::string();
    if (opt.has("--document")) {
        document = load_document(document_file);
    }

    folio::EngineService service;
    load_service(service, opt, model_dir, engine_options);
    std::vector<folio::PassageSelection> selections;
    if (document) {
        for (folio::Chat& chat : chats) {
            selections.push_back(add_document(chat, *document, document_file, service, options.max_tokens));
        }
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<folio::RequestHandle> handles;
    for (folio::Chat& chat : chats) {
        folio::SubmitOptions submit;
        submit.keep_prompt_ids = ids;
        handles.push_back(service.submit({std::move(chat), options}, std::move(submit)));
    }
    const bool stream = handles.size() == 1 && !ids;
    int status = 0;
    for (size_t r = 0; r < handles.size(); ++r) {
        std::string text;
        std::vector<int32_t> tokens;
        std::optional<folio::RequestOutput> last;
        while (std::optional<folio::RequestOutput> out = handles[r].next()) {
            if (stream) {
                std::cout << out->text << std::flush;
            }
            text += out->text;
            tokens.insert(tokens.end(), out->tokens.begin(), out->tokens.end());
            last = std::move(out);
        }
        if (last && !last->error.empty()) {
            if (stream) {
                std::cout << std::endl;
            }
            std::cerr << "folio-cli generate: request " << r << ": error: " << last->error << "\n";
            status = 1;
            continue;
        }
        if (ids) {
            std::cout
                << nlohmann::ordered_json{{"prompt_ids", handles[r].prompt_ids()}, {"ids", tokens}}.dump()
                << std::endl;
        } else if (stream) {
            std::cout << std::endl;
        } else {
            std::cout << "=== request " << r << ": " << names[r] << "\n" << text << "\n";
        }
        const folio::FinishReason finish = last && last->finish ? *last->finish : folio::FinishReason::Error;
        std::cerr << "folio-cli: request " << r << ": " << tokens.size() << " tokens ("
                  << folio::finish_reason_name(finish) << "), prompt " << handles[r].n_prompt_tokens()
                  << " tokens\n";
        if (document) {
            std::cerr << "folio-cli: request " << r << ": " << describe_answer(text, *document, selections[r])
                      << "\n";
        }
    }
    const double seconds = seconds_since(start);
    const folio::EngineStats stats = service.stats().engine;
    std::cerr << "folio-cli: " << std::fixed << std::setprecision(3) << seconds << std::defaultfloat << " s, "
              << stats.runner.n_steps << " steps, " << stats.runner.n_tokens
              << " tokens through the decoder, " << stats.runner.n_image_patches << " image patches, "
              << stats.n_preemptions << " preemptions, prefix cache " << stats.n_prefix_hit_blocks << "/"
              << stats.n_prefix_lookup_blocks << " blocks hit\n";
    return status;
}

constexpr std::array<std::string_view, 8> kCommands = {"generate", "ocr",    "summary", "bench",
                                                       "tokenize", "layout", "model",   "serve"};

bool is_command(std::string_view name) {
    return std::find(kCommands.begin(), kCommands.end(), name) != kCommands.end();
}

// Levenshtein distance, for the command a mistyped one was likely meant to be.
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string unknown_command_message(std::string_view command) {
    std::string message = "folio-cli: unknown command '" + std::string(command) + "'";
    std::string_view nearest;
    size_t best = 3;  // at most two edits away
    for (const std::string_view known : kCommands) {
        const size_t d = edit_distance(command, known);
        if (d < best) {
            best = d;
            nearest = known;
        }
    }
    if (!nearest.empty()) {
        message += " (did you mean '" + std::string(nearest) + "'?)";
    }
    message += "; the commands are";
    for (size_t i = 0; i < kCommands.size(); ++i) {
        message += (i == 0 ? " " : ", ") + std::string(kCommands[i]);
    }
    return message + ". folio-cli --help lists their options.\n";
}

// The version and the backends this build has, for `folio-cli --version`.
std::string version_line() {
#ifdef FOLIO_WITH_CUDA
    constexpr const char* kBackends = "CPU and CUDA backends";
#else
    constexpr const char* kBackends = "CPU backend only";
#endif
    return std::string("folio-cli ") + FOLIO_VERSION + " (" + kBackends + ")\n";
}

// Every command's usage, then the engine options they share.
void print_usage() {
    std::cout << kUsage << kOcrUsage << kSummaryUsage << kBenchUsage << kTokenizeUsage << kLayoutUsage
              << kModelUsage << kServeUsage << kServerBenchUsage << "\n"
              << engine_usage()
              << "\nfolio-cli --version prints the version and the backends of this build.\n";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 2 && (std::string_view(argv[1]) == "--version" || std::string_view(argv[1]) == "-V" ||
                      std::string_view(argv[1]) == "version")) {
        std::cout << version_line();
        return 0;
    }
    if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h" ||
        std::string_view(argv[1]) == "help") {
        print_usage();
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    if (!is_command(command)) {
        std::cerr << unknown_command_message(command);
        return 2;
    }
    // A command's own usage for `folio-cli COMMAND --help` where the command has one to itself.
    const bool help = std::any_of(argv + 2, argv + argc, [](const char* a) {
        return std::string_view(a) == "--help" || std::string_view(a) == "-h";
    });
    if (help && (command == "tokenize" || command == "layout" || command == "summary")) {
        std::cout << (command == "tokenize" ? kTokenizeUsage
                      : command == "layout" ? kLayoutUsage
                                            : kSummaryUsage);
        return 0;
    }
    try {
        if (command == "tokenize") {
            return run_tokenize(argc, argv, 2);
        }
        if (command == "ocr") {
            return run_ocr(argc, argv, 2);
        }
        if (command == "serve") {
            return run_serve(argc, argv, 2);
        }
        if (command == "summary") {
            return run_summary(argc, argv, 2);
        }
        if (command == "layout") {
            return run_layout(argc, argv, 2);
        }
        if (command == "model") {
            if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "help")) {
                std::cout << kModelUsage;
                return 0;
            }
            return run_model(argc, argv, 2);
        }
        const Options options = command == "generate"
                                    ? Options(argc, argv, 2, {"--ids", "--no-generation-prompt"})
                                    : Options(argc, argv, 2);
        if (options.has("--help")) {
            print_usage();
            return 0;
        }
        if (command == "generate") {
            return run_generate(options);
        }
        if (command == "bench") {
            return options.has("--server") ? run_server_bench(options) : run_bench(options);
        }
        std::cerr << unknown_command_message(command);
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "folio-cli " << command << ": error: " << e.what() << "\n";
        return 1;
    }
}
