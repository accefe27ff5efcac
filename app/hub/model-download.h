// Downloads a model repository from the Hugging Face Hub into the Hugging Face cache, as huggingface_hub's
// snapshot_download lays it out, so that other tools reuse what Folio fetched and the other way round:
//
// - the revision's commit from the Hub's API (nothing is asked when the revision is a commit whose files
//   are all cached), its file listing from the tree API (kept in trees/COMMIT.json), the files Folio needs
//   picked by the catalogue's patterns;
// - each file fetched into blobs/HASH.incomplete under the blob's lock, resumed with a Range request after
//   an interruption (in this run or an earlier one), retried with backoff on transient failures, hashed
//   as it arrives and checked against the sha256 (LFS) or git blob id the Hub publishes, then renamed to
//   blobs/HASH and linked from snapshots/COMMIT/PATH: a file is either complete and checked or absent;
// - several files at once; progress events (bytes, rate, ETA) to a callback; cancellation from any thread;
// - HF_HUB_OFFLINE: the cache answers alone, or the pull fails saying what is missing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/hub/hub-cache.h"
#include "app/hub/hub-client.h"
#include "app/hub/hub-settings.h"

namespace folio::hub {

// Shared between the caller and a pull: cancel() from any thread ends the pull with
// HubErrorKind::Cancelled, keeping the partial files for a later pull to resume.
class CancelToken {
public:
    CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
    void cancel() const { flag_->store(true); }
    bool cancelled() const { return flag_->load(); }

private:
    std::shared_ptr<std::atomic<bool>> flag_;
};

enum class PullStage { Resolving, Listing, Downloading, Verifying, Done };
const char* pull_stage_name(PullStage stage);

// A byte count for people: 512 B, 1.5 KB, 3.2 GB (powers of 1000).
std::string bytes_text(int64_t bytes);

struct PullProgress {
    std::string repo;
    PullStage stage = PullStage::Resolving;
    std::string file;  // the file a FileDone or note event is about
    bool file_done = false;
    // Of the files to fetch (those the cache lacks), parts kept from an interrupted pull included.
    int64_t bytes_done = 0;
    int64_t bytes_total = 0;
    double bytes_per_second = 0;        // received over the last few seconds
    std::optional<double> eta_seconds;  // at that rate
    int files_done = 0;
    int files_total = 0;
    std::string note;  // a retry, or a wait for another download of the same file
};

struct PullOptions {
    std::string revision = "main";
    // The repository files to fetch (glob_match patterns); empty: the catalogue's for the model's kind.
    std::vector<std::string> patterns;
    int parallel_files = 4;
    // Attempts of a file that each end in a transient failure without new bytes, before the pull gives up.
    int file_attempts = 5;
    CancelToken cancel;
    // Called from the pull's threads, one call at a time: at each stage, when a file is done, on notes, and
    // while bytes arrive at most every progress_interval.
    std::function<void(const PullProgress&)> on_progress;
    std::chrono::milliseconds progress_interval{200};
    // Free bytes where the cache is (statvfs by default); nullopt when unknown.
    std::function<std::optional<int64_t>(const std::filesystem::path&)> free_space;
};

struct PullResult {
    std::string repo;
    std::string revision;
    std::string commit;
    std::filesystem::path snapshot;  // the model folder: snapshots/COMMIT
    int files_fetched = 0;
    int files_cached = 0;  // already in the cache (blobs shared with other snapshots included)
    int64_t bytes_fetched = 0;
    bool network = true;             // false: answered from the cache without a request
    std::vector<std::string> notes;  // e.g. the Hub could not be reached and the cache answered
};

class ModelDownloader {
public:
    // The cache is settings.cache_dir unless `cache_dir` names another.
    explicit ModelDownloader(HubSettings settings, ClientOptions client = {},
                             std::optional<std::filesystem::path> cache_dir = std::nullopt);

    // Downloads what the repository's model needs at options.revision; throws HubError (NotFound,
    // Unauthorized, Forbidden, Offline, Transient after the retries, DiskFull, Checksum, Cancelled, ...)
    // whose message names the repository, the file and what to do.
    PullResult pull(std::string_view repo, const PullOptions& options = {}) const;

    const HubCache& cache() const { return cache_; }
    const HubClient& client() const { return client_; }

private:
    HubClient client_;
    HubCache cache_;
};

}  // namespace folio::hub
