#include "engine/runtime/block-pool.h"

#include "engine/common/error.h"

namespace folio {

BlockPool::BlockPool(int32_t n_blocks) {
    if (n_blocks <= 0) {
        fail("block pool: needs at least one block, got ", n_blocks);
    }
    blocks_.resize(static_cast<size_t>(n_blocks));
    for (int32_t b = 0; b < n_blocks; ++b) {
        blocks_[b].free_pos = free_.insert(free_.end(), b);
    }
}

BlockPool::Block& BlockPool::at(int32_t block, const char* op) {
    if (block < 0 || block >= n_blocks()) {
        fail("block pool: ", op, " of block ", block, " outside the pool of ", n_blocks());
    }
    return blocks_[block];
}

std::optional<std::vector<int32_t>> BlockPool::allocate(int32_t n) {
    if (n < 0) {
        fail("block pool: allocation of ", n, " blocks");
    }
    if (n > n_free()) {
        return std::nullopt;
    }
    std::vector<int32_t> out;
    out.reserve(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        const int32_t b = free_.front();
        free_.pop_front();
        Block& block = blocks_[b];
        if (block.hash) {
            cached_.erase(*block.hash);
            block.hash.reset();
            ++n_evicted_;
        }
        block.ref_count = 1;
        out.push_back(b);
    }
    return out;
}

void BlockPool::release(std::span<const int32_t> blocks) {
    for (const int32_t b : blocks) {
        Block& block = at(b, "release");
        if (block.ref_count <= 0) {
            fail("block pool: release of block ", b, " that no request holds");
        }
        if (--block.ref_count == 0) {
            block.free_pos = free_.insert(free_.end(), b);
        }
    }
}

std::optional<int32_t> BlockPool::acquire_cached(BlockHash hash) {
    const auto it = cached_.find(hash);
    if (it == cached_.end()) {
        return std::nullopt;
    }
    Block& block = blocks_[it->second];
    if (block.ref_count++ == 0) {
        free_.erase(block.free_pos);
    }
    return it->second;
}

void BlockPool::cache(int32_t block, BlockHash hash) {
    Block& b = at(block, "cache");
    if (b.ref_count <= 0) {
        fail("block pool: caching block ", block, " that no request holds");
    }
    if (b.hash || cached_.contains(hash)) {
        return;
    }
    b.hash = hash;
    cached_.emplace(hash, block);
}

void BlockPool::clear_cache() {
    for (Block& block : blocks_) {
        block.hash.reset();
    }
    cached_.clear();
}

}  // namespace folio
