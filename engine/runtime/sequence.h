// A request as the scheduler sees it: its tokens (prompt, then output), where its images sit, how many tokens
// are in the KV cache, and when it finishes. No tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/runtime/block-pool.h"

namespace folio {

// Why a request ended: a stop id or string, max_tokens or max_model_len, a cancel, or an error (the request's
// output says which and why).
enum class FinishReason { Stop, Length, Cancelled, Error };
const char* finish_reason_name(FinishReason reason);

// Priority classes: a waiting interactive request (a chat turn) is admitted before every batch one (a
// document's blocks) and may take the place of running batch requests.
enum class Priority { Interactive, Batch };
inline constexpr int kNumPriorities = 2;
const char* priority_name(Priority priority);

// The tokens [begin, begin + n_tokens) of a prompt stand for one image whose pixels hash to content_hash.
struct ImageSpan {
    int64_t begin = 0;
    int64_t n_tokens = 0;
    uint64_t content_hash = 0;

    int64_t end() const { return begin + n_tokens; }
};

enum class SequenceStatus { Waiting, Running, Finished };

// A sequence's next token while the step that samples it is scheduled but its output has not come back.
constexpr int32_t kPendingToken = -1;

struct Sequence {
    int64_t id = 0;
    std::vector<int32_t> tokens;  // the prompt, then the tokens generated so far (kPendingToken: not in yet)
    int64_t n_prompt = 0;
    std::vector<ImageSpan> images;
    int64_t max_tokens = 0;
    std::vector<int32_t> stop_ids;
    Priority priority = Priority::Batch;

    SequenceStatus status = SequenceStatus::Waiting;
    int64_t n_computed = 0;     // tokens whose keys and values are in the cache or scheduled to go there
    int64_t n_cached = 0;       // of those, tokens found in the prefix cache when it was last admitted
    int64_t n_pending = 0;      // tokens of kPendingToken
    bool last_pending = false;  // the pending token is its last (max_tokens, max_model_len): nothing follows
    int64_t start_order = -1;   // when it last started running
    int64_t n_preemptions = 0;
    std::optional<FinishReason> finish;
    int64_t arrival_step = 0;   // the scheduler step at which it was added
    int64_t enqueued_step = 0;  // the step at which it last joined the waiting queue
    int64_t first_scheduled_step = -1;
    // Above 0: the sequence was in a step that failed, and runs in steps of its own until this many of its
    // tokens have gone through the model, so that a failure it causes ends it alone.
    int64_t isolate_until = 0;

    int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
    int64_t n_output() const { return n_tokens() - n_prompt; }
    bool prefilling() const { return n_computed < n_prompt; }

    // Hashes of the first n_full full blocks of tokens, each chained to the one before; image tokens are
    // keyed by their image's content hash and their index in the image. Tokens are only ever appended, so
    // hashes computed once stay valid and are kept.
    std::span<const BlockHash> block_hashes(int64_t n_full, int64_t block_size);

private:
    std::vector<BlockHash> hashes_;
    int64_t hashed_block_size_ = 0;
};

}  // namespace folio
