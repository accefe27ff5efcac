#include "engine/runtime/engine-core.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <numeric>

#include "engine/common/clock.h"
#include "engine/common/error.h"
#include "engine/common/log.h"

namespace folio {

namespace {

// A 64-bit hash of bytes: four independent lanes of 8-byte words with the xxHash64 round, then the tail's
// words and bytes and a final avalanche, so that the megabytes of pixels of each request hash at memory
// speed.
uint64_t hash_bytes(const void* data, size_t n, uint64_t seed) {
    constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL, kP3 = 0x165667B19E3779F9ULL;
    const auto round = [](uint64_t acc, uint64_t word) { return std::rotl(acc + word * kP2, 31) * kP1; };
    const auto* bytes = static_cast<const unsigned char*>(data);
    std::array<uint64_t, 4> lanes = {seed + kP1 + kP2, seed + kP2, seed, seed - kP1};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (size_t l = 0; l < lanes.size(); ++l) {
            uint64_t word = 0;
            std::memcpy(&word, bytes + i + 8 * l, sizeof(word));
            lanes[l] = round(lanes[l], word);
        }
    }
    uint64_t h = std::rotl(lanes[0], 1) + std::rotl(lanes[1], 7) + std::rotl(lanes[2], 12) +
                 std::rotl(lanes[3], 18) + n;
    for (; i + 8 <= n; i += 8) {
        uint64_t word = 0;
        std::memcpy(&word, bytes + i, sizeof(word));
        h = std::rotl(h ^ round(0, word), 27) * kP1 + kP2;
    }
    for (; i < n; ++i) {
        h = std::rotl(h ^ (bytes[i] * kP3), 11) * kP1;
    }
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    return h ^ (h >> 32);
}

}  // namespace

uint64_t image_content_hash(std::span<const std::byte> pixels, std::span<const std::byte> level_values,
                            const ImageGrid& grid, ThreadPool* pool) {
    constexpr size_t kSegmentBytes = size_t{1} << 20;
    const int64_t dims[3] = {grid.t, grid.h, grid.w};
    const uint64_t seed =
        hash_bytes(level_values.data(), level_values.size(), hash_bytes(dims, sizeof(dims), 0));
    std::vector<uint64_t> segments((pixels.size() + kSegmentBytes - 1) / kSegmentBytes);
    const auto hash_segments = [&](int64_t begin, int64_t end) {
        for (auto s = static_cast<size_t>(begin); s < static_cast<size_t>(end); ++s) {
            const std::span<const std::byte> segment =
                pixels.subspan(s * kSegmentBytes, std::min(kSegmentBytes, pixels.size() - s * kSegmentBytes));
            segments[s] = hash_bytes(segment.data(), segment.size(), seed + s);
        }
    };
    const auto n_segments = static_cast<int64_t>(segments.size());
    if (pool != nullptr) {
        pool->parallel_for(n_segments, 1, hash_segments);
    } else {
        hash_segments(0, n_segments);
    }
    return hash_bytes(segments.data(), segments.size() * sizeof(uint64_t), seed);
}

namespace {

// The scheduler's view of a request; its images keyed by the hashes the request brings, else hashed on
// hash_threads (counted in n_hashed), or left unhashed (zero) without them, for a sequence that is only
// checked.
std::unique_ptr<Sequence> make_sequence(int64_t id, const Request& request, const GenerativeModel& model,
                                        ThreadPool* hash_threads, int64_t* n_hashed = nullptr) {
    if (!request.image_hashes.empty() && request.image_hashes.size() != request.images.grids.size()) {
        fail("request ", id, ": ", request.image_hashes.size(), " image hashes for ",
             request.images.grids.size(), " images");
    }
    auto seq = std::make_unique<Sequence>();
    seq->id = id;
    seq->priority = request.priority;
    seq->tokens = request.prompt.ids;
    seq->n_prompt = static_cast<int64_t>(request.prompt.ids.size());
    seq->max_tokens = request.max_tokens;
    if (!request.ignore_eos) {
        seq->stop_ids = request.stop_ids.empty() ? model.limits().eos_token_ids : request.stop_ids;
    }
    const std::vector<TokenModality>& modality = request.prompt.modality;
    const std::span<const std::byte> level_values =
        request.images.levels.empty() ? std::span<const std::byte>{}
                                      : std::as_bytes(std::span(request.images.level_values));
    size_t image = 0;
    for (int64_t i = 0; i < seq->n_prompt; ++i) {
        if (!is_media(modality[i]) || (i > 0 && is_media(modality[i - 1]))) {
            continue;
        }
        int64_t end = i;
        while (end < seq->n_prompt && is_media(modality[end])) {
            ++end;
        }
        if (image >= request.images.grids.size()) {
            fail("request ", id, ": the prompt has more image runs than its ", request.images.grids.size(),
                 " images");
        }
        if ((request.images.kind(image) == MediaKind::Video) != (modality[i] == TokenModality::Video)) {
            fail("request ", id, ": a run of ", modality[i] == TokenModality::Video ? "video" : "image",
                 " tokens for item ", image, ", ",
                 request.images.kind(image) == MediaKind::Video ? "a video" : "an image");
        }
        const ImageGrid& grid = request.images.grids[image++];
        if (end - i != model.n_image_tokens(grid)) {
            fail("request ", id, ": an image run of ", end - i, " tokens for an image of ",
                 model.n_image_tokens(grid), " merged patches");
        }
        uint64_t hash = 0;
        if (!request.image_hashes.empty()) {
            hash = request.image_hashes[image - 1];
        } else if (hash_threads) {
            hash =
                image_content_hash(request.images.image_bytes(image - 1), level_values, grid, hash_threads);
            if (n_hashed) {
                ++*n_hashed;
            }
        }
        seq->images.push_back({i, end - i, hash});
    }
    if (image != request.images.grids.size()) {
        fail("request ", id, ": ", request.images.grids.size(), " images but ", image,
             " image runs in the prompt");
    }
    return seq;
}

}  // namespace

EngineCore::EngineCore(GenerativeModel& model, const EngineConfig& config, const Tokenizer* tokenizer,
                       const std::function<void(CorePhase)>& on_phase)
    : model_(model), config_(config), tokenizer_(tokenizer), hash_threads_(ThreadPool::at_most_hardware(4)) {
    const auto phase = [&](CorePhase p) {
        if (on_phase) {
            on_phase(p);
        }
    };
    const int64_t max_context = model.limits().max_context;
    if (config.block_size < 1) {
        fail("block_size must be at least 1, got ", config.block_size);
    }
    if (config.limit_mm_per_prompt < 0 || config.limit_video_per_prompt < 0) {
        fail("limit_mm_per_prompt must not be negative, got ", config.limit_mm_per_prompt, " images and ",
             config.limit_video_per_prompt, " videos");
    }
    if (config.max_model_len > max_context) {
        fail("max_model_len ", config.max_model_len, " exceeds the model's context of ", max_context);
    }
    if (config.max_image_tokens < 0 || config.other_process_bytes < 0 || config.reserved_bytes < 0) {
        fail("max_image_tokens (", config.max_image_tokens, "), other_process_bytes (",
             config.other_process_bytes, ") and reserved_bytes (", config.reserved_bytes,
             ") must not be negative");
    }
    SchedulerConfig sc{config.max_num_seqs,           config.max_num_batched_tokens, config.max_model_len,
                       config.enable_chunked_prefill, config.enable_prefix_caching,  config.max_image_tokens};
    folio::validate(sc);

    KvCacheParams cache = kv_cache_params(model, config, 0);
    const int64_t blocks_per_seq = (config.max_model_len + config.block_size - 1) / config.block_size;
    phase(CorePhase::MemoryPlan);
    if (config.joint_plan) {
        plan_ = *config.joint_plan;
    } else if (config.num_gpu_blocks_override > 0) {
        plan_.n_blocks = config.num_gpu_blocks_override;
        plan_.kv_bytes = plan_.n_blocks * kv_block_bytes(cache);
    } else {
        Backend& backend = model.backend();
        MemoryPlanParams mp;
        mp.total_bytes = backend.total_memory();
        mp.utilization = config.gpu_memory_utilization;
        mp.other_bytes = config.other_process_bytes;
        mp.weight_bytes = backend.memory_stats().in_use;  // every model loaded on the backend
        mp.activation_peak_bytes = measure_activation_peak(model, config);
        mp.reserved_bytes = config.reserved_bytes;
        mp.block_bytes = kv_block_bytes(cache);
        mp.max_useful_blocks = config.max_num_seqs * blocks_per_seq;
        plan_ = plan_kv_cache(mp);
    }
    cache.n_blocks = plan_.n_blocks;
    const bool int8_cache = cache.dtype == ScalarType::Q8;
    log_info(describe(plan_, config.block_size) + (int8_cache ? " of 8-bit keys and values" : ""));
    if (plan_.n_blocks * config.block_size < config.max_model_len) {
        log_info("kv cache: " + std::to_string(plan_.n_blocks * config.block_size) +
                 " tokens fit, fewer than max_model_len " + std::to_string(config.max_model_len) +
                 "; a request that could grow past them is refused (lower max_model_len, " +
                 (int8_cache ? std::string()
                             : std::string("keep the cache in 8 bits with --kv-cache-dtype int8, ")) +
                 "or give the engine more device memory)");
    }

    pool_ = std::make_unique<BlockPool>(static_cast<int32_t>(plan_.n_blocks));
    kv_ = std::make_unique<KvCacheManager>(*pool_, config.block_size, config.enable_prefix_caching);
    scheduler_ = std::make_unique<Scheduler>(sc, *kv_);
    RunnerParams runner_params;
    runner_params.max_model_len = config.max_model_len;
    runner_params.max_num_seqs = config.max_num_seqs;
    runner_params.time_device = config.time_device;
    if (config.use_cudagraph) {
        runner_params.capture_sizes = config.cudagraph_capture_sizes.empty()
                                          ? default_capture_sizes(config.max_num_seqs)
                                          : config.cudagraph_capture_sizes;
    }
    phase(CorePhase::GraphCapture);
    runner_ = std::make_unique<ModelRunner>(model, cache, runner_params);
}

int64_t max_step_tokens(const EngineConfig& config) {
    if (!config.enable_chunked_prefill || !config.takes_images) {
        return config.max_num_batched_tokens;
    }
    const int64_t largest_image = config.max_image_tokens > 0
                                      ? std::min(config.max_image_tokens, config.max_model_len)
                                      : config.max_model_len;
    return config.max_num_batched_tokens + largest_image - 1;
}

int64_t EngineCore::max_step_tokens() const {
    return folio::max_step_tokens(config_);
}

KvCacheDtype parse_kv_cache_dtype(std::string_view name) {
    if (name == "auto") {
        return KvCacheDtype::Auto;
    }
    if (name == "int8") {
        return KvCacheDtype::Int8;
    }
    fail("kv cache dtype \"", name, "\": auto or int8");
}

const char* kv_cache_dtype_name(KvCacheDtype dtype) {
    return dtype == KvCacheDtype::Int8 ? "int8" : "auto";
}

KvCacheParams kv_cache_params(const GenerativeModel& model, const EngineConfig& config, int64_t n_blocks) {
    KvCacheParams params = model.kv_cache_params(n_blocks, config.block_size);
    if (config.kv_cache_dtype == KvCacheDtype::Int8) {
        params.dtype = ScalarType::Q8;
    }
    return params;
}

namespace {

// The activation peak of one prefill of n tokens at positions 0..n-1 (its own cache not counted); the
// hidden states it ends with go to hidden.
int64_t prefill_peak(GenerativeModel& model, const EngineConfig& config, int64_t n, Tensor& hidden) {
    Backend& backend = model.backend();
    const int64_t n_blocks = (n + config.block_size - 1) / config.block_size;
    PagedKvCache cache(backend, kv_cache_params(model, config, n_blocks));
    KvBatch batch;
    batch.seqs.push_back({0, n, n, 0});
    batch.block_tables.resize(static_cast<size_t>(n_blocks));
    std::iota(batch.block_tables.begin(), batch.block_tables.end(), 0);
    batch.slots.resize(static_cast<size_t>(n));
    std::iota(batch.slots.begin(), batch.slots.end(), 0);
    std::vector<int32_t> positions;  // [n, n_position_axes]: token i at i on every axis
    for (int64_t i = 0; i < n; ++i) {
        positions.insert(positions.end(), static_cast<size_t>(model.n_position_axes()),
                         static_cast<int32_t>(i));
    }
    const std::vector<int32_t> ids(static_cast<size_t>(n), 0);
    hidden = Tensor{};
    backend.reset_peak();
    const int64_t before = backend.memory_stats().in_use;
    hidden = model.forward_text(model.embed(ids), positions, {}, cache, batch);  // [n, hidden]
    return backend.memory_stats().peak - before;
}

}  // namespace

// Activations grow linearly with the tokens of a step, past the workspaces every step holds: prefills of
// kProfileTokens and half as many tokens (fewer where max_num_batched_tokens is smaller) give both parts,
// extrapolated to the largest step (max_step_tokens). The logits of max_num_seqs rows are measured on their
// own, and so is the image encoder, which the model measures for the most image tokens a step can take.
int64_t measure_activation_peak(GenerativeModel& model, const EngineConfig& config) {
    constexpr int64_t kProfileTokens = 256;
    Backend& backend = model.backend();
    const int64_t n = std::min(config.max_num_batched_tokens, kProfileTokens);
    const int64_t n_step = max_step_tokens(config);
    Tensor hidden;
    int64_t text_peak = 0;
    if (n >= 2) {
        const PeakSample small{n / 2, prefill_peak(model, config, n / 2, hidden)};
        const PeakSample large{n, prefill_peak(model, config, n, hidden)};
        text_peak = extrapolate_peak(small, large, n_step);
    } else {
        text_peak = prefill_peak(model, config, n, hidden) * n_step / n;
    }

    const std::vector<int64_t> rows(static_cast<size_t>(config.max_num_seqs), 0);
    backend.reset_peak();
    const int64_t before = backend.memory_stats().in_use;
    const Tensor logits = model.logits(backend.gather_rows(hidden, rows));  // [max_num_seqs, vocab]
    // Sampling where the logits are may hold a copy of them.
    backend.sample_rows(
        logits, std::vector<RowSampling>(rows.size(), RowSampling{.temperature = 1.0f, .top_k = 1}), {});
    const int64_t logits_peak = backend.memory_stats().peak - before;

    // The image encoder runs before the decoder in a step, on at most max_step_tokens image tokens.
    const int64_t vision_peak = model.image_activation_bytes(n_step, config.limit_video_per_prompt > 0);
    log_info("activations: " + std::to_string(text_peak >> 20) + " MiB for a step of " +
             std::to_string(n_step) + " tokens, " + std::to_string(logits_peak >> 20) + " MiB for " +
             std::to_string(config.max_num_seqs) + " rows of logits, " + std::to_string(vision_peak >> 20) +
             " MiB for the image encoder");
    return std::max(text_peak + logits_peak, vision_peak);
}

void EngineCore::validate(const Request& request) const {
    check_request(request);
    scheduler_->check(*make_sequence(-1, request, model_, nullptr));
}

void EngineCore::check_request(const Request& request) const {
    const int64_t vocab_size = model_.limits().vocab_size;
    if (request.prompt.ids.empty()) {
        fail("empty prompt");
    }
    if (request.prompt.modality.size() != request.prompt.ids.size()) {
        fail("prompt has ", request.prompt.ids.size(), " ids but ", request.prompt.modality.size(),
             " image flags");
    }
    for (const int32_t id : request.prompt.ids) {
        if (id < 0 || id >= vocab_size) {
            fail("token id ", id, " outside the vocabulary of ", vocab_size);
        }
    }
    const auto n_videos = static_cast<int64_t>(request.images.n_videos());
    if (static_cast<int64_t>(request.images.grids.size()) - n_videos > config_.limit_mm_per_prompt) {
        fail(static_cast<int64_t>(request.images.grids.size()) - n_videos,
             " images in one request, more than limit_mm_per_prompt ", config_.limit_mm_per_prompt);
    }
    if (n_videos > config_.limit_video_per_prompt) {
        fail(n_videos, " videos in one request, more than limit_mm_per_prompt's video limit ",
             config_.limit_video_per_prompt);
    }
    model_.check_images(request.images);
    if (request.max_tokens < 1) {
        fail("max_tokens must be at least 1, got ", request.max_tokens);
    }
    for (const std::string& s : request.stop_strings) {
        if (s.empty()) {
            fail("empty stop string");
        }
    }
    if (!request.stop_strings.empty() && !tokenizer_) {
        fail("stop strings need the engine's tokenizer");
    }
    folio::validate(request.sampling);
}

int64_t EngineCore::submit(Request request) {
    while (scheduler_->find(next_id_)) {
        ++next_id_;
    }
    const int64_t id = next_id_++;
    add(std::move(request), id);
    return id;
}

void EngineCore::add(Request request, int64_t id) {
    if (fatal_ != ErrorKind::None) {
        fail("the engine cannot take requests after a failure (", error_kind_name(fatal_),
             "): ", fatal_message_);
    }
    check_request(request);  // the scheduler checks the sequence as it takes it
    if (scheduler_->find(id)) {
        fail("request id ", id, " is in use");
    }
    std::unique_ptr<Sequence> seq = make_sequence(id, request, model_, &hash_threads_, &n_images_hashed_);
    scheduler_->add(std::move(seq));
    runner_->add_request(id, request.prompt, std::move(request.images), request.sampling);
    if (runner_->needs_history(id)) {
        history_requests_.insert(id);
    }
    if (tokenizer_) {
        Text& text = texts_[id];
        text.detokenizer = std::make_unique<IncrementalDetokenizer>(*tokenizer_, request.skip_special_tokens);
        text.stop_strings = std::move(request.stop_strings);
    }
}

bool EngineCore::cancel(int64_t id) {
    if (!scheduler_->find(id) || std::find(cancelled_.begin(), cancelled_.end(), id) != cancelled_.end()) {
        return false;
    }
    cancelled_.push_back(id);
    return true;
}

bool EngineCore::push_text(Text& text, int32_t token, bool last, std::string& delta) {
    const size_t before = text.text.size();
    text.text += text.detokenizer->push(token);
    if (last) {
        text.text += text.detokenizer->flush();
    }
    // A stop string may start in text decoded earlier, so look from that far back.
    size_t cut = std::string::npos;
    for (const std::string& stop : text.stop_strings) {
        const size_t from = before >= stop.size() ? before - stop.size() + 1 : 0;
        const size_t at = text.text.find(stop, from);
        if (at != std::string::npos) {
            cut = std::min(cut, at);
        }
    }
    const bool stopped = cut != std::string::npos;
    if (stopped) {
        text.text.resize(cut);
    }
    // Hold back what could still turn into a stop string, unless no more text comes.
    size_t n_hold = 0;
    if (!stopped && !last) {
        for (const std::string& stop : text.stop_strings) {
            for (size_t k = std::min(stop.size() - 1, text.text.size()); k > n_hold; --k) {
                if (text.text.compare(text.text.size() - k, k, stop, 0, k) == 0) {
                    n_hold = k;
                    break;
                }
            }
        }
    }
    const size_t end = std::max(text.n_emitted, text.text.size() - n_hold);
    delta = text.text.substr(text.n_emitted, end - text.n_emitted);
    text.n_emitted = end;
    return stopped;
}

void EngineCore::forget(int64_t id) {
    runner_->remove_request(id);
    texts_.erase(id);
    history_requests_.erase(id);
}

std::optional<LaunchedStep> EngineCore::launch_next(const LaunchedStep* previous) {
    const auto schedule_start = std::chrono::steady_clock::now();
    SchedulerOutput scheduled = scheduler_->schedule();
    schedule_seconds_ += seconds_since(schedule_start);
    if (scheduled.chunks.empty()) {
        return std::nullopt;
    }
    std::vector<int64_t>& ids = launched_.emplace_back();
    for (const ScheduledChunk& chunk : scheduled.chunks) {
        ids.push_back(chunk.id);
    }
    return runner_->launch(std::move(scheduled), *kv_, previous);
}

std::vector<RequestOutput> EngineCore::step() {
    std::vector<RequestOutput> outputs;
    for (const int64_t id : cancelled_) {
        if (scheduler_->finish(id, FinishReason::Cancelled)) {
            outputs.push_back({id, {}, {}, FinishReason::Cancelled, ErrorKind::None, {}});
            forget(id);
        }
    }
    cancelled_.clear();
    if (fatal_ != ErrorKind::None) {
        return outputs;
    }
    try {
        run_step(outputs);
    } catch (const std::exception& e) {
        recover(e, outputs);
    }
    return outputs;
}

void EngineCore::run_step(std::vector<RequestOutput>& outputs) {
    if (!in_flight_) {
        in_flight_ = launch_next(nullptr);
        if (!in_flight_) {
            return;
        }
    }
    std::optional<LaunchedStep> ahead;
    if (config_.async_scheduling && history_requests_.empty() && scheduler_->can_schedule_ahead()) {
        ahead = launch_next(&*in_flight_);
        n_steps_ahead_ += ahead ? 1 : 0;
    }
    LaunchedStep done = std::move(*in_flight_);
    in_flight_ = std::move(ahead);
    const std::vector<int32_t> sampled = runner_->finish(done);
    launched_.pop_front();

    const auto update_start = std::chrono::steady_clock::now();
    for (const SequenceUpdate& update : scheduler_->update_from_output(done.output, sampled)) {
        RequestOutput& out = outputs.emplace_back();
        out.id = update.id;
        out.tokens.push_back(*update.token);
        out.finish = update.finish;
        out.n_cached_tokens = update.n_cached;
        const auto text = texts_.find(update.id);
        if (text != texts_.end()) {
            const bool stop_string = push_text(text->second, *update.token, out.finish.has_value(), out.text);
            if (stop_string && !out.finish) {
                scheduler_->finish(update.id, FinishReason::Stop);
            }
            if (stop_string) {
                out.finish = FinishReason::Stop;  // also where the text the last token completed holds one
            }
        }
        if (out.finish) {
            forget(update.id);
        }
    }
    update_seconds_ += seconds_since(update_start);
}

void EngineCore::recover(const std::exception& e, std::vector<RequestOutput>& outputs) {
    ++n_failed_steps_;
    const ErrorKind kind = classify_failure(e);
    const std::string message = e.what();
    std::vector<int64_t> suspects;
    for (const std::vector<int64_t>& ids : launched_) {
        for (const int64_t id : ids) {
            if (scheduler_->find(id) && std::find(suspects.begin(), suspects.end(), id) == suspects.end()) {
                suspects.push_back(id);
            }
        }
    }
    launched_.clear();
    in_flight_.reset();
    const auto end_request = [&](int64_t id, ErrorKind k) {
        if (scheduler_->finish(id, FinishReason::Error)) {
            outputs.push_back({id, {}, {}, FinishReason::Error, k, message});
            forget(id);
        }
    };
    if (kind == ErrorKind::DeviceLost || suspects.empty()) {
        // Nothing more can run: the device is gone, or the failure was outside any request's step.
        fatal_ = kind == ErrorKind::DeviceLost ? kind : ErrorKind::Failed;
        fatal_message_ = message;
        log_info("engine: " + message + "; every request ends");
        for (const int64_t id : scheduler_->ids()) {
            end_request(id, kind);
        }
        return;
    }
    if (suspects.size() == 1) {
        end_request(suspects.front(), kind);
        suspects.clear();
    }
    // The steps' blocks may have been shared before they were written: the prefix cache starts over.
    scheduler_->reset(suspects);
    pool_->clear_cache();
}

EngineStats EngineCore::stats() const {
    EngineStats s;
    s.n_kv_blocks = pool_->n_blocks();
    s.n_free_blocks = pool_->n_free();
    s.n_preemptions = scheduler_->n_preemptions();
    s.n_prefix_lookup_blocks = kv_->n_lookup_blocks();
    s.n_prefix_hit_blocks = kv_->n_hit_blocks();
    s.schedule_seconds = schedule_seconds_;
    s.update_seconds = update_seconds_;
    s.n_steps_ahead = n_steps_ahead_;
    s.n_failed_steps = n_failed_steps_;
    s.n_images_hashed = n_images_hashed_;
    s.runner = runner_->stats();
    return s;
}

}  // namespace folio
