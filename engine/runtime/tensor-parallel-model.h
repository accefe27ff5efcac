// A model split over the ranks of a tensor-parallel group, served as one model. Each rank holds its part of
// the decoder's heads, MLP columns and experts on a backend of its own and sums its row-parallel outputs
// with the others (Collectives); the engine sees rank 0. A decoder step runs on every rank at once, each on
// its thread (RankThreads): rank 0's embeddings and the step's positions, cache rows and block tables are
// broadcast through the group on the devices, and each rank keeps its part of the keys and values in a
// cache of its own that mirrors the engine's. Embeddings, logits and images run on rank 0 alone, whose
// hidden states after the last all-reduce are the whole model's. Where the group's sums run on the devices
// (NCCL), a decode step is recorded on every rank, each rank's part on its own backend, and replayed on all
// of them together.
#pragma once

#include <memory>
#include <vector>

#include "engine/backend/collectives.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/model.h"
#include "engine/runtime/rank-threads.h"

namespace folio {

struct TensorParallelRank {
    GenerativeModel* model = nullptr;    // on the rank's backend, used only from the rank's thread
    Collectives* collectives = nullptr;  // the rank's view of the group
};

class TensorParallelModel final : public GenerativeModel {
public:
    // ranks[r] is rank r's part of one model, group the group of their collectives (ended when a rank fails,
    // so that no rank waits for it); threads runs rank r's calls on the thread that owns its backend. All
    // outlive this. Throws folio::Error where the ranks and the threads disagree in number.
    TensorParallelModel(std::vector<TensorParallelRank> ranks, CollectiveGroup& group, RankThreads& threads);
    ~TensorParallelModel() override;

    int n_ranks() const { return static_cast<int>(ranks_.size()); }

    Backend& backend() const override { return lead().backend(); }
    // Where every rank's backend records and the group's sums are device work.
    bool can_record() const override;
    // Every rank records its part of the step queue gives (rank 0's as queue runs, the others' in
    // forward_text); the replay runs each part on its rank's thread.
    std::unique_ptr<RecordedWork> record(const std::function<void()>& queue) override;
    ModelLimits limits() const override { return lead().limits(); }
    int n_position_axes() const override { return lead().n_position_axes(); }
    // Rank 0's: it alone holds the embedding table, the head and the vision side, so no rank holds more.
    int64_t n_weight_bytes() const override { return lead().n_weight_bytes(); }

    void check_images(const PreprocessedImages& images) const override { lead().check_images(images); }
    int64_t n_image_tokens(const ImageGrid& grid) const override { return lead().n_image_tokens(grid); }
    Tensor encode_images(std::span<const std::span<const uint8_t>> levels, const ChannelLevels& level_values,
                         std::span<const ImageGrid> grids) override {
        return lead().encode_images(levels, level_values, grids);
    }
    Tensor encode_images(std::span<const std::span<const float>> values,
                         std::span<const ImageGrid> grids) override {
        return lead().encode_images(values, grids);
    }
    int64_t image_activation_bytes(int64_t n_image_tokens, bool with_video) override {
        return lead().image_activation_bytes(n_image_tokens, with_video);
    }
    std::vector<TokenModality> step_modality(const PromptTokens& prompt) const override {
        return lead().step_modality(prompt);
    }
    PromptPositions prompt_positions(std::span<const TokenModality> modality,
                                     std::span<const ImageGrid> grids) const override {
        return lead().prompt_positions(modality, grids);
    }

    Tensor embed(std::span<const int32_t> ids) override { return lead().embed(ids); }
    Tensor embed(const Tensor& ids, const Tensor& pending) override { return lead().embed(ids, pending); }
    // Every rank's decoder over the step, in lockstep.  embeds [n, hidden] on rank 0  ->  [n, hidden]
    Tensor forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) override;
    using GenerativeModel::forward_text;
    Tensor logits(const Tensor& hidden) override { return lead().logits(hidden); }
    KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const override {
        return lead().kv_cache_params(n_blocks, block_size);
    }

private:
    // The caches of ranks 1, 2, ... that mirror one cache of the engine's (rank 0's), known by its first
    // layer's keys; they go when that cache has gone.
    struct Mirror {
        std::weak_ptr<Buffer> keys;
        std::vector<std::unique_ptr<PagedKvCache>> caches;  // [n_ranks]; rank 0's entry stays empty
    };

    class Recorded;

    GenerativeModel& lead() const { return *ranks_.front().model; }
    Mirror& mirror_of(PagedKvCache& cache);
    // Rank r's part of a step (r > 0): the embeddings and the step's inputs from rank 0, the decoder over
    // them into the rank's cache.
    void forward_rank(int r, const std::vector<int64_t>& embeds_shape, const DecoderStep& step,
                      PagedKvCache& own);

    std::vector<TensorParallelRank> ranks_;
    CollectiveGroup& group_;
    RankThreads& threads_;
    std::vector<Mirror> mirrors_;
    // While record() runs: the parts ranks 1, 2, ... recorded ([n_ranks], rank 0's entry empty).
    std::vector<std::unique_ptr<RecordedWork>>* recording_ = nullptr;
};

}  // namespace folio
