// How many KV-cache blocks fit: the memory the engine may use ((total - what other processes use) x
// utilization), less the weights of every model loaded, less the activation peak of the largest step (a
// profiling prefill scaled to max_num_batched_tokens plus the largest image a step may take whole) and the
// activations other models loaded together keep, divided by the bytes of a block.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace folio {

struct MemoryPlanParams {
    int64_t total_bytes = 0;
    double utilization = 0.9;
    int64_t other_bytes = 0;  // used on the device by other processes (a desktop's display) before loading
    int64_t weight_bytes = 0;
    int64_t activation_peak_bytes = 0;
    int64_t reserved_bytes = 0;  // activations of other models sharing the device (a layout model)
    int64_t block_bytes = 0;
    int64_t max_useful_blocks = 0;  // more would never be used: max_num_seqs sequences of max_model_len
};

struct MemoryPlan {
    int64_t budget_bytes = 0;  // (total - other) x utilization
    int64_t kv_bytes = 0;      // what is left for the cache
    int64_t n_blocks = 0;
};

// Throws folio::Error, with every number, when not even one block fits.
MemoryPlan plan_kv_cache(const MemoryPlanParams& params);

// One engine's cache among several on one device (generative models loaded side by side).
struct CacheDemand {
    int64_t block_bytes = 0;
    int64_t max_useful_blocks = 0;  // 0: no bound
    double share = 1.0;             // its part of the memory the caches share, relative to the others'
};

// The caches of several engines planned together: what the plan leaves after the weights of every model,
// the largest step's activations (params.activation_peak_bytes: the largest of the engines' peaks, since
// their steps run one at a time) and other models' activations is shared by the demands' shares; an engine
// that cannot use its part takes what it can and the rest goes to the others. params.block_bytes and
// max_useful_blocks are ignored. Throws folio::Error, naming the engine, when one gets no block.
std::vector<MemoryPlan> plan_kv_caches(const MemoryPlanParams& params, std::span<const CacheDemand> demands);

std::string describe(const MemoryPlan& plan, int64_t block_size);

// A peak of activations measured at n units of work (tokens, patches).
struct PeakSample {
    int64_t n = 0;
    int64_t bytes = 0;
};

// The peak at n units from two samples (0 < small.n < large.n), as a fixed part (workspaces, tables) plus a
// part linear in n: scaling one small sample in proportion would scale its fixed part with it. The slope
// and the fixed part are never negative. Throws folio::Error for samples out of order.
int64_t extrapolate_peak(PeakSample small, PeakSample large, int64_t n);

// The peak at n units of work a part of which runs chunk units at a time (a vision MLP over rows): up to
// chunk units it grows as the whole samples (run unchunked) grow, past them as the chunked samples (run in
// chunks smaller than either sample) grow.
int64_t extrapolate_chunked_peak(PeakSample whole_small, PeakSample whole_large, PeakSample chunked_small,
                                 PeakSample chunked_large, int64_t chunk, int64_t n);

}  // namespace folio
