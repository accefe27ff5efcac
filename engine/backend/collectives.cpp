#include "engine/backend/collectives.h"

#include <algorithm>

#include "engine/common/error.h"

namespace folio {

void check_all_reduce_input(int rank, const Tensor& x) {
    if (x.dtype != ScalarType::F32) {
        fail("all_reduce_sum: rank ", rank, "'s tensor ", shape_string(x.shape), " is ", dtype_name(x.dtype),
             ", not float32");
    }
}

class ThreadGroup::Rank final : public Collectives {
public:
    Rank(std::shared_ptr<ThreadGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}

    int rank() const override { return rank_; }
    int n_ranks() const override { return group_->n_ranks(); }

    void all_reduce_sum(Backend& backend, Tensor& x) override {
        check_all_reduce_input(rank_, x);
        std::vector<float> values = backend.download(x);
        group_->sum(rank_, values);
        const std::span<const float> whole(values);
        backend.update(x, std::span<const std::span<const float>>(&whole, 1));
    }

private:
    std::shared_ptr<ThreadGroup> group_;
    int rank_;
};

std::shared_ptr<ThreadGroup> ThreadGroup::create(int n_ranks) {
    if (n_ranks < 1) {
        fail("a tensor-parallel group of ", n_ranks, " ranks");
    }
    return std::shared_ptr<ThreadGroup>(new ThreadGroup(n_ranks));
}

std::unique_ptr<Collectives> ThreadGroup::rank(int r) {
    if (r < 0 || r >= n_ranks_) {
        fail("rank ", r, " of a group of ", n_ranks_);
    }
    return std::make_unique<Rank>(shared_from_this(), r);
}

std::unique_ptr<Collectives> ThreadGroup::join(int r, Backend& /*backend*/) {
    return rank(r);
}

void ThreadGroup::abort(const std::string& why) {
    const std::lock_guard lock(mutex_);
    if (broken_.empty()) {
        broken_ = why.empty() ? "a rank failed" : why;
    }
    changed_.notify_all();
}

void ThreadGroup::sum(int r, std::vector<float>& values) {
    std::unique_lock lock(mutex_);
    if (!broken_.empty()) {
        fail("tensor-parallel rank ", r, ": ", broken_);
    }
    const int64_t round = round_;
    parts_[static_cast<size_t>(r)] = &values;
    if (++n_arrived_ == n_ranks_) {
        // The last rank to arrive sums the round in rank order, so that the bits do not depend on who came
        // last; the others copy the sum before any of them can start the next round.
        const size_t n = values.size();
        for (int i = 0; i < n_ranks_; ++i) {
            if (parts_[static_cast<size_t>(i)]->size() != n) {
                broken_ = "rank " + std::to_string(i) + " summed " +
                          std::to_string(parts_[static_cast<size_t>(i)]->size()) + " values where rank " +
                          std::to_string(r) + " summed " + std::to_string(n);
                changed_.notify_all();
                fail("tensor-parallel rank ", r, ": ", broken_);
            }
        }
        total_.assign(parts_[0]->begin(), parts_[0]->end());
        for (int i = 1; i < n_ranks_; ++i) {
            const std::vector<float>& part = *parts_[static_cast<size_t>(i)];
            for (size_t j = 0; j < n; ++j) {
                total_[j] += part[j];
            }
        }
        n_arrived_ = 0;
        ++round_;
        changed_.notify_all();
    } else {
        changed_.wait(lock, [&] { return round_ != round || !broken_.empty(); });
        if (round_ == round) {
            fail("tensor-parallel rank ", r, ": ", broken_);
        }
    }
    values.assign(total_.begin(), total_.end());
}

}  // namespace folio
