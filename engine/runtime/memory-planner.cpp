#include "engine/runtime/memory-planner.h"

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"

namespace folio {

namespace {

std::string mib(int64_t bytes) {
    return std::to_string(bytes / (int64_t{1} << 20)) + " MiB";
}

}  // namespace

MemoryPlan plan_kv_cache(const MemoryPlanParams& p) {
    if (!(p.utilization > 0.0 && p.utilization <= 1.0)) {
        fail("gpu_memory_utilization must be in (0, 1], got ", p.utilization);
    }
    if (p.block_bytes <= 0 || p.total_bytes <= 0) {
        fail("memory planner: ", p.total_bytes, " bytes of memory, ", p.block_bytes, " bytes per block");
    }
    if (p.other_bytes < 0 || p.other_bytes >= p.total_bytes) {
        fail("memory planner: other processes use ", mib(p.other_bytes), " of the device's ",
             mib(p.total_bytes));
    }
    MemoryPlan plan;
    plan.budget_bytes =
        static_cast<int64_t>(std::floor(static_cast<double>(p.total_bytes - p.other_bytes) * p.utilization));
    plan.kv_bytes = plan.budget_bytes - p.weight_bytes - p.activation_peak_bytes - p.reserved_bytes;
    plan.n_blocks = plan.kv_bytes > 0 ? plan.kv_bytes / p.block_bytes : 0;
    if (p.max_useful_blocks > 0) {
        plan.n_blocks = std::min(plan.n_blocks, p.max_useful_blocks);
    }
    if (plan.n_blocks < 1) {
        fail("not enough memory for the KV cache: (", mib(p.total_bytes), " - ", mib(p.other_bytes),
             " used by other processes) x ", p.utilization, " = ", mib(plan.budget_bytes), ", less weights ",
             mib(p.weight_bytes), ", activations ", mib(p.activation_peak_bytes), " and other models' ",
             mib(p.reserved_bytes), ", leaves ", mib(std::max<int64_t>(plan.kv_bytes, 0)),
             " where one block needs ", p.block_bytes, " bytes");
    }
    return plan;
}

std::string describe(const MemoryPlan& plan, int64_t block_size) {
    return "kv cache: " + std::to_string(plan.n_blocks) + " blocks, " +
           std::to_string(plan.n_blocks * block_size) + " tokens";
}

}  // namespace folio
