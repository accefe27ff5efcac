// Tensor-parallel collectives through NCCL: one communicator a rank, on devices of their own, the sums
// queued on each rank's backend stream so that they run in order with its work and never stop the host.
// NCCL refuses two ranks on one device; ranks that share a card sum on the host instead (ThreadGroup).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/collectives.h"
#include "engine/backend/nccl-library.h"

namespace folio {

class NcclGroup final : public CollectiveGroup, public std::enable_shared_from_this<NcclGroup> {
public:
    // stream_of gives the queue (a cudaStream_t) a rank's backend runs its work on. The library outlives
    // the group. Throws folio::Error unless n_ranks is at least 1, or where NCCL fails.
    static std::shared_ptr<NcclGroup> create(const NcclLibrary& nccl, int n_ranks,
                                             std::function<void*(Backend&)> stream_of);

    int n_ranks() const override { return n_ranks_; }
    // Makes rank r's communicator for the thread's current device, waiting until every rank has joined
    // (NCCL's initialisation). Throws folio::Error with NCCL's message.
    std::unique_ptr<Collectives> join(int r, Backend& backend) override;
    // Aborts every joined communicator, so that a rank waiting for a failed one stops; later calls throw.
    void abort(const std::string& why) override;
    // The sums are kernels on the ranks' streams, which CUDA graphs capture.
    bool can_record() const override { return true; }

private:
    class Rank;
    struct Member {
        std::mutex mutex;  // held while its communicator is used or aborted
        nccl::Comm comm = nullptr;
    };

    NcclGroup(const NcclLibrary& nccl, int n_ranks, std::function<void*(Backend&)> stream_of);
    std::string broken() const;

    const NcclLibrary& nccl_;
    const int n_ranks_;
    const std::function<void*(Backend&)> stream_of_;
    nccl::UniqueId id_{};
    std::vector<std::unique_ptr<Member>> members_;  // [n_ranks]
    mutable std::mutex mutex_;
    std::string broken_;  // why the group ended; empty while it runs
};

}  // namespace folio
