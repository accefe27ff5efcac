#include "weight-prefetch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace folio::kernels {

namespace {

// The granularity of a bulk prefetch.
constexpr int64_t kPrefetchAlign = 16;

bool switched_off() {
    const char* value = std::getenv("FOLIO_CUDA_L2_PREFETCH");
    return value != nullptr && std::strcmp(value, "0") == 0;
}

}  // namespace

WeightPrefetch::WeightPrefetch(int64_t l2_bytes)
    : limit_bytes_(switched_off() ? 0
                                  : std::max<int64_t>(l2_bytes, 0) / 2 / kPrefetchAlign * kPrefetchAlign) {}

WeightPrefetch::Range WeightPrefetch::use(const void* data, int64_t n_bytes) {
    if (limit_bytes_ == 0) {
        return {};
    }
    if (last_ != nullptr && last_ != data) {
        next_[last_] = {data, n_bytes};
    }
    last_ = data;
    const auto it = next_.find(data);
    if (it == next_.end()) {
        return {};
    }
    return {it->second.data, std::min(it->second.n_bytes, limit_bytes_) / kPrefetchAlign * kPrefetchAlign};
}

}  // namespace folio::kernels
