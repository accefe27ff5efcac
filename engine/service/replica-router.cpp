#include "engine/service/replica-router.h"

#include <algorithm>

#include "engine/common/error.h"

namespace folio {

namespace {

uint64_t mix(uint64_t seed, uint64_t value) {
    // splitmix64's finaliser over the seed and the value
    uint64_t x = seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

bool media(TokenModality m) {
    return m == TokenModality::Image || m == TokenModality::Video;
}

}  // namespace

std::vector<BlockHash> prompt_block_hashes(const Request& request, int64_t block_size) {
    if (block_size < 1) {
        fail("routing blocks of ", block_size, " tokens");
    }
    const std::vector<int32_t>& ids = request.prompt.ids;
    const std::vector<TokenModality>& modality = request.prompt.modality;
    const auto n_full = static_cast<int64_t>(ids.size()) / block_size;
    std::vector<BlockHash> hashes;
    hashes.reserve(static_cast<size_t>(n_full));
    BlockHash h = mix(0, static_cast<uint64_t>(block_size));
    int64_t image = -1;  // the media run the token is in
    int64_t in_run = 0;  // its index there
    for (int64_t i = 0; i < n_full * block_size; ++i) {
        const auto k = static_cast<size_t>(i);
        const bool is_media = k < modality.size() && media(modality[k]);
        if (is_media) {
            const bool starts = k == 0 || !media(modality[k - 1]);
            image += starts ? 1 : 0;
            in_run = starts ? 0 : in_run + 1;
            const auto at = static_cast<size_t>(image);
            const uint64_t content = at < request.image_hashes.size() ? request.image_hashes[at] : 0;
            h = mix(mix(mix(h, 2), content), static_cast<uint64_t>(in_run));
        } else {
            h = mix(mix(h, 1), static_cast<uint32_t>(ids[k]));
        }
        if ((i + 1) % block_size == 0) {
            hashes.push_back(h);
        }
    }
    return hashes;
}

ReplicaRouter::ReplicaRouter(size_t n_replicas, RouterParams params)
    : params_(params), loads_(n_replicas, 0), n_routed_(n_replicas, 0), failed_(n_replicas, false) {
    if (n_replicas == 0) {
        fail("a router over no replica");
    }
    if (params.block_size < 1) {
        fail("a router with blocks of ", params.block_size, " tokens");
    }
}

std::optional<ReplicaRouter::Route> ReplicaRouter::route(std::span<const BlockHash> hashes,
                                                         int64_t n_prompt_tokens, int64_t weight) {
    std::optional<Route> chosen;
    // The longest run of leading blocks one healthy replica holds (blocks are chained, so a block held means
    // every block before it was routed there too, unless forgotten since).
    for (size_t n = hashes.size(); n > 0 && !chosen; --n) {
        const auto it = blocks_.find(hashes[n - 1]);
        if (it != blocks_.end() && !failed_[it->second.replica]) {
            const int64_t matched = static_cast<int64_t>(n) * params_.block_size;
            if (static_cast<double>(matched) >=
                params_.affinity_share * static_cast<double>(n_prompt_tokens)) {
                chosen = Route{it->second.replica, matched};
            }
            break;
        }
    }
    if (!chosen) {
        for (size_t r = 0; r < loads_.size(); ++r) {
            if (!failed_[r] && (!chosen || loads_[r] < loads_[chosen->replica])) {
                chosen = Route{r, 0};
            }
        }
    }
    if (!chosen) {
        return std::nullopt;
    }
    loads_[chosen->replica] += std::max<int64_t>(weight, 0);
    ++n_routed_[chosen->replica];
    for (const BlockHash h : hashes) {
        remember(h, chosen->replica);
    }
    return chosen;
}

void ReplicaRouter::remember(BlockHash hash, size_t replica) {
    const auto it = blocks_.find(hash);
    if (it != blocks_.end()) {
        uses_.erase(it->second.use);
        blocks_.erase(it);
    }
    uses_.push_front(hash);
    blocks_.emplace(hash, Held{replica, uses_.begin()});
    while (blocks_.size() > params_.max_blocks) {
        blocks_.erase(uses_.back());
        uses_.pop_back();
    }
}

void ReplicaRouter::finished(size_t replica, int64_t weight) {
    int64_t& load = loads_.at(replica);
    load = std::max<int64_t>(0, load - std::max<int64_t>(weight, 0));
}

void ReplicaRouter::set_failed(size_t replica) {
    failed_.at(replica) = true;
    loads_.at(replica) = 0;
    for (auto it = blocks_.begin(); it != blocks_.end();) {
        if (it->second.replica == replica) {
            uses_.erase(it->second.use);
            it = blocks_.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace folio
