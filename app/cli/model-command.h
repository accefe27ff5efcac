// folio-cli model: models from the Hugging Face Hub and on disk: pull, list, verify, rm; and the --model
// value of the commands that run one (a folder or ORG/NAME).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "app/options/cli-options.h"

namespace folio::cli {

extern const char* const kModelUsage;

// argv[first..] are the subcommand and its arguments. Throws folio::Error for bad arguments; returns the
// exit status.
int run_model(int argc, char** argv, int first);

// A --model value as a folder: the folder itself, or ORG/NAME from the Hugging Face cache or Folio's models
// folder; checked before use. Says on stderr where a model named by repository was found.
std::filesystem::path resolve_model_option(const std::string& spec, bool tokenizer_elsewhere = false);

// The layout model for documents: --layout-model, else the one the catalogue pairs with the --model value.
// Throws folio::Error where none is known (naming --layout-model and --no-layout) or it is not on disk.
std::filesystem::path resolve_layout_model(const Options& opt, const std::string& model_spec);

// The layout model the catalogue pairs with the --model value where it is on disk; nothing, with the reason
// in `why`, where none is known or it has not been downloaded.
std::optional<std::filesystem::path> find_paired_layout_model(const std::string& model_spec,
                                                              std::string& why);

}  // namespace folio::cli
