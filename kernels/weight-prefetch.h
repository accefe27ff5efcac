// Which weights to bring into the L2 cache ahead of a linear layer: a decoding step's products run in the
// same order every step, and one of few rows reads its weights once, from memory, in a few microseconds,
// while the small kernels between two products (RoPE, attention, norms) leave memory idle. So each product
// asks for the weights of the product that followed it the last time its weights were used, and the next
// product finds them in L2. With FOLIO_CUDA_L2_PREFETCH=0 in the environment nothing is prefetched (for
// comparing).
#pragma once

#include <cstdint>
#include <unordered_map>

namespace folio::kernels {

class WeightPrefetch {
public:
    struct Range {
        const void* data = nullptr;
        int64_t n_bytes = 0;
    };

    // l2_bytes: the device's L2 cache; a prefetch takes at most half of it, so that the product running
    // meanwhile keeps its own share. Zero switches prefetching off.
    explicit WeightPrefetch(int64_t l2_bytes);

    // Notes that a product reads the weights at data [n_bytes] now, and returns what to prefetch for the
    // product after it: the start of the weights that followed these the last time, or an empty range.
    Range use(const void* data, int64_t n_bytes);

private:
    int64_t limit_bytes_;
    const void* last_ = nullptr;  // the weights of the latest product
    std::unordered_map<const void*, Range> next_;
};

}  // namespace folio::kernels
