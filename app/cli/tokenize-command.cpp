#include "app/cli/tokenize-command.h"

#include <charconv>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio::cli {

const char* const kTokenizeUsage = R"(  folio-cli tokenize --model DIR [--json] TEXT
  folio-cli tokenize --model DIR [--json] --decode ID [ID ...]
      Prints the token ids and pieces of TEXT as a prompt holds them (the tokenizer's own special tokens,
      such as a BOS its configuration asks for, included; no chat template added), or the text of the ids.
      Reads tokenizer.json or tokenizer.model with tokenizer_config.json as transformers does.
)";

namespace {

struct TokenizeArgs {
    std::filesystem::path model;
    bool json = false;
    bool decode = false;
    std::vector<std::string> positional;
};

TokenizeArgs parse(int argc, char** argv, int first) {
    TokenizeArgs args;
    bool has_model = false;
    for (int i = first; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--model") {
            if (i + 1 >= argc) {
                fail("option --model needs a value");
            }
            args.model = argv[++i];
            has_model = true;
        } else if (arg == "--json") {
            args.json = true;
        } else if (arg == "--decode") {
            args.decode = true;
        } else if (arg == "--") {
            args.positional.insert(args.positional.end(), argv + i + 1, argv + argc);
            break;
        } else if (arg.starts_with("--")) {
            fail("unknown option ", arg);
        } else {
            args.positional.push_back(arg);
        }
    }
    if (!has_model) {
        fail("missing required option --model");
    }
    if (!args.decode && args.positional.size() != 1) {
        fail("tokenize takes one TEXT (quote it), got ", args.positional.size());
    }
    if (args.decode && args.positional.empty()) {
        fail("--decode needs at least one id");
    }
    return args;
}

int32_t parse_id(const std::string& text) {
    int32_t id = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (error != std::errc() || end != text.data() + text.size() || id < 0) {
        fail("'", text, "' is not a token id");
    }
    return id;
}

}  // namespace

int run_tokenize(int argc, char** argv, int first) {
    const TokenizeArgs args = parse(argc, argv, first);
    const auto tokenizer = Tokenizer::load(args.model);
    if (args.decode) {
        std::vector<int32_t> ids;
        for (const std::string& text : args.positional) {
            ids.push_back(parse_id(text));
        }
        const std::string text = tokenizer->decode(ids);
        if (args.json) {
            std::cout << nlohmann::json{{"tokenizer", tokenizer->description()}, {"ids", ids}, {"text", text}}
                             .dump()
                      << "\n";
        } else {
            std::cout << text << "\n";
        }
        return 0;
    }
    const std::vector<int32_t> ids = tokenizer->encode(args.positional[0], /*add_special_tokens=*/true);
    std::vector<std::string> pieces;
    for (const int32_t id : ids) {
        pieces.push_back(tokenizer->token_text(id).value_or(""));
    }
    if (args.json) {
        std::cout << nlohmann::json{{"tokenizer", tokenizer->description()}, {"ids", ids}, {"pieces", pieces}}
                         .dump()
                  << "\n";
        return 0;
    }
    std::cout << ids.size() << " tokens, " << tokenizer->description() << "\n";
    for (size_t i = 0; i < ids.size(); ++i) {
        // Pieces as JSON strings, so that spaces, newlines and control characters show.
        std::cout << ids[i] << "\t" << nlohmann::json(pieces[i]).dump()
                  << (tokenizer->is_special(ids[i]) ? "\tspecial" : "") << "\n";
    }
    return 0;
}

}  // namespace folio::cli
