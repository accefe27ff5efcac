// The pool of KV-cache blocks: a free list ordered for eviction, a reference count per block, and the hashes
// of full blocks whose content can be shared between requests (prefix caching).
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace folio {

// Identifies the content of a full block: its tokens and everything before them.
using BlockHash = uint64_t;

// What the KV-cache manager needs of a pool; implemented by BlockPool and by test fakes.
class BlockAllocator {
public:
    virtual ~BlockAllocator() = default;

    virtual int32_t n_blocks() const = 0;
    // Blocks no request holds, cached or not.
    virtual int32_t n_free() const = 0;
    // n blocks with a reference count of 1, taken from the head of the free list (cached blocks lose their
    // hash); nothing when fewer than n are free.
    virtual std::optional<std::vector<int32_t>> allocate(int32_t n) = 0;
    // Drops one reference from each block; a block reaching zero joins the tail of the free list, keeping its
    // hash, so that the least recently used cached blocks are evicted first.
    virtual void release(std::span<const int32_t> blocks) = 0;
    // The block holding content with this hash, with one more reference; nothing when none is cached.
    virtual std::optional<int32_t> acquire_cached(BlockHash hash) = 0;
    // Records that a full block, held by the caller, holds content with this hash. When another block already
    // holds it, the block stays uncached.
    virtual void cache(int32_t block, BlockHash hash) = 0;
};

class BlockPool final : public BlockAllocator {
public:
    explicit BlockPool(int32_t n_blocks);

    int32_t n_blocks() const override { return static_cast<int32_t>(blocks_.size()); }
    int32_t n_free() const override { return static_cast<int32_t>(free_.size()); }
    std::optional<std::vector<int32_t>> allocate(int32_t n) override;
    void release(std::span<const int32_t> blocks) override;
    std::optional<int32_t> acquire_cached(BlockHash hash) override;
    void cache(int32_t block, BlockHash hash) override;
    // Forgets every block's hash, so that no later request finds any (after a failed step).
    void clear_cache();

    int32_t ref_count(int32_t block) const { return blocks_.at(static_cast<size_t>(block)).ref_count; }
    bool is_cached(int32_t block) const { return blocks_.at(static_cast<size_t>(block)).hash.has_value(); }
    int64_t n_cached() const { return static_cast<int64_t>(cached_.size()); }
    // Number of cached blocks that were taken for new content since construction.
    int64_t n_evicted() const { return n_evicted_; }

private:
    struct Block {
        int32_t ref_count = 0;
        std::optional<BlockHash> hash;
        std::list<int32_t>::iterator free_pos;  // valid while ref_count is 0
    };

    Block& at(int32_t block, const char* op);

    std::vector<Block> blocks_;
    std::list<int32_t> free_;  // head: next to allocate
    std::unordered_map<BlockHash, int32_t> cached_;
    int64_t n_evicted_ = 0;
};

}  // namespace folio
