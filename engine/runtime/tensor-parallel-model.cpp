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

Tensor TensorParallelModel::forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) {
    if (ranks_.size() == 1) {
        return lead().forward_text(std::move(embeds), step, cache);
    }
    if (embeds.dtype != ScalarType::F32 || embeds.shape.size() != 2) {
        fail("tensor-parallel model: embeddings ", shape_string(embeds.shape), " of ",
             dtype_name(embeds.dtype), ", not [n, hidden] float32");
    }
    // The step's inputs as the other ranks take them, read from rank 0 once.
    Backend& lead_backend = lead().backend();
    const auto read = [&](const Tensor& t) {
        return t.empty() ? std::vector<int32_t>{} : lead_backend.download_i32(t);
    };
    const std::vector<int32_t> positions = read(step.positions), modality = read(step.modality),
                               slots = read(step.slots), seq_lens = read(step.seq_lens),
                               block_tables = read(step.block_tables);
    const size_t mirror = static_cast<size_t>(&mirror_of(cache) - mirrors_.data());
    const KvCacheParams cache_params = cache.params();
    const std::vector<int64_t> embeds_shape = embeds.shape;
    Tensor hidden;
    threads_.run(
        [&](int r) {
            const TensorParallelRank& rank = ranks_[static_cast<size_t>(r)];
            Backend& b = rank.model->backend();
            if (r == 0) {
                rank.collectives->all_reduce_sum(b, embeds);  // every other rank adds zeros: a broadcast
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
                own = std::make_unique<PagedKvCache>(b, cache_params);
            }
            Tensor x = b.alloc(embeds_shape);  // [n, hidden] zeros
            rank.collectives->all_reduce_sum(b, x);
            const auto upload = [&](const std::vector<int32_t>& values, const Tensor& like) {
                return like.empty() ? Tensor{} : b.upload_i32(values, like.shape);
            };
            DecoderStep own_step;
            own_step.positions = upload(positions, step.positions);
            own_step.modality = upload(modality, step.modality);
            own_step.slots = upload(slots, step.slots);
            own_step.seq_lens = upload(seq_lens, step.seq_lens);
            own_step.block_tables = upload(block_tables, step.block_tables);
            own_step.batch = step.batch;
            (void)rank.model->forward_text(std::move(x), own_step, *own);
        },
        [&](const std::string& why) { group_.abort(why); });
    std::erase_if(mirrors_, [](const Mirror& m) { return m.keys.expired(); });
    return hidden;
}

}  // namespace folio
