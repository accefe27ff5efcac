// Collective operations among the ranks of a tensor-parallel group. Each rank holds part of a layer's
// weights (some of its heads, some of its MLP's columns) on a backend of its own, and the partial outputs of
// a row-parallel layer are summed over the ranks. Every rank calls the same collectives in the same order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace folio {

class Collectives {
public:
    virtual ~Collectives() = default;
    virtual int rank() const = 0;
    virtual int n_ranks() const = 0;
    // x (float32 or int32) becomes the sum of every rank's x, the same values on every rank. Throws
    // folio::Error where the ranks' tensors differ in size or type, or another rank failed.  x [...]
    virtual void all_reduce_sum(Backend& backend, Tensor& x) = 0;
};

// Throws folio::Error naming the rank unless x, a tensor it sums, is float32 or int32.
void check_all_reduce_input(int rank, const Tensor& x);

// The ranks of a tensor-parallel group as a model is loaded: each rank joins on its own thread once its
// backend exists, every rank at once (a group may wait for all of them to join), and a rank that fails ends
// the group so that the others, waiting for it in a collective, stop.
class CollectiveGroup {
public:
    virtual ~CollectiveGroup() = default;
    virtual int n_ranks() const = 0;
    // Rank r's collectives over backend. Throws folio::Error where r is not a rank of the group.
    virtual std::unique_ptr<Collectives> join(int r, Backend& backend) = 0;
    // Ends the group: a rank waiting in a collective, and every later call, throws folio::Error with why.
    virtual void abort(const std::string& why) = 0;
    // Whether the sums can be part of work a backend records (they are queued on the device, never waiting
    // on the host).
    virtual bool can_record() const { return false; }
};

// The ranks of one process as threads, each with a backend of its own (the CPU backend's tensor-parallel
// runs): a rank's x comes to the host, the ranks' values are summed in rank order, so every rank gets the
// same bits, and the sum goes back into each x. The host's part cannot be recorded.
class ThreadGroup final : public CollectiveGroup, public std::enable_shared_from_this<ThreadGroup> {
public:
    // Throws folio::Error unless n_ranks is at least 1.
    static std::shared_ptr<ThreadGroup> create(int n_ranks);

    int n_ranks() const override { return n_ranks_; }
    // Rank r's view of the group, which keeps the group alive; any backend may use it.
    std::unique_ptr<Collectives> rank(int r);
    std::unique_ptr<Collectives> join(int r, Backend& backend) override;
    void abort(const std::string& why) override;

private:
    class Rank;
    explicit ThreadGroup(int n_ranks) : n_ranks_(n_ranks), parts_(static_cast<size_t>(n_ranks)) {}
    // One rank's values in a round.
    struct Part {
        const void* values = nullptr;
        size_t n = 0;
        ScalarType dtype = ScalarType::F32;
    };
    // Rank r's values in, every rank's sum out.
    template <typename T>
    void sum(int r, std::vector<T>& values);
    // Adds the round's parts in rank order into total_ (the last rank to arrive).
    template <typename T>
    void add_parts(size_t n);

    const int n_ranks_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<Part> parts_;       // each rank's values in the round under way
    std::vector<std::byte> total_;  // the last round's sum, of the parts' type
    int n_arrived_ = 0;
    int64_t round_ = 0;
    std::string broken_;  // why the group ended; empty while it runs
};

}  // namespace folio
