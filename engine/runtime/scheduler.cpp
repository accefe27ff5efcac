#include "engine/runtime/scheduler.h"

#include <algorithm>
#include <iterator>

#include "engine/common/error.h"
#include "engine/runtime/chunking-policy.h"
#include "engine/runtime/preemption-policy.h"

namespace folio {

void validate(const SchedulerConfig& config) {
    if (config.max_num_seqs < 1) {
        fail("max_num_seqs must be at least 1, got ", config.max_num_seqs);
    }
    if (config.max_num_batched_tokens < 1) {
        fail("max_num_batched_tokens must be at least 1, got ", config.max_num_batched_tokens);
    }
    if (config.max_model_len < 2) {
        fail("max_model_len must be at least 2, got ", config.max_model_len);
    }
    if (!config.enable_chunked_prefill && config.max_num_batched_tokens < config.max_model_len) {
        fail("without chunked prefill, max_num_batched_tokens (", config.max_num_batched_tokens,
             ") must be at least max_model_len (", config.max_model_len, ")");
    }
}

Scheduler::Scheduler(const SchedulerConfig& config, KvSlots& kv) : config_(config), kv_(kv) {
    validate(config);
}

void Scheduler::add(std::unique_ptr<Sequence> seq) {
    check(*seq);
    if (sequences_.contains(seq->id)) {
        fail("request ", seq->id, " was already added");
    }
    seq->status = SequenceStatus::Waiting;
    seq->arrival_step = step_;
    seq->enqueued_step = step_;
    waiting_.push_back(seq.get());
    sequences_.emplace(seq->id, std::move(seq));
}

void Scheduler::check(const Sequence& s) const {
    const Sequence* seq = &s;
    if (seq->n_prompt < 1 || seq->n_prompt != seq->n_tokens()) {
        fail("request ", seq->id, ": empty prompt");
    }
    if (seq->max_tokens < 1) {
        fail("request ", seq->id, ": max_tokens must be at least 1, got ", seq->max_tokens);
    }
    if (seq->n_prompt >= config_.max_model_len) {
        fail("request ", seq->id, ": prompt of ", seq->n_prompt,
             " tokens leaves no room for output in max_model_len ", config_.max_model_len);
    }
    for (const ImageSpan& image : seq->images) {
        if (image.begin < 0 || image.n_tokens < 1 || image.end() > seq->n_prompt) {
            fail("request ", seq->id, ": image tokens [", image.begin, ", ", image.end(),
                 ") outside the prompt of ", seq->n_prompt);
        }
        if (config_.max_image_tokens > 0 && image.n_tokens > config_.max_image_tokens) {
            fail("request ", seq->id, ": an image of ", image.n_tokens, " tokens, more than the ",
                 config_.max_image_tokens, " of the largest image the memory plan counts");
        }
    }
    const int64_t n_max = std::min(seq->n_prompt + seq->max_tokens, config_.max_model_len);
    const int64_t n_blocks = (n_max + kv_.block_size() - 1) / kv_.block_size();
    if (n_blocks > kv_.n_blocks()) {
        fail("request ", seq->id, ": up to ", n_max, " tokens need ", n_blocks,
             " KV blocks but the cache has ", kv_.n_blocks());
    }
}

const Sequence* Scheduler::find(int64_t id) const {
    const auto it = sequences_.find(id);
    return it == sequences_.end() ? nullptr : it->second.get();
}

int64_t Scheduler::n_running(Priority priority) const {
    return std::count_if(running_.begin(), running_.end(),
                         [priority](const Sequence* s) { return s->priority == priority; });
}

std::vector<int64_t> Scheduler::ids() const {
    std::vector<int64_t> out;
    out.reserve(sequences_.size());
    for (const auto& entry : sequences_) {
        out.push_back(entry.first);
    }
    return out;
}

void Scheduler::drop(int64_t id) {
    kv_.free(id);
    waiting_.remove(id);
    std::erase_if(running_, [id](const Sequence* s) { return s->id == id; });
    const auto it = sequences_.find(id);
    if (it != sequences_.end() && it->second->isolate_until > 0) {
        --n_isolated_;
    }
    sequences_.erase(id);
}

void Scheduler::clear_isolation(Sequence* seq) {
    if (seq->isolate_until > 0) {
        seq->isolate_until = 0;
        --n_isolated_;
    }
}

bool Scheduler::finish(int64_t id, FinishReason reason) {
    const auto it = sequences_.find(id);
    if (it == sequences_.end()) {
        return false;
    }
    it->second->finish = reason;
    drop(id);
    return true;
}

void Scheduler::preempt(Sequence* seq, SchedulerOutput& output) {
    kv_.free(seq->id);
    std::erase(running_, seq);
    seq->status = SequenceStatus::Waiting;
    seq->n_computed = 0;
    ++seq->n_preemptions;
    ++n_preemptions_;
    seq->enqueued_step = step_;
    waiting_.push_front(seq);
    output.preempted.push_back(seq->id);
}

void Scheduler::take(Sequence* seq, int64_t n_new, int64_t& budget, SchedulerOutput& output) {
    const bool samples = seq->n_computed + n_new == seq->n_tokens();
    output.chunks.push_back({seq->id, seq, seq->n_computed, n_new, samples, seq->n_preemptions});
    output.n_tokens += n_new;
    budget -= n_new;
    if (seq->first_scheduled_step < 0) {
        seq->first_scheduled_step = step_;
    }
    seq->n_computed += n_new;
    // Full blocks of known tokens are shared as soon as the step that fills them is scheduled: a sequence
    // that claims them reads them in a later step, or in this one after they are written.
    if (config_.enable_prefix_caching) {
        const int64_t n_known = std::min(seq->n_computed, seq->n_tokens() - seq->n_pending);
        kv_.cache_blocks(seq->id, seq->block_hashes(n_known / kv_.block_size(), kv_.block_size()));
    }
    if (samples) {
        seq->tokens.push_back(kPendingToken);
        ++seq->n_pending;
        seq->last_pending = seq->n_output() >= seq->max_tokens || seq->n_tokens() >= config_.max_model_len;
    }
}

void Scheduler::schedule_running(Priority priority, int64_t& budget, SchedulerOutput& output) {
    // In start order. A victim is always of the lowest class running and the most recently started of it, so
    // it has not been scheduled in this step yet: lower classes come later, and this class's newest is last.
    std::vector<Sequence*> order;
    for (Sequence* seq : running_) {
        if (seq->priority == priority) {
            order.push_back(seq);
        }
    }
    for (Sequence* seq : order) {
        if (budget <= 0) {
            break;
        }
        if (seq->status != SequenceStatus::Running || seq->last_pending) {
            continue;  // preempted in this step, or its pending token ends it
        }
        const int64_t n_new = prefill_chunk(seq->n_computed, seq->n_tokens(), seq->images, budget,
                                            config_.enable_chunked_prefill);
        if (n_new == 0) {
            continue;
        }
        bool preempted_self = false;
        while (!kv_.allocate_slots(seq->id, seq->n_computed + n_new)) {
            Sequence* victim = choose_preemption_victim(running_);
            preempt(victim, output);
            if (victim == seq) {
                preempted_self = true;
                break;
            }
        }
        if (!preempted_self) {
            take(seq, n_new, budget, output);
        }
    }
}

bool Scheduler::admit(Sequence* seq, std::optional<Priority> victims, int64_t& budget,
                      SchedulerOutput& output) {
    const auto give_back = [&] {
        kv_.free(seq->id);
        seq->n_computed = 0;
        seq->n_cached = 0;
    };
    if (config_.enable_prefix_caching) {
        const int64_t n_full = (seq->n_tokens() - 1) / kv_.block_size();
        seq->n_computed = kv_.claim_cached_prefix(seq->id, seq->block_hashes(n_full, kv_.block_size()));
        seq->n_cached = seq->n_computed;
    }
    const int64_t n_new =
        prefill_chunk(seq->n_computed, seq->n_tokens(), seq->images, budget, config_.enable_chunked_prefill);
    if (n_new == 0) {
        give_back();
        return false;
    }
    const auto make_room = [&] {
        Sequence* victim = victims ? choose_preemption_victim(running_, *victims) : nullptr;
        if (victim) {
            preempt(victim, output);
        }
        return victim != nullptr;
    };
    while (static_cast<int64_t>(running_.size()) >= config_.max_num_seqs) {
        if (!make_room()) {
            give_back();
            return false;
        }
    }
    while (!kv_.allocate_slots(seq->id, seq->n_computed + n_new)) {
        if (!make_room()) {
            give_back();
            return false;
        }
    }
    waiting_.remove(seq->id);
    max_wait_steps_ = std::max(max_wait_steps_, step_ - seq->enqueued_step);
    seq->status = SequenceStatus::Running;
    seq->start_order = next_start_order_++;
    running_.push_back(seq);
    take(seq, n_new, budget, output);
    return true;
}

void Scheduler::admit_waiting(Priority priority, int64_t& budget, SchedulerOutput& output) {
    // Not while a sequence of this class or a higher one was preempted in this step (it goes first, later).
    // A preempted sequence whose last token is still pending waits for it. An interactive sequence may take
    // the place and blocks of running batch ones.
    const auto preempted_here = [&] {
        return std::any_of(output.preempted.begin(), output.preempted.end(), [&](int64_t id) {
            const Sequence* seq = find(id);
            return seq && seq->priority <= priority;
        });
    };
    const std::optional<Priority> victims =
        priority == Priority::Interactive ? std::optional(Priority::Batch) : std::nullopt;
    while (budget > 0 && !preempted_here()) {
        Sequence* seq = waiting_.front(priority);
        if (!seq || seq->n_pending > 0 || !admit(seq, victims, budget, output)) {
            break;
        }
    }
}

bool Scheduler::schedule_isolated(SchedulerOutput& output) {
    int64_t budget = config_.max_num_batched_tokens;
    for (Sequence* seq : running_) {
        if (seq->isolate_until == 0) {
            continue;
        }
        const int64_t n_new = seq->last_pending ? 0
                                                : prefill_chunk(seq->n_computed, seq->n_tokens(), seq->images,
                                                                budget, config_.enable_chunked_prefill);
        if (n_new == 0) {
            return true;  // its pending token ends it
        }
        while (!kv_.allocate_slots(seq->id, seq->n_computed + n_new)) {
            std::vector<Sequence*> others;
            std::copy_if(running_.begin(), running_.end(), std::back_inserter(others),
                         [seq](const Sequence* s) { return s != seq; });
            Sequence* victim = choose_preemption_victim(others);
            if (!victim) {
                return false;
            }
            preempt(victim, output);
        }
        take(seq, n_new, budget, output);
        return true;
    }
    Sequence* next = nullptr;
    waiting_.for_each([&](Sequence* seq) {
        if (!next && seq->isolate_until > 0 && seq->n_pending == 0) {
            next = seq;
        }
    });
    return next && admit(next, Priority::Interactive, budget, output);
}

SchedulerOutput Scheduler::schedule() {
    SchedulerOutput output;
    // A sequence of a failed step runs alone, one at a time, until it is past where the step failed.
    if (n_isolated_ > 0 && schedule_isolated(output)) {
        ++step_;
        return output;
    }
    int64_t budget = config_.max_num_batched_tokens;
    for (const Priority priority : {Priority::Interactive, Priority::Batch}) {
        schedule_running(priority, budget, output);
        admit_waiting(priority, budget, output);
    }
    ++step_;
    return output;
}

std::vector<int64_t> Scheduler::reset(std::span<const int64_t> suspects) {
    for (const int64_t id : suspects) {
        const auto it = sequences_.find(id);
        if (it == sequences_.end()) {
            continue;
        }
        Sequence* seq = it->second.get();
        if (seq->isolate_until == 0) {
            ++n_isolated_;
        }
        seq->isolate_until = std::max({seq->isolate_until, seq->n_computed, int64_t{1}});
    }
    const auto drop_pending = [](Sequence* seq) {
        while (!seq->tokens.empty() && seq->tokens.back() == kPendingToken) {
            seq->tokens.pop_back();
        }
        seq->n_pending = 0;
        seq->last_pending = false;
    };
    std::vector<int64_t> ids;
    // The most recently started first, each to the front of its class, so that they keep their order.
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
        Sequence* seq = *it;
        kv_.free(seq->id);
        drop_pending(seq);
        seq->status = SequenceStatus::Waiting;
        seq->n_computed = 0;
        seq->n_cached = 0;
        ++seq->n_preemptions;
        seq->enqueued_step = step_;
        waiting_.push_front(seq);
        ids.push_back(seq->id);
    }
    running_.clear();
    waiting_.for_each([&](Sequence* seq) {
        if (seq->n_pending > 0) {
            drop_pending(seq);
        }
    });
    return ids;
}

bool Scheduler::can_schedule_ahead() const {
    // The blocks a sequence holds cover its computed tokens; the rest of its tokens, a decode's pending one
    // or a prompt's remaining chunks, may need more, and a waiting sequence needs them all.
    const auto blocks = [&](int64_t n_tokens) {
        return (n_tokens + kv_.block_size() - 1) / kv_.block_size();
    };
    int64_t n_needed = 0;
    for (const Sequence* seq : running_) {
        if (!seq->last_pending) {
            n_needed += blocks(seq->n_tokens()) - blocks(seq->n_computed);
        }
    }
    bool pending = false;
    waiting_.for_each([&](const Sequence* seq) {
        pending = pending || seq->n_pending > 0;
        n_needed += blocks(seq->n_tokens());
    });
    return !pending && n_isolated_ == 0 && n_needed <= kv_.n_free_blocks();
}

std::vector<SequenceUpdate> Scheduler::update_from_output(const SchedulerOutput& output,
                                                          std::span<const int32_t> sampled) {
    if (sampled.size() != output.chunks.size()) {
        fail("scheduler: ", sampled.size(), " sampled tokens for ", output.chunks.size(),
             " scheduled chunks");
    }
    std::vector<SequenceUpdate> updates;
    for (size_t i = 0; i < output.chunks.size(); ++i) {
        const ScheduledChunk& chunk = output.chunks[i];
        const auto it = sequences_.find(chunk.id);
        if (it == sequences_.end()) {
            continue;  // finished since it was scheduled
        }
        Sequence* seq = it->second.get();
        const int64_t n_done = chunk.n_past + chunk.n_new;  // tokens in the cache after the chunk
        // A preempted sequence gave its blocks back: nothing of them to share.
        if (config_.enable_prefix_caching && seq->n_preemptions == chunk.n_preemptions) {
            kv_.cache_blocks(seq->id, seq->block_hashes(n_done / kv_.block_size(), kv_.block_size()));
        }
        if (seq->isolate_until > 0 && n_done >= seq->isolate_until) {
            clear_isolation(seq);  // past where its step failed
        }
        if (!chunk.samples) {
            continue;
        }
        if (n_done >= seq->n_tokens() || seq->tokens[n_done] != kPendingToken) {
            fail("scheduler: request ", seq->id, " has no pending token at ", n_done, " of ",
                 seq->n_tokens());
        }
        // The token stays where the sequence was preempted since: it is recomputed with the rest.
        seq->tokens[n_done] = sampled[i];
        --seq->n_pending;
        SequenceUpdate& update = updates.emplace_back();
        update.id = seq->id;
        update.token = sampled[i];
        if (n_done == seq->n_prompt) {
            update.n_cached = seq->n_cached;
        }
        if (std::find(seq->stop_ids.begin(), seq->stop_ids.end(), sampled[i]) != seq->stop_ids.end()) {
            update.finish = FinishReason::Stop;
        } else if (n_done + 1 - seq->n_prompt >= seq->max_tokens || n_done + 1 >= config_.max_model_len) {
            update.finish = FinishReason::Length;
        }
        if (update.finish) {
            seq->finish = update.finish;
            seq->status = SequenceStatus::Finished;
            drop(seq->id);
        }
    }
    return updates;
}

}  // namespace folio
