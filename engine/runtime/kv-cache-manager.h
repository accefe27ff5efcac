// Block tables of the running requests over a block allocator: which blocks hold each request's tokens,
// which of a new request's leading blocks are already cached, and which full blocks become shareable.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/runtime/block-pool.h"

namespace folio {

// What the scheduler needs of the KV cache; implemented by KvCacheManager and by test fakes.
class KvSlots {
public:
    virtual ~KvSlots() = default;

    virtual int64_t block_size() const = 0;
    virtual int64_t n_blocks() const = 0;
    virtual int64_t n_free_blocks() const = 0;
    // For a request that holds no blocks: takes the longest run of leading cached blocks whose hashes match
    // (at most hashes.size()), makes them the start of its block table and returns how many tokens they hold.
    virtual int64_t claim_cached_prefix(int64_t request, std::span<const BlockHash> hashes) = 0;
    // Grows the request's block table to cover n_tokens tokens. Returns false, allocating nothing, when too
    // few blocks are free.
    virtual bool allocate_slots(int64_t request, int64_t n_tokens) = 0;
    // Makes the request's first hashes.size() blocks, now full and computed, shareable under these hashes.
    virtual void cache_blocks(int64_t request, std::span<const BlockHash> hashes) = 0;
    // Gives back every block of the request.
    virtual void free(int64_t request) = 0;
    virtual std::span<const int32_t> block_table(int64_t request) const = 0;
};

class KvCacheManager final : public KvSlots {
public:
    KvCacheManager(BlockAllocator& allocator, int64_t block_size, bool enable_prefix_caching);

    int64_t block_size() const override { return block_size_; }
    int64_t n_blocks() const override { return allocator_.n_blocks(); }
    int64_t n_free_blocks() const override { return allocator_.n_free(); }
    int64_t claim_cached_prefix(int64_t request, std::span<const BlockHash> hashes) override;
    bool allocate_slots(int64_t request, int64_t n_tokens) override;
    void cache_blocks(int64_t request, std::span<const BlockHash> hashes) override;
    void free(int64_t request) override;
    std::span<const int32_t> block_table(int64_t request) const override;

    int64_t n_requests() const { return static_cast<int64_t>(tables_.size()); }
    // Cumulative prefix-cache lookups and hits, in blocks.
    int64_t n_lookup_blocks() const { return n_lookup_blocks_; }
    int64_t n_hit_blocks() const { return n_hit_blocks_; }

private:
    struct Table {
        std::vector<int32_t> blocks;
        int64_t n_cached_blocks = 0;  // leading blocks already offered to the prefix cache
    };

    BlockAllocator& allocator_;
    int64_t block_size_;
    bool enable_prefix_caching_;
    std::unordered_map<int64_t, Table> tables_;
    int64_t n_lookup_blocks_ = 0;
    int64_t n_hit_blocks_ = 0;
};

}  // namespace folio
