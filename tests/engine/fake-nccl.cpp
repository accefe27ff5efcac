// A stand-in for libnccl.so.2 with NCCL's C entry points, for the loader's tests on machines without NCCL:
// communicators of one rank on host memory (an all-reduce copies, an all-gather copies), a version from
// FAKE_NCCL_VERSION (default 2.23.4), and NCCL's "invalid usage" error for more than one rank.
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

constexpr int kInvalidUsage = 5;

struct FakeComm {
    int n_ranks = 0;
};

// ncclUniqueId, passed by value as NCCL passes it.
struct FakeId {
    char internal[128];
};

size_t element_bytes(int type) {
    switch (type) {
        case 0:
            return 1;
        case 6:
        case 9:
            return 2;
        default:
            return 4;
    }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int ncclGetVersion(int* version) {
    const char* named = std::getenv("FAKE_NCCL_VERSION");
    *version = named != nullptr ? std::atoi(named) : 22304;
    return 0;
}

__attribute__((visibility("default"))) const char* ncclGetErrorString(int result) {
    return result == kInvalidUsage ? "invalid usage" : "unhandled error";
}

__attribute__((visibility("default"))) int ncclGetUniqueId(FakeId* id) {
    std::memset(id->internal, 7, sizeof id->internal);
    return 0;
}

__attribute__((visibility("default"))) int ncclCommInitRank(void** comm, int n_ranks, FakeId, int rank) {
    if (n_ranks != 1 || rank != 0) {
        return kInvalidUsage;
    }
    *comm = new (std::nothrow) FakeComm{n_ranks};
    return *comm != nullptr ? 0 : 1;
}

__attribute__((visibility("default"))) int ncclCommDestroy(void* comm) {
    delete static_cast<FakeComm*>(comm);
    return 0;
}

__attribute__((visibility("default"))) int ncclCommAbort(void* comm) {
    delete static_cast<FakeComm*>(comm);
    return 0;
}

__attribute__((visibility("default"))) int ncclAllReduce(const void* send, void* recv, size_t count, int type,
                                                         int op, void* comm, void*) {
    if (comm == nullptr || op != 0) {
        return kInvalidUsage;
    }
    std::memmove(recv, send, count * element_bytes(type));
    return 0;
}

__attribute__((visibility("default"))) int ncclAllGather(const void* send, void* recv, size_t count, int type,
                                                         void* comm, void*) {
    if (comm == nullptr) {
        return kInvalidUsage;
    }
    std::memmove(recv, send, count * element_bytes(type));
    return 0;
}

__attribute__((visibility("default"))) int ncclGroupStart() {
    return 0;
}

__attribute__((visibility("default"))) int ncclGroupEnd() {
    return 0;
}
}
