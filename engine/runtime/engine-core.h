// The serving engine, one step at a time: requests are validated and submitted, each step() schedules a
// batch, runs it through the model and returns what every request produced. A step that fails ends the
// request that caused it alone (its steps' requests are run again one at a time to find it), or every request
// where the device is lost. Single-threaded; EngineService runs it on a thread of its own.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/backend/sampling.h"
#include "engine/common/failure.h"
#include "engine/common/thread-pool.h"
#include "engine/image/image-preprocess.h"
#include "engine/runtime/block-pool.h"
#include "engine/runtime/kv-cache-manager.h"
#include "engine/runtime/memory-planner.h"
#include "engine/runtime/model-runner.h"
#include "engine/runtime/model.h"
#include "engine/runtime/scheduler.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {

// How the key/value cache keeps its keys and values (vLLM's --kv-cache-dtype): as the backend keeps them
// for the model's attention precision, or as 8-bit levels with a scale a token and K/V head (ScalarType::Q8),
// about half the bytes of bfloat16.
enum class KvCacheDtype { Auto, Int8 };

// "auto" or "int8" as a KvCacheDtype; throws naming the value otherwise.
KvCacheDtype parse_kv_cache_dtype(std::string_view name);
const char* kv_cache_dtype_name(KvCacheDtype dtype);

// Names follow FastDeploy's serving options.
struct EngineConfig {
    int64_t max_model_len = 16384;
    int64_t max_num_seqs = 256;
    int64_t max_num_batched_tokens = 8192;
    int64_t block_size = 64;
    KvCacheDtype kv_cache_dtype = KvCacheDtype::Auto;
    double gpu_memory_utilization = 0.9;
    bool enable_prefix_caching = true;
    bool enable_chunked_prefill = true;
    int64_t limit_mm_per_prompt = 4;      // images per request
    int64_t limit_video_per_prompt = 1;   // videos per request
    int64_t num_gpu_blocks_override = 0;  // 0: planned from memory
    bool use_cudagraph = true;            // decode steps recorded and replayed where the backend can
    // The decode batch sizes recorded; empty: FastDeploy's capture sizes up to max_num_seqs.
    std::vector<int64_t> cudagraph_capture_sizes;
    // Each step is scheduled and queued while the one before still runs, its pending tokens read where the
    // backend made them, so the device does not wait for the host between steps; not while a request samples
    // with a repetition penalty, which needs its tokens on the host.
    bool async_scheduling = true;
    // The most tokens one image may take; a step that reaches into an image takes it whole, so the memory
    // plan counts max_num_batched_tokens plus such an image. 0: max_model_len.
    int64_t max_image_tokens = 0;
    // Whether the model takes images at all; a text model's steps hold max_num_batched_tokens at most.
    bool takes_images = true;
    // Bytes other processes use on the device, and bytes of activations other models loaded with this one
    // keep (a layout model): the memory plan leaves both.
    int64_t other_process_bytes = 0;
    int64_t reserved_bytes = 0;
    // The device's time for each part of the steps measured (RunnerParams::time_device), for benchmarks.
    bool time_device = false;
    // The cache planned together with other engines on the device (plan_kv_caches); none: planned alone.
    std::optional<MemoryPlan> joint_plan;
};

// The model's cache of n_blocks blocks as the configuration keeps it (block_size, kv_cache_dtype).
KvCacheParams kv_cache_params(const GenerativeModel& model, const EngineConfig& config, int64_t n_blocks);

// The most tokens one step may take: max_num_batched_tokens, plus an image taken whole past it.
int64_t max_step_tokens(const EngineConfig& config);
// The device memory the largest step of the configuration takes beyond the weights and the cache, measured on
// the model's backend (a profiling prefill scaled to max_step_tokens, the logits of max_num_seqs rows, the
// image encoder on as many image tokens), for the memory plan.
int64_t measure_activation_peak(GenerativeModel& model, const EngineConfig& config);

// What the engine does as it starts, for progress and cancellation.
enum class CorePhase { MemoryPlan, GraphCapture };

struct Request {
    PromptTokens prompt;
    PreprocessedImages images;
    SamplingParams sampling;
    int64_t max_tokens = 256;
    std::vector<int32_t> stop_ids;  // the model's eos ids when empty
    bool ignore_eos = false;        // no stop ids at all: runs to max_tokens (benchmarks)
    std::vector<std::string> stop_strings;
    bool skip_special_tokens =
        true;  // the text leaves out special tokens (PaddleOCR-VL-1.5's spotting keeps them)
    Priority priority = Priority::Batch;
    // Each image's content hash (image_content_hash), computed where the request is built; empty: the engine
    // hashes the images as it takes the request.
    std::vector<uint64_t> image_hashes;
};

// What one step produced for a request.
struct RequestOutput {
    int64_t id = 0;
    std::vector<int32_t> tokens;  // new tokens
    std::string text;             // their text, when the engine has a tokenizer; cut before a stop string
    std::optional<FinishReason> finish;
    ErrorKind error_kind =
        ErrorKind::None;  // with FinishReason::Error, or Cancelled when the service stopped
    std::string error;    // why the request ended early
    // With the first token: the prompt's tokens found in the prefix cache, whose keys and values were not
    // computed again (OpenAI's usage.prompt_tokens_details.cached_tokens); -1 with other outputs.
    int64_t n_cached_tokens = -1;
};

struct EngineStats {
    int64_t n_kv_blocks = 0;
    int64_t n_free_blocks = 0;
    int64_t n_preemptions = 0;
    int64_t n_prefix_lookup_blocks = 0;
    int64_t n_prefix_hit_blocks = 0;
    double schedule_seconds = 0.0;  // host time choosing each step's work
    double update_seconds = 0.0;    // host time taking each step's tokens and building its outputs
    int64_t n_steps_ahead = 0;      // steps queued before the tokens of the step ahead of them were in
    int64_t n_failed_steps = 0;     // steps that failed and whose requests were run again or ended
    int64_t n_images_hashed = 0;    // images the engine hashed itself (their request came without hashes)
    RunnerStats runner;
};

class EngineCore {
public:
    // The tokenizer is needed for stop strings and text output; it must outlive the engine. on_phase is
    // called as each phase of the start begins; what it throws leaves the constructor.
    EngineCore(GenerativeModel& model, const EngineConfig& config, const Tokenizer* tokenizer = nullptr,
               const std::function<void(CorePhase)>& on_phase = {});

    // Throws folio::Error when the request can never run; see Scheduler::add for the rest.
    void validate(const Request& request) const;
    int64_t submit(Request request);
    // The same under an id the caller chooses; throws when the id is in use.
    void add(Request request, int64_t id);
    // Ends a request at the next step with FinishReason::Cancelled; false when unknown or finished.
    bool cancel(int64_t id);

    // Brings the outputs of one step. With async_scheduling the step after it is queued first, so the
    // outputs of a request finished in this step may be followed by one step's work thrown away. A failure
    // inside the step does not leave it: the requests it ends come out with FinishReason::Error.
    std::vector<RequestOutput> step();
    bool has_unfinished() const { return scheduler_->has_unfinished() || !cancelled_.empty(); }
    // After a failure the engine cannot go on from (DeviceLost): its kind, else None. Every request was ended
    // and new ones are refused.
    ErrorKind fatal_error() const { return fatal_; }
    // The most tokens one step may take: max_num_batched_tokens, plus an image taken whole past it.
    int64_t max_step_tokens() const;

    const EngineConfig& config() const { return config_; }
    const MemoryPlan& memory_plan() const { return plan_; }
    const Scheduler& scheduler() const { return *scheduler_; }
    const BlockPool& block_pool() const { return *pool_; }
    EngineStats stats() const;

private:
    struct Text {
        std::unique_ptr<IncrementalDetokenizer> detokenizer;
        std::string text;      // everything decoded so far
        size_t n_emitted = 0;  // bytes of text already returned
        std::vector<std::string> stop_strings;
    };

    void run_step(std::vector<RequestOutput>& outputs);
    // A step failed: the request that caused it ends alone, or its step's requests run again one at a time;
    // on a lost device every request ends.
    void recover(const std::exception& e, std::vector<RequestOutput>& outputs);
    // Schedules a step and queues it, reading the tokens `previous` samples; nothing when no work is left.
    std::optional<LaunchedStep> launch_next(const LaunchedStep* previous);
    // A request is gone: its model state and text.
    void forget(int64_t id);
    // The checks of validate() that need no sequence: prompt, images, max_tokens, stop strings, sampling.
    void check_request(const Request& request) const;
    // Appends the token's text (with the rest of the detokenizer's where it is the `last`), and sets delta to
    // what can be returned: true when a stop string now appears, the text then cut before it.
    bool push_text(Text& text, int32_t token, bool last, std::string& delta);

    GenerativeModel& model_;
    EngineConfig config_;
    const Tokenizer* tokenizer_;
    MemoryPlan plan_;
    std::unique_ptr<BlockPool> pool_;
    std::unique_ptr<KvCacheManager> kv_;
    std::unique_ptr<Scheduler> scheduler_;
    std::unique_ptr<ModelRunner> runner_;
    std::optional<LaunchedStep> in_flight_;  // queued, its tokens not taken yet; goes before the runner
    ThreadPool hash_threads_;                // hash each request's images
    std::unordered_map<int64_t, Text> texts_;
    std::unordered_set<int64_t> history_requests_;  // live requests whose sampling reads their tokens
    std::vector<int64_t> cancelled_;
    std::deque<std::vector<int64_t>>
        launched_;  // the requests of each step launched and not finished, in order
    ErrorKind fatal_ = ErrorKind::None;
    std::string fatal_message_;
    int64_t n_failed_steps_ = 0;
    int64_t n_images_hashed_ = 0;
    double schedule_seconds_ = 0.0;
    double update_seconds_ = 0.0;
    int64_t n_steps_ahead_ = 0;
    int64_t next_id_ = 0;
};

// A 64-bit hash of an image's pixels (its levels or float values, as bytes), what its levels stand for (the
// bytes of its level table, none for float values) and its grid, the key of its tokens in the prefix cache:
// the pixels hash in segments of a mebibyte, on the pool's threads where one is given, and then the segments'
// hashes; the value is the same with or without a pool.
uint64_t image_content_hash(std::span<const std::byte> pixels, std::span<const std::byte> level_values,
                            const ImageGrid& grid, ThreadPool* pool = nullptr);

}  // namespace folio
