#include "engine/backend/cuda/host-readback.h"

#include <algorithm>
#include <cstring>

#include "engine/common/error.h"
#include "kernels/cuda-check.h"
#include "kernels/transfer.h"

namespace folio::kernels {

namespace {

// The smallest page-locked slot: a step's tokens for up to this many sequences.
constexpr size_t kMinSlotValues = 1024;

struct HostFree {
    void operator()(void* p) const { cudaFreeHost(p); }
};
struct EventDestroy {
    void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};

}  // namespace

struct ReadbackPool::Slot {
    std::unique_ptr<int32_t, HostFree> values;  // [capacity], page-locked
    int32_t* mapped = nullptr;                  // values as the device addresses them
    size_t capacity = 0;
    std::unique_ptr<CUevent_st, EventDestroy> copied;  // recorded after the copy into values
};

struct ReadbackPool::Free {
    std::vector<Slot> slots;
};

namespace {

class PinnedReadback final : public TokenReadback {
public:
    PinnedReadback(std::shared_ptr<ReadbackPool::Free> free, ReadbackPool::Slot slot, size_t n)
        : free_(std::move(free)), slot_(std::move(slot)), n_(n) {}
    PinnedReadback(const PinnedReadback&) = delete;
    PinnedReadback& operator=(const PinnedReadback&) = delete;
    // The copy may still be running: the slot goes back only once it is done.
    ~PinnedReadback() override {
        cudaEventSynchronize(slot_.copied.get());
        free_->slots.push_back(std::move(slot_));
    }

    std::vector<int32_t> wait() override {
        CUDA_CHECK(cudaEventSynchronize(slot_.copied.get()));
        return {slot_.values.get(), slot_.values.get() + n_};
    }

private:
    std::shared_ptr<ReadbackPool::Free> free_;
    ReadbackPool::Slot slot_;
    size_t n_;
};

}  // namespace

ReadbackPool::ReadbackPool() : free_(std::make_shared<Free>()) {}

std::unique_ptr<TokenReadback> ReadbackPool::read_back(const int32_t* device, int64_t n,
                                                       cudaStream_t stream) {
    if (n < 0) {
        fail("read_back: ", n, " values");
    }
    const auto count = static_cast<size_t>(n);
    auto& slots = free_->slots;
    const auto fits =
        std::find_if(slots.begin(), slots.end(), [&](const Slot& s) { return s.capacity >= count; });
    Slot slot;
    if (fits != slots.end()) {
        slot = std::move(*fits);
        slots.erase(fits);
    } else {
        slot.capacity = std::max(count, kMinSlotValues);
        void* p = nullptr;
        void* mapped = nullptr;
        if (cudaHostAlloc(&p, slot.capacity * sizeof(int32_t), cudaHostAllocMapped) != cudaSuccess ||
            cudaHostGetDevicePointer(&mapped, p, 0) != cudaSuccess) {
            cudaFreeHost(p);
            cudaGetLastError();  // not sticky: later calls must not report it
            std::vector<int32_t> values(count);
            if (count > 0) {
                CUDA_CHECK(cudaMemcpyAsync(values.data(), device, count * sizeof(int32_t),
                                           cudaMemcpyDeviceToHost, stream));
            }
            CUDA_CHECK(cudaStreamSynchronize(stream));
            return ready_readback(std::move(values));
        }
        slot.values.reset(static_cast<int32_t*>(p));
        slot.mapped = static_cast<int32_t*>(mapped);
        cudaEvent_t e = nullptr;
        CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        slot.copied.reset(e);
    }
    copy_words_to_host(device, slot.mapped, n, stream);
    CUDA_CHECK(cudaEventRecord(slot.copied.get(), stream));
    return std::make_unique<PinnedReadback>(free_, std::move(slot), count);
}

}  // namespace folio::kernels
