#include "engine/runtime/tensor-parallel-model.h"

#include <algorithm>

#include "engine/common/error.h"

namespace folio {

TensorParallelModel::TensorParallelModel(std::vector<TensorParallelRank> ranks, CollectiveGroup& group,
                                         RankThreads& threads)
    : ranks_(std::move(ranks)), group_(group), threads_(threads) {
    if (ranks_.empty() || static_cast<int>(ranks_.size()) != threads_.n_ranks() ||
        group_.n_ranks() != threads_.n_ranks()) {
        fail("tensor-parallel model: ", ranks_.size(), " ranks in a group of ", group_.n_ranks(), " on ",
             threads_.n_ranks(), " threads");
    }
    for (size_t r = 0; r < ranks_.size(); ++r) {
        const TensorParallelRank& rank = ranks_[r];
        if (rank.model == nullptr || (ranks_.size() > 1 && rank.collectives == nullptr)) {
            fail("tensor-parallel model: rank ", r, " has no model or no collectives");
        }
    }
}

TensorParallelModel::~TensorParallelModel() {
    // Each rank's caches go on the thread that owns its backend.
    try {
        threads_.run([&](int r) {
            for (Mirror& m : mirrors_) {
                m.caches[static_cast<size_t>(r)].reset();
            }
        });
    } catch (...) {  // releasing memory does not fail; nothing may leave a destructor
    }
}

TensorParallelModel::Mirror& TensorParallelModel::mirror_of(PagedKvCache& cache) {
    const std::shared_ptr<Buffer>& keys = cache.keys(0).buffer;
    for (Mirror& m : mirrors_) {
        if (m.keys.lock() == keys) {
            return m;
        }
    }
    Mirror& m = mirrors_.emplace_back();
    m.keys = keys;
    m.caches.resize(ranks_.size());
    return m;
}

// Recorded work of every rank, each part replayed and released on its rank's thread.
class TensorParallelModel::Recorded final : public RecordedWork {
public:
    Recorded(RankThreads& threads, CollectiveGroup& group)
        : threads_(threads), group_(group), parts(static_cast<size_t>(threads.n_ranks())) {}
    ~Recorded() override {
        try {
            threads_.run([&](int r) { parts[static_cast<size_t>(r)].reset(); });
        } catch (...) {  // releasing recorded work does not fail; nothing may leave a destructor
        }
    }
    Recorded(const Recorded&) = delete;
    Recorded& operator=(const Recorded&) = delete;

    void replay() override {
        threads_.run([&](int r) { parts[static_cast<size_t>(r)]->replay(); },
                     [&](const std::string& why) { group_.abort(why); });
    }

private:
    RankThreads& threads_;
    CollectiveGroup& group_;

public:
    std::vector<std::unique_ptr<RecordedWork>> parts;  // [n_ranks]
};

bool TensorParallelModel::can_record() const {
    if (ranks_.front().collectives == nullptr) {
        return lead().can_record();
    }
    return group_.can_record() && std::ranges::all_of(ranks_, [](const TensorParallelRank& rank) {
               return rank.model->can_record();
           });
}

std::unique_ptr<RecordedWork> TensorParallelModel::record(const std::function<void()>& queue) {
    if (ranks_.front().collectives == nullptr) {
        return lead().record(queue);
    }
    if (!can_record()) {
        fail("tensor-parallel model: a step cannot be recorded where the group's sums run on the host");
    }
    auto recorded = std::make_unique<Recorded>(threads_, group_);
    recording_ = &recorded->parts;
    try {
        recorded->parts.front() = record_work(lead().backend(), queue);
    } catch (...) {
        recording_ = nullptr;
        throw;  // the other ranks' parts go with recorded, on their threads
    }
    recording_ = nullptr;
    for (size_t r = 1; r < ranks_.size(); ++r) {
        if (!recorded->parts[r]) {
            fail("tensor-parallel model: rank ", r, " recorded no decoder step");
        }
    }
    return recorded;
}

void TensorParallelModel::forward_rank(int r, const std::vector<int64_t>& embeds_shape,
                                       const DecoderStep& step, PagedKvCache& own) {
    const TensorParallelRank& rank = ranks_[static_cast<size_t>(r)];
    Backend& b = rank.model->backend();
    // Zeros summed with rank 0's values: a broadcast, which a recording replays with each step's values.
    const auto receive = [&](const std::vector<int64_t>& shape, ScalarType dtype) {
        Tensor t = b.alloc(shape);  // zero bits, which read as int32 zeros too
        t.dtype = dtype;
        rank.collectives->all_reduce_sum(b, t);
        return t;
    };
    const auto receive_i32 = [&](const Tensor& like) {
        return like.empty() ? Tensor{} : receive(like.shape, ScalarType::I32);
    };
    Tensor x = receive(embeds_shape, ScalarType::F32);  // [n, hidden]
    DecoderStep own_step;
    own_step.positions = receive_i32(step.positions);
    own_step.modality = receive_i32(step.modality);
    own_step.slots = receive_i32(step.slots);
    own_step.seq_lens = receive_i32(step.seq_lens);
    own_step.block_tables = receive_i32(step.block_tables);
    own_step.batch = step.batch;
    (void)rank.model->forward_text(std::move(x), own_step, own);
}

Tensor TensorParallelModel::forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) {
    if (ranks_.front().collectives == nullptr) {
        return lead().forward_text(std::move(embeds), step, cache);
    }
    if (embeds.dtype != ScalarType::F32 || embeds.shape.size() != 2) {
        fail("tensor-parallel model: embeddings ", shape_string(embeds.shape), " of ",
             dtype_name(embeds.dtype), ", not [n, hidden] float32");
    }
    const size_t mirror = static_cast<size_t>(&mirror_of(cache) - mirrors_.data());
    const KvCacheParams cache_params = cache.params();
    const std::vector<int64_t> embeds_shape = embeds.shape;
    Tensor hidden;
    threads_.run(
        [&](int r) {
            const TensorParallelRank& rank = ranks_[static_cast<size_t>(r)];
            Backend& b = rank.model->backend();
            if (r == 0) {
                // Rank 0 sends the step: every other rank adds zeros. The same collectives in the same order
                // as forward_rank.
                rank.collectives->all_reduce_sum(b, embeds);
                for (Tensor t :
                     {step.positions, step.modality, step.slots, step.seq_lens, step.block_tables}) {
                    if (!t.empty()) {
                        rank.collectives->all_reduce_sum(b, t);
                    }
                }
                hidden = rank.model->forward_text(std::move(embeds), step, cache);
                return;
            }
            // Caches whose engine cache has gone are released here, on their rank's thread.
            for (Mirror& m : mirrors_) {
                if (m.keys.expired()) {
                    m.caches[static_cast<size_t>(r)].reset();
                }
            }
            std::unique_ptr<PagedKvCache>& own = mirrors_[mirror].caches[static_cast<size_t>(r)];
            if (!own) {
                if (recording_ != nullptr) {  // a cache made while recording would be cleared by each replay
                    fail("tensor-parallel model: rank ", r, " has no cache for a step it records");
                }
                own = std::make_unique<PagedKvCache>(b, cache_params);
            }
            if (recording_ == nullptr) {
                forward_rank(r, embeds_shape, step, *own);
                return;
            }
            std::unique_ptr<RecordedWork>& part = (*recording_)[static_cast<size_t>(r)];
            if (part) {
                fail("tensor-parallel model: rank ", r, " asked to record a second decoder step at once");
            }
            part = record_work(b, [&] { forward_rank(r, embeds_shape, step, *own); });
        },
        [&](const std::string& why) { group_.abort(why); });
    std::erase_if(mirrors_, [](const Mirror& m) { return m.keys.expired(); });
    return hidden;
}

}  // namespace folio
