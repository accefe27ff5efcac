// The ranks of one tensor-parallel engine: rank 0 on the engine's backend and thread, each further rank on
// a backend and a thread of its own (RankThreads), made once and shared by every model the engine serves.
// A generative model slot loads split over the ranks, every rank reading the checkpoint and keeping its part
// at once, and is served as one model (TensorParallelModel); a layout model loads whole onto rank 0.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/collectives.h"
#include "engine/models/model-loading.h"
#include "engine/runtime/rank-threads.h"

namespace folio {

struct TensorParallelParams {
    int n_ranks = 1;
    // Rank r's backend (r >= 1), called on the rank's thread, which then owns it.
    std::function<std::unique_ptr<Backend>(int rank)> make_backend;
    // A group for each model split over the ranks; null: ranks summing on the host (ThreadGroup).
    std::function<std::shared_ptr<CollectiveGroup>(int n_ranks)> make_group;
};

class TensorParallelRanks {
public:
    // Makes the backends of ranks 1, 2, ..., each on its thread. Throws folio::Error naming the rank whose
    // backend could not be made.
    TensorParallelRanks(Backend& lead, const TensorParallelParams& params);
    // The models loaded through these ranks must have gone before.
    ~TensorParallelRanks();
    TensorParallelRanks(const TensorParallelRanks&) = delete;
    TensorParallelRanks& operator=(const TensorParallelRanks&) = delete;

    int n_ranks() const { return threads_.n_ranks(); }
    // Rank r's backend (rank 0's: the engine's).
    Backend& backend(int r) const;

    // Loads the slot through factory, split over every rank where it is generative, whole onto rank 0
    // where it is a layout model. The loading progress is rank 0's: every rank reads the whole checkpoint.
    // Throws what a rank's loading threw first (folio::Error, LoadCancelled).
    std::unique_ptr<LoadedModel> load(const ModelFactory& factory, const ModelSlot& slot,
                                      LoadContext& context);

private:
    Backend& lead_;
    TensorParallelParams params_;
    std::vector<std::unique_ptr<Backend>> backends_;  // [n_ranks]; rank 0's entry stays empty
    RankThreads threads_;                             // last made, first gone: it joins the threads
};

}  // namespace folio
