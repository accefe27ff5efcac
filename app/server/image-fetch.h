// Images named by http(s) URLs in a request, fetched with libcurl when the server allows it: http and https
// only (redirects too), a bounded size and time, an HTTP error status a failure.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace folio::server {

struct FetchLimits {
    size_t max_bytes = size_t{64} << 20;
    std::chrono::seconds timeout{20};
    int max_redirects = 3;
};

// The body at url; throws ApiError (400) naming param, the URL and what went wrong.
std::vector<uint8_t> fetch_image_url(const std::string& url, const FetchLimits& limits,
                                     const std::string& param);

}  // namespace folio::server
