// NCCL, the collectives library for several GPUs, opened at run time: Folio builds and runs without it, and
// a run that needs it (tensor parallelism) names what is missing. The library is FOLIO_NCCL_LIBRARY's path
// where that is set, else libnccl.so.2 wherever the dynamic loader finds it (the system's, or one a Python
// install of PyTorch ships).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace folio {

// NCCL's C interface as far as Folio calls it; the values are nccl.h's.
namespace nccl {
using Result = int;  // ncclResult_t: 0 is success
struct CommTag;
using Comm = CommTag*;  // ncclComm_t
struct UniqueId {       // ncclUniqueId
    char internal[128];
};
enum class DataType : int { Int8 = 0, Int32 = 2, Float16 = 6, Float32 = 7, Bfloat16 = 9 };
enum class RedOp : int { Sum = 0 };
}  // namespace nccl

class NcclLibrary {
public:
    // The oldest NCCL taken: bfloat16 collectives came with 2.10.
    static constexpr int kMinVersionCode = 21000;

    // Opens the library at path (a file, or a name for the dynamic loader) and finds every function Folio
    // calls. Throws folio::Error naming the path and what is missing or too old.
    explicit NcclLibrary(const std::string& path);
    ~NcclLibrary();
    NcclLibrary(const NcclLibrary&) = delete;
    NcclLibrary& operator=(const NcclLibrary&) = delete;

    // The library the environment names: FOLIO_NCCL_LIBRARY, else libnccl.so.2. Opened once, on first use.
    static const NcclLibrary& system();
    static std::string system_path();

    const std::string& path() const { return path_; }
    int version_code() const { return version_code_; }
    // "2.21.5"
    std::string version() const;

    // Each call throws folio::Error with NCCL's own message where NCCL fails.
    nccl::UniqueId unique_id() const;
    // One rank of a communicator of n_ranks; the calling thread's current CUDA device is the rank's.
    nccl::Comm init_rank(int n_ranks, const nccl::UniqueId& id, int rank) const;
    void destroy(nccl::Comm comm) const;
    // Ends a communicator at once, its operations still queued or running included (another rank failed);
    // the communicator is gone after it.
    void abort(nccl::Comm comm) const;
    // recv = the sum over ranks of send (count elements each; recv may be send). stream: the cudaStream_t.
    void all_reduce_sum(const void* send, void* recv, size_t count, nccl::DataType type, nccl::Comm comm,
                        void* stream) const;
    // recv = every rank's send (count elements each) one after another, in rank order.
    void all_gather(const void* send, void* recv, size_t count, nccl::DataType type, nccl::Comm comm,
                    void* stream) const;
    // Calls between group_start and group_end are issued together (one thread driving several ranks).
    void group_start() const;
    void group_end() const;

private:
    template <typename F>
    F find(const char* name);
    void check(nccl::Result result, const char* call) const;

    std::string path_;
    void* handle_ = nullptr;
    int version_code_ = 0;
    nccl::Result (*get_version_)(int*) = nullptr;
    const char* (*error_string_)(nccl::Result) = nullptr;
    nccl::Result (*get_unique_id_)(nccl::UniqueId*) = nullptr;
    nccl::Result (*comm_init_rank_)(nccl::Comm*, int, nccl::UniqueId, int) = nullptr;
    nccl::Result (*comm_destroy_)(nccl::Comm) = nullptr;
    nccl::Result (*comm_abort_)(nccl::Comm) = nullptr;
    nccl::Result (*all_reduce_)(const void*, void*, size_t, int, int, nccl::Comm, void*) = nullptr;
    nccl::Result (*all_gather_)(const void*, void*, size_t, int, nccl::Comm, void*) = nullptr;
    nccl::Result (*group_start_)() = nullptr;
    nccl::Result (*group_end_)() = nullptr;
};

// NCCL's version code as major.minor.patch: major * 10000 + minor * 100 + patch from 2.9 on, major * 1000 +
// minor * 100 + patch before.
std::string nccl_version_text(int code);

}  // namespace folio
