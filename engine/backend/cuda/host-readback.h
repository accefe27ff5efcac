// Small int32 results (a step's sampled tokens) brought to the host without holding it: a kernel on the
// stream writes them into page-locked memory mapped for the device (transfer.h) and an event is recorded
// after it, and wait() blocks only on that event, so the host can queue the next step meanwhile. A copy into
// pageable memory would hold the host until the stream had run everything queued before it. The page-locked
// slots are kept and handed out again.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <cuda_runtime.h>

#include "engine/backend/backend.h"

namespace folio::kernels {

class ReadbackPool {
public:
    ReadbackPool();

    // Enqueues on stream a copy of n int32 values at device to the host.
    std::unique_ptr<TokenReadback> read_back(const int32_t* device, int64_t n, cudaStream_t stream);

    struct Slot;
    struct Free;

private:
    std::shared_ptr<Free> free_;  // shared with the readbacks, which give their slots back
};

}  // namespace folio::kernels
