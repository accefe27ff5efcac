#include "engine/runtime/model-runner.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "engine/common/clock.h"
#include "engine/common/error.h"

namespace folio {

namespace {

// Images of a request whose tokens overlap [begin, end).
template <typename F>
void for_images_in(const std::vector<int64_t>& image_begin, const std::vector<int64_t>& image_n_tokens,
                   int64_t begin, int64_t end, F&& fn) {
    for (size_t i = 0; i < image_begin.size(); ++i) {
        if (image_begin[i] < end && begin < image_begin[i] + image_n_tokens[i]) {
            fn(i);
        }
    }
}

}  // namespace

ModelRunner::ModelRunner(GenerativeModel& model, const KvCacheParams& cache_params,
                         const RunnerParams& params)
    : model_(model),
      cache_(model.backend(), cache_params),
      sampled_(model.backend().upload_i32(std::vector<int32_t>(static_cast<size_t>(params.max_num_seqs), 0),
                                          {params.max_num_seqs})),
      decode_(model, cache_,
              {std::min((params.max_model_len + cache_params.block_size - 1) / cache_params.block_size,
                        cache_params.n_blocks),
               params.capture_sizes, sampled_}),
      time_device_(params.time_device) {
    decode_.record_all();
}

void ModelRunner::add_request(int64_t id, const PromptTokens& prompt, PreprocessedImages images,
                              const SamplingParams& sampling) {
    const std::vector<TokenModality>& modality = prompt.modality;
    RequestState state;
    state.positions = model_.prompt_positions(modality, images.grids);
    state.modality = model_.step_modality(prompt);
    if (state.modality.size() != modality.size()) {
        fail("model runner: ", state.modality.size(), " step modalities for ", modality.size(), " tokens");
    }
    for (int64_t i = 0, image = 0; i < static_cast<int64_t>(modality.size()); ++i) {
        if (is_media(modality[i]) && (i == 0 || !is_media(modality[i - 1]))) {
            state.image_begin.push_back(i);
            state.image_n_tokens.push_back(
                model_.n_image_tokens(images.grids.at(static_cast<size_t>(image++))));
        }
    }
    state.features.resize(images.grids.size());
    state.images = std::move(images);
    state.sampler = std::make_unique<Sampler>(sampling);
    requests_[id] = std::move(state);
}

void ModelRunner::remove_request(int64_t id) {
    requests_.erase(id);
}

void ModelRunner::encode_missing_images(const SchedulerOutput& output) {
    // All images this step needs and does not have go through the encoder together.
    std::vector<std::pair<RequestState*, size_t>> missing;
    std::vector<ImageGrid> grids;
    for (const ScheduledChunk& chunk : output.chunks) {
        RequestState& state = requests_.at(chunk.id);
        for_images_in(state.image_begin, state.image_n_tokens, chunk.n_past, chunk.n_past + chunk.n_new,
                      [&](size_t i) {
                          if (state.features[i].empty()) {
                              grids.push_back(state.images.grids[i]);
                              missing.emplace_back(&state, i);
                          }
                      });
    }
    if (missing.empty()) {
        return;
    }
    const auto start = std::chrono::steady_clock::now();
    const Tensor features = encode(missing, grids);  // [n_tokens, hidden]
    int64_t row = 0;
    for (const auto& [state, i] : missing) {
        std::vector<int64_t> rows(static_cast<size_t>(state->image_n_tokens[i]));
        std::iota(rows.begin(), rows.end(), row);
        state->features[i] = model_.backend().gather_rows(features, rows);
        row += state->image_n_tokens[i];
    }
    for (const ImageGrid& g : grids) {
        stats_.n_image_patches += g.n_patches();
    }
    stats_.vision_seconds += seconds_since(start);
}

Tensor ModelRunner::encode(std::span<const std::pair<RequestState*, size_t>> images,
                           std::span<const ImageGrid> grids) {
    // Each image's own levels, uploaded without a copy here, where every image has levels of one table.
    const PreprocessedImages& first = images.front().first->images;
    const bool as_levels = std::all_of(images.begin(), images.end(), [&](const auto& image) {
        const PreprocessedImages& p = image.first->images;
        return !p.levels.empty() && p.level_values == first.level_values;
    });
    if (as_levels) {
        std::vector<std::span<const uint8_t>> levels;
        for (const auto& [state, i] : images) {
            levels.push_back(state->images.image_levels(i));
        }
        return model_.encode_images(levels, first.level_values, grids);
    }
    // Otherwise as float values: each image's own, or its levels looked up.
    std::vector<std::vector<float>> looked_up;
    std::vector<std::span<const float>> values;
    for (const auto& [state, i] : images) {
        if (state->images.levels.empty()) {
            values.push_back(state->images.image_pixel_values(i));
        } else {
            values.emplace_back(looked_up.emplace_back(state->images.image_values(i)));
        }
    }
    return model_.encode_images(values, grids);
}

bool ModelRunner::needs_history(int64_t id) const {
    return requests_.at(id).sampler->needs_history();
}

int32_t ModelRunner::input_id(const ScheduledChunk& chunk, int64_t t, const LaunchedStep* previous) const {
    const int32_t token = chunk.seq->tokens[t];
    if (token != kPendingToken) {
        return token;
    }
    if (previous != nullptr) {
        const std::vector<int64_t>& ids = previous->sampled_ids;
        const auto it = std::find(ids.begin(), ids.end(), chunk.id);
        if (it != ids.end()) {
            return -static_cast<int32_t>(it - ids.begin()) - 1;
        }
    }
    fail("model runner: token ", t, " of request ", chunk.id,
         " is pending but not sampled by the step before");
}

bool ModelRunner::is_decode_step(const SchedulerOutput& output) const {
    return std::all_of(output.chunks.begin(), output.chunks.end(), [&](const ScheduledChunk& chunk) {
        const RequestState& state = requests_.at(chunk.id);
        bool in_image = false;
        for_images_in(state.image_begin, state.image_n_tokens, chunk.n_past, chunk.n_past + 1,
                      [&](size_t) { in_image = true; });
        return chunk.n_new == 1 && !in_image;
    });
}

Tensor ModelRunner::run_decode(const SchedulerOutput& output, const KvSlots& kv,
                               const LaunchedStep* previous) {
    const int64_t block_size = cache_.params().block_size;
    const int64_t max_blocks = decode_.max_blocks();
    DecodeBatch batch;
    batch.block_tables.assign(output.chunks.size() * static_cast<size_t>(max_blocks), 0);
    for (size_t i = 0; i < output.chunks.size(); ++i) {
        const ScheduledChunk& chunk = output.chunks[i];
        const std::span<const int32_t> table = kv.block_table(chunk.id);
        const int64_t t = chunk.n_past;  // the new token
        const int64_t n_table = t / block_size + 1;
        if (static_cast<int64_t>(table.size()) < n_table || n_table > max_blocks) {
            fail("model runner: request ", chunk.id, " has ", table.size(), " blocks for ", t + 1,
                 " tokens (at most ", max_blocks, ")");
        }
        batch.ids.push_back(input_id(chunk, t, previous));
        requests_.at(chunk.id).positions.append(t, batch.positions);
        batch.slots.push_back(static_cast<int32_t>(table[t / block_size] * block_size + t % block_size));
        batch.seq_lens.push_back(static_cast<int32_t>(t + 1));
        std::copy(table.begin(), table.begin() + n_table, batch.block_tables.begin() + i * max_blocks);
    }
    Tensor hidden = decode_.run(batch);
    ++stats_.n_decode_steps;
    stats_.n_replays = decode_.n_replays();
    return hidden;
}

Tensor ModelRunner::run_mixed(const SchedulerOutput& output, const KvSlots& kv,
                              const LaunchedStep* previous) {
    Backend& backend = model_.backend();
    const int64_t block_size = cache_.params().block_size;
    std::vector<int32_t> ids;
    std::vector<int32_t> positions;  // [n_tokens, n_position_axes]
    std::vector<TokenModality> modality;
    bool media = false;
    KvBatch batch;
    for (const ScheduledChunk& chunk : output.chunks) {
        const RequestState& state = requests_.at(chunk.id);
        const std::span<const int32_t> table = kv.block_table(chunk.id);
        const int64_t n_kv = chunk.n_past + chunk.n_new;
        const int64_t n_table = (n_kv + block_size - 1) / block_size;
        if (static_cast<int64_t>(table.size()) < n_table) {
            fail("model runner: request ", chunk.id, " has ", table.size(), " blocks for ", n_kv, " tokens");
        }
        batch.seqs.push_back({static_cast<int64_t>(ids.size()), chunk.n_new, n_kv,
                              static_cast<int64_t>(batch.block_tables.size())});
        batch.block_tables.insert(batch.block_tables.end(), table.begin(), table.begin() + n_table);
        for (int64_t t = chunk.n_past; t < n_kv; ++t) {
            ids.push_back(input_id(chunk, t, previous));
            state.positions.append(t, positions);
            const TokenModality m =
                t < static_cast<int64_t>(state.modality.size()) ? state.modality[t] : TokenModality::Text;
            modality.push_back(m);
            media = media || is_media(m);
            batch.slots.push_back(static_cast<int64_t>(table[t / block_size]) * block_size + t % block_size);
        }
    }

    const bool pending = std::any_of(ids.begin(), ids.end(), [](int32_t id) { return id < 0; });
    const auto n_ids = static_cast<int64_t>(ids.size());
    Tensor embeds = pending ? model_.embed(backend.upload_i32(ids, {n_ids}), sampled_)
                            : model_.embed(ids);  // [n_tokens, hidden]
    int64_t q_begin = 0;
    for (const ScheduledChunk& chunk : output.chunks) {
        RequestState& state = requests_.at(chunk.id);
        const int64_t end = chunk.n_past + chunk.n_new;
        for_images_in(state.image_begin, state.image_n_tokens, chunk.n_past, end, [&](size_t i) {
            const int64_t first = std::max(chunk.n_past, state.image_begin[i]);
            const int64_t last = std::min(end, state.image_begin[i] + state.image_n_tokens[i]);
            std::vector<int64_t> feature_rows, embed_rows;
            for (int64_t t = first; t < last; ++t) {
                feature_rows.push_back(t - state.image_begin[i]);
                embed_rows.push_back(q_begin + t - chunk.n_past);
            }
            backend.scatter_rows(embeds, embed_rows, backend.gather_rows(state.features[i], feature_rows));
            if (last == state.image_begin[i] + state.image_n_tokens[i]) {
                state.features[i] = Tensor{};  // consumed: its keys and values are in the cache now
            }
        });
        q_begin += chunk.n_new;
    }
    stats_.n_tokens += static_cast<int64_t>(ids.size());
    if (!media) {
        modality.clear();  // all text
    }
    return model_.forward_text(std::move(embeds), positions, modality, cache_, batch);
}

std::unique_ptr<TokenReadback> ModelRunner::sample(const SchedulerOutput& output, const Tensor& hidden,
                                                   std::span<const int64_t> rows) {
    Backend& backend = model_.backend();
    bool leading = true;  // rows 0, 1, 2, ...: a view of hidden, no gather
    for (size_t i = 0; i < rows.size(); ++i) {
        leading = leading && rows[i] == static_cast<int64_t>(i);
    }
    const auto n_rows = static_cast<int64_t>(rows.size());
    if (n_rows > sampled_.n_elements()) {
        fail("model runner: ", n_rows, " chunks sample in one step, more than max_num_seqs ",
             sampled_.n_elements());
    }
    const Tensor picked = leading ? hidden.view(0, {n_rows, hidden.row_size()})
                                  : backend.gather_rows(hidden, rows);  // [n_sample, hidden]
    const Tensor logits = model_.logits(picked);                        // [n_sample, vocab]
    const auto sample_start = std::chrono::steady_clock::now();
    const bool all_greedy = std::all_of(
        output.chunks.begin(), output.chunks.end(),
        [&](const ScheduledChunk& c) { return !c.samples || requests_.at(c.id).sampler->is_greedy(); });
    // Greedy steps take only the chosen ids from the backend; others sample there too.
    Tensor tokens = sampled_.view(0, {n_rows});
    if (all_greedy) {
        backend.argmax_rows_to(logits, tokens);
    } else {
        sample_on_backend(output, logits, tokens);
    }
    std::unique_ptr<TokenReadback> readback = backend.read_back(tokens);
    stats_.sample_seconds += seconds_since(sample_start);
    return readback;
}

void ModelRunner::sample_on_backend(const SchedulerOutput& output, const Tensor& logits, Tensor& tokens) {
    std::vector<RowSampling> rows;
    std::vector<int32_t> history;  // the penalised rows' tokens, one after another
    for (const ScheduledChunk& chunk : output.chunks) {
        if (!chunk.samples) {
            continue;
        }
        RowSampling row = requests_.at(chunk.id).sampler->next_row();
        if (row.repetition_penalty != 1.0f) {
            const auto seen = chunk.seq->tokens.begin() + chunk.n_past + chunk.n_new;
            if (std::find(chunk.seq->tokens.begin(), seen, kPendingToken) != seen) {
                fail("model runner: request ", chunk.id,
                     " samples with a repetition penalty before its tokens are in");
            }
            row.history_begin = static_cast<int64_t>(history.size());
            row.history_count = chunk.n_past + chunk.n_new;
            history.insert(history.end(), chunk.seq->tokens.begin(), seen);
        }
        rows.push_back(row);
    }
    model_.backend().sample_rows_to(logits, rows, history, tokens);
}

LaunchedStep ModelRunner::launch(SchedulerOutput output, const KvSlots& kv, const LaunchedStep* previous) {
    LaunchedStep step;
    if (output.chunks.empty()) {
        step.output = std::move(output);
        return step;
    }
    step.marks[0] = mark();
    encode_missing_images(output);
    step.marks[1] = mark();
    const auto start = std::chrono::steady_clock::now();
    step.decode = is_decode_step(output);
    const Tensor hidden =
        step.decode ? run_decode(output, kv, previous) : run_mixed(output, kv, previous);  // [n_rows, hidden]
    std::vector<int64_t> sample_rows;
    int64_t row = 0;
    for (const ScheduledChunk& chunk : output.chunks) {
        row += chunk.n_new;
        if (chunk.samples) {
            sample_rows.push_back(row - 1);
            step.sampled_ids.push_back(chunk.id);
        }
    }
    if (step.decode) {
        stats_.n_tokens += row;
    }
    if (!sample_rows.empty()) {
        step.tokens = sample(output, hidden, sample_rows);
    }
    step.marks[2] = mark();
    ++stats_.n_steps;
    const double seconds = seconds_since(start);
    stats_.text_seconds += seconds;
    if (step.decode) {
        stats_.decode_seconds += seconds;
    }
    step.output = std::move(output);
    return step;
}

std::unique_ptr<QueueMark> ModelRunner::mark() const {
    return time_device_ ? model_.backend().mark_queue() : nullptr;
}

void ModelRunner::add_device_times(LaunchedStep& step, bool waited) {
    if (step.marks[2]) {
        unread_marks_.push_back({std::move(step.marks), step.decode});
    }
    if (!waited) {
        return;
    }
    for (StepMarks& m : unread_marks_) {
        const double text = m.marks[2]->seconds_since(*m.marks[1]);
        stats_.vision_device_seconds += m.marks[1]->seconds_since(*m.marks[0]);
        stats_.text_device_seconds += text;
        if (m.decode) {
            stats_.decode_device_seconds += text;
        }
    }
    unread_marks_.clear();
}

std::vector<int32_t> ModelRunner::finish(LaunchedStep& step) {
    std::vector<int32_t> sampled(step.output.chunks.size(), -1);
    if (!step.tokens) {
        add_device_times(step, false);
        return sampled;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> tokens = step.tokens->wait();
    step.tokens.reset();
    size_t row = 0;
    for (size_t c = 0; c < step.output.chunks.size(); ++c) {
        if (step.output.chunks[c].samples) {
            sampled[c] = tokens.at(row++);
        }
    }
    add_device_times(step, true);
    const double seconds = seconds_since(start);
    stats_.text_seconds += seconds;
    stats_.sample_seconds += seconds;
    if (step.decode) {
        stats_.decode_seconds += seconds;
    }
    return sampled;
}

}  // namespace folio
