// A model folder checked before use: the files its kind needs are there, links lead to blobs, JSON files
// parse, sizes are sane and the safetensors headers (and the shard index) are valid; in a cache snapshot,
// every file matches the repository's listing in size and, on request, in hash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/hub/hub-cache.h"
#include "app/hub/model-catalogue.h"

namespace folio::hub {

struct FolderCheck {
    std::filesystem::path dir;
    ModelKind kind = ModelKind::Recognition;
    std::vector<std::string> problems;  // each names the file and what is wrong with it
    int n_files = 0;
    int64_t bytes = 0;
    int n_hashed = 0;  // files whose content was hashed against their blob name
    // Blobs whose content does not match their name: removing them lets a pull fetch them again.
    std::vector<std::filesystem::path> damaged_blobs;

    bool ok() const { return problems.empty(); }
    // "DIR: problem; problem" in one line, for error messages.
    std::string message() const;
};

struct FolderCheckOptions {
    // The kind the folder must be; by default read from config.json (model_type, architectures).
    std::optional<ModelKind> kind;
    // The repository's listing at the snapshot's commit and the patterns of the files fetched: each
    // matching file must be there with the listed size.
    const std::vector<TreeEntry>* listing = nullptr;
    std::vector<std::string> patterns;
    // The tokenizer comes from another folder: the folder need not hold one.
    bool tokenizer_elsewhere = false;
    // Hash each file whose link names its blob by hash (a cache snapshot) and compare.
    bool hash_blobs = false;
};

FolderCheck check_model_folder(const std::filesystem::path& dir, const FolderCheckOptions& options = {});

// The kind config.json declares: layout for PP-DocLayout's model types and object-detection architectures,
// recognition otherwise; nullopt when the folder has no readable config.json.
std::optional<ModelKind> detect_model_kind(const std::filesystem::path& dir);

}  // namespace folio::hub
