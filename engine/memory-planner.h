// How many KV-cache blocks fit: the memory the engine may use (total x utilization), less the weights, less
// the activation peak of a profiling prefill of max_num_batched_tokens tokens, divided by the bytes of a
// block.
#pragma once

#include <cstdint>
#include <string>

namespace folio {

struct MemoryPlanParams {
    int64_t total_bytes = 0;
    double utilization = 0.9;
    int64_t weight_bytes = 0;
    int64_t activation_peak_bytes = 0;
    int64_t block_bytes = 0;
    int64_t max_useful_blocks = 0;  // more would never be used: max_num_seqs sequences of max_model_len
};

struct MemoryPlan {
    int64_t budget_bytes = 0;  // total x utilization
    int64_t kv_bytes = 0;      // what is left for the cache
    int64_t n_blocks = 0;
};

// Throws folio::Error, with every number, when not even one block fits.
MemoryPlan plan_kv_cache(const MemoryPlanParams& params);

std::string describe(const MemoryPlan& plan, int64_t block_size);

}  // namespace folio
