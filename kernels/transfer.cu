#include <algorithm>

#include "engine/common/error.h"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/transfer.h"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kBlock = 256;

// The words of one store_words launch, by value in its parameters.
struct LaunchWords {
    int32_t values[kStoreWordsMax];
};

// dst [n] <- words [n]. Chained: it writes only after the kernels ahead have finished.
__global__ void store_words_kernel(LaunchWords words, int32_t* dst, int n) {
    wait_for_prior_grids();
    start_dependent_grids();
    for (int i = static_cast<int>(threadIdx.x); i < n; i += kBlock) {
        dst[i] = words.values[i];
    }
}

// dst [n] (mapped host memory) <- src [n]. Chained.
__global__ void copy_words_kernel(const int32_t* src, int32_t* dst, int64_t n) {
    wait_for_prior_grids();
    start_dependent_grids();
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * kBlock) {
        dst[i] = src[i];
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void store_words(const int32_t* words, int64_t n, int32_t* dst, cudaStream_t stream) {
    if (n > kStoreWordsMax) {
        fail("store_words: ", n, " words, more than the ", kStoreWordsMax, " a launch carries");
    }
    if (n == 0) {
        return;
    }
    LaunchWords launch_words{};
    std::copy(words, words + n, launch_words.values);
    launch_chained(store_words_kernel, dim3(1), dim3(kBlock), 0, stream, launch_words, dst,
                   static_cast<int>(n));
}

void copy_words_to_host(const int32_t* src, int32_t* dst, int64_t n, cudaStream_t stream) {
    if (n <= 0) {
        return;
    }
    constexpr int64_t kMaxBlocks = 64;
    const auto n_blocks = static_cast<unsigned int>(std::min(kMaxBlocks, (n + kBlock - 1) / kBlock));
    launch_chained(copy_words_kernel, dim3(n_blocks), dim3(kBlock), 0, stream, src, dst, n);
}

}  // namespace folio::kernels
