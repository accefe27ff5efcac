#include "app/hub/hub-cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <system_error>

#include "app/hub/blob-hash.h"
#include "engine/common/error.h"
#include "engine/common/json-reader.h"

namespace folio::hub {

namespace fs = std::filesystem;

namespace {

constexpr int kTreeFormatVersion = 1;

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

// What is wrong with one part of a repository name, or an empty string.
std::string name_part_problem(std::string_view part) {
    if (part.empty()) {
        return "an empty part";
    }
    if (part.size() > 96) {
        return "a part longer than 96 characters";
    }
    if (!std::all_of(part.begin(), part.end(), is_name_char)) {
        return "characters other than letters, digits, '-', '_' and '.'";
    }
    if (part.find("--") != std::string_view::npos || part.find("..") != std::string_view::npos) {
        return "\"--\" or \"..\"";
    }
    if (part.front() == '-' || part.front() == '.' || part.back() == '-' || part.back() == '.') {
        return "a part that starts or ends with '-' or '.'";
    }
    return "";
}

std::string repo_problem(std::string_view text) {
    const size_t slash = text.find('/');
    if (slash == std::string_view::npos || text.find('/', slash + 1) != std::string_view::npos) {
        return "expected ORG/NAME";
    }
    for (const std::string_view part : {text.substr(0, slash), text.substr(slash + 1)}) {
        if (std::string problem = name_part_problem(part); !problem.empty()) {
            return "it has " + problem;
        }
    }
    return "";
}

// A name for a temporary file next to `path`, unique across threads and processes.
fs::path temporary_sibling(const fs::path& path) {
    static std::atomic<uint64_t> counter{0};
    thread_local std::mt19937_64 random{std::random_device{}()};
    return path.parent_path() /
           (path.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
            std::to_string(counter.fetch_add(1)) + "-" + std::to_string(random() % 100000));
}

void make_dirs(const fs::path& dir) {
    std::error_code error;
    fs::create_directories(dir, error);
    if (error) {
        fail(dir.string(), ": cannot create the folder: ", error.message());
    }
}

// The size of what a path leads to (links followed), or nullopt when it leads nowhere.
std::optional<int64_t> target_size(const fs::path& path) {
    std::error_code error;
    const auto size = fs::file_size(path, error);
    if (error) {
        return std::nullopt;
    }
    return static_cast<int64_t>(size);
}

// Every file (or link) under a folder, as paths relative to it.
std::vector<std::string> files_under(const fs::path& dir) {
    std::vector<std::string> files;
    std::error_code error;
    for (fs::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
        if (!it->is_directory(error)) {
            files.push_back(it->path().lexically_relative(dir).generic_string());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

fs::file_time_type modified(const fs::path& path) {
    std::error_code error;
    const auto time = fs::last_write_time(path, error);
    return error ? fs::file_time_type::min() : time;
}

}  // namespace

bool is_repo_id(std::string_view text) {
    return repo_problem(text).empty();
}

void check_repo_id(std::string_view text) {
    if (const std::string problem = repo_problem(text); !problem.empty()) {
        fail("'", text, "' is not a Hub repository name (", problem, ")");
    }
}

bool is_commit_hash(std::string_view text) {
    return text.size() == 40 && std::all_of(text.begin(), text.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

void check_repo_path(std::string_view path) {
    if (path.empty() || path.front() == '/' || path.find('\\') != std::string_view::npos ||
        path.find('\0') != std::string_view::npos) {
        fail("'", path, "' is not a file path inside a repository");
    }
    size_t start = 0;
    while (start <= path.size()) {
        const size_t end = std::min(path.find('/', start), path.size());
        const std::string_view part = path.substr(start, end - start);
        if (part.empty() || part == "." || part == "..") {
            fail("'", path, "' is not a file path inside a repository");
        }
        start = end + 1;
    }
}

std::optional<std::string> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) {
        return std::nullopt;
    }
    const std::streamoff size = in.tellg();
    if (size < 0) {
        return std::nullopt;
    }
    std::string text(static_cast<size_t>(size), '\0');
    in.seekg(0);
    in.read(text.data(), size);
    if (in.gcount() != size) {
        return std::nullopt;
    }
    return text;
}

void write_file_atomically(const fs::path& path, std::string_view content) {
    make_dirs(path.parent_path());
    const fs::path temporary = temporary_sibling(path);
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        out.close();
        if (!out) {
            std::error_code ignored;
            fs::remove(temporary, ignored);
            fail(path.string(), ": cannot write: ", std::strerror(errno));
        }
    }
    std::error_code error;
    fs::rename(temporary, path, error);
    if (error) {
        fs::remove(temporary, error);
        fail(path.string(), ": cannot write: ", error.message());
    }
}

std::string HubCache::folder_name(std::string_view repo) {
    std::string name = "models--";
    for (const char c : repo) {
        if (c == '/') {
            name += "--";
        } else {
            name += c;
        }
    }
    return name;
}

fs::path HubCache::repo_dir(std::string_view repo) const {
    return root_ / folder_name(repo);
}

fs::path HubCache::blob_path(std::string_view repo, std::string_view blob) const {
    return repo_dir(repo) / "blobs" / blob;
}

fs::path HubCache::incomplete_path(std::string_view repo, std::string_view blob) const {
    return repo_dir(repo) / "blobs" / (std::string(blob) + ".incomplete");
}

fs::path HubCache::lock_path(std::string_view repo, std::string_view blob) const {
    return root_ / ".locks" / folder_name(repo) / (std::string(blob) + ".lock");
}

fs::path HubCache::snapshot_dir(std::string_view repo, std::string_view commit) const {
    return repo_dir(repo) / "snapshots" / commit;
}

fs::path HubCache::snapshot_file(std::string_view repo, std::string_view commit,
                                 std::string_view path) const {
    check_repo_path(path);
    return snapshot_dir(repo, commit) / fs::path(std::string(path));
}

std::optional<std::string> HubCache::read_ref(std::string_view repo, std::string_view ref) const {
    if (ref.empty() || ref.find("..") != std::string_view::npos) {
        return std::nullopt;
    }
    std::optional<std::string> text = read_file(repo_dir(repo) / "refs" / fs::path(std::string(ref)));
    if (!text) {
        return std::nullopt;
    }
    while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back()))) {
        text->pop_back();
    }
    return is_commit_hash(*text) ? text : std::nullopt;
}

void HubCache::write_ref(std::string_view repo, std::string_view ref, std::string_view commit) const {
    check_repo_path(ref);
    write_file_atomically(repo_dir(repo) / "refs" / fs::path(std::string(ref)), commit);
}

std::optional<std::string> HubCache::resolve_revision(std::string_view repo,
                                                      std::string_view revision) const {
    std::error_code error;
    std::optional<std::string> commit =
        is_commit_hash(revision) ? std::optional<std::string>(revision) : read_ref(repo, revision);
    if (commit && fs::is_directory(snapshot_dir(repo, *commit), error)) {
        return commit;
    }
    if (!commit && revision == "main") {
        std::vector<std::string> snapshots;
        for (fs::directory_iterator it(repo_dir(repo) / "snapshots", error), end; !error && it != end;
             it.increment(error)) {
            if (it->is_directory(error) && is_commit_hash(it->path().filename().string())) {
                snapshots.push_back(it->path().filename().string());
            }
        }
        if (snapshots.size() == 1) {
            return snapshots[0];
        }
    }
    return std::nullopt;
}

std::optional<std::vector<TreeEntry>> parse_cached_tree(std::string_view text) {
    std::string problem;
    const std::optional<nlohmann::json> parsed = try_parse_json(text, problem);
    if (!parsed) {
        return std::nullopt;  // a damaged listing is fetched again
    }
    const nlohmann::json& data = *parsed;
    const auto version = data.is_object() ? data.find("format_version") : data.end();
    if (!data.is_object() || version == data.end() || json_int64(*version) != kTreeFormatVersion) {
        return std::nullopt;  // written by a newer version: fetched again
    }
    const auto files = data.find("files");
    if (files == data.end() || !files->is_object()) {
        return std::nullopt;
    }
    // A size: a non-negative integer.
    const auto size_of = [](const nlohmann::json& info, const char* key) -> std::optional<int64_t> {
        const auto it = info.find(key);
        const std::optional<int64_t> n = it == info.end() ? std::nullopt : json_int64(*it);
        return n && *n >= 0 ? n : std::nullopt;
    };
    std::vector<TreeEntry> entries;
    for (const auto& [path, info] : files->items()) {
        if (!info.is_object()) {
            return std::nullopt;
        }
        const auto blob_id = info.find("blob_id");
        const std::optional<int64_t> size = size_of(info, "size");
        if (!size || blob_id == info.end() || !blob_id->is_string()) {
            return std::nullopt;
        }
        TreeEntry entry;
        entry.path = path;
        entry.size = *size;
        entry.blob_id = blob_id->get<std::string>();
        if (const auto lfs = info.find("lfs_sha256"); lfs != info.end() && lfs->is_string()) {
            entry.lfs_sha256 = lfs->get<std::string>();
            const std::optional<int64_t> lfs_size =
                info.contains("lfs_size") ? size_of(info, "lfs_size") : size;
            if (!lfs_size) {
                return std::nullopt;
            }
            entry.lfs_size = *lfs_size;
        }
        if (const auto xet = info.find("xet_hash"); xet != info.end() && xet->is_string()) {
            entry.xet_hash = xet->get<std::string>();
        }
        try {
            check_repo_path(entry.path);
        } catch (const Error&) {
            return std::nullopt;
        }
        if (!blob_hash_kind(entry.blob_name())) {
            return std::nullopt;
        }
        entries.push_back(std::move(entry));
    }
    return entries;
}

std::optional<std::vector<TreeEntry>> HubCache::read_tree(std::string_view repo,
                                                          std::string_view commit) const {
    const std::optional<std::string> text =
        read_file(repo_dir(repo) / "trees" / (std::string(commit) + ".json"));
    if (!text) {
        return std::nullopt;
    }
    return parse_cached_tree(*text);
}

void HubCache::write_tree(std::string_view repo, std::string_view commit,
                          const std::vector<TreeEntry>& entries) const {
    nlohmann::json files = nlohmann::json::object();
    for (const TreeEntry& entry : entries) {
        nlohmann::json info = {{"size", entry.size}, {"blob_id", entry.blob_id}};
        if (entry.lfs_sha256) {
            info["lfs_sha256"] = *entry.lfs_sha256;
            info["lfs_size"] = entry.lfs_size;
        }
        if (entry.xet_hash) {
            info["xet_hash"] = *entry.xet_hash;
        }
        files[entry.path] = std::move(info);
    }
    const nlohmann::json data = {{"format_version", kTreeFormatVersion}, {"files", std::move(files)}};
    write_file_atomically(repo_dir(repo) / "trees" / (std::string(commit) + ".json"), data.dump(1));
}

bool HubCache::has_file(std::string_view repo, std::string_view commit, std::string_view path) const {
    std::error_code error;
    return fs::is_regular_file(snapshot_file(repo, commit, path), error);
}

void HubCache::link_file(std::string_view repo, std::string_view commit, std::string_view path,
                         std::string_view blob) const {
    const fs::path link = snapshot_file(repo, commit, path);
    // From snapshots/COMMIT/a/b.json up to the repository folder: one step per folder below it.
    std::string target;
    for (size_t i = 0, depth = static_cast<size_t>(std::count(path.begin(), path.end(), '/')) + 2; i < depth;
         ++i) {
        target += "../";
    }
    target += "blobs/" + std::string(blob);
    make_dirs(link.parent_path());
    const fs::path temporary = temporary_sibling(link);
    std::error_code error;
    fs::create_symlink(target, temporary, error);
    if (!error) {
        fs::rename(temporary, link, error);
    }
    if (error) {
        std::error_code ignored;
        fs::remove(temporary, ignored);
        fail(link.string(), ": cannot link to the blob ", blob, ": ", error.message());
    }
}

std::optional<CachedRepo> HubCache::find(std::string_view repo) const {
    const fs::path dir = repo_dir(repo);
    std::error_code error;
    if (!fs::is_directory(dir / "snapshots", error)) {
        return std::nullopt;
    }
    CachedRepo cached;
    cached.repo = std::string(repo);
    cached.dir = dir;

    std::map<std::string, std::vector<std::string>> refs_of;
    for (const std::string& ref : files_under(dir / "refs")) {
        if (const auto commit = read_ref(repo, ref)) {
            refs_of[*commit].push_back(ref);
        }
    }
    std::vector<std::pair<fs::file_time_type, CachedSnapshot>> snapshots;
    for (fs::directory_iterator it(dir / "snapshots", error), end; !error && it != end; it.increment(error)) {
        std::error_code entry_error;
        if (!it->is_directory(entry_error)) {
            continue;
        }
        CachedSnapshot snapshot;
        snapshot.commit = it->path().filename().string();
        snapshot.dir = it->path();
        snapshot.refs = refs_of[snapshot.commit];
        std::set<fs::path> counted;
        for (const std::string& file : files_under(snapshot.dir)) {
            const fs::path path = snapshot.dir / file;
            ++snapshot.n_files;
            const std::optional<int64_t> size = target_size(path);
            if (!size) {
                ++snapshot.n_missing;
                continue;
            }
            if (counted.insert(fs::weakly_canonical(path, entry_error)).second) {
                snapshot.bytes += *size;
            }
        }
        snapshots.emplace_back(modified(snapshot.dir), std::move(snapshot));
    }
    std::sort(snapshots.begin(), snapshots.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& entry : snapshots) {
        cached.snapshots.push_back(std::move(entry.second));
    }
    for (fs::directory_iterator it(dir / "blobs", error), end; !error && it != end; it.increment(error)) {
        std::error_code entry_error;
        if (it->is_regular_file(entry_error)) {
            cached.bytes_on_disk += static_cast<int64_t>(it->file_size(entry_error));
            if (it->path().extension() == ".incomplete") {
                ++cached.n_incomplete;
            }
        }
    }
    if (cached.snapshots.empty()) {
        return std::nullopt;
    }
    return cached;
}

std::vector<CachedRepo> HubCache::list() const {
    std::vector<CachedRepo> repos;
    std::error_code error;
    for (fs::directory_iterator it(root_, error), end; !error && it != end; it.increment(error)) {
        const std::string name = it->path().filename().string();
        if (!name.starts_with("models--")) {
            continue;
        }
        const std::string rest = name.substr(8);
        const size_t separator = rest.find("--");
        if (separator == std::string::npos) {
            continue;
        }
        const std::string repo = rest.substr(0, separator) + "/" + rest.substr(separator + 2);
        if (!is_repo_id(repo)) {
            continue;
        }
        if (std::optional<CachedRepo> cached = find(repo)) {
            repos.push_back(std::move(*cached));
        }
    }
    std::sort(repos.begin(), repos.end(),
              [](const CachedRepo& a, const CachedRepo& b) { return a.repo < b.repo; });
    return repos;
}

int64_t HubCache::remove_repo(std::string_view repo) const {
    const fs::path dir = repo_dir(repo);
    std::error_code error;
    if (!fs::exists(dir, error)) {
        fail(repo, " is not in the Hugging Face cache at ", root_.string());
    }
    int64_t bytes = 0;
    for (fs::directory_iterator it(dir / "blobs", error), end; !error && it != end; it.increment(error)) {
        std::error_code entry_error;
        if (it->is_regular_file(entry_error)) {
            bytes += static_cast<int64_t>(it->file_size(entry_error));
        }
    }
    error.clear();
    fs::remove_all(dir, error);
    if (error) {
        fail(dir.string(), ": cannot remove: ", error.message());
    }
    fs::remove_all(root_ / ".locks" / folder_name(repo), error);
    return bytes;
}

int64_t HubCache::remove_snapshot(std::string_view repo, std::string_view commit) const {
    const std::optional<CachedRepo> cached = find(repo);
    const auto is_this = [commit](const CachedSnapshot& s) { return s.commit == commit; };
    if (!cached || std::none_of(cached->snapshots.begin(), cached->snapshots.end(), is_this)) {
        fail(repo, " has no snapshot ", commit, " in the Hugging Face cache at ", root_.string());
    }
    if (cached->snapshots.size() == 1) {
        return remove_repo(repo);
    }
    const fs::path dir = repo_dir(repo);
    // The blobs each snapshot links.
    const auto blobs_of = [&](const fs::path& snapshot) {
        std::set<std::string> blobs;
        std::error_code error;
        for (const std::string& file : files_under(snapshot)) {
            const fs::path target = fs::read_symlink(snapshot / file, error);
            if (!error) {
                blobs.insert(target.filename().string());
            }
        }
        return blobs;
    };
    std::set<std::string> kept;
    std::set<std::string> candidates;
    for (const CachedSnapshot& snapshot : cached->snapshots) {
        const std::set<std::string> blobs = blobs_of(snapshot.dir);
        (snapshot.commit == commit ? candidates : kept).insert(blobs.begin(), blobs.end());
    }
    std::error_code error;
    fs::remove_all(snapshot_dir(repo, commit), error);
    if (error) {
        fail(snapshot_dir(repo, commit).string(), ": cannot remove: ", error.message());
    }
    for (const CachedSnapshot& snapshot : cached->snapshots) {
        if (snapshot.commit == commit) {
            for (const std::string& ref : snapshot.refs) {
                fs::remove(dir / "refs" / ref, error);
            }
        }
    }
    fs::remove(dir / "trees" / (std::string(commit) + ".json"), error);
    int64_t bytes = 0;
    for (const std::string& blob : candidates) {
        if (!kept.contains(blob)) {
            const fs::path path = dir / "blobs" / blob;
            bytes += target_size(path).value_or(0);
            fs::remove(path, error);
        }
    }
    return bytes;
}

}  // namespace folio::hub
