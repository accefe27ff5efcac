#include "engine/runtime/kv-cache-manager.h"

#include <algorithm>

#include "engine/common/error.h"

namespace folio {

KvCacheManager::KvCacheManager(BlockAllocator& allocator, int64_t block_size, bool enable_prefix_caching)
    : allocator_(allocator), block_size_(block_size), enable_prefix_caching_(enable_prefix_caching) {
    if (block_size <= 0) {
        fail("kv cache manager: block size must be positive, got ", block_size);
    }
}

int64_t KvCacheManager::claim_cached_prefix(int64_t request, std::span<const BlockHash> hashes) {
    if (tables_.contains(request)) {
        fail("kv cache manager: request ", request, " already holds blocks");
    }
    if (!enable_prefix_caching_) {
        return 0;
    }
    Table& table = tables_[request];
    n_lookup_blocks_ += static_cast<int64_t>(hashes.size());
    for (const BlockHash h : hashes) {
        const std::optional<int32_t> block = allocator_.acquire_cached(h);
        if (!block) {
            break;
        }
        table.blocks.push_back(*block);
    }
    table.n_cached_blocks = static_cast<int64_t>(table.blocks.size());
    n_hit_blocks_ += table.n_cached_blocks;
    return table.n_cached_blocks * block_size_;
}

bool KvCacheManager::allocate_slots(int64_t request, int64_t n_tokens) {
    if (n_tokens < 0) {
        fail("kv cache manager: request ", request, " asks for ", n_tokens, " tokens");
    }
    Table& table = tables_[request];
    const int64_t n_needed = (n_tokens + block_size_ - 1) / block_size_;
    const int64_t n_new = n_needed - static_cast<int64_t>(table.blocks.size());
    if (n_new <= 0) {
        return true;
    }
    std::optional<std::vector<int32_t>> blocks = allocator_.allocate(static_cast<int32_t>(n_new));
    if (!blocks) {
        if (table.blocks.empty()) {
            tables_.erase(request);
        }
        return false;
    }
    table.blocks.insert(table.blocks.end(), blocks->begin(), blocks->end());
    return true;
}

void KvCacheManager::cache_blocks(int64_t request, std::span<const BlockHash> hashes) {
    if (!enable_prefix_caching_) {
        return;
    }
    const auto it = tables_.find(request);
    if (it == tables_.end() || hashes.size() > it->second.blocks.size()) {
        fail("kv cache manager: request ", request, " caches ", hashes.size(), " blocks but holds ",
             it == tables_.end() ? 0 : it->second.blocks.size());
    }
    Table& table = it->second;
    for (auto i = static_cast<size_t>(table.n_cached_blocks); i < hashes.size(); ++i) {
        allocator_.cache(table.blocks[i], hashes[i]);
    }
    table.n_cached_blocks = std::max(table.n_cached_blocks, static_cast<int64_t>(hashes.size()));
}

void KvCacheManager::free(int64_t request) {
    const auto it = tables_.find(request);
    if (it == tables_.end()) {
        return;
    }
    // Last blocks first: the tail of a request is the least likely to be shared, so it is evicted first.
    std::vector<int32_t> blocks(it->second.blocks.rbegin(), it->second.blocks.rend());
    tables_.erase(it);
    allocator_.release(blocks);
}

std::span<const int32_t> KvCacheManager::block_table(int64_t request) const {
    const auto it = tables_.find(request);
    if (it == tables_.end()) {
        return {};
    }
    return it->second.blocks;
}

}  // namespace folio
