#include "app/hub/model-locator.h"

#include <system_error>

#include "app/hub/folder-check.h"
#include "app/hub/hub-cache.h"
#include "engine/common/error.h"

namespace folio::hub {

namespace fs = std::filesystem;

namespace {

// A snapshot folder's repository and commit: ROOT/models--ORG--NAME/snapshots/COMMIT.
std::optional<std::pair<std::string, std::string>> snapshot_origin(const fs::path& dir) {
    std::error_code error;
    const fs::path path = fs::weakly_canonical(fs::absolute(dir, error), error);
    const std::string commit = path.filename().string();
    const fs::path snapshots = path.parent_path();
    const std::string folder = snapshots.parent_path().filename().string();
    if (error || snapshots.filename() != "snapshots" || !is_commit_hash(commit) ||
        !folder.starts_with("models--")) {
        return std::nullopt;
    }
    const std::string rest = folder.substr(8);
    const size_t separator = rest.find("--");
    if (separator == std::string::npos) {
        return std::nullopt;
    }
    const std::string repo = rest.substr(0, separator) + "/" + rest.substr(separator + 2);
    return is_repo_id(repo) ? std::optional(std::make_pair(repo, commit)) : std::nullopt;
}

// A candidate folder found by name.
std::optional<LocatedModel> find_in(const fs::path& root, ModelSource source, const std::string& repo,
                                    const std::string& revision) {
    std::error_code error;
    const HubCache cache(root);
    if (const auto commit = cache.resolve_revision(repo, revision)) {
        return LocatedModel{cache.snapshot_dir(repo, *commit), source, repo, *commit, ModelKind::Recognition};
    }
    if (source == ModelSource::HubCache || revision != "main") {
        return std::nullopt;
    }
    // Plain folders: ROOT/ORG/NAME, then ROOT/NAME.
    const std::string name = repo.substr(repo.find('/') + 1);
    for (const fs::path& dir : {root / fs::path(repo), root / name}) {
        if (fs::is_directory(dir, error) && fs::exists(dir / "config.json", error)) {
            return LocatedModel{dir, source, repo, "", ModelKind::Recognition};
        }
    }
    return std::nullopt;
}

}  // namespace

const char* model_source_name(ModelSource source) {
    switch (source) {
        case ModelSource::Folder:
            return "folder";
        case ModelSource::HubCache:
            return "Hugging Face cache";
        case ModelSource::ModelsFolder:
            return "models folder";
    }
    return "unknown";
}

std::string LocatedModel::description() const {
    std::string text = repo.empty() ? dir.string() : repo;
    if (!commit.empty()) {
        text += " at " + commit.substr(0, 7);
    }
    switch (source) {
        case ModelSource::Folder:
            return repo.empty() ? text : text + " (" + dir.string() + ")";
        case ModelSource::HubCache:
            return text + " in the Hugging Face cache (" + dir.string() + ")";
        case ModelSource::ModelsFolder:
            return text + " in the models folder (" + dir.string() + ")";
    }
    return text;
}

LocatedModel locate_model(std::string_view spec, const HubSettings& settings, const LocateOptions& options) {
    if (spec.empty()) {
        fail("--model is empty: give a model folder or a Hub repository (ORG/NAME)");
    }
    std::error_code error;
    std::optional<LocatedModel> found;
    const fs::path as_path{std::string(spec)};
    if (fs::is_directory(as_path, error)) {
        found = LocatedModel{as_path, ModelSource::Folder, "", "", ModelKind::Recognition};
        if (const auto origin = snapshot_origin(as_path)) {
            found->repo = origin->first;
            found->commit = origin->second;
        }
    } else if (is_repo_id(spec)) {
        const CatalogueEntry* entry = find_catalogue_entry(spec);
        std::vector<std::string> spellings = {std::string(spec)};
        if (entry && entry->repo != spec) {
            spellings.insert(spellings.begin(), entry->repo);
        }
        std::vector<std::pair<fs::path, ModelSource>> roots = {
            {settings.cache_dir, ModelSource::HubCache}, {settings.models_dir, ModelSource::ModelsFolder}};
        for (const fs::path& dir : options.search_dirs) {
            roots.emplace_back(dir, ModelSource::ModelsFolder);
        }
        for (size_t r = 0; r < roots.size() && !found; ++r) {
            for (size_t s = 0; s < spellings.size() && !found; ++s) {
                found = find_in(roots[r].first, roots[r].second, spellings[s], options.revision);
            }
        }
        if (!found) {
            std::string looked = "the Hugging Face cache (" + settings.cache_dir.string() +
                                 "), the models folder (" + settings.models_dir.string() + ")";
            for (const fs::path& dir : options.search_dirs) {
                looked += ", " + dir.string();
            }
            fail(spec, (options.revision == "main" ? "" : " at revision " + options.revision),
                 " is not on this computer: not a folder, and not in ", looked,
                 "; download it with: folio-cli model pull ", spec,
                 (options.revision == "main" ? "" : " --revision " + options.revision));
        }
    } else {
        fail(spec, ": no such model folder (and not a Hub repository name ORG/NAME)");
    }

    found->kind = options.kind.value_or(detect_model_kind(found->dir).value_or(ModelKind::Recognition));
    if (const CatalogueEntry* entry = find_catalogue_entry(found->repo); entry && !options.kind) {
        found->kind = entry->kind;
    }
    if (options.check) {
        FolderCheckOptions check_options;
        check_options.kind = found->kind;
        check_options.tokenizer_elsewhere = options.tokenizer_elsewhere;
        std::optional<std::vector<TreeEntry>> listing;
        if (!found->commit.empty()) {
            const HubCache cache(found->dir.parent_path().parent_path().parent_path());
            listing = cache.read_tree(found->repo, found->commit);
            if (listing) {
                check_options.listing = &*listing;
                const CatalogueEntry* entry = find_catalogue_entry(found->repo);
                check_options.patterns = fetch_patterns(entry ? entry->kind : found->kind);
            }
        }
        const FolderCheck check = check_model_folder(found->dir, check_options);
        if (!check.ok()) {
            std::string problems;
            for (size_t i = 0; i < check.problems.size(); ++i) {
                problems += (i ? "; " : "") + check.problems[i];
            }
            fail(found->description(), " is not a usable ", model_kind_name(found->kind),
                 " model: ", problems,
                 found->repo.empty() ? "" : "; download it again with: folio-cli model pull " + found->repo);
        }
    }
    return *found;
}

std::optional<std::string> paired_layout_repo(const LocatedModel& model) {
    const CatalogueEntry* entry = find_catalogue_entry(model.repo);
    if (!entry || entry->layout_repo.empty()) {
        return std::nullopt;
    }
    return entry->layout_repo;
}

}  // namespace folio::hub
