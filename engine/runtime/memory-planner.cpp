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
             " where one block needs ", p.block_bytes,
             " bytes; fewer batched tokens a step (less for activations), quantized weights, an 8-bit "
             "cache or a larger share of the device's memory leave more");
    }
    return plan;
}

std::vector<MemoryPlan> plan_kv_caches(const MemoryPlanParams& p, std::span<const CacheDemand> demands) {
    if (demands.empty()) {
        fail("memory planner: no engine to plan a cache for");
    }
    for (size_t i = 0; i < demands.size(); ++i) {
        const CacheDemand& d = demands[i];
        if (d.block_bytes <= 0 || d.max_useful_blocks < 0 || !(d.share > 0.0) || !std::isfinite(d.share)) {
            fail("memory planner: engine ", i, " has ", d.block_bytes, " bytes per block, ",
                 d.max_useful_blocks, " useful blocks and share ", d.share);
        }
    }
    // The budget and what is left for the caches together, with plan_kv_cache's checks.
    MemoryPlanParams whole = p;
    whole.block_bytes = 1;
    whole.max_useful_blocks = 0;
    const MemoryPlan together = plan_kv_cache(whole);

    std::vector<MemoryPlan> plans(demands.size());
    std::vector<bool> capped(demands.size(), false);
    int64_t left = together.kv_bytes;
    // An engine whose part exceeds what it can use takes that; the others share what remains, again.
    for (bool changed = true; changed;) {
        changed = false;
        double shares = 0.0;
        for (size_t i = 0; i < demands.size(); ++i) {
            shares += capped[i] ? 0.0 : demands[i].share;
        }
        for (size_t i = 0; i < demands.size() && shares > 0.0; ++i) {
            const CacheDemand& d = demands[i];
            const auto part = static_cast<int64_t>(static_cast<double>(left) * d.share / shares);
            if (!capped[i] && d.max_useful_blocks > 0 && part >= d.max_useful_blocks * d.block_bytes) {
                capped[i] = true;
                plans[i].n_blocks = d.max_useful_blocks;
                left -= d.max_useful_blocks * d.block_bytes;
                changed = true;
                break;
            }
        }
    }
    double shares = 0.0;
    for (size_t i = 0; i < demands.size(); ++i) {
        shares += capped[i] ? 0.0 : demands[i].share;
    }
    for (size_t i = 0; i < demands.size(); ++i) {
        const CacheDemand& d = demands[i];
        if (!capped[i]) {
            const auto part = static_cast<int64_t>(static_cast<double>(left) * d.share / shares);
            plans[i].n_blocks = part / d.block_bytes;
        }
        plans[i].budget_bytes = together.budget_bytes;
        plans[i].kv_bytes = plans[i].n_blocks * d.block_bytes;
        if (plans[i].n_blocks < 1) {
            fail("not enough memory for the KV cache of engine ", i, " of ", demands.size(), ": ",
                 mib(together.kv_bytes), " left for the caches after weights ", mib(p.weight_bytes),
                 " and activations ", mib(p.activation_peak_bytes + p.reserved_bytes), ", its share ",
                 mib(static_cast<int64_t>(static_cast<double>(left) * d.share / std::max(shares, d.share))),
                 " where one block needs ", d.block_bytes, " bytes");
        }
    }
    return plans;
}

std::string describe(const MemoryPlan& plan, int64_t block_size) {
    return "kv cache: " + std::to_string(plan.n_blocks) + " blocks, " +
           std::to_string(plan.n_blocks * block_size) + " tokens";
}

int64_t extrapolate_peak(PeakSample small, PeakSample large, int64_t n) {
    if (small.n < 1 || large.n <= small.n || small.bytes < 0 || large.bytes < 0 || n < 0) {
        fail("extrapolate_peak: samples of ", small.bytes, " bytes at ", small.n, " and ", large.bytes,
             " bytes at ", large.n, ", asked at ", n);
    }
    const double slope = static_cast<double>(std::max<int64_t>(large.bytes - small.bytes, 0)) /
                         static_cast<double>(large.n - small.n);
    const auto fixed = std::max<int64_t>(
        large.bytes - static_cast<int64_t>(std::ceil(slope * static_cast<double>(large.n))), 0);
    return fixed + static_cast<int64_t>(std::ceil(slope * static_cast<double>(n)));
}

int64_t extrapolate_chunked_peak(PeakSample whole_small, PeakSample whole_large, PeakSample chunked_small,
                                 PeakSample chunked_large, int64_t chunk, int64_t n) {
    if (chunk < 1) {
        fail("extrapolate_chunked_peak: chunks of ", chunk);
    }
    const int64_t up_to_chunk = extrapolate_peak(whole_small, whole_large, std::min(n, chunk));
    if (n <= chunk) {
        return up_to_chunk;
    }
    // What the chunked samples add per unit, past the chunk.
    const int64_t past = extrapolate_peak(chunked_small, chunked_large, n - chunk) -
                         extrapolate_peak(chunked_small, chunked_large, 0);
    return up_to_chunk + past;
}

}  // namespace folio
