// The models Folio runs: each one's Hub repository, its kind, the files Folio fetches and needs, and the
// layout model a recognition model is paired with, so that the document pipeline runs a recognition model
// with the layout model it was released with.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace folio::hub {

enum class ModelKind { Recognition, Layout, Chat };
const char* model_kind_name(ModelKind kind);

struct CatalogueEntry {
    std::string repo;   // "PaddlePaddle/PaddleOCR-VL"
    std::string title;  // "PaddleOCR-VL 0.9B"
    ModelKind kind = ModelKind::Recognition;
    std::string layout_repo;  // a recognition model's layout model; empty for a layout model
};

// Every model Folio knows, recognition models first, then layout models, then chat models.
const std::vector<CatalogueEntry>& model_catalogue();
// The entry of a repository ("ORG/NAME", compared without regard to case, as the Hub does); nullptr when
// Folio does not know it.
const CatalogueEntry* find_catalogue_entry(std::string_view repo);

// The repository files Folio fetches for a model of this kind (configuration, tokenizer, chat template,
// safetensors weights and their index, at the top of the repository): glob patterns for glob_match. Other
// files (a README, images, a Paddle inference copy in a subfolder) stay on the Hub.
const std::vector<std::string>& fetch_patterns(ModelKind kind);

// A file a model folder must hold, or the first of several alternatives it holds.
struct RequiredFile {
    std::vector<std::string> any_of;
    std::string what;  // "the tokenizer", for messages
};
// The files a model of this kind cannot run without. The weights (model.safetensors, or
// model.safetensors.index.json and its shards) are one of them.
const std::vector<RequiredFile>& required_files(ModelKind kind);

// Shell-style matching of a repository path: '*' any run of characters within one path segment, '?' one
// character other than '/'; everything else literal and case-sensitive.
bool glob_match(std::string_view pattern, std::string_view path);
bool matches_any(const std::vector<std::string>& patterns, std::string_view path);

}  // namespace folio::hub
