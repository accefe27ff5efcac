// A Hugging Face Hub on 127.0.0.1 for the tests, answering as the Hub does: the revision and tree APIs
// (sizes, git oids, LFS sha256s, pages linked by Link headers), resolve URLs with X-Repo-Commit and ETag
// (LFS files redirected to a CDN path with X-Linked-Etag and X-Linked-Size), Range requests, 401/404 with
// X-Error-Code. Faults on request: a connection dropped after some bytes, a corrupted byte, error statuses,
// slow transfers. Every request is logged.
#pragma once

#include <httplib.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace folio::test {

// Bytes that do not repeat, so that a byte out of place changes the hash.
inline std::string noise(size_t n, uint32_t seed) {
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        bytes[i] = static_cast<char>(seed >> 24);
    }
    return bytes;
}

inline std::string hex_digest(const EVP_MD* md, const std::string& prefix, const std::string& content) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int n = 0;
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    EVP_DigestInit_ex(context, md, nullptr);
    EVP_DigestUpdate(context, prefix.data(), prefix.size());
    EVP_DigestUpdate(context, content.data(), content.size());
    EVP_DigestFinal_ex(context, digest.data(), &n);
    EVP_MD_CTX_free(context);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < n; ++i) {
        hex += kHex[digest[i] >> 4];
        hex += kHex[digest[i] & 0xf];
    }
    return hex;
}
inline std::string sha256_hex(const std::string& content) {
    return hex_digest(EVP_sha256(), "", content);
}
inline std::string git_blob_id(const std::string& content) {
    return hex_digest(EVP_sha1(), "blob " + std::to_string(content.size()) + std::string(1, '\0'), content);
}

struct FakeFile {
    std::string path;
    std::string content;
    bool lfs = false;

    std::string oid() const { return git_blob_id(lfs ? pointer() : content); }
    std::string sha256() const { return sha256_hex(content); }
    // The git LFS pointer file git keeps in place of the content.
    std::string pointer() const {
        return "version https://git-lfs.github.com/spec/v1\noid sha256:" + sha256() + "\nsize " +
               std::to_string(content.size()) + "\n";
    }
    // The blob's name in the cache, the Hub's ETag.
    std::string etag() const { return lfs ? sha256() : oid(); }
};

struct FakeRepo {
    std::string id;      // ORG/NAME
    std::string commit;  // 40 hex digits
    std::vector<FakeFile> files;
    std::optional<std::string> token;  // a gated repository: only this token gets in
};

struct RequestRecord {
    std::string method;
    std::string path;
    std::string range;
    std::string authorization;
};

class FakeHub {
public:
    FakeHub() {
        server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
            std::lock_guard lock(mutex_);
            log_.push_back(
                {req.method, req.path, req.get_header_value("Range"), req.get_header_value("Authorization")});
            return httplib::Server::HandlerResponse::Unhandled;
        });
        server_.Get(R"(/api/models/([^/]+)/([^/]+)/revision/([^/]+))",
                    [this](const httplib::Request& req, httplib::Response& res) { revision(req, res); });
        server_.Get(R"(/api/models/([^/]+)/([^/]+)/tree/([^/]+))",
                    [this](const httplib::Request& req, httplib::Response& res) { tree(req, res); });
        server_.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))",
                    [this](const httplib::Request& req, httplib::Response& res) { resolve(req, res); });
        server_.Get(R"(/cdn/([0-9a-f]+))",
                    [this](const httplib::Request& req, httplib::Response& res) { cdn(req, res); });
        port_ = server_.bind_to_any_port("127.0.0.1");
        if (port_ <= 0) {
            throw std::runtime_error("fake hub: cannot bind to 127.0.0.1");
        }
        thread_ = std::thread([this] { server_.listen_after_bind(); });
        for (int i = 0; i < 500 && !server_.is_running(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }
    ~FakeHub() {
        server_.stop();
        thread_.join();
    }
    FakeHub(const FakeHub&) = delete;
    FakeHub& operator=(const FakeHub&) = delete;

    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

    void add_repo(FakeRepo repo) {
        std::lock_guard lock(mutex_);
        repos_[repo.id] = std::move(repo);
    }
    // The connection of the next `times` transfers of the file breaks once the file's first `bytes` bytes are
    // sent.
    void drop_after(const std::string& path, int64_t bytes, int times = 1) {
        std::lock_guard lock(mutex_);
        drops_[path] = {bytes, times};
    }
    // The file is served with one byte changed.
    void corrupt(const std::string& path, size_t index) {
        std::lock_guard lock(mutex_);
        corrupt_[path] = index;
    }
    // The next `times` requests whose path contains `fragment` get `status`.
    void fail_requests(const std::string& fragment, int status, int times) {
        std::lock_guard lock(mutex_);
        failures_[fragment] = {status, times};
    }
    // Pauses after each chunk of file data, so that transfers overlap.
    void set_chunk_delay(std::chrono::milliseconds delay) { chunk_delay_ = delay; }
    void set_tree_page_size(size_t n) { tree_page_size_ = n; }
    void clear_faults() {
        std::lock_guard lock(mutex_);
        drops_.clear();
        corrupt_.clear();
        failures_.clear();
    }

    std::vector<RequestRecord> log() const {
        std::lock_guard lock(mutex_);
        return log_;
    }
    size_t n_requests() const {
        std::lock_guard lock(mutex_);
        return log_.size();
    }
    void clear_log() {
        std::lock_guard lock(mutex_);
        log_.clear();
    }

private:
    static constexpr size_t kChunk = 8192;

    const FakeRepo* find_repo(const std::string& id) const {
        const auto it = repos_.find(id);
        return it == repos_.end() ? nullptr : &it->second;
    }

    static void error(httplib::Response& res, int status, const std::string& code,
                      const std::string& message) {
        res.status = status;
        if (!code.empty()) {
            res.set_header("X-Error-Code", code);
        }
        res.set_header("X-Error-Message", message);
        res.set_content(nlohmann::json{{"error", message}}.dump(), "application/json");
    }

    // Whether an injected failure answers the request.
    bool injected_failure(const httplib::Request& req, httplib::Response& res) {
        for (auto& [fragment, failure] : failures_) {
            if (failure.second > 0 && req.path.find(fragment) != std::string::npos) {
                --failure.second;
                error(res, failure.first, "", "injected failure");
                return true;
            }
        }
        return false;
    }

    // The repository a request may see, or nullptr with the error answered (401 for a gated repository
    // without the right token, as the Hub answers).
    const FakeRepo* authorized_repo(const httplib::Request& req, httplib::Response& res) const {
        const std::string id = req.matches[1].str() + "/" + req.matches[2].str();
        const FakeRepo* repo = find_repo(id);
        if (!repo) {
            error(res, 404, "RepoNotFound", "Repository not found");
            return nullptr;
        }
        if (repo->token && req.get_header_value("Authorization") != "Bearer " + *repo->token) {
            error(res, 401, "GatedRepo", "Access to model " + id + " is restricted");
            return nullptr;
        }
        return repo;
    }

    static bool revision_matches(const FakeRepo& repo, const std::string& revision) {
        return revision == "main" || revision == repo.commit;
    }

    void revision(const httplib::Request& req, httplib::Response& res) {
        std::lock_guard lock(mutex_);
        if (injected_failure(req, res)) {
            return;
        }
        const FakeRepo* repo = authorized_repo(req, res);
        if (!repo) {
            return;
        }
        if (!revision_matches(*repo, req.matches[3].str())) {
            error(res, 404, "RevisionNotFound", "Invalid rev id: " + req.matches[3].str());
            return;
        }
        nlohmann::json siblings = nlohmann::json::array();
        for (const FakeFile& file : repo->files) {
            siblings.push_back({{"rfilename", file.path}});
        }
        res.set_content(
            nlohmann::json{{"id", repo->id}, {"sha", repo->commit}, {"siblings", siblings}}.dump(),
            "application/json");
    }

    void tree(const httplib::Request& req, httplib::Response& res) {
        std::lock_guard lock(mutex_);
        if (injected_failure(req, res)) {
            return;
        }
        const FakeRepo* repo = authorized_repo(req, res);
        if (!repo) {
            return;
        }
        if (!revision_matches(*repo, req.matches[3].str())) {
            error(res, 404, "RevisionNotFound", "Invalid rev id: " + req.matches[3].str());
            return;
        }
        // Folders first, as the Hub lists them, then the files.
        nlohmann::json entries = nlohmann::json::array();
        std::set<std::string> folders;
        for (const FakeFile& file : repo->files) {
            if (const size_t slash = file.path.rfind('/'); slash != std::string::npos) {
                folders.insert(file.path.substr(0, slash));
            }
        }
        for (const std::string& folder : folders) {
            entries.push_back(
                {{"type", "directory"}, {"oid", std::string(40, 'd')}, {"size", 0}, {"path", folder}});
        }
        for (const FakeFile& file : repo->files) {
            nlohmann::json entry = {
                {"type", "file"}, {"oid", file.oid()}, {"size", file.content.size()}, {"path", file.path}};
            if (file.lfs) {
                entry["lfs"] = {{"oid", file.sha256()},
                                {"size", file.content.size()},
                                {"pointerSize", file.pointer().size()}};
            }
            entries.push_back(std::move(entry));
        }
        const size_t start = req.has_param("cursor") ? std::stoul(req.get_param_value("cursor")) : 0;
        const size_t end = std::min(entries.size(), start + tree_page_size_);
        nlohmann::json page = nlohmann::json::array();
        for (size_t i = start; i < end; ++i) {
            page.push_back(entries[i]);
        }
        if (end < entries.size()) {
            res.set_header("Link", "<" + endpoint() + req.path +
                                       "?recursive=true&cursor=" + std::to_string(end) + ">; rel=\"next\"");
        }
        res.set_content(page.dump(), "application/json");
    }

    void resolve(const httplib::Request& req, httplib::Response& res) {
        std::lock_guard lock(mutex_);
        if (injected_failure(req, res)) {
            return;
        }
        const FakeRepo* repo = authorized_repo(req, res);
        if (!repo) {
            return;
        }
        res.set_header("X-Repo-Commit", repo->commit);
        if (!revision_matches(*repo, req.matches[3].str())) {
            error(res, 404, "RevisionNotFound", "Invalid rev id: " + req.matches[3].str());
            return;
        }
        const std::string path = req.matches[4].str();
        const auto file = std::find_if(repo->files.begin(), repo->files.end(),
                                       [&](const FakeFile& f) { return f.path == path; });
        if (file == repo->files.end()) {
            error(res, 404, "EntryNotFound", path + " does not exist on \"main\"");
            return;
        }
        res.set_header("ETag", "\"" + file->etag() + "\"");
        if (file->lfs) {
            res.set_header("X-Linked-Etag", "\"" + file->sha256() + "\"");
            res.set_header("X-Linked-Size", std::to_string(file->content.size()));
            cdn_paths_[file->sha256()] = path;
            res.set_redirect("/cdn/" + file->sha256(), 302);
            return;
        }
        serve(path, file->content, res);
    }

    void cdn(const httplib::Request& req, httplib::Response& res) {
        std::lock_guard lock(mutex_);
        if (injected_failure(req, res)) {
            return;
        }
        const std::string sha = req.matches[1].str();
        const auto path = cdn_paths_.find(sha);
        for (const auto& [id, repo] : repos_) {
            for (const FakeFile& file : repo.files) {
                if (file.lfs && file.sha256() == sha && path != cdn_paths_.end() &&
                    path->second == file.path) {
                    res.set_header("ETag", "\"cdn-" + sha.substr(0, 16) + "\"");
                    serve(file.path, file.content, res);
                    return;
                }
            }
        }
        res.status = 404;
    }

    // The content with Range support (cpp-httplib answers 206 for a content provider of the whole length),
    // faults applied.
    void serve(const std::string& path, std::string content, httplib::Response& res) {
        if (const auto it = corrupt_.find(path); it != corrupt_.end() && it->second < content.size()) {
            content[it->second] = static_cast<char>(content[it->second] ^ 0x5a);
        }
        int64_t drop_at = -1;
        if (auto it = drops_.find(path); it != drops_.end() && it->second.second > 0) {
            --it->second.second;
            drop_at = it->second.first;
        }
        const auto delay = chunk_delay_.load();
        auto shared = std::make_shared<std::string>(std::move(content));
        res.set_content_provider(
            shared->size(), "application/octet-stream",
            [shared, drop_at, delay](size_t offset, size_t length, httplib::DataSink& sink) {
                size_t n = std::min(length, kChunk);
                if (drop_at >= 0) {
                    if (offset >= static_cast<size_t>(drop_at)) {
                        return false;  // the connection breaks
                    }
                    n = std::min(n, static_cast<size_t>(drop_at) - offset);
                }
                if (delay.count() > 0) {
                    std::this_thread::sleep_for(delay);
                }
                return sink.write(shared->data() + offset, n);
            });
    }

    httplib::Server server_;
    int port_ = 0;
    std::thread thread_;
    mutable std::mutex mutex_;
    std::map<std::string, FakeRepo> repos_;
    std::map<std::string, std::string> cdn_paths_;
    std::map<std::string, std::pair<int64_t, int>> drops_;
    std::map<std::string, size_t> corrupt_;
    std::map<std::string, std::pair<int, int>> failures_;
    std::atomic<std::chrono::milliseconds> chunk_delay_{std::chrono::milliseconds(0)};
    std::atomic<size_t> tree_page_size_{1000};
    std::vector<RequestRecord> log_;
};

}  // namespace folio::test
