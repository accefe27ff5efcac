#include "app/hub/folder-check.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "app/hub/blob-hash.h"
#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"
#include "engine/files/safetensors.h"
#include "engine/models/model-registry.h"

namespace folio::hub {

namespace fs = std::filesystem;

namespace {

// JSON files larger than this are not configuration files (tokenizer.json of large vocabularies is tens of
// MB).
constexpr uintmax_t kMaxJsonBytes = 512ull << 20;

// The parsed JSON object of a file, or a problem.
std::optional<nlohmann::json> read_json_object(const fs::path& path, std::string& problem) {
    std::error_code error;
    const auto size = fs::file_size(path, error);
    if (error) {
        problem = "cannot be read (" + error.message() + ")";
        return std::nullopt;
    }
    if (size == 0) {
        problem = "is empty";
        return std::nullopt;
    }
    if (size > kMaxJsonBytes) {
        problem = "is " + std::to_string(size) + " bytes, too large for a JSON file";
        return std::nullopt;
    }
    const std::optional<std::string> text = read_file(path);
    if (!text) {
        problem = "cannot be read";
        return std::nullopt;
    }
    std::string fault;
    std::optional<nlohmann::json> value = try_parse_json(*text, fault);
    if (!value) {
        problem = "is " + fault;
        return std::nullopt;
    }
    if (!value->is_object()) {
        problem = std::string("must be a JSON object, is ") + value->type_name();
        return std::nullopt;
    }
    return value;
}

// The role of the model family the registry picks for the config; a config no family knows is read as a
// recognition model's, whose loader names what is wrong with it.
std::optional<ModelKind> kind_of_config(const nlohmann::json& config) {
    const ModelFamily* family = ModelRegistry::builtin().match(config);
    switch (family ? family->role() : ModelRole::Recognition) {
        case ModelRole::Layout:
            return ModelKind::Layout;
        case ModelRole::Chat:
            return ModelKind::Chat;
        case ModelRole::Recognition:
            break;
    }
    return ModelKind::Recognition;
}

bool exists_or_link(const fs::path& path) {
    std::error_code error;
    return fs::exists(fs::symlink_status(path, error));
}

class Checker {
public:
    Checker(const fs::path& dir, FolderCheck& out) : dir_(dir), out_(out) {}

    void problem(const std::string& file, const std::string& what) { add(file + " " + what); }
    // Each problem once (a file may fail more than one check the same way).
    void add(const std::string& text) {
        if (std::find(out_.problems.begin(), out_.problems.end(), text) == out_.problems.end()) {
            out_.problems.push_back(text);
        }
    }

    // Whether the file is there and readable; records why not.
    bool present(const std::string& file) {
        const fs::path path = dir_ / file;
        std::error_code error;
        if (!exists_or_link(path)) {
            return false;
        }
        if (!fs::exists(path, error)) {
            const fs::path target = fs::read_symlink(path, error);
            problem(file,
                    "links to " + target.string() + ", which is missing (a removed or unfinished download)");
            return false;
        }
        if (!fs::is_regular_file(path, error)) {
            problem(file, "is not a file");
            return false;
        }
        return true;
    }

    void check_json(const std::string& file) {
        if (!present(file)) {
            return;
        }
        std::string what;
        if (!read_json_object(dir_ / file, what)) {
            problem(file, what);
        }
    }

    void check_weights() {
        const bool has_index = exists_or_link(dir_ / "model.safetensors.index.json");
        if (!has_index) {
            if (present("model.safetensors")) {
                open_store();
            }
            return;
        }
        if (!present("model.safetensors.index.json")) {
            return;
        }
        const std::string index_file = "model.safetensors.index.json";
        std::string what;
        if (!read_json_object(dir_ / index_file, what)) {
            problem(index_file, what);
            return;
        }
        std::set<std::string> shards;
        try {
            const SafetensorsIndex index =
                parse_safetensors_index(read_file_text(dir_ / index_file), index_file);
            for (const auto& [name, shard] : index.weight_map) {
                shards.insert(shard);
            }
        } catch (const Error& e) {
            add(e.what());
            return;
        }
        bool all_there = true;
        for (const std::string& shard : shards) {
            if (!present(shard)) {
                if (!exists_or_link(dir_ / shard)) {
                    problem(shard, "(listed in model.safetensors.index.json) is missing");
                }
                all_there = false;
            }
        }
        if (all_there) {
            open_store();
        }
    }

    // Every header parsed and checked against its file's size, the index's tensors found in their shards.
    void open_store() {
        try {
            const auto store = TensorStore::open(dir_);
            if (store->names().empty()) {
                problem("the weights", "hold no tensors");
            }
        } catch (const std::exception& e) {
            std::string message = e.what();
            // The store's messages start with the file's full path; the folder is named once, up front.
            const std::string prefix = dir_.string() + "/";
            if (message.starts_with(prefix)) {
                message = message.substr(prefix.size());
            }
            add(message);
        }
    }

private:
    const fs::path& dir_;
    FolderCheck& out_;
};

}  // namespace

std::string FolderCheck::message() const {
    std::string text = dir.string() + ":";
    for (size_t i = 0; i < problems.size(); ++i) {
        text += (i ? "; " : " ") + problems[i];
    }
    return text;
}

std::optional<ModelKind> detect_model_kind(const fs::path& dir) {
    std::string ignored;
    const std::optional<nlohmann::json> config = read_json_object(dir / "config.json", ignored);
    return config ? kind_of_config(*config) : std::nullopt;
}

FolderCheck check_model_folder(const fs::path& dir, const FolderCheckOptions& options) {
    FolderCheck out;
    out.dir = dir;
    std::error_code error;
    if (!fs::is_directory(dir, error)) {
        out.problems.push_back(fs::exists(dir, error) ? "is not a folder" : "does not exist");
        return out;
    }
    Checker check(dir, out);
    out.kind = options.kind.value_or(detect_model_kind(dir).value_or(ModelKind::Recognition));

    for (const RequiredFile& required : required_files(out.kind)) {
        if (options.tokenizer_elsewhere && required.any_of.front() == "tokenizer.json") {
            continue;
        }
        const bool any = std::any_of(required.any_of.begin(), required.any_of.end(),
                                     [&](const std::string& file) { return exists_or_link(dir / file); });
        if (!any) {
            std::string names;
            for (size_t i = 0; i < required.any_of.size(); ++i) {
                names += (i == 0 ? "" : i + 1 == required.any_of.size() ? " or " : ", ") + required.any_of[i];
            }
            out.problems.push_back(names + " is missing (" + required.what + ")");
        }
    }
    for (const char* file :
         {"config.json", "preprocessor_config.json", "tokenizer_config.json", "tokenizer.json",
          "generation_config.json", "special_tokens_map.json", "added_tokens.json"}) {
        if (exists_or_link(dir / file)) {
            check.check_json(file);
        }
    }
    if (exists_or_link(dir / "tokenizer.model") && check.present("tokenizer.model") &&
        fs::file_size(dir / "tokenizer.model", error) == 0) {
        check.problem("tokenizer.model", "is empty");
    }
    check.check_weights();

    // Sizes and, on request, hashes against the repository's listing.
    if (options.listing) {
        for (const TreeEntry& entry : *options.listing) {
            if (!options.patterns.empty() && !matches_any(options.patterns, entry.path)) {
                continue;
            }
            const fs::path path = dir / entry.path;
            if (!exists_or_link(path)) {
                check.problem(entry.path, "is missing (the repository lists it)");
                continue;
            }
            if (!check.present(entry.path)) {
                continue;
            }
            const auto size = static_cast<int64_t>(fs::file_size(path, error));
            if (size != entry.size) {
                check.problem(entry.path, "has " + std::to_string(size) + " bytes, the repository lists " +
                                              std::to_string(entry.size));
            }
        }
    }
    std::set<fs::path> seen;
    for (fs::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
        std::error_code entry_error;
        if (it->is_directory(entry_error) || !fs::exists(it->path(), entry_error)) {
            continue;
        }
        ++out.n_files;
        const fs::path target = fs::weakly_canonical(it->path(), entry_error);
        if (!seen.insert(target).second) {
            continue;
        }
        out.bytes += static_cast<int64_t>(fs::file_size(it->path(), entry_error));
        if (!options.hash_blobs || !it->is_symlink(entry_error)) {
            continue;
        }
        const std::string blob = target.filename().string();
        if (const std::optional<BlobHashKind> kind = blob_hash_kind(blob)) {
            const std::string file = it->path().lexically_relative(dir).generic_string();
            try {
                const std::string digest = hash_file(it->path(), *kind);
                ++out.n_hashed;
                if (digest != blob) {
                    out.damaged_blobs.push_back(target);
                    check.problem(file, std::string("is damaged: its ") +
                                            (*kind == BlobHashKind::Sha256 ? "sha256" : "git blob id") +
                                            " is " + digest + ", its blob's name says " + blob);
                }
            } catch (const std::exception& e) {
                check.add(e.what());
            }
        }
    }
    return out;
}

}  // namespace folio::hub
