#include "engine/models/tensor-parallel-ranks.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "engine/common/error.h"
#include "engine/runtime/tensor-parallel-model.h"

namespace folio {

namespace {

// A generative model split over the ranks: each rank's part on its backend, served as one model.
class SplitModel final : public LoadedModel {
public:
    struct Part {
        std::unique_ptr<Collectives> collectives;
        std::unique_ptr<LoadedModel> loaded;  // after its collectives: its layers sum through them
    };

    SplitModel(RankThreads& threads, std::shared_ptr<CollectiveGroup> group)
        : threads_(threads), group_(std::move(group)), parts_(static_cast<size_t>(threads.n_ranks())) {}

    ~SplitModel() override {
        model_.reset();
        try {
            threads_.run([&](int r) { parts_[static_cast<size_t>(r)] = Part{}; });
        } catch (...) {  // releasing a part does not fail; nothing may leave a destructor
        }
    }

    void serve() {
        std::vector<TensorParallelRank> ranks;
        for (Part& part : parts_) {
            ranks.push_back({part.loaded->generative(), part.collectives.get()});
        }
        model_ = std::make_unique<TensorParallelModel>(std::move(ranks), *group_, threads_);
    }

    std::vector<Part>& parts() { return parts_; }
    CollectiveGroup& group() { return *group_; }

    ModelRole role() const override { return lead().role(); }
    GenerativeModel* generative() override { return model_.get(); }
    const Tokenizer* tokenizer() const override { return lead().tokenizer(); }
    std::optional<PromptFormat> prompt_format() const override { return lead().prompt_format(); }
    int64_t max_image_tokens() const override { return lead().max_image_tokens(); }
    int64_t reserved_activation_bytes() const override { return lead().reserved_activation_bytes(); }
    ModelDescription description() const override { return lead().description(); }

private:
    const LoadedModel& lead() const { return *parts_.front().loaded; }

    RankThreads& threads_;
    std::shared_ptr<CollectiveGroup> group_;
    std::vector<Part> parts_;  // [n_ranks]
    std::unique_ptr<TensorParallelModel> model_;
};

// Rank 0's loading progress passed on to the service's context as it changes; a rank's context stops its
// load (LoadCancelled) once `stop` is set, and rank 0's also when the service cancels.
class ForwardedProgress {
public:
    explicit ForwardedProgress(LoadContext& context) : context_(context) {}

    void operator()(const LoadProgress& p) {
        if (p.phase != last_.phase && p.phase != LoadPhase::Idle) {
            context_.set_phase(p.phase);
        }
        if (p.bytes_total > last_.bytes_total) {
            context_.add_total(p.bytes_total - last_.bytes_total);
        }
        if (p.bytes_read > last_.bytes_read) {
            context_.add_read(p.bytes_read - last_.bytes_read, p.tensor);
        }
        if (p.n_to_quantize > last_.n_to_quantize) {
            context_.add_to_quantize(p.n_to_quantize - last_.n_to_quantize);
        }
        if (p.n_quantized > last_.n_quantized) {
            context_.add_quantized(p.n_quantized - last_.n_quantized, p.tensor);
        }
        context_.check_cancelled();
        last_ = p;
    }

private:
    LoadContext& context_;
    LoadProgress last_;
};

}  // namespace

TensorParallelRanks::TensorParallelRanks(Backend& lead, const TensorParallelParams& params)
    : lead_(lead),
      params_(params),
      backends_(static_cast<size_t>(std::max(params.n_ranks, 1))),
      threads_(params.n_ranks) {
    if (params_.n_ranks > 1 && !params_.make_backend) {
        fail("tensor parallelism over ", params_.n_ranks, " ranks with no way to make their backends");
    }
    try {
        threads_.run([&](int r) {
            if (r == 0) {
                return;
            }
            try {
                backends_[static_cast<size_t>(r)] = params_.make_backend(r);
            } catch (const std::exception& e) {
                fail("tensor-parallel rank ", r, ": ", e.what());
            }
            if (!backends_[static_cast<size_t>(r)]) {
                fail("tensor-parallel rank ", r, ": the device gave no backend");
            }
        });
    } catch (...) {
        threads_.run([&](int r) { backends_[static_cast<size_t>(r)].reset(); });
        throw;
    }
}

TensorParallelRanks::~TensorParallelRanks() {
    try {
        threads_.run([&](int r) { backends_[static_cast<size_t>(r)].reset(); });
    } catch (...) {  // releasing a backend does not fail; nothing may leave a destructor
    }
}

Backend& TensorParallelRanks::backend(int r) const {
    if (r < 0 || r >= n_ranks()) {
        fail("rank ", r, " of ", n_ranks(), " tensor-parallel ranks");
    }
    return r == 0 ? lead_ : *backends_[static_cast<size_t>(r)];
}

std::unique_ptr<LoadedModel> TensorParallelRanks::load(const ModelFactory& factory, const ModelSlot& slot,
                                                       LoadContext& context) {
    const int n = n_ranks();
    if (slot.role == ModelRole::Layout || n == 1) {
        return factory.load(slot, lead_, context);
    }
    std::shared_ptr<CollectiveGroup> group =
        params_.make_group ? params_.make_group(n) : ThreadGroup::create(n);
    if (!group || group->n_ranks() != n) {
        fail("tensor parallelism over ", n, " ranks got a group of ", group ? group->n_ranks() : 0);
    }
    auto split = std::make_unique<SplitModel>(threads_, group);
    std::atomic<bool> stop{false};  // a rank failed, or the service cancelled: every rank's load stops
    std::atomic<int> n_loaded{0};   // ranks 1, 2, ... that have finished, loaded or not
    threads_.run(
        [&](int r) {
            SplitModel::Part& part = split->parts()[static_cast<size_t>(r)];
            Backend& b = backend(r);
            part.collectives = group->join(r, b);
            ModelSlot own = slot;
            own.load.split = {r, n, part.collectives.get()};
            if (r == 0) {
                ForwardedProgress forward(context);
                LoadContext own_context([&](const LoadProgress& p) { forward(p); }, stop);
                part.loaded = factory.load(own, b, own_context);
                // The other ranks may still be reading; a cancel reaches them through `stop`.
                while (n_loaded.load() < n - 1) {
                    context.check_cancelled();
                    std::this_thread::sleep_for(std::chrono::milliseconds(10));
                }
            } else {
                struct Finished {
                    std::atomic<int>& n;
                    ~Finished() { ++n; }
                } finished{n_loaded};
                LoadContext own_context([](const LoadProgress&) {}, stop);
                part.loaded = factory.load(own, b, own_context);
            }
            if (part.loaded->generative() == nullptr) {
                fail("tensor-parallel rank ", r, ": the ", model_role_name(slot.role),
                     " slot's model does not generate tokens");
            }
        },
        [&](const std::string& why) {
            stop = true;
            group->abort(why);
        });
    split->serve();
    return split;
}

}  // namespace folio
