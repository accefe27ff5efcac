#include "engine/backend/nccl-group.h"

#include "engine/common/error.h"

namespace folio {

class NcclGroup::Rank final : public Collectives {
public:
    Rank(std::shared_ptr<NcclGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}

    ~Rank() override {
        Member& m = *group_->members_[static_cast<size_t>(rank_)];
        const std::lock_guard lock(m.mutex);
        try {
            group_->nccl_.destroy(m.comm);  // null where abort took it
        } catch (...) {                     // nothing may leave a destructor
        }
        m.comm = nullptr;
    }

    int rank() const override { return rank_; }
    int n_ranks() const override { return group_->n_ranks(); }

    void all_reduce_sum(Backend& backend, Tensor& x) override {
        check_all_reduce_input(rank_, x);
        void* stream = group_->stream_of_(backend);
        Member& m = *group_->members_[static_cast<size_t>(rank_)];
        const std::lock_guard lock(m.mutex);
        if (m.comm == nullptr) {
            fail("tensor-parallel rank ", rank_, ": ", group_->broken());
        }
        const bool ints = x.dtype == ScalarType::I32;
        void* values = ints ? static_cast<void*>(x.i32()) : static_cast<void*>(x.f32());
        group_->nccl_.all_reduce_sum(values, values, static_cast<size_t>(x.n_elements()),
                                     ints ? nccl::DataType::Int32 : nccl::DataType::Float32, m.comm, stream);
    }

private:
    std::shared_ptr<NcclGroup> group_;
    int rank_;
};

NcclGroup::NcclGroup(const NcclLibrary& nccl, int n_ranks, std::function<void*(Backend&)> stream_of)
    : nccl_(nccl), n_ranks_(n_ranks), stream_of_(std::move(stream_of)) {
    for (int r = 0; r < n_ranks; ++r) {
        members_.push_back(std::make_unique<Member>());
    }
}

std::shared_ptr<NcclGroup> NcclGroup::create(const NcclLibrary& nccl, int n_ranks,
                                             std::function<void*(Backend&)> stream_of) {
    if (n_ranks < 1) {
        fail("a tensor-parallel group of ", n_ranks, " ranks");
    }
    if (!stream_of) {
        fail("an NCCL group with no way to find a backend's stream");
    }
    std::shared_ptr<NcclGroup> group(new NcclGroup(nccl, n_ranks, std::move(stream_of)));
    group->id_ = nccl.unique_id();
    return group;
}

std::unique_ptr<Collectives> NcclGroup::join(int r, Backend& backend) {
    if (r < 0 || r >= n_ranks_) {
        fail("rank ", r, " of a group of ", n_ranks_);
    }
    (void)stream_of_(backend);  // the backend is one whose stream the collectives can join
    const nccl::Comm comm = nccl_.init_rank(n_ranks_, id_, r);
    Member& m = *members_[static_cast<size_t>(r)];
    {
        const std::lock_guard lock(m.mutex);
        if (m.comm != nullptr) {
            nccl_.destroy(comm);
            fail("rank ", r, " joined its NCCL group twice");
        }
        m.comm = comm;
    }
    auto rank = std::make_unique<Rank>(shared_from_this(), r);
    if (!broken().empty()) {
        fail("tensor-parallel rank ", r, ": ", broken());  // the rank's destructor frees its communicator
    }
    return rank;
}

void NcclGroup::abort(const std::string& why) {
    {
        const std::lock_guard lock(mutex_);
        if (!broken_.empty()) {
            return;
        }
        broken_ = why.empty() ? "a rank failed" : why;
    }
    for (const std::unique_ptr<Member>& m : members_) {
        const std::lock_guard lock(m->mutex);
        try {
            nccl_.abort(m->comm);
        } catch (...) {  // the group is ended either way
        }
        m->comm = nullptr;
    }
}

std::string NcclGroup::broken() const {
    const std::lock_guard lock(mutex_);
    return broken_;
}

}  // namespace folio
