#include "engine/backend/collectives.h"

#include <algorithm>
#include <type_traits>

#include "engine/common/error.h"

namespace folio {

void check_all_reduce_input(int rank, const Tensor& x) {
    if (x.dtype != ScalarType::F32 && x.dtype != ScalarType::I32) {
        fail("all_reduce_sum: rank ", rank, "'s tensor ", shape_string(x.shape), " is ", dtype_name(x.dtype),
             ", not float32 or int32");
    }
}

class ThreadGroup::Rank final : public Collectives {
public:
    Rank(std::shared_ptr<ThreadGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}

    int rank() const override { return rank_; }
    int n_ranks() const override { return group_->n_ranks(); }

    void all_reduce_sum(Backend& backend, Tensor& x) override {
        check_all_reduce_input(rank_, x);
        if (x.dtype == ScalarType::I32) {
            std::vector<int32_t> values = backend.download_i32(x);
            group_->sum(rank_, values);
            backend.update(x, values);
            return;
        }
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

template <typename T>
void ThreadGroup::add_parts(size_t n) {
    total_.resize(n * sizeof(T));
    auto* total = reinterpret_cast<T*>(total_.data());
    std::copy_n(static_cast<const T*>(parts_[0].values), n, total);
    for (int i = 1; i < n_ranks_; ++i) {
        const auto* part = static_cast<const T*>(parts_[static_cast<size_t>(i)].values);
        for (size_t j = 0; j < n; ++j) {
            if constexpr (std::is_integral_v<T>) {  // wrapping as the device's integer sum does
                total[j] = static_cast<T>(static_cast<uint32_t>(total[j]) + static_cast<uint32_t>(part[j]));
            } else {
                total[j] += part[j];
            }
        }
    }
}

template <typename T>
void ThreadGroup::sum(int r, std::vector<T>& values) {
    constexpr ScalarType dtype = std::is_same_v<T, float> ? ScalarType::F32 : ScalarType::I32;
    std::unique_lock lock(mutex_);
    if (!broken_.empty()) {
        fail("tensor-parallel rank ", r, ": ", broken_);
    }
    const int64_t round = round_;
    parts_[static_cast<size_t>(r)] = {values.data(), values.size(), dtype};
    if (++n_arrived_ == n_ranks_) {
        // The last rank to arrive sums the round in rank order, so that the bits do not depend on who came
        // last; the others copy the sum before any of them can start the next round.
        const size_t n = values.size();
        for (int i = 0; i < n_ranks_; ++i) {
            const Part& part = parts_[static_cast<size_t>(i)];
            if (part.n != n || part.dtype != dtype) {
                broken_ = "rank " + std::to_string(i) + " summed " + std::to_string(part.n) + " " +
                          dtype_name(part.dtype) + " values where rank " + std::to_string(r) + " summed " +
                          std::to_string(n) + " " + dtype_name(dtype);
                changed_.notify_all();
                fail("tensor-parallel rank ", r, ": ", broken_);
            }
        }
        add_parts<T>(n);
        n_arrived_ = 0;
        ++round_;
        changed_.notify_all();
    } else {
        changed_.wait(lock, [&] { return round_ != round || !broken_.empty(); });
        if (round_ == round) {
            fail("tensor-parallel rank ", r, ": ", broken_);
        }
    }
    const auto* total = reinterpret_cast<const T*>(total_.data());
    values.assign(total, total + total_.size() / sizeof(T));
}

}  // namespace folio
