// Where a request runs when the models are loaded more than once (data parallelism: one engine a device, or
// several on one device). Pure bookkeeping, tested without a device.
//
// A request goes to the engine that already holds most of its prompt in its prefix cache when that is at
// least RouterParams::affinity_share of the prompt (a conversation's next turn, the same document asked
// again), so that its prefill reuses that cache; otherwise to the least loaded engine (the fewest tokens of
// unfinished requests, prompt and max_tokens; ties to the lowest index). A failed engine takes no request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/runtime/block-pool.h"
#include "engine/runtime/engine-core.h"

namespace folio {

struct RouterParams {
    int64_t block_size = 64;  // tokens a routing block covers
    // Blocks remembered over every engine, the least recently routed forgotten first.
    size_t max_blocks = size_t{1} << 18;
    // The part of a prompt an engine must hold for the request to follow it there.
    double affinity_share = 0.5;
};

// The chained hashes of a request's full blocks of block_size prompt tokens: text tokens by their ids, media
// tokens by their image's content hash (Request::image_hashes, in order) and their index in the image.
std::vector<BlockHash> prompt_block_hashes(const Request& request, int64_t block_size);

class ReplicaRouter {
public:
    // Throws folio::Error for no replica or a block size below 1.
    ReplicaRouter(size_t n_replicas, RouterParams params = {});

    struct Route {
        size_t replica = 0;
        int64_t n_matched_tokens = 0;  // of the prompt, held by that replica as far as the router knows
    };
    // Picks the replica for a prompt of n_prompt_tokens whose full blocks hash to hashes, adds weight to its
    // load and remembers that it now holds those blocks; nothing when every replica has failed.
    std::optional<Route> route(std::span<const BlockHash> hashes, int64_t n_prompt_tokens, int64_t weight);
    // A request routed with this weight ended.
    void finished(size_t replica, int64_t weight);
    // The replica takes no request from now on, and what it held is forgotten.
    void set_failed(size_t replica);

    size_t n_replicas() const { return loads_.size(); }
    int64_t load(size_t replica) const { return loads_.at(replica); }
    int64_t n_routed(size_t replica) const { return n_routed_.at(replica); }  // requests so far
    bool failed(size_t replica) const { return failed_.at(replica); }
    size_t n_remembered_blocks() const { return blocks_.size(); }

private:
    struct Held {
        size_t replica = 0;
        std::list<BlockHash>::iterator use;  // its place in uses_
    };
    void remember(BlockHash hash, size_t replica);

    RouterParams params_;
    std::vector<int64_t> loads_;
    std::vector<int64_t> n_routed_;
    std::vector<bool> failed_;
    std::unordered_map<BlockHash, Held> blocks_;
    std::list<BlockHash> uses_;  // most recently routed first
};

}  // namespace folio
