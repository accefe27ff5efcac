// Runs the steps the scheduler decides through a GenerativeModel: encodes the images a step's chunks reach
// (the features are kept until their tokens are in the cache), embeds the chunks' tokens with the image
// features in place, runs the decoder over the whole batch with the paged KV cache and samples each finished
// chunk, all queued on the backend by launch(); finish() waits for the step's tokens.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/backend/sampling.h"
#include "engine/image/image-preprocess.h"
#include "engine/runtime/decode-graphs.h"
#include "engine/runtime/kv-cache.h"
#include "engine/runtime/model.h"
#include "engine/runtime/scheduler.h"

namespace folio {

struct RunnerParams {
    int64_t max_model_len = 0;
    int64_t max_num_seqs = 1;            // the most chunks a step has
    std::vector<int64_t> capture_sizes;  // decode batch sizes to record where the backend can; empty: none
    // Marks each step's parts on the backend's queue and adds the device's time for them to the stats'
    // *_device_seconds (for measurements: a CUDA event each part).
    bool time_device = false;
};

struct RunnerStats {
    int64_t n_steps = 0;
    int64_t n_tokens = 0;         // tokens through the decoder
    int64_t n_image_patches = 0;  // patches through the vision encoder
    double vision_seconds = 0.0;
    double text_seconds = 0.0;    // the decoder, logits and sampling
    double sample_seconds = 0.0;  // of that, choosing the tokens from the logits
    int64_t n_decode_steps = 0;   // steps of one new token per sequence, inputs on the backend
    double decode_seconds = 0.0;  // of text_seconds, the decode steps'
    int64_t n_replays = 0;        // of those, replays of recorded work
    // With RunnerParams::time_device, the device's time from the start to the end of each part of the steps:
    // the vision encoder (with its uploads), the decoder with its logits and sampling, and of that the
    // decode steps'.
    double vision_device_seconds = 0.0;
    double text_device_seconds = 0.0;
    double decode_device_seconds = 0.0;
};

// A step whose work is queued on the backend; finish() brings its tokens.
struct LaunchedStep {
    SchedulerOutput output;
    std::vector<int64_t> sampled_ids;       // the request of each sampled row, in row order
    std::unique_ptr<TokenReadback> tokens;  // the sampled rows' tokens; null where no chunk samples
    bool decode = false;                    // a step of the decode path
    // With RunnerParams::time_device: marks before the vision encoder, before the decoder and after the
    // sampling.
    std::array<std::unique_ptr<QueueMark>, 3> marks;
};

class ModelRunner {
public:
    ModelRunner(GenerativeModel& model, const KvCacheParams& cache_params, const RunnerParams& params);

    // The model-side state of a request: its images, the prompt's image flags and its sampler.
    void add_request(int64_t id, const PromptTokens& prompt, PreprocessedImages images,
                     const SamplingParams& sampling);
    void remove_request(int64_t id);

    // Queues one step's work on the backend without waiting for it. A token the scheduler left pending
    // (kPendingToken) is the one `previous` samples, where previous is the step launched last: the step reads
    // it on the backend.
    LaunchedStep launch(SchedulerOutput output, const KvSlots& kv, const LaunchedStep* previous);
    // Waits for a launched step: a token for each chunk that samples, -1 for the others.
    std::vector<int32_t> finish(LaunchedStep& step);
    // Whether the request's sampling reads the tokens before it (a repetition penalty), which a step
    // launched before the one ahead of it has finished does not have on the host.
    bool needs_history(int64_t id) const;

    const PagedKvCache& cache() const { return cache_; }
    const RunnerStats& stats() const { return stats_; }

private:
    // A mark on the backend's queue where the runner times the device, else null.
    std::unique_ptr<QueueMark> mark() const;
    // Takes a finished step's marks; where `waited` (its tokens are on the host, so every step launched
    // before it has run too), adds the device times of the marks taken so far to the stats.
    void add_device_times(LaunchedStep& step, bool waited);

    struct RequestState {
        PromptPositions positions;
        std::vector<TokenModality> modality;  // the prompt's
        PreprocessedImages images;
        std::vector<int64_t> image_begin;     // first prompt token of each image
        std::vector<int64_t> image_n_tokens;  // tokens of each image
        std::vector<Tensor> features;         // per image [n_tokens, hidden] while needed, else empty
        std::unique_ptr<Sampler> sampler;
    };

    void encode_missing_images(const SchedulerOutput& output);
    // The vision encoder over the images (request, image index) of the grids: as levels where all have levels
    // of one table, else as float values.
    Tensor encode(std::span<const std::pair<RequestState*, size_t>> images, std::span<const ImageGrid> grids);
    // The tokens of the sampling chunks, chosen by the backend with each request's next draw, into tokens.
    // logits [n_sampling_chunks, vocab], tokens [n_sampling_chunks] int32
    void sample_on_backend(const SchedulerOutput& output, const Tensor& logits, Tensor& tokens);
    // The id the step feeds the model for token t of a chunk: the token, or -p - 1 for the one row p of
    // `previous` samples.
    int32_t input_id(const ScheduledChunk& chunk, int64_t t, const LaunchedStep* previous) const;
    // Whether every chunk is one text token: a step the decode path runs.
    bool is_decode_step(const SchedulerOutput& output) const;
    // The decoder over a decode step  ->  hidden [n_padded, hidden], the chunks' rows first.
    Tensor run_decode(const SchedulerOutput& output, const KvSlots& kv, const LaunchedStep* previous);
    // The decoder over any other step  ->  hidden [n_tokens, hidden]; rows of the chunks one after another.
    Tensor run_mixed(const SchedulerOutput& output, const KvSlots& kv, const LaunchedStep* previous);
    // Queues the choice of the sampling chunks' tokens from their rows of hidden into sampled_ and their
    // copy to the host.
    std::unique_ptr<TokenReadback> sample(const SchedulerOutput& output, const Tensor& hidden,
                                          std::span<const int64_t> rows);

    GenerativeModel& model_;
    PagedKvCache cache_;
    Tensor sampled_;  // [max_num_seqs] int32: the last step's tokens, which the next step may read
    DecodeGraphs decode_;
    std::unordered_map<int64_t, RequestState> requests_;
    RunnerStats stats_;
    bool time_device_ = false;
    struct StepMarks {
        std::array<std::unique_ptr<QueueMark>, 3> marks;
        bool decode = false;
    };
    std::vector<StepMarks> unread_marks_;  // of finished steps whose work may still run
};

}  // namespace folio
