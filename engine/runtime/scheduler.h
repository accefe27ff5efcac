// Continuous batching: each step mixes the decode tokens of running sequences with prefill chunks of waiting
// ones under a token budget and a sequence limit, class by class (interactive, then batch), preempting the
// most recently started sequence of the lowest class when the KV cache runs out of blocks. schedule() decides
// a step and counts its tokens as computed, a sampling chunk leaving its sequence a pending token;
// update_from_output() puts the sampled tokens in their place. The next step may be scheduled before the last
// one's tokens are in: a pending token is then its input. No tensors: the scheduler sees token ids, image
// spans and block counts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/runtime/kv-cache-manager.h"
#include "engine/runtime/request-queue.h"
#include "engine/runtime/sequence.h"

namespace folio {

struct SchedulerConfig {
    int64_t max_num_seqs = 256;
    int64_t max_num_batched_tokens = 8192;
    int64_t max_model_len = 16384;
    bool enable_chunked_prefill = true;
    bool enable_prefix_caching = true;
    // The most tokens one image may take (the memory plan counts a step of max_num_batched_tokens plus such
    // an image); 0: any image that fits max_model_len and the cache.
    int64_t max_image_tokens = 0;
};

void validate(const SchedulerConfig& config);

// Tokens [n_past, n_past + n_new) of a sequence go through the model in this step.
struct ScheduledChunk {
    int64_t id = 0;
    Sequence* seq = nullptr;  // valid until update_from_output, unless the sequence is finished before
    int64_t n_past = 0;
    int64_t n_new = 0;
    bool samples = false;  // the chunk reaches the sequence's last token, so the step yields its next token
    // The sequence's preemptions when it was scheduled: its blocks are the chunk's while they stay the same.
    int64_t n_preemptions = 0;
};

struct SchedulerOutput {
    // Class by class, interactive first: the class's running sequences in start order, then its newly
    // admitted ones (one isolated sequence alone after a failed step).
    std::vector<ScheduledChunk> chunks;
    std::vector<int64_t> preempted;  // sequences that gave their blocks back in this step
    int64_t n_tokens = 0;
};

// What a step did to one sequence.
struct SequenceUpdate {
    int64_t id = 0;
    std::optional<int32_t> token;  // the token it sampled
    std::optional<FinishReason> finish;
    // With a sequence's first token: of its prompt, the tokens the prefix cache held when it was admitted;
    // -1 with later tokens.
    int64_t n_cached = -1;
};

class Scheduler {
public:
    Scheduler(const SchedulerConfig& config, KvSlots& kv);

    // Takes a new sequence into the waiting queue, or throws folio::Error when it can never run: an empty
    // prompt, max_tokens below 1, a prompt that leaves no room in max_model_len, an image over
    // max_image_tokens, or more blocks than the pool has.
    void add(std::unique_ptr<Sequence> seq);
    // The checks of add() alone.
    void check(const Sequence& seq) const;
    // Ends a sequence wherever it is, giving its blocks back; false when the id is unknown or finished.
    bool finish(int64_t id, FinishReason reason);

    // One step: a sequence marked isolated alone, else per class, interactive first, the running sequences'
    // decode tokens or next chunks and then newly admitted sequences; a waiting interactive sequence may
    // preempt running batch ones for blocks or a place among max_num_seqs.
    SchedulerOutput schedule();
    // Whether the next step may be scheduled before the last one's tokens are in and come out as it would
    // after them, but for the rows of sequences those tokens end: the free blocks cover every running
    // sequence's remaining tokens and every waiting prompt, so that none is preempted or kept waiting for
    // the blocks of a sequence the tokens end, and no waiting sequence has a token pending.
    bool can_schedule_ahead() const;
    // sampled[i] is the token of output.chunks[i] where that chunk samples, ignored elsewhere. Steps are
    // updated in the order they were scheduled.
    std::vector<SequenceUpdate> update_from_output(const SchedulerOutput& output,
                                                   std::span<const int32_t> sampled);

    // After a step failed, before its tokens came: every running sequence gives its blocks back and waits to
    // be computed again, pending tokens dropped; the suspects (the failed step's) are isolated until they are
    // past the tokens they had reached. Returns the ids of the sequences whose computed tokens were dropped.
    std::vector<int64_t> reset(std::span<const int64_t> suspects);

    const SchedulerConfig& config() const { return config_; }
    const Sequence* find(int64_t id) const;
    int64_t n_waiting() const { return waiting_.size(); }
    int64_t n_waiting(Priority priority) const { return waiting_.size(priority); }
    int64_t n_running() const { return static_cast<int64_t>(running_.size()); }
    int64_t n_running(Priority priority) const;
    int64_t n_isolated() const { return n_isolated_; }
    // Ids of every unfinished sequence.
    std::vector<int64_t> ids() const;
    bool has_unfinished() const { return !sequences_.empty(); }
    int64_t n_steps() const { return step_; }
    int64_t n_preemptions() const { return n_preemptions_; }
    // The most steps any sequence spent in the waiting queue before it was admitted.
    int64_t max_wait_steps() const { return max_wait_steps_; }

private:
    void preempt(Sequence* seq, SchedulerOutput& output);
    void drop(int64_t id);
    // Counts a chunk of n_new tokens of seq into the step.
    void take(Sequence* seq, int64_t n_new, int64_t& budget, SchedulerOutput& output);
    // Running sequences of one class: a decode token each or their next chunk, preempting for blocks.
    void schedule_running(Priority priority, int64_t& budget, SchedulerOutput& output);
    // Waiting sequences of one class, in queue order, while budget, places and blocks last.
    void admit_waiting(Priority priority, int64_t& budget, SchedulerOutput& output);
    // Starts seq running: its cached prefix claimed and its first chunk taken; false (nothing held) when it
    // cannot start in this step. Running sequences of class `victims` or lower may give their blocks back.
    bool admit(Sequence* seq, std::optional<Priority> victims, int64_t& budget, SchedulerOutput& output);
    // One isolated sequence alone in the step; false when none can run.
    bool schedule_isolated(SchedulerOutput& output);
    void clear_isolation(Sequence* seq);

    SchedulerConfig config_;
    KvSlots& kv_;
    std::unordered_map<int64_t, std::unique_ptr<Sequence>> sequences_;
    RequestQueue waiting_;
    std::vector<Sequence*> running_;  // in start order
    int64_t step_ = 0;
    int64_t next_start_order_ = 0;
    int64_t n_preemptions_ = 0;
    int64_t max_wait_steps_ = 0;
    int64_t n_isolated_ = 0;
};

}  // namespace folio
