#include "app/hub/model-download.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "app/hub/blob-hash.h"
#include "app/hub/file-lock.h"
#include "app/hub/folder-check.h"
#include "app/hub/model-catalogue.h"

namespace folio::hub {

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::seconds kRateWindow{5};

std::optional<int64_t> statvfs_free_space(const fs::path& dir) {
    struct statvfs info {};
    if (::statvfs(dir.c_str(), &info) != 0) {
        return std::nullopt;
    }
    return static_cast<int64_t>(info.f_bavail) * static_cast<int64_t>(info.f_frsize);
}

// Progress of one pull: byte counts from the download threads, events to the callback one at a time.
class ProgressTracker {
public:
    ProgressTracker(std::string repo, const PullOptions& options) : options_(options) {
        event_.repo = std::move(repo);
    }

    void stage(PullStage stage) {
        std::lock_guard lock(mutex_);
        event_.stage = stage;
        emit_locked();
    }
    void set_totals(int64_t bytes_done, int64_t bytes_total, int files_total) {
        std::lock_guard lock(mutex_);
        event_.bytes_done = bytes_done;
        event_.bytes_total = bytes_total;
        event_.files_total = files_total;
    }
    // Bytes written (negative: a part thrown away); `received` counts them toward the rate.
    void add(int64_t n, bool received) {
        std::lock_guard lock(mutex_);
        event_.bytes_done += n;
        if (received) {
            received_ += n;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now - last_emit_ >= options_.progress_interval) {
            emit_locked();
        }
    }
    void file_done(const std::string& file) {
        std::lock_guard lock(mutex_);
        ++event_.files_done;
        event_.file = file;
        event_.file_done = true;
        emit_locked();
        event_.file.clear();
        event_.file_done = false;
    }
    void note(const std::string& file, const std::string& text) {
        std::lock_guard lock(mutex_);
        event_.file = file;
        event_.note = text;
        emit_locked();
        event_.file.clear();
        event_.note.clear();
    }

private:
    void emit_locked() {
        const auto now = std::chrono::steady_clock::now();
        last_emit_ = now;
        samples_.emplace_back(now, received_);
        while (samples_.size() > 2 && now - samples_[1].first >= kRateWindow) {
            samples_.pop_front();
        }
        const double seconds = std::chrono::duration<double>(now - samples_.front().first).count();
        event_.bytes_per_second =
            seconds > 0.05 ? static_cast<double>(received_ - samples_.front().second) / seconds : 0.0;
        const int64_t left = std::max<int64_t>(0, event_.bytes_total - event_.bytes_done);
        event_.eta_seconds = event_.bytes_per_second > 0
                                 ? std::optional<double>(left / event_.bytes_per_second)
                                 : std::nullopt;
        if (options_.on_progress) {
            options_.on_progress(event_);
        }
    }

    const PullOptions& options_;
    std::mutex mutex_;
    PullProgress event_;
    int64_t received_ = 0;
    std::chrono::steady_clock::time_point last_emit_{};
    std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>> samples_;
};

// A file descriptor closed when it goes out of scope.
class OpenFile {
public:
    OpenFile(const fs::path& path, int flags)
        : path_(path), fd_(::open(path.c_str(), flags | O_CLOEXEC, 0666)) {
        if (fd_ < 0) {
            throw HubError(errno == ENOSPC ? HubErrorKind::DiskFull : HubErrorKind::Failed,
                           path.string() + ": cannot open: " + std::strerror(errno));
        }
    }
    ~OpenFile() { close(); }
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;

    int fd() const { return fd_; }
    void close() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    int64_t size() const {
        struct stat info {};
        if (::fstat(fd_, &info) != 0) {
            throw HubError(HubErrorKind::Failed,
                           path_.string() + ": cannot read its size: " + std::strerror(errno));
        }
        return static_cast<int64_t>(info.st_size);
    }
    void truncate(int64_t size) {
        if (::ftruncate(fd_, size) != 0 || ::lseek(fd_, size, SEEK_SET) < 0) {
            throw HubError(HubErrorKind::Failed,
                           path_.string() + ": cannot truncate: " + std::strerror(errno));
        }
    }
    void write_all(const char* data, size_t n) {
        while (n > 0) {
            const ssize_t written = ::write(fd_, data, n);
            if (written < 0) {
                if (errno == EINTR) {
                    continue;
                }
                if (errno == ENOSPC || errno == EDQUOT) {
                    throw HubError(HubErrorKind::DiskFull, "the disk is full: cannot write " +
                                                               path_.string() + " (" + std::strerror(errno) +
                                                               "); free some space and pull again to resume");
                }
                throw HubError(HubErrorKind::Failed,
                               path_.string() + ": cannot write: " + std::strerror(errno));
            }
            data += written;
            n -= static_cast<size_t>(written);
        }
    }
    // Feeds the file's first `size` bytes to the hasher.
    void hash_prefix(BlobHasher& hasher, int64_t size) const {
        std::vector<char> buffer(1 << 20);
        for (int64_t offset = 0; offset < size;) {
            const auto n = ::pread(
                fd_, buffer.data(),
                static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(buffer.size()), size - offset)),
                offset);
            if (n <= 0) {
                if (n < 0 && errno == EINTR) {
                    continue;
                }
                throw HubError(HubErrorKind::Failed,
                               path_.string() + ": cannot read back what was downloaded");
            }
            hasher.update(buffer.data(), static_cast<size_t>(n));
            offset += n;
        }
    }
    void sync() {
        if (::fsync(fd_) != 0) {
            throw HubError(errno == ENOSPC ? HubErrorKind::DiskFull : HubErrorKind::Failed,
                           path_.string() + ": cannot write: " + std::strerror(errno));
        }
    }

private:
    fs::path path_;
    int fd_ = -1;
};

int64_t file_size_or_zero(const fs::path& path) {
    std::error_code error;
    const auto size = fs::file_size(path, error);
    return error ? 0 : static_cast<int64_t>(size);
}

// One pull's work.
class Pull {
public:
    Pull(const HubClient& client, const HubCache& cache, std::string_view repo, const PullOptions& options)
        : client_(client),
          cache_(cache),
          repo_(repo),
          options_(options),
          entry_(find_catalogue_entry(repo)),
          patterns_(!options.patterns.empty()
                        ? options.patterns
                        : fetch_patterns(entry_ ? entry_->kind : ModelKind::Recognition)),
          progress_(entry_ ? entry_->repo : std::string(repo), options) {
        if (entry_) {
            repo_ = entry_->repo;  // the Hub's spelling, so that the cache folder is the one other tools use
        }
        result_.repo = repo_;
        result_.revision = options.revision;
    }

    PullResult run() {
        progress_.stage(PullStage::Resolving);
        const std::string& revision = options_.revision;
        if (revision.empty()) {
            throw HubError(HubErrorKind::Failed, repo_ + ": the revision is empty");
        }
        if (client_.settings().offline) {
            return from_cache("HF_HUB_OFFLINE is set");
        }
        if (is_commit_hash(revision) && complete_in_cache(revision)) {
            return cached(revision);
        }
        try {
            result_.commit = client_.resolve_commit(repo_, revision, stop_check());
        } catch (const HubError& e) {
            if (e.kind() != HubErrorKind::Transient) {
                throw;
            }
            // The Hub cannot be reached: a complete snapshot in the cache still answers.
            if (const auto commit = cache_.resolve_revision(repo_, revision);
                commit && complete_in_cache(*commit)) {
                PullResult result = cached(*commit);
                result.notes.push_back(std::string("the Hub could not be reached (") + e.what() +
                                       "); the cached snapshot was used");
                return result;
            }
            throw;
        }
        progress_.stage(PullStage::Listing);
        std::vector<TreeEntry> listing = listing_at(result_.commit);
        std::vector<TreeEntry> wanted;
        for (TreeEntry& entry : listing) {
            if (matches_any(patterns_, entry.path)) {
                wanted.push_back(entry);
            }
        }
        check_required(wanted);
        if (revision != result_.commit) {
            cache_.write_ref(repo_, revision, result_.commit);
        }
        write_cachedir_tag();
        download(wanted);
        progress_.stage(PullStage::Verifying);
        check_snapshot(listing);
        result_.snapshot = cache_.snapshot_dir(repo_, result_.commit);
        progress_.stage(PullStage::Done);
        return result_;
    }

private:
    StopCheck stop_check() {
        return [this] { return options_.cancel.cancelled() || failed_.load(); };
    }

    std::vector<TreeEntry> listing_at(const std::string& commit) {
        if (std::optional<std::vector<TreeEntry>> cached = cache_.read_tree(repo_, commit)) {
            return std::move(*cached);
        }
        std::vector<TreeEntry> listing = client_.list_files(repo_, commit, stop_check());
        cache_.write_tree(repo_, commit, listing);
        return listing;
    }

    // Whether the snapshot at the commit holds every wanted file of its saved listing.
    bool complete_in_cache(const std::string& commit, std::vector<std::string>* missing = nullptr) {
        const std::optional<std::vector<TreeEntry>> listing = cache_.read_tree(repo_, commit);
        std::error_code error;
        if (!fs::is_directory(cache_.snapshot_dir(repo_, commit), error)) {
            return false;
        }
        if (!listing) {
            // Fetched by a tool that keeps no listing: the folder check decides.
            const FolderCheck check =
                check_model_folder(cache_.snapshot_dir(repo_, commit), folder_options());
            if (missing) {
                missing->insert(missing->end(), check.problems.begin(), check.problems.end());
            }
            return check.ok();
        }
        bool complete = true;
        for (const TreeEntry& entry : *listing) {
            if (matches_any(patterns_, entry.path) &&
                (!cache_.has_file(repo_, commit, entry.path) ||
                 file_size_or_zero(cache_.snapshot_file(repo_, commit, entry.path)) != entry.size)) {
                complete = false;
                if (missing) {
                    missing->push_back(entry.path);
                }
            }
        }
        return complete;
    }

    PullResult cached(const std::string& commit) {
        result_.commit = commit;
        result_.snapshot = cache_.snapshot_dir(repo_, commit);
        result_.network = false;
        if (const auto listing = cache_.read_tree(repo_, commit)) {
            result_.files_cached =
                static_cast<int>(std::count_if(listing->begin(), listing->end(), [&](const TreeEntry& e) {
                    return matches_any(patterns_, e.path);
                }));
        }
        progress_.stage(PullStage::Done);
        return result_;
    }

    PullResult from_cache(const std::string& why) {
        const std::optional<std::string> commit = cache_.resolve_revision(repo_, options_.revision);
        if (!commit) {
            throw HubError(HubErrorKind::Offline, repo_ + " (revision " + options_.revision +
                                                      ") is not in the Hugging Face cache at " +
                                                      cache_.root().string() + ", and " + why +
                                                      ": nothing is downloaded");
        }
        std::vector<std::string> missing;
        if (!complete_in_cache(*commit, &missing)) {
            std::string list;
            for (size_t i = 0; i < missing.size() && i < 5; ++i) {
                list += (i ? ", " : "") + missing[i];
            }
            throw HubError(HubErrorKind::Offline, repo_ + " is only partly in the Hugging Face cache at " +
                                                      cache_.root().string() + " (missing: " + list +
                                                      "), and " + why + ": nothing is downloaded");
        }
        return cached(*commit);
    }

    FolderCheckOptions folder_options() const {
        FolderCheckOptions options;
        if (entry_) {
            options.kind = entry_->kind;
        }
        return options;
    }

    void check_required(const std::vector<TreeEntry>& wanted) const {
        if (!entry_) {
            return;  // a model Folio does not know: the folder check after the download judges it
        }
        for (const RequiredFile& required : required_files(entry_->kind)) {
            const bool any = std::any_of(wanted.begin(), wanted.end(), [&](const TreeEntry& e) {
                return std::find(required.any_of.begin(), required.any_of.end(), e.path) !=
                       required.any_of.end();
            });
            if (!any) {
                throw HubError(HubErrorKind::NotFound, repo_ + " at " + result_.commit + " has no " +
                                                           required.any_of.front() + " (" + required.what +
                                                           "): not a model Folio can run");
            }
        }
    }

    void write_cachedir_tag() const {
        const fs::path tag = cache_.root() / "CACHEDIR.TAG";
        std::error_code error;
        if (!fs::exists(tag, error)) {
            try {
                write_file_atomically(tag,
                                      "Signature: 8a477f597d28d172789f06886806bc55\n"
                                      "# This file is a cache directory tag created by huggingface_hub.\n"
                                      "# For information about cache directory tags, see:\n"
                                      "#\thttps://bford.info/cachedir/\n");
            } catch (const std::exception&) {
                // Only a hint for backup tools.
            }
        }
    }

    void download(const std::vector<TreeEntry>& wanted) {
        std::vector<const TreeEntry*> todo;
        int64_t bytes_total = 0, bytes_done = 0;
        for (const TreeEntry& entry : wanted) {
            // A cached file of the wrong size (cut short by a tool, damaged) is fetched again.
            if (cache_.has_file(repo_, result_.commit, entry.path) &&
                file_size_or_zero(cache_.snapshot_file(repo_, result_.commit, entry.path)) == entry.size) {
                ++result_.files_cached;
                continue;
            }
            const fs::path blob = cache_.blob_path(repo_, entry.blob_name());
            if (file_size_or_zero(blob) == entry.size && fs::exists(blob)) {
                cache_.link_file(repo_, result_.commit, entry.path, entry.blob_name());
                ++result_.files_cached;
                continue;
            }
            todo.push_back(&entry);
            bytes_total += entry.size;
            bytes_done +=
                std::min(entry.size, file_size_or_zero(cache_.incomplete_path(repo_, entry.blob_name())));
        }
        if (todo.empty()) {
            return;
        }
        fs::create_directories(cache_.repo_dir(repo_) / "blobs");
        const auto free_space = options_.free_space ? options_.free_space(cache_.repo_dir(repo_) / "blobs")
                                                    : statvfs_free_space(cache_.repo_dir(repo_) / "blobs");
        if (free_space && *free_space < bytes_total - bytes_done) {
            throw HubError(HubErrorKind::DiskFull,
                           repo_ + " needs " + bytes_text(bytes_total - bytes_done) + " more, but " +
                               cache_.root().string() + " has " + bytes_text(*free_space) +
                               " free; free some space, or set HF_HUB_CACHE to a folder on a larger disk");
        }
        // The largest first, so that the long transfers start at once.
        std::sort(todo.begin(), todo.end(),
                  [](const TreeEntry* a, const TreeEntry* b) { return a->size > b->size; });
        progress_.set_totals(bytes_done, bytes_total, static_cast<int>(todo.size()));
        progress_.stage(PullStage::Downloading);

        std::atomic<size_t> next{0};
        std::mutex error_mutex;
        std::exception_ptr first_error;
        const auto worker = [&] {
            while (!stop_check()()) {
                const size_t i = next.fetch_add(1);
                if (i >= todo.size()) {
                    return;
                }
                try {
                    fetch(*todo[i]);
                } catch (...) {
                    std::lock_guard lock(error_mutex);
                    if (!first_error) {
                        first_error = std::current_exception();
                    }
                    failed_ = true;
                }
            }
        };
        const size_t n_threads =
            std::clamp<size_t>(static_cast<size_t>(std::max(1, options_.parallel_files)), 1, todo.size());
        std::vector<std::thread> threads;
        for (size_t t = 1; t < n_threads; ++t) {
            threads.emplace_back(worker);
        }
        worker();
        for (std::thread& thread : threads) {
            thread.join();
        }
        if (first_error) {
            std::rethrow_exception(first_error);
        }
        if (options_.cancel.cancelled()) {
            throw HubError(HubErrorKind::Cancelled, repo_ + ": the download was cancelled");
        }
    }

    // One file into its blob and the snapshot's link.
    void fetch(const TreeEntry& entry) {
        const std::string& blob = entry.blob_name();
        const std::optional<BlobHashKind> kind = blob_hash_kind(blob);
        if (!kind) {
            throw HubError(HubErrorKind::BadResponse,
                           repo_ + ": " + entry.path + " has no usable hash in the listing");
        }
        const std::string what = entry.path + " of " + repo_;
        std::optional<FileLock> lock;
        try {
            lock.emplace(cache_.lock_path(repo_, blob), stop_check());
        } catch (const LockWaitStopped&) {
            throw HubError(HubErrorKind::Cancelled, what + ": cancelled");
        }
        const fs::path blob_path = cache_.blob_path(repo_, blob);
        const fs::path incomplete = cache_.incomplete_path(repo_, blob);
        if (file_size_or_zero(blob_path) == entry.size && fs::exists(blob_path)) {
            // Another pull wrote it while this one waited for the lock.
            progress_.add(entry.size - std::min(entry.size, file_size_or_zero(incomplete)), false);
            cache_.link_file(repo_, result_.commit, entry.path, blob);
            finish_file(entry, false);
            return;
        }
        OpenFile file(incomplete, O_RDWR | O_CREAT);
        int64_t have = file.size();
        BlobHasher hasher(*kind, entry.size);
        if (have > entry.size) {
            progress_.add(-entry.size, false);
            file.truncate(0);
            have = 0;
        } else {
            file.hash_prefix(hasher, have);
            file.truncate(have);
        }
        const int64_t have_at_start = have;
        int failures = 0;
        while (have < entry.size) {
            const int64_t before = have;
            try {
                FileSink sink;
                sink.on_start = [&](const FileResponse& response) {
                    // An ETag shaped like a blob name must be this one (a CDN's own ETags are left alone).
                    if (response.etag && blob_hash_kind(*response.etag) && *response.etag != blob) {
                        throw HubError(HubErrorKind::BadResponse, what + ": the server's ETag is " +
                                                                      *response.etag +
                                                                      ", the Hub's listing says " + blob);
                    }
                    if (response.offset != have) {
                        // The server sent the whole file instead of the range: start over.
                        progress_.add(-have, false);
                        file.truncate(0);
                        hasher.reset();
                        have = 0;
                    }
                    if (response.total && *response.total != entry.size) {
                        throw HubError(HubErrorKind::BadResponse,
                                       what + ": the server sends " + std::to_string(*response.total) +
                                           " bytes, the Hub's listing says " + std::to_string(entry.size));
                    }
                };
                sink.on_data = [&](const char* data, size_t n) {
                    if (have + static_cast<int64_t>(n) > entry.size) {
                        throw HubError(HubErrorKind::BadResponse, what + ": the server sends more than the " +
                                                                      std::to_string(entry.size) +
                                                                      " bytes the Hub's listing says");
                    }
                    file.write_all(data, n);
                    hasher.update(data, n);
                    have += static_cast<int64_t>(n);
                    progress_.add(static_cast<int64_t>(n), true);
                };
                client_.fetch_file(repo_, result_.commit, entry.path, have, sink, stop_check());
                if (have < entry.size) {
                    throw HubError(HubErrorKind::Transient, what + ": the answer ended after " +
                                                                std::to_string(have) + " of " +
                                                                std::to_string(entry.size) + " bytes");
                }
            } catch (const HubError& e) {
                if (e.kind() == HubErrorKind::Cancelled) {
                    throw HubError(HubErrorKind::Cancelled, what + ": cancelled at " + std::to_string(have) +
                                                                " of " + std::to_string(entry.size) +
                                                                " bytes (a later pull resumes there)");
                }
                if (e.kind() != HubErrorKind::Transient) {
                    throw;
                }
                failures = have > before ? 1 : failures + 1;
                if (failures >= options_.file_attempts) {
                    throw HubError(HubErrorKind::Transient,
                                   what + ": " + e.what() + "; gave up after " + std::to_string(failures) +
                                       " attempts at " + std::to_string(have) + " of " +
                                       std::to_string(entry.size) + " bytes (pull again to resume)",
                                   e.status());
                }
                progress_.note(entry.path, std::string(e.what()) + "; trying again");
                client_.backoff(failures, stop_check());
            }
        }
        const std::string digest = hasher.hex_digest();
        if (digest != blob) {
            file.close();
            std::error_code ignored;
            fs::remove(incomplete, ignored);
            progress_.add(-have, false);
            throw HubError(
                HubErrorKind::Checksum,
                what + ": checksum mismatch: the " +
                    (*kind == BlobHashKind::Sha256 ? std::string("sha256") : std::string("git blob id")) +
                    " of the downloaded file is " + digest + ", the Hub publishes " + blob +
                    "; the damaged file was removed, pull again");
        }
        file.sync();
        file.close();
        std::error_code error;
        fs::rename(incomplete, blob_path, error);
        if (error) {
            throw HubError(HubErrorKind::Failed,
                           blob_path.string() + ": cannot finish the download: " + error.message());
        }
        cache_.link_file(repo_, result_.commit, entry.path, blob);
        {
            std::lock_guard lock_result(result_mutex_);
            result_.bytes_fetched += have - have_at_start;
        }
        finish_file(entry, true);
    }

    void finish_file(const TreeEntry& entry, bool fetched) {
        {
            std::lock_guard lock(result_mutex_);
            ++(fetched ? result_.files_fetched : result_.files_cached);
        }
        progress_.file_done(entry.path);
    }

    void check_snapshot(const std::vector<TreeEntry>& listing) const {
        FolderCheckOptions options = folder_options();
        options.listing = &listing;
        options.patterns = patterns_;
        const FolderCheck check = check_model_folder(cache_.snapshot_dir(repo_, result_.commit), options);
        if (!check.ok()) {
            throw HubError(HubErrorKind::Failed,
                           repo_ + " was downloaded, but the model folder is not usable: " + check.message());
        }
    }

    const HubClient& client_;
    const HubCache& cache_;
    std::string repo_;
    const PullOptions& options_;
    const CatalogueEntry* entry_;
    std::vector<std::string> patterns_;
    ProgressTracker progress_;
    PullResult result_;
    std::mutex result_mutex_;
    std::atomic<bool> failed_{false};
};

}  // namespace

std::string bytes_text(int64_t bytes) {
    const char* units[] = {"B", "KB", "MB", "GB", "TB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1000 && unit < 4) {
        value /= 1000;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return text;
}

const char* pull_stage_name(PullStage stage) {
    switch (stage) {
        case PullStage::Resolving:
            return "resolving";
        case PullStage::Listing:
            return "listing";
        case PullStage::Downloading:
            return "downloading";
        case PullStage::Verifying:
            return "verifying";
        case PullStage::Done:
            return "done";
    }
    return "unknown";
}

ModelDownloader::ModelDownloader(HubSettings settings, ClientOptions client,
                                 std::optional<fs::path> cache_dir)
    : client_(settings, client), cache_(cache_dir.value_or(settings.cache_dir)) {}

PullResult ModelDownloader::pull(std::string_view repo, const PullOptions& options) const {
    check_repo_id(repo);
    Pull pull(client_, cache_, repo, options);
    return pull.run();
}

}  // namespace folio::hub
