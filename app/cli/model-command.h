// folio-cli model: models from the Hugging Face Hub and on disk: pull, list, verify, rm; and the --model
// value of the commands that run one (a folder or ORG/NAME).
#pragma once

#include <filesystem>
#include <string>

namespace folio::cli {

extern const char* const kModelUsage;

// argv[first..] are the subcommand and its arguments. Throws folio::Error for bad arguments; returns the
// exit status.
int run_model(int argc, char** argv, int first);

// A --model value as a folder: the folder itself, or ORG/NAME from the Hugging Face cache or Folio's models
// folder; checked before use. Says on stderr where a model named by repository was found.
std::filesystem::path resolve_model_option(const std::string& spec, bool tokenizer_elsewhere = false);

}  // namespace folio::cli
