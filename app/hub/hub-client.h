// The Hugging Face Hub over HTTP (libcurl): a revision's commit, a repository's file listing at a commit,
// and a file's bytes from any offset. Redirects are followed (the Hub sends LFS files to a CDN; the token
// goes to the Hub's host only), transient failures of API calls are retried with backoff, and every HTTP
// failure becomes a HubError whose message names the repository and says what to do.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/hub/hub-cache.h"
#include "app/hub/hub-settings.h"
#include "engine/common/error.h"

namespace folio::hub {

enum class HubErrorKind {
    NotFound,      // 404: no such repository, revision or file
    Unauthorized,  // 401: no token, or one the Hub does not accept
    Forbidden,     // 403: the token has no access (a gated model whose conditions were not accepted)
    Transient,     // 5xx, 408, 429, timeouts, refused or reset connections, a transfer cut short
    Offline,       // HF_HUB_OFFLINE is set and the cache does not have what was asked
    Cancelled,
    DiskFull,
    Checksum,     // a file's content does not match the hash the Hub publishes
    BadResponse,  // an answer that is not what the Hub sends
    Failed,       // anything else
};
const char* hub_error_kind_name(HubErrorKind kind);

class HubError : public Error {
public:
    HubError(HubErrorKind kind, const std::string& what, long status = 0)
        : Error(what), kind_(kind), status_(status) {}
    HubErrorKind kind() const { return kind_; }
    long status() const { return status_; }  // the HTTP status, 0 where there was none

private:
    HubErrorKind kind_;
    long status_;
};

struct ClientOptions {
    std::chrono::seconds connect_timeout{10};
    // A transfer that moves no byte for this long fails (transient).
    std::chrono::seconds stall_timeout{30};
    // Attempts of an API call (a transient failure is tried again), the delay before the second, doubled
    // before each further one up to max_retry_delay.
    int api_attempts = 5;
    std::chrono::milliseconds retry_delay{1000};
    std::chrono::milliseconds max_retry_delay{16000};
};

// The start of a file's response, given before its first byte.
struct FileResponse {
    long status = 0;               // 200, or 206 for a range
    int64_t offset = 0;            // where the body starts in the file: the range's start, 0 for a whole file
    std::optional<int64_t> total;  // the file's size (Content-Range, else Content-Length)
    std::optional<std::string> etag;    // X-Linked-Etag, else the ETag, without quotes and W/
    std::optional<std::string> commit;  // X-Repo-Commit
};

struct FileSink {
    std::function<void(const FileResponse&)> on_start;  // once, before the body (an empty body too)
    std::function<void(const char* data, size_t n)> on_data;
};

// Returns true when the work should stop (cancelled); polled during transfers and waits.
using StopCheck = std::function<bool()>;

class HubClient {
public:
    explicit HubClient(HubSettings settings, ClientOptions options = {});

    const HubSettings& settings() const { return settings_; }
    const ClientOptions& options() const { return options_; }

    // The commit a revision (branch, tag or commit) of a model repository is at:
    // GET {endpoint}/api/models/{repo}/revision/{revision}.
    std::string resolve_commit(std::string_view repo, std::string_view revision,
                               const StopCheck& stop = {}) const;
    // Every file of the repository at a commit, with sizes, git oids and LFS sha256s:
    // GET {endpoint}/api/models/{repo}/tree/{commit}?recursive=true, following the pages' Link headers.
    std::vector<TreeEntry> list_files(std::string_view repo, std::string_view commit,
                                      const StopCheck& stop = {}) const;
    // One GET of {endpoint}/{repo}/resolve/{revision}/{path} from `offset` (a Range request when it is not
    // 0). A 200 answer to a range starts over at 0 (FileResponse::offset says so). Not retried: the caller
    // resumes from what it has.
    void fetch_file(std::string_view repo, std::string_view revision, std::string_view path, int64_t offset,
                    const FileSink& sink, const StopCheck& stop = {}) const;

    std::string file_url(std::string_view repo, std::string_view revision, std::string_view path) const;

    // Runs `attempt` until it succeeds, retrying transient HubErrors with the options' backoff; the wait
    // between attempts ends early with HubErrorKind::Cancelled when `stop` says so.
    template <typename F>
    auto with_retries(F&& attempt, const StopCheck& stop) const -> decltype(attempt());
    // Sleeps the n-th retry's delay (n from 1), polling `stop`; throws HubError Cancelled when stopped.
    void backoff(int n, const StopCheck& stop) const;

private:
    struct JsonResponse {
        std::string body;
        std::optional<std::string> next_page;
    };
    JsonResponse get_api(const std::string& url, std::string_view repo, std::string_view revision,
                         const StopCheck& stop) const;

    HubSettings settings_;
    ClientOptions options_;
};

template <typename F>
auto HubClient::with_retries(F&& attempt, const StopCheck& stop) const -> decltype(attempt()) {
    for (int n = 1;; ++n) {
        try {
            return attempt();
        } catch (const HubError& e) {
            if (e.kind() != HubErrorKind::Transient || n >= options_.api_attempts) {
                throw;
            }
        }
        backoff(n, stop);
    }
}

// "%XX"-escapes a URL part; characters in `safe` stay as they are.
std::string url_quote(std::string_view text, std::string_view safe = "");

}  // namespace folio::hub
