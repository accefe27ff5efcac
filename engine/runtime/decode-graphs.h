// Decode steps (one new token per sequence) with their inputs on the backend. Where the backend can record
// work, each batch size of the capture list is recorded (by record_all(), or the first time it runs) and
// replayed after that, the batch padded up to the next recorded size: one upload of the step's inputs and one
// launch per step.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/runtime/model.h"

namespace folio {

class PagedKvCache;

// FastDeploy's CUDA-graph capture sizes up to max_num_seqs: 1, 2, 4, the multiples of 8 to 128, of 16 to 256
// and of 32 to 1024, and max_num_seqs itself.
std::vector<int64_t> default_capture_sizes(int64_t max_num_seqs);

// The host-side inputs of a decode step of n sequences.
struct DecodeBatch {
    std::vector<int32_t> ids;           // [n]: each sequence's new token, or -p - 1 for the pending token p
    std::vector<int32_t> positions;     // [n, n_position_axes]: its rotary position
    std::vector<int32_t> slots;         // [n]: its cache row
    std::vector<int32_t> seq_lens;      // [n]: tokens in the cache, the new one included
    std::vector<int32_t> block_tables;  // [n, max_blocks]: its blocks, unused entries 0
};

struct DecodeGraphsParams {
    int64_t max_blocks = 0;              // block-table entries per sequence
    std::vector<int64_t> capture_sizes;  // batch sizes to record; empty: never record
    Tensor pending;  // [n_pending] int32: tokens of the step before, which a step may take as its ids
};

class DecodeGraphs {
public:
    DecodeGraphs(GenerativeModel& model, PagedKvCache& cache, DecodeGraphsParams params);

    // Runs the decoder over the batch  ->  hidden states before the final norm [n_padded, hidden], whose
    // first n rows are the batch's. The tensor is valid until the next call.
    Tensor run(const DecodeBatch& batch);

    // Records every capture size not recorded yet, on rows of padding that write no cache row, so that no
    // step waits for a recording.
    void record_all();

    int64_t max_blocks() const { return params_.max_blocks; }
    int64_t n_replays() const { return n_replays_; }

private:
    struct Recorded {
        Tensor inputs;                       // int32, as pack() lays them out
        Tensor hidden;                       // [size, hidden]
        std::unique_ptr<RecordedWork> work;  // last: it goes before the tensors it was recorded with
    };

    // The batch padded to size rows (token 0, cache row -1, length 0), laid out as
    // [ids | positions (n_position_axes a row) | slots | seq_lens | block_tables].
    std::vector<int32_t> pack(const DecodeBatch& batch, int64_t size) const;
    // The decoder over packed inputs for size rows.
    Tensor forward(const Tensor& inputs, int64_t size);
    // Runs the packed inputs of size rows once (their hidden states returned) and records the same work.
    Tensor record(int64_t size, std::span<const int32_t> packed);

    GenerativeModel& model_;
    PagedKvCache& cache_;
    DecodeGraphsParams params_;
    std::map<int64_t, Recorded> recorded_;
    int64_t n_replays_ = 0;
};

}  // namespace folio
