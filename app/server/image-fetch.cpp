#include "app/server/image-fetch.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

#include "app/server/openai-protocol.h"

namespace folio::server {

namespace {

struct Download {
    std::vector<uint8_t> bytes;
    size_t max_bytes = 0;
    bool too_large = false;
};

size_t on_data(char* data, size_t size, size_t count, void* user) {
    auto& d = *static_cast<Download*>(user);
    const size_t n = size * count;
    if (d.bytes.size() + n > d.max_bytes) {
        d.too_large = true;
        return 0;  // ends the transfer
    }
    d.bytes.insert(d.bytes.end(), reinterpret_cast<const uint8_t*>(data),
                   reinterpret_cast<const uint8_t*>(data) + n);
    return n;
}

}  // namespace

std::vector<uint8_t> fetch_image_url(const std::string& url, const FetchLimits& limits,
                                     const std::string& param) {
    const std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
    if (!curl) {
        throw ApiError(500, "server_error", "could not start an HTTP transfer");
    }
    Download download;
    download.max_bytes = limits.max_bytes;
    char error[CURL_ERROR_SIZE] = {};
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, static_cast<long>(limits.max_redirects));
    curl_easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(limits.timeout.count()));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &download);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "folio-server");
    const CURLcode code = curl_easy_perform(c);
    if (download.too_large) {
        bad_request(param + ": the image at " + url + " is larger than " + std::to_string(limits.max_bytes) +
                        " bytes",
                    param);
    }
    if (code != CURLE_OK) {
        bad_request(param + ": could not fetch " + url + ": " + (error[0] ? error : curl_easy_strerror(code)),
                    param);
    }
    if (download.bytes.empty()) {
        bad_request(param + ": " + url + " gave no data", param);
    }
    return std::move(download.bytes);
}

}  // namespace folio::server
