#include "app/cli/model-command.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "app/hub/folder-check.h"
#include "app/hub/hub-cache.h"
#include "app/hub/hub-settings.h"
#include "app/hub/model-catalogue.h"
#include "app/hub/model-download.h"
#include "app/hub/model-locator.h"
#include "engine/common/error.h"

namespace folio::cli {

const char* const kModelUsage =
    R"(  folio-cli model pull ORG/NAME [--revision R] [--no-layout] [--jobs N] [--cache-dir DIR]
      Downloads the files Folio needs of a Hub model repository into the Hugging Face cache (HF_HUB_CACHE,
      HF_HOME/hub or ~/.cache/huggingface/hub), where other tools find them too; a PaddleOCR-VL model
      brings the layout model it pairs with unless --no-layout. An interrupted pull resumes where it
      stopped. HF_ENDPOINT selects a mirror, HF_TOKEN or the token file authenticates, HF_HUB_OFFLINE=1
      uses the cache alone.
  folio-cli model list [--json]
      The models on this computer (Hugging Face cache and Folio's models folder): repository, revision,
      size, where; then the models Folio runs that are not downloaded.
  folio-cli model verify ORG/NAME|DIR [--revision R] [--quick] [--repair]
      Checks a model: its files, their sizes and safetensors headers, and (without --quick) every cached
      file's hash against the one the Hub published. --repair removes damaged files from the cache, for
      model pull to fetch again.
  folio-cli model rm ORG/NAME [--revision R] [--cache-dir DIR]
      Removes a model (or one revision of it) from the Hugging Face cache.
)";

namespace {

using namespace folio::hub;

struct ModelArgs {
    std::string subcommand;
    std::vector<std::string> positional;
    std::map<std::string, std::string> values;
    std::vector<std::string> switches;

    bool has(const std::string& flag) const {
        return values.contains(flag) || std::find(switches.begin(), switches.end(), flag) != switches.end();
    }
    std::string value(const std::string& flag, const std::string& fallback) const {
        const auto it = values.find(flag);
        return it == values.end() ? fallback : it->second;
    }
};

ModelArgs parse(int argc, char** argv, int first, const std::vector<std::string>& with_value,
                const std::vector<std::string>& bare) {
    ModelArgs args;
    args.subcommand = argv[first];
    for (int i = first + 1; i < argc; ++i) {
        std::string arg = argv[i];
        std::optional<std::string> value;
        if (arg.starts_with("--")) {
            if (const size_t eq = arg.find('='); eq != std::string::npos) {
                value = arg.substr(eq + 1);
                arg.resize(eq);
            }
            if (std::find(with_value.begin(), with_value.end(), arg) != with_value.end()) {
                if (!value) {
                    if (i + 1 >= argc) {
                        fail("option ", arg, " needs a value");
                    }
                    value = argv[++i];
                }
                args.values[arg] = *value;
            } else if (std::find(bare.begin(), bare.end(), arg) != bare.end() && !value) {
                args.switches.push_back(arg);
            } else {
                fail("unknown option ", arg, " for model ", args.subcommand);
            }
        } else {
            args.positional.push_back(arg);
        }
    }
    return args;
}

std::string one_positional(const ModelArgs& args, const char* what) {
    if (args.positional.size() != 1) {
        fail("model ", args.subcommand, " takes one ", what, ", got ", args.positional.size());
    }
    return args.positional[0];
}

std::string duration_text(double seconds) {
    const auto total = static_cast<long long>(seconds + 0.5);
    char text[32];
    if (total >= 3600) {
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60, total % 60);
    } else {
        std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
    }
    return text;
}

// While it lives, Ctrl-C (or SIGTERM) cancels the pull; partial files stay for the next one to resume.
std::atomic<bool>* g_interrupted = nullptr;
extern "C" void on_interrupt(int) {
    if (g_interrupted) {
        g_interrupted->store(true);
    }
}

struct InterruptGuard {
    InterruptGuard() {
        g_interrupted = &interrupted;
        std::signal(SIGINT, on_interrupt);
        std::signal(SIGTERM, on_interrupt);
        watcher = std::thread([this] {
            while (!done.load()) {
                if (interrupted.load()) {
                    cancel.cancel();
                    return;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
        });
    }
    ~InterruptGuard() {
        std::signal(SIGINT, SIG_DFL);
        std::signal(SIGTERM, SIG_DFL);
        g_interrupted = nullptr;
        done = true;
        watcher.join();
    }
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

    CancelToken cancel;
    std::atomic<bool> interrupted{false};
    std::atomic<bool> done{false};
    std::thread watcher;
};

// Prints a pull's progress on stderr: one line rewritten in place on a terminal, a line a file otherwise.
class ProgressPrinter {
public:
    ProgressPrinter() : terminal_(::isatty(STDERR_FILENO) != 0) {}

    void operator()(const PullProgress& p) {
        std::lock_guard lock(mutex_);
        if (!p.note.empty()) {
            line_break();
            std::cerr << "folio-cli: " << p.repo << ": " << p.note << "\n";
            return;
        }
        if (p.stage != PullStage::Downloading) {
            if (p.stage == PullStage::Verifying || p.stage == PullStage::Done) {
                line_break();
            }
            return;
        }
        if (!terminal_) {
            if (p.file_done) {
                std::cerr << "folio-cli: " << p.repo << ": " << p.file << " (" << p.files_done << "/"
                          << p.files_total << " files, " << bytes_text(p.bytes_done) << " of "
                          << bytes_text(p.bytes_total) << ")\n";
            }
            return;
        }
        std::string line = p.repo + ": " + bytes_text(p.bytes_done) + " / " + bytes_text(p.bytes_total);
        if (p.bytes_total > 0) {
            line += " (" + std::to_string(p.bytes_done * 100 / p.bytes_total) + "%)";
        }
        if (p.bytes_per_second > 0) {
            line += ", " + bytes_text(static_cast<int64_t>(p.bytes_per_second)) + "/s";
        }
        if (p.eta_seconds) {
            line += ", " + duration_text(*p.eta_seconds) + " left";
        }
        line += ", " + std::to_string(p.files_done) + "/" + std::to_string(p.files_total) + " files";
        const size_t width = std::max(line.size(), shown_);
        std::cerr << "\r" << line << std::string(width - line.size(), ' ') << std::flush;
        shown_ = line.size();
    }

    void line_break() {
        if (terminal_ && shown_ > 0) {
            std::cerr << "\n";
            shown_ = 0;
        }
    }

private:
    std::mutex mutex_;
    bool terminal_;
    size_t shown_ = 0;
};

int run_pull(const ModelArgs& args) {
    const std::string repo = one_positional(args, "repository (ORG/NAME)");
    check_repo_id(repo);
    const HubSettings settings = hub_settings_from_environment();
    std::optional<std::filesystem::path> cache_dir;
    if (args.has("--cache-dir")) {
        cache_dir = std::filesystem::path(args.value("--cache-dir", ""));
    }
    const ModelDownloader downloader(settings, {}, cache_dir);

    std::vector<std::pair<std::string, std::string>> pulls = {{repo, args.value("--revision", "main")}};
    const CatalogueEntry* entry = find_catalogue_entry(repo);
    if (entry && !entry->layout_repo.empty() && !args.has("--no-layout")) {
        pulls.emplace_back(entry->layout_repo, "main");
    }
    const std::string jobs_text = args.value("--jobs", "4");
    int jobs = 0;
    try {
        size_t used = 0;
        jobs = std::stoi(jobs_text, &used);
        if (used != jobs_text.size() || jobs < 1 || jobs > 32) {
            jobs = 0;
        }
    } catch (const std::exception&) {
    }
    if (jobs == 0) {
        fail("--jobs expects a number of files from 1 to 32, got '", jobs_text, "'");
    }
    const InterruptGuard interrupt;
    ProgressPrinter printer;
    for (const auto& [name, revision] : pulls) {
        PullOptions options;
        options.revision = revision;
        options.cancel = interrupt.cancel;
        options.parallel_files = jobs;
        options.on_progress = [&printer](const PullProgress& p) { printer(p); };
        PullResult result;
        try {
            result = downloader.pull(name, options);
        } catch (const HubError& e) {
            printer.line_break();
            if (e.kind() == HubErrorKind::Cancelled) {
                fail(name, ": cancelled; run the pull again to resume");
            }
            throw;
        }
        printer.line_break();
        for (const std::string& note : result.notes) {
            std::cerr << "folio-cli: " << name << ": " << note << "\n";
        }
        const CatalogueEntry* pulled = find_catalogue_entry(result.repo);
        std::cout << result.repo << (pulled ? " (" + pulled->title + ")" : "") << ": ";
        if (result.files_fetched > 0) {
            std::cout << result.files_fetched << (result.files_fetched == 1 ? " file" : " files")
                      << " fetched (" << bytes_text(result.bytes_fetched) << ")"
                      << (result.files_cached > 0
                              ? ", " + std::to_string(result.files_cached) + " already cached"
                              : "");
        } else {
            std::cout << "up to date (" << result.files_cached << " files cached)";
        }
        std::cout << ", revision " << result.revision << " = " << result.commit << "\n  "
                  << result.snapshot.string() << "\n";
    }
    return 0;
}

struct ListedModel {
    std::string repo;
    std::string revision;  // refs pointing at the snapshot, or the commit's start
    std::string commit;
    int64_t bytes = 0;
    std::string kind;
    std::string status;
    std::filesystem::path dir;
};

std::vector<ListedModel> installed_models(const HubSettings& settings) {
    std::vector<ListedModel> models;
    for (const std::filesystem::path& root : {settings.cache_dir, settings.models_dir}) {
        for (const CachedRepo& repo : HubCache(root).list()) {
            for (const CachedSnapshot& snapshot : repo.snapshots) {
                ListedModel model;
                model.repo = repo.repo;
                for (size_t i = 0; i < snapshot.refs.size(); ++i) {
                    model.revision += (i ? "," : "") + snapshot.refs[i];
                }
                model.commit = snapshot.commit;
                model.bytes = snapshot.bytes;
                model.dir = snapshot.dir;
                const CatalogueEntry* entry = find_catalogue_entry(repo.repo);
                const std::optional<ModelKind> kind =
                    entry ? std::optional(entry->kind) : detect_model_kind(snapshot.dir);
                model.kind = kind ? model_kind_name(*kind) : "-";
                model.status = snapshot.n_missing > 0 ? "damaged" : "ok";
                if (model.status == "ok") {
                    if (const auto listing = HubCache(root).read_tree(repo.repo, snapshot.commit)) {
                        const std::vector<std::string>& patterns =
                            fetch_patterns(kind.value_or(ModelKind::Recognition));
                        for (const TreeEntry& file : *listing) {
                            if (matches_any(patterns, file.path) &&
                                !HubCache(root).has_file(repo.repo, snapshot.commit, file.path)) {
                                model.status = "incomplete";
                                break;
                            }
                        }
                    }
                }
                models.push_back(std::move(model));
            }
        }
    }
    // Plain ORG/NAME folders in Folio's models folder.
    std::error_code error;
    for (std::filesystem::directory_iterator org(settings.models_dir, error), end; !error && org != end;
         org.increment(error)) {
        std::error_code inner;
        if (!org->is_directory(inner) || org->path().filename().string().starts_with("models--")) {
            continue;
        }
        for (std::filesystem::directory_iterator name(org->path(), inner); !inner && name != end;
             name.increment(inner)) {
            const std::string repo = org->path().filename().string() + "/" + name->path().filename().string();
            if (!is_repo_id(repo) || !std::filesystem::exists(name->path() / "config.json", inner)) {
                continue;
            }
            const FolderCheck check = check_model_folder(name->path());
            models.push_back({repo, "-", "-", check.bytes, model_kind_name(check.kind),
                              check.ok() ? "ok" : "damaged", name->path()});
        }
    }
    return models;
}

int run_list(const ModelArgs& args) {
    if (!args.positional.empty()) {
        fail("model list takes no arguments, got '", args.positional[0], "'");
    }
    const HubSettings settings = hub_settings_from_environment();
    const std::vector<ListedModel> models = installed_models(settings);
    if (args.has("--json")) {
        nlohmann::json out = nlohmann::json::array();
        for (const ListedModel& m : models) {
            out.push_back({{"repo", m.repo},
                           {"revision", m.revision},
                           {"commit", m.commit},
                           {"bytes", m.bytes},
                           {"kind", m.kind},
                           {"status", m.status},
                           {"path", m.dir.string()}});
        }
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    if (models.empty()) {
        std::cout << "No models in " << settings.cache_dir.string() << " or " << settings.models_dir.string()
                  << "\n";
    } else {
        size_t repo_width = 4;
        size_t revision_width = 8;
        for (const ListedModel& m : models) {
            repo_width = std::max(repo_width, m.repo.size());
            revision_width = std::max(revision_width, m.revision.size());
        }
        const auto pad = [](const std::string& text, size_t width) {
            return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
        };
        std::cout << pad("REPO", repo_width) << "  " << pad("REVISION", revision_width) << "  COMMIT   "
                  << pad("SIZE", 9) << "  " << pad("KIND", 11) << "  " << pad("STATUS", 10) << "  WHERE\n";
        for (const ListedModel& m : models) {
            std::cout << pad(m.repo, repo_width) << "  "
                      << pad(m.revision.empty() ? "-" : m.revision, revision_width) << "  "
                      << pad(m.commit.substr(0, 7), 7) << "  " << pad(bytes_text(m.bytes), 9) << "  "
                      << pad(m.kind, 11) << "  " << pad(m.status, 10) << "  " << m.dir.string() << "\n";
        }
    }
    std::vector<std::string> missing;
    for (const CatalogueEntry& entry : model_catalogue()) {
        const bool have = std::any_of(models.begin(), models.end(), [&](const ListedModel& m) {
            return find_catalogue_entry(m.repo) == &entry && m.status == "ok";
        });
        if (!have) {
            missing.push_back(entry.repo + " (" + entry.title +
                              (entry.layout_repo.empty() ? "" : ", layout: " + entry.layout_repo) + ")");
        }
    }
    if (!missing.empty()) {
        std::cout << "\nNot downloaded (folio-cli model pull ORG/NAME):\n";
        for (const std::string& line : missing) {
            std::cout << "  " << line << "\n";
        }
    }
    return 0;
}

int run_verify(const ModelArgs& args) {
    const std::string spec = one_positional(args, "repository (ORG/NAME) or folder");
    const HubSettings settings = hub_settings_from_environment();
    LocateOptions locate;
    locate.revision = args.value("--revision", "main");
    locate.check = false;
    const LocatedModel model = locate_model(spec, settings, locate);
    FolderCheckOptions options;
    options.kind = model.kind;
    options.hash_blobs = !args.has("--quick");
    if (args.has("--quick") && args.has("--repair")) {
        fail("--repair needs the hashes that --quick leaves out");
    }
    std::optional<std::vector<TreeEntry>> listing;
    if (!model.commit.empty()) {
        listing =
            HubCache(model.dir.parent_path().parent_path().parent_path()).read_tree(model.repo, model.commit);
        if (listing) {
            options.listing = &*listing;
            const CatalogueEntry* entry = find_catalogue_entry(model.repo);
            options.patterns = fetch_patterns(entry ? entry->kind : model.kind);
        }
    }
    const FolderCheck check = check_model_folder(model.dir, options);
    if (!check.ok()) {
        std::cout << model.description() << ": " << check.problems.size() << " problem"
                  << (check.problems.size() == 1 ? "" : "s") << "\n";
        for (const std::string& problem : check.problems) {
            std::cout << "  " << problem << "\n";
        }
        if (!check.damaged_blobs.empty() && args.has("--repair")) {
            for (const std::filesystem::path& blob : check.damaged_blobs) {
                std::error_code error;
                std::filesystem::remove(blob, error);
            }
            std::cout << "Removed " << check.damaged_blobs.size() << " damaged file"
                      << (check.damaged_blobs.size() == 1 ? "" : "s") << ".\n";
        } else if (!check.damaged_blobs.empty()) {
            std::cout << "Remove the damaged files with: folio-cli model verify " << spec << " --repair\n";
        }
        if (!model.repo.empty() && (check.damaged_blobs.empty() || args.has("--repair"))) {
            std::cout << "Fetch what is missing with: folio-cli model pull " << model.repo << "\n";
        }
        return 1;
    }
    std::cout << model.description() << ": ok, " << model_kind_name(check.kind) << " model, " << check.n_files
              << " files, " << bytes_text(check.bytes);
    if (check.n_hashed > 0) {
        std::cout << ", " << check.n_hashed << " hashes checked";
    }
    std::cout << "\n";
    return 0;
}

int run_rm(const ModelArgs& args) {
    const std::string repo = one_positional(args, "repository (ORG/NAME)");
    check_repo_id(repo);
    const HubSettings settings = hub_settings_from_environment();
    const HubCache cache(args.has("--cache-dir") ? std::filesystem::path(args.value("--cache-dir", ""))
                                                 : settings.cache_dir);
    const CatalogueEntry* entry = find_catalogue_entry(repo);
    const std::string name = entry && !cache.find(repo) ? entry->repo : repo;
    int64_t freed = 0;
    if (args.has("--revision")) {
        const std::string revision = args.value("--revision", "");
        const std::optional<std::string> commit =
            is_commit_hash(revision) ? std::optional(revision) : cache.read_ref(name, revision);
        if (!commit) {
            fail(name, " has no revision '", revision, "' in the Hugging Face cache at ",
                 cache.root().string());
        }
        freed = cache.remove_snapshot(name, *commit);
    } else {
        freed = cache.remove_repo(name);
    }
    std::cout << "Removed " << name << (args.has("--revision") ? " at " + args.value("--revision", "") : "")
              << " (" << bytes_text(freed) << " freed)\n";
    return 0;
}

}  // namespace

int run_model(int argc, char** argv, int first) {
    if (first >= argc) {
        fail("model needs a subcommand: pull, list, verify or rm");
    }
    const std::string subcommand = argv[first];
    if (subcommand == "pull") {
        return run_pull(parse(argc, argv, first, {"--revision", "--jobs", "--cache-dir"}, {"--no-layout"}));
    }
    if (subcommand == "list") {
        return run_list(parse(argc, argv, first, {}, {"--json"}));
    }
    if (subcommand == "verify") {
        return run_verify(parse(argc, argv, first, {"--revision"}, {"--quick", "--repair"}));
    }
    if (subcommand == "rm") {
        return run_rm(parse(argc, argv, first, {"--revision", "--cache-dir"}, {}));
    }
    fail("unknown model subcommand '", subcommand, "' (expected pull, list, verify or rm)");
}

std::filesystem::path resolve_model_option(const std::string& spec, bool tokenizer_elsewhere) {
    LocateOptions options;
    options.tokenizer_elsewhere = tokenizer_elsewhere;
    const LocatedModel model = locate_model(spec, hub_settings_from_environment(), options);
    if (model.source != ModelSource::Folder) {
        std::cerr << "folio-cli: model " << model.description() << "\n";
    }
    return model.dir;
}

std::filesystem::path resolve_layout_model(const Options& opt, const std::string& model_spec) {
    if (opt.has("--layout-model")) {
        return resolve_model_option(opt.text("--layout-model"));
    }
    LocateOptions locate;
    locate.check = false;
    const LocatedModel model = locate_model(model_spec, hub_settings_from_environment(), locate);
    const std::optional<std::string> paired = paired_layout_repo(model);
    if (!paired) {
        fail("no layout model is known for ", model.description(),
             ": name one with --layout-model DIR|ORG/NAME, or read whole pages with --no-layout");
    }
    return resolve_model_option(*paired);
}

std::optional<std::filesystem::path> find_paired_layout_model(const std::string& model_spec,
                                                              std::string& why) {
    try {
        LocateOptions locate;
        locate.check = false;
        const LocatedModel model = locate_model(model_spec, hub_settings_from_environment(), locate);
        const std::optional<std::string> paired = paired_layout_repo(model);
        if (!paired) {
            why = "no layout model is known for " + model.description();
            return std::nullopt;
        }
        return resolve_model_option(*paired);
    } catch (const Error& e) {
        why = e.what();
        return std::nullopt;
    }
}

}  // namespace folio::cli
