#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/chained-launch.cuh"

namespace folio::kernels {

namespace {

constexpr int kMaxDevices = 64;
constexpr int kFirstChainingMajor = 9;

bool switched_off() {
    const char* value = std::getenv("FOLIO_CUDA_CHAINED_LAUNCH");
    return value != nullptr && std::strcmp(value, "0") == 0;
}

}  // namespace

bool chained_launch_enabled() {
    static const bool off = switched_off();
    static std::array<std::atomic<int>, kMaxDevices> known{};  // 0 not asked yet, 1 no, 2 yes
    if (off) {
        return false;
    }
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    if (device < 0 || device >= kMaxDevices) {
        return false;
    }
    int state = known[static_cast<size_t>(device)].load(std::memory_order_relaxed);
    if (state == 0) {
        int major = 0;
        CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        state = major >= kFirstChainingMajor ? 2 : 1;
        known[static_cast<size_t>(device)].store(state, std::memory_order_relaxed);
    }
    return state == 2;
}

}  // namespace folio::kernels
