#include "engine/backend/nccl-library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "engine/common/error.h"

namespace folio {

namespace {

constexpr const char* kHint =
    "install NCCL (Debian's libnccl2, or NVIDIA's packages), or set FOLIO_NCCL_LIBRARY to a libnccl.so.2 "
    "(PyTorch's pip install ships one, under nvidia/nccl/lib)";

}  // namespace

std::string nccl_version_text(int code) {
    const bool new_scheme = code >= 10000;
    const int major = new_scheme ? code / 10000 : code / 1000;
    const int minor = new_scheme ? code % 10000 / 100 : code % 1000 / 100;
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

template <typename F>
F NcclLibrary::find(const char* name) {
    void* symbol = ::dlsym(handle_, name);
    if (symbol == nullptr) {
        ::dlclose(handle_);
        handle_ = nullptr;
        fail("NCCL library ", path_, ": no function ", name, " (not NCCL, or too old); ", kHint);
    }
    return reinterpret_cast<F>(symbol);
}

NcclLibrary::NcclLibrary(const std::string& path) : path_(path) {
    handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
        const char* why = ::dlerror();
        fail("NCCL library ", path, " cannot be opened (", why ? why : "unknown reason", "); ", kHint);
    }
    get_version_ = find<decltype(get_version_)>("ncclGetVersion");
    error_string_ = find<decltype(error_string_)>("ncclGetErrorString");
    get_unique_id_ = find<decltype(get_unique_id_)>("ncclGetUniqueId");
    comm_init_rank_ = find<decltype(comm_init_rank_)>("ncclCommInitRank");
    comm_destroy_ = find<decltype(comm_destroy_)>("ncclCommDestroy");
    comm_abort_ = find<decltype(comm_abort_)>("ncclCommAbort");
    all_reduce_ = find<decltype(all_reduce_)>("ncclAllReduce");
    all_gather_ = find<decltype(all_gather_)>("ncclAllGather");
    group_start_ = find<decltype(group_start_)>("ncclGroupStart");
    group_end_ = find<decltype(group_end_)>("ncclGroupEnd");
    int code = 0;
    if (get_version_(&code) != 0 || code < kMinVersionCode) {
        ::dlclose(handle_);
        handle_ = nullptr;
        fail("NCCL library ", path, " is version ", nccl_version_text(code), "; Folio needs ",
             nccl_version_text(kMinVersionCode), " or later (bfloat16 collectives); ", kHint);
    }
    version_code_ = code;
}

NcclLibrary::~NcclLibrary() {
    if (handle_ != nullptr) {
        ::dlclose(handle_);
    }
}

std::string NcclLibrary::system_path() {
    const char* named = std::getenv("FOLIO_NCCL_LIBRARY");
    return named != nullptr && *named != '\0' ? std::string(named) : std::string("libnccl.so.2");
}

const NcclLibrary& NcclLibrary::system() {
    // Opened once; a failure is kept and thrown again, so that every caller gets the same message.
    static std::mutex mutex;
    static std::optional<NcclLibrary> library;
    static std::string failure;
    const std::lock_guard lock(mutex);
    if (!library && failure.empty()) {
        try {
            library.emplace(system_path());
        } catch (const Error& e) {
            failure = e.what();
        }
    }
    if (!library) {
        fail(failure);
    }
    return *library;
}

std::string NcclLibrary::version() const {
    return nccl_version_text(version_code_);
}

void NcclLibrary::check(nccl::Result result, const char* call) const {
    if (result != 0) {
        const char* text = error_string_(result);
        fail("NCCL ", call, " failed: ", text ? text : "unknown error", " (error ", result, ", ", path_, ")");
    }
}

nccl::UniqueId NcclLibrary::unique_id() const {
    nccl::UniqueId id{};
    check(get_unique_id_(&id), "ncclGetUniqueId");
    return id;
}

nccl::Comm NcclLibrary::init_rank(int n_ranks, const nccl::UniqueId& id, int rank) const {
    if (n_ranks < 1 || rank < 0 || rank >= n_ranks) {
        fail("NCCL: rank ", rank, " of ", n_ranks, " ranks");
    }
    nccl::Comm comm = nullptr;
    check(comm_init_rank_(&comm, n_ranks, id, rank), "ncclCommInitRank");
    return comm;
}

void NcclLibrary::destroy(nccl::Comm comm) const {
    if (comm != nullptr) {
        check(comm_destroy_(comm), "ncclCommDestroy");
    }
}

void NcclLibrary::abort(nccl::Comm comm) const {
    if (comm != nullptr) {
        check(comm_abort_(comm), "ncclCommAbort");
    }
}

void NcclLibrary::all_reduce_sum(const void* send, void* recv, size_t count, nccl::DataType type,
                                 nccl::Comm comm, void* stream) const {
    check(all_reduce_(send, recv, count, static_cast<int>(type), static_cast<int>(nccl::RedOp::Sum), comm,
                      stream),
          "ncclAllReduce");
}

void NcclLibrary::all_gather(const void* send, void* recv, size_t count, nccl::DataType type, nccl::Comm comm,
                             void* stream) const {
    check(all_gather_(send, recv, count, static_cast<int>(type), comm, stream), "ncclAllGather");
}

void NcclLibrary::group_start() const {
    check(group_start_(), "ncclGroupStart");
}

void NcclLibrary::group_end() const {
    check(group_end_(), "ncclGroupEnd");
}

}  // namespace folio
