#include "engine/runtime/chunking-policy.h"

#include <algorithm>

namespace folio {

int64_t prefill_chunk(int64_t n_computed, int64_t n_tokens, std::span<const ImageSpan> images, int64_t budget,
                      bool enable_chunked_prefill) {
    const int64_t remaining = n_tokens - n_computed;
    if (remaining <= budget) {
        return remaining;
    }
    if (!enable_chunked_prefill || budget <= 0) {
        return 0;
    }
    int64_t end = n_computed + budget;
    for (const ImageSpan& image : images) {
        if (image.begin < end && end < image.end()) {
            end = image.end();
            break;
        }
    }
    return std::min(end, n_tokens) - n_computed;
}

}  // namespace folio
