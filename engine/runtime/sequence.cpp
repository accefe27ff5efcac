#include "engine/runtime/sequence.h"

#include "engine/common/error.h"

namespace folio {

namespace {

// splitmix64's finalizer: a bijective mix of 64 bits.
uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

uint64_t combine(uint64_t seed, uint64_t value) {
    return mix(seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

constexpr uint64_t kTextKey = 1;
constexpr uint64_t kImageKey = 2;

}  // namespace

const char* finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop:
            return "stop";
        case FinishReason::Length:
            return "length";
        case FinishReason::Cancelled:
            return "cancelled";
        case FinishReason::Error:
            return "error";
    }
    return "unknown";
}

const char* priority_name(Priority priority) {
    switch (priority) {
        case Priority::Interactive:
            return "interactive";
        case Priority::Batch:
            return "batch";
    }
    return "unknown";
}

std::span<const BlockHash> Sequence::block_hashes(int64_t n_full, int64_t block_size) {
    if (block_size <= 0 || n_full < 0 || n_full * block_size > n_tokens()) {
        fail("sequence ", id, ": ", n_full, " full blocks of ", block_size, " in ", n_tokens(), " tokens");
    }
    if (block_size != hashed_block_size_) {
        hashes_.clear();
        hashed_block_size_ = block_size;
    }
    size_t image = 0;
    for (auto b = static_cast<int64_t>(hashes_.size()); b < n_full; ++b) {
        BlockHash h = combine(b == 0 ? 0 : hashes_.back(), static_cast<uint64_t>(block_size));
        for (int64_t i = b * block_size; i < (b + 1) * block_size; ++i) {
            while (image < images.size() && images[image].end() <= i) {
                ++image;
            }
            if (image < images.size() && images[image].begin <= i) {
                h = combine(combine(h, kImageKey), images[image].content_hash);
                h = combine(h, static_cast<uint64_t>(i - images[image].begin));
            } else {
                h = combine(combine(h, kTextKey), static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])));
            }
        }
        hashes_.push_back(h);
    }
    return std::span(hashes_).first(static_cast<size_t>(n_full));
}

}  // namespace folio
