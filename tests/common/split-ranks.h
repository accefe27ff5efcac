// The ranks of a split model for tests, loaded as the service loads them: each rank on a thread of its own
// (RankThreads) with a backend made there, its collectives joined there, and its part of the model loaded
// there; released on the same threads.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/collectives.h"
#include "engine/models/linear.h"
#include "engine/runtime/rank-threads.h"
#include "engine/runtime/tensor-parallel-model.h"

namespace folio::testing {

template <typename M>
struct SplitRanks {
    using MakeBackend = std::function<std::unique_ptr<Backend>(int rank)>;
    using Load = std::function<std::unique_ptr<M>(Backend&, const ModelLoadParams&)>;

    SplitRanks(std::shared_ptr<CollectiveGroup> g, const MakeBackend& make_backend, const Load& load)
        : group(std::move(g)),
          threads(group->n_ranks()),
          backends(static_cast<size_t>(group->n_ranks())),
          collectives(static_cast<size_t>(group->n_ranks())),
          models(static_cast<size_t>(group->n_ranks())) {
        threads.run(
            [&](int r) {
                const auto i = static_cast<size_t>(r);
                backends[i] = make_backend(r);
                collectives[i] = group->join(r, *backends[i]);
                ModelLoadParams params;
                params.split = {r, group->n_ranks(), collectives[i].get()};
                models[i] = load(*backends[i], params);
            },
            [&](const std::string& why) { group->abort(why); });
    }
    ~SplitRanks() {
        threads.run([&](int r) {
            const auto i = static_cast<size_t>(r);
            models[i].reset();
            collectives[i].reset();
            backends[i].reset();
        });
    }
    SplitRanks(const SplitRanks&) = delete;
    SplitRanks& operator=(const SplitRanks&) = delete;

    std::vector<TensorParallelRank> ranks() const {
        std::vector<TensorParallelRank> out;
        for (size_t r = 0; r < models.size(); ++r) {
            out.push_back({models[r].get(), collectives[r].get()});
        }
        return out;
    }

    std::shared_ptr<CollectiveGroup> group;
    RankThreads threads;
    std::vector<std::unique_ptr<Backend>> backends;
    std::vector<std::unique_ptr<Collectives>> collectives;
    std::vector<std::unique_ptr<M>> models;
};

}  // namespace folio::testing
