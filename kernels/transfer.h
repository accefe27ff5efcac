// Host entry points of the small transfers around a decoding step done by kernels instead of the copy engine:
// between the step's kernels, a kernel hands over in about a microsecond, where a copy waits for the copy
// engine to take it up and the next kernel waits for the copy in turn. Enqueued on stream, chained.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// The most words store_words takes: they travel in the launch's own parameters (4 KB at most).
constexpr int64_t kStoreWordsMax = 960;

// dst[i] = words[i] for i < n, the words carried by the launch, so that the host may reuse them at once and
// nothing reads host memory while the kernel runs. n <= kStoreWordsMax.  words [n] (host), dst [n] (device)
void store_words(const int32_t* words, int64_t n, int32_t* dst, cudaStream_t stream);

// dst[i] = src[i] for i < n, dst being page-locked host memory mapped for the device; the values are the
// host's once the stream has run the kernel.  src [n] (device), dst [n] (mapped host memory)
void copy_words_to_host(const int32_t* src, int32_t* dst, int64_t n, cudaStream_t stream);

}  // namespace folio::kernels
