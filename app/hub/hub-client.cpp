#include "app/hub/hub-client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "app/hub/blob-hash.h"
#include "app/hub/hub-api.h"

#ifndef FOLIO_VERSION
#define FOLIO_VERSION "0"
#endif

namespace folio::hub {

namespace {

constexpr size_t kMaxErrorBody = 16 * 1024;
constexpr size_t kMaxApiBody = 256ull << 20;

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            throw HubError(HubErrorKind::Failed, "libcurl could not be initialised");
        }
    });
}

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string trim(std::string_view text) {
    const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!text.empty() && is_space(text.front())) {
        text.remove_prefix(1);
    }
    while (!text.empty() && is_space(text.back())) {
        text.remove_suffix(1);
    }
    return std::string(text);
}

// An ETag as a name: W/ and quotes removed.
std::string normalize_etag(std::string_view etag) {
    if (etag.starts_with("W/")) {
        etag.remove_prefix(2);
    }
    while (!etag.empty() && etag.front() == '"') {
        etag.remove_prefix(1);
    }
    while (!etag.empty() && etag.back() == '"') {
        etag.remove_suffix(1);
    }
    return std::string(etag);
}

const char* status_text(long status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 408:
            return "Request Timeout";
        case 416:
            return "Range Not Satisfiable";
        case 429:
            return "Too Many Requests";
        case 500:
            return "Internal Server Error";
        case 502:
            return "Bad Gateway";
        case 503:
            return "Service Unavailable";
        case 504:
            return "Gateway Timeout";
        default:
            return "";
    }
}

// One response of a transfer (a redirect is one, the answer it leads to another).
struct ResponseHead {
    long status = 0;
    std::map<std::string, std::string> headers;  // names in lower case

    std::optional<std::string> header(const std::string& name) const {
        const auto it = headers.find(name);
        return it == headers.end() ? std::nullopt : std::optional<std::string>(it->second);
    }
};

// One request: a curl handle, the responses' heads, the body's destination.
class Transfer {
public:
    Transfer(const HubSettings& settings, const ClientOptions& options, const std::string& url,
             const StopCheck& stop)
        : url_(url), stop_(stop) {
        global_init();
        curl_ = curl_easy_init();
        if (!curl_) {
            throw HubError(HubErrorKind::Failed, "libcurl could not create a transfer");
        }
        set(CURLOPT_URL, url.c_str());
        set(CURLOPT_USERAGENT, "folio/" FOLIO_VERSION);
        set(CURLOPT_NOSIGNAL, 1L);
        set(CURLOPT_FOLLOWLOCATION, 1L);
        set(CURLOPT_MAXREDIRS, 10L);
        set(CURLOPT_PROTOCOLS_STR, "http,https");
        set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        set(CURLOPT_CONNECTTIMEOUT, static_cast<long>(options.connect_timeout.count()));
        set(CURLOPT_LOW_SPEED_LIMIT, 1L);
        set(CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.stall_timeout.count()));
        set(CURLOPT_HEADERFUNCTION, &Transfer::header_callback);
        set(CURLOPT_HEADERDATA, this);
        set(CURLOPT_WRITEFUNCTION, &Transfer::write_callback);
        set(CURLOPT_WRITEDATA, this);
        set(CURLOPT_NOPROGRESS, 0L);
        set(CURLOPT_XFERINFOFUNCTION, &Transfer::progress_callback);
        set(CURLOPT_XFERINFODATA, this);
        set(CURLOPT_ERRORBUFFER, error_buffer_);
        if (settings.token) {
            // libcurl sends this header to the first host only, not to a CDN a redirect leads to.
            headers_ = curl_slist_append(headers_, ("Authorization: Bearer " + *settings.token).c_str());
            set(CURLOPT_HTTPHEADER, headers_);
        }
    }
    ~Transfer() {
        curl_slist_free_all(headers_);
        curl_easy_cleanup(curl_);
    }
    Transfer(const Transfer&) = delete;
    Transfer& operator=(const Transfer&) = delete;

    template <typename T>
    void set(CURLoption option, T value) {
        if (curl_easy_setopt(curl_, option, value) != CURLE_OK) {
            throw HubError(HubErrorKind::Failed, "libcurl refused an option for " + url_);
        }
    }

    // Sends the body of a successful answer to `on_data` (after `on_start` with its head); the body of an
    // error answer is kept for the message.
    void set_sink(std::function<void(const ResponseHead&)> on_start,
                  std::function<void(const char*, size_t)> on_data) {
        on_start_ = std::move(on_start);
        on_data_ = std::move(on_data);
    }

    // Runs the transfer; returns the final response's head, throws HubError for failures of the connection
    // (the HTTP status is the caller's to judge).
    const ResponseHead& perform() {
        const CURLcode code = curl_easy_perform(curl_);
        if (callback_error_) {
            std::rethrow_exception(callback_error_);
        }
        if (code == CURLE_ABORTED_BY_CALLBACK) {
            throw HubError(HubErrorKind::Cancelled, "cancelled");
        }
        if (code != CURLE_OK) {
            std::string what = url_ + ": " + (error_buffer_[0] ? error_buffer_ : curl_easy_strerror(code));
            if (code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY ||
                code == CURLE_COULDNT_CONNECT) {
                // No way to the Hub at all: what a person can do about it.
                what +=
                    " (no connection to the Hub: check the network or proxy, or set HF_ENDPOINT to a mirror; "
                    "HF_HUB_OFFLINE=1 uses the models already in the cache)";
            }
            switch (code) {
                case CURLE_COULDNT_RESOLVE_PROXY:
                case CURLE_COULDNT_RESOLVE_HOST:
                case CURLE_COULDNT_CONNECT:
                case CURLE_OPERATION_TIMEDOUT:
                case CURLE_PARTIAL_FILE:
                case CURLE_SEND_ERROR:
                case CURLE_RECV_ERROR:
                case CURLE_GOT_NOTHING:
                case CURLE_SSL_CONNECT_ERROR:
                case CURLE_HTTP2:
                case CURLE_HTTP2_STREAM:
                case CURLE_HTTP3:
                case CURLE_QUIC_CONNECT_ERROR:
                    throw HubError(HubErrorKind::Transient, what);
                default:
                    throw HubError(HubErrorKind::Failed, what);
            }
        }
        if (heads_.empty()) {
            throw HubError(HubErrorKind::BadResponse, url_ + ": no HTTP response");
        }
        if (!started_ && is_success(heads_.back().status)) {
            start();  // an empty body
        }
        return heads_.back();
    }

    const std::vector<ResponseHead>& heads() const { return heads_; }
    const std::string& error_body() const { return error_body_; }

private:
    static bool is_success(long status) { return status >= 200 && status < 300; }

    void start() {
        started_ = true;
        if (on_start_) {
            on_start_(heads_.back());
        }
    }

    static size_t header_callback(char* data, size_t size, size_t n, void* self_pointer) {
        auto* self = static_cast<Transfer*>(self_pointer);
        const std::string_view line(data, size * n);
        if (line.starts_with("HTTP/")) {
            ResponseHead head;
            const size_t space = line.find(' ');
            if (space != std::string_view::npos) {
                head.status = std::strtol(std::string(line.substr(space + 1, 3)).c_str(), nullptr, 10);
            }
            self->heads_.push_back(std::move(head));
        } else if (const size_t colon = line.find(':');
                   colon != std::string_view::npos && !self->heads_.empty()) {
            self->heads_.back().headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
        }
        return size * n;
    }

    static size_t write_callback(char* data, size_t size, size_t n, void* self_pointer) {
        auto* self = static_cast<Transfer*>(self_pointer);
        const size_t bytes = size * n;
        try {
            if (self->heads_.empty() || !is_success(self->heads_.back().status)) {
                const size_t room = kMaxErrorBody - std::min(kMaxErrorBody, self->error_body_.size());
                self->error_body_.append(data, std::min(room, bytes));
                return bytes;
            }
            if (!self->started_) {
                self->start();
            }
            if (self->on_data_) {
                self->on_data_(data, bytes);
            }
            return bytes;
        } catch (...) {
            self->callback_error_ = std::current_exception();
            return 0;  // anything but `bytes` ends the transfer
        }
    }

    static int progress_callback(void* self_pointer, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
        auto* self = static_cast<Transfer*>(self_pointer);
        try {
            return self->stop_ && self->stop_() ? 1 : 0;
        } catch (...) {
            self->callback_error_ = std::current_exception();
            return 1;
        }
    }

    CURL* curl_ = nullptr;
    curl_slist* headers_ = nullptr;
    std::string url_;
    StopCheck stop_;
    std::vector<ResponseHead> heads_;
    std::function<void(const ResponseHead&)> on_start_;
    std::function<void(const char*, size_t)> on_data_;
    bool started_ = false;
    std::string error_body_;
    char error_buffer_[CURL_ERROR_SIZE] = {};
    std::exception_ptr callback_error_;
};

// The first value of a header across a transfer's responses (the Hub's own headers are on its redirect,
// not on the CDN's answer).
std::optional<std::string> first_header(const std::vector<ResponseHead>& heads, const std::string& name) {
    for (const ResponseHead& head : heads) {
        if (auto value = head.header(name)) {
            return value;
        }
    }
    return std::nullopt;
}

// The "next" URL of a Link header: <URL>; rel="next".
std::optional<std::string> next_link(const std::optional<std::string>& link) {
    if (!link) {
        return std::nullopt;
    }
    size_t start = 0;
    while (start < link->size()) {
        size_t end = link->find(',', start);
        // A comma may sit inside the URL; parts start with '<'.
        while (end != std::string::npos && end + 1 < link->size() &&
               trim(link->substr(end + 1)).front() != '<') {
            end = link->find(',', end + 1);
        }
        const std::string part =
            link->substr(start, end == std::string::npos ? std::string::npos : end - start);
        const size_t open = part.find('<'), close = part.find('>');
        if (open != std::string::npos && close != std::string::npos && close > open) {
            const std::string params = lower(part.substr(close + 1));
            if (params.find("rel=\"next\"") != std::string::npos ||
                params.find("rel=next") != std::string::npos) {
                return part.substr(open + 1, close - open - 1);
            }
        }
        if (end == std::string::npos) {
            break;
        }
        start = end + 1;
    }
    return std::nullopt;
}

// The parts of a URL up to its path: "https://host:port".
std::string origin_of(const std::string& url) {
    const size_t scheme = url.find("://");
    const size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    return path == std::string::npos ? url : url.substr(0, path);
}

}  // namespace

const char* hub_error_kind_name(HubErrorKind kind) {
    switch (kind) {
        case HubErrorKind::NotFound:
            return "not found";
        case HubErrorKind::Unauthorized:
            return "unauthorized";
        case HubErrorKind::Forbidden:
            return "forbidden";
        case HubErrorKind::Transient:
            return "transient";
        case HubErrorKind::Offline:
            return "offline";
        case HubErrorKind::Cancelled:
            return "cancelled";
        case HubErrorKind::DiskFull:
            return "disk full";
        case HubErrorKind::Checksum:
            return "checksum mismatch";
        case HubErrorKind::BadResponse:
            return "bad response";
        case HubErrorKind::Failed:
            return "failed";
    }
    return "unknown";
}

std::string url_quote(std::string_view text, std::string_view safe) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' ||
            safe.find(c) != std::string_view::npos) {
            out += c;
        } else {
            out += '%';
            out += kHex[u >> 4];
            out += kHex[u & 0xf];
        }
    }
    return out;
}

HubClient::HubClient(HubSettings settings, ClientOptions options)
    : settings_(std::move(settings)), options_(options) {}

void HubClient::backoff(int n, const StopCheck& stop) const {
    auto delay = options_.retry_delay;
    for (int i = 1; i < n && delay < options_.max_retry_delay; ++i) {
        delay *= 2;
    }
    delay = std::min(delay, options_.max_retry_delay);
    const auto until = std::chrono::steady_clock::now() + delay;
    while (std::chrono::steady_clock::now() < until) {
        if (stop && stop()) {
            throw HubError(HubErrorKind::Cancelled, "cancelled");
        }
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            std::chrono::milliseconds(20), until - std::chrono::steady_clock::now()));
    }
}

namespace {

// The HubError for an HTTP failure. `file` is empty for API calls.
[[noreturn]] void throw_http_error(const HubSettings& settings, const std::string& url, long status,
                                   const std::vector<ResponseHead>& heads, const std::string& body,
                                   std::string_view repo, std::string_view revision, std::string_view file) {
    const std::string code = first_header(heads, "x-error-code").value_or("");
    std::string detail = first_header(heads, "x-error-message").value_or("");
    if (detail.empty() && !body.empty()) {
        detail = hub_error_message(body);
    }
    const std::string answered = settings.endpoint + " answered " + std::to_string(status) +
                                 (*status_text(status) ? std::string(" ") + status_text(status) : "") +
                                 (detail.empty() ? "" : " (" + detail + ")");
    const std::string repo_text(repo);
    if (status == 401) {
        if (settings.token) {
            throw HubError(
                HubErrorKind::Unauthorized,
                repo_text + ": " + answered + ": the token from " + settings.token_source +
                    " was not accepted for this repository; check it, or that the repository exists",
                status);
        }
        throw HubError(
            HubErrorKind::Unauthorized,
            repo_text + ": " + answered +
                ": the repository does not exist, or it is private or gated and needs a token: set "
                "HF_TOKEN or save a token in " +
                settings.token_path.string(),
            status);
    }
    if (status == 403) {
        throw HubError(HubErrorKind::Forbidden,
                       repo_text + ": " + answered +
                           ": the token has no access to this repository; a gated model needs its conditions "
                           "accepted on " +
                           settings.endpoint + "/" + repo_text,
                       status);
    }
    if (status == 404) {
        if (code == "RevisionNotFound") {
            throw HubError(HubErrorKind::NotFound,
                           repo_text + ": revision '" + std::string(revision) + "' not found: " + answered,
                           status);
        }
        if (code == "EntryNotFound" || (!file.empty() && code != "RepoNotFound")) {
            throw HubError(HubErrorKind::NotFound,
                           repo_text + ": " + std::string(file) + " not found at revision " +
                               std::string(revision) + ": " + answered,
                           status);
        }
        throw HubError(HubErrorKind::NotFound,
                       repo_text + ": no such model repository on " + settings.endpoint + " (" +
                           std::to_string(status) + ")" + (detail.empty() ? "" : ": " + detail),
                       status);
    }
    if (status == 408 || status == 429 || status >= 500) {
        throw HubError(HubErrorKind::Transient, url + ": " + answered, status);
    }
    throw HubError(HubErrorKind::Failed, url + ": " + answered, status);
}

}  // namespace

HubClient::JsonResponse HubClient::get_api(const std::string& url, std::string_view repo,
                                           std::string_view revision, const StopCheck& stop) const {
    if (settings_.offline) {
        throw HubError(HubErrorKind::Offline, "HF_HUB_OFFLINE is set: " + url + " is not fetched");
    }
    return with_retries(
        [&] {
            Transfer transfer(settings_, options_, url, stop);
            JsonResponse response;
            transfer.set_sink({}, [&](const char* data, size_t n) {
                if (response.body.size() + n > kMaxApiBody) {
                    throw HubError(HubErrorKind::BadResponse,
                                   url + ": answer larger than " + std::to_string(kMaxApiBody) + " bytes");
                }
                response.body.append(data, n);
            });
            const ResponseHead& head = transfer.perform();
            if (head.status != 200) {
                throw_http_error(settings_, url, head.status, transfer.heads(), transfer.error_body(), repo,
                                 revision, "");
            }
            response.next_page = next_link(head.header("link"));
            if (response.next_page && response.next_page->starts_with("/")) {
                response.next_page = origin_of(url) + *response.next_page;
            }
            // The token goes with every page: pages come from where the listing came from, nowhere else.
            if (response.next_page && origin_of(*response.next_page) != origin_of(url)) {
                throw HubError(HubErrorKind::BadResponse,
                               url + ": the next page of the listing is on another server (" +
                                   *response.next_page + ")");
            }
            return response;
        },
        stop);
}

std::string HubClient::resolve_commit(std::string_view repo, std::string_view revision,
                                      const StopCheck& stop) const {
    check_repo_id(repo);
    const std::string url =
        settings_.endpoint + "/api/models/" + std::string(repo) + "/revision/" + url_quote(revision);
    const JsonResponse response = get_api(url, repo, revision, stop);
    return parse_revision_commit(response.body, url);
}

std::vector<TreeEntry> HubClient::list_files(std::string_view repo, std::string_view commit,
                                             const StopCheck& stop) const {
    check_repo_id(repo);
    std::optional<std::string> url = settings_.endpoint + "/api/models/" + std::string(repo) + "/tree/" +
                                     url_quote(commit) + "?recursive=true";
    std::vector<TreeEntry> entries;
    for (int page = 0; url; ++page) {
        if (page > 10000) {
            throw HubError(HubErrorKind::BadResponse, *url + ": more than 10000 pages of files");
        }
        const JsonResponse response = get_api(*url, repo, commit, stop);
        std::vector<TreeEntry> page_entries = parse_tree_page(response.body, *url);
        entries.insert(entries.end(), std::make_move_iterator(page_entries.begin()),
                       std::make_move_iterator(page_entries.end()));
        url = response.next_page;
    }
    return entries;
}

std::string HubClient::file_url(std::string_view repo, std::string_view revision,
                                std::string_view path) const {
    return settings_.endpoint + "/" + std::string(repo) + "/resolve/" + url_quote(revision) + "/" +
           url_quote(path, "/");
}

void HubClient::fetch_file(std::string_view repo, std::string_view revision, std::string_view path,
                           int64_t offset, const FileSink& sink, const StopCheck& stop) const {
    check_repo_id(repo);
    check_repo_path(path);
    const std::string url = file_url(repo, revision, path);
    if (settings_.offline) {
        throw HubError(HubErrorKind::Offline, "HF_HUB_OFFLINE is set: " + url + " is not fetched");
    }
    Transfer transfer(settings_, options_, url, stop);
    const std::string range = std::to_string(offset) + "-";
    if (offset > 0) {
        transfer.set(CURLOPT_RANGE, range.c_str());
    }
    const std::vector<ResponseHead>& heads = transfer.heads();
    transfer.set_sink(
        [&](const ResponseHead& head) {
            FileResponse response;
            response.status = head.status;
            response.etag = first_header(heads, "x-linked-etag");
            if (!response.etag) {
                response.etag = first_header(heads, "etag");
            }
            if (response.etag) {
                response.etag = normalize_etag(*response.etag);
            }
            response.commit = first_header(heads, "x-repo-commit");
            const std::optional<std::string> length = head.header("content-length");
            if (head.status == 206) {
                // Content-Range: bytes START-END/TOTAL
                const std::string content_range = head.header("content-range").value_or("");
                long long start = -1, end = -1, total = -1;
                if (std::sscanf(content_range.c_str(), "bytes %lld-%lld/%lld", &start, &end, &total) < 2 ||
                    start != offset) {
                    throw HubError(HubErrorKind::BadResponse,
                                   url + ": asked for bytes from " + std::to_string(offset) +
                                       ", got Content-Range '" + content_range + "'");
                }
                response.offset = start;
                if (total >= 0) {
                    response.total = total;
                }
            } else if (head.status != 200) {
                throw HubError(HubErrorKind::BadResponse,
                               url + ": unexpected status " + std::to_string(head.status));
            }
            if (!response.total && length) {
                response.total = response.offset + std::strtoll(length->c_str(), nullptr, 10);
            }
            if (sink.on_start) {
                sink.on_start(response);
            }
        },
        sink.on_data);
    const ResponseHead& head = transfer.perform();
    if (head.status == 416) {
        throw HubError(HubErrorKind::BadResponse,
                       url + ": the server refused the range from byte " + std::to_string(offset) + " (416)",
                       416);
    }
    if (head.status != 200 && head.status != 206) {
        throw_http_error(settings_, url, head.status, heads, transfer.error_body(), repo, revision, path);
    }
}

}  // namespace folio::hub
