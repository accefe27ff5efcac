#include "engine/runtime/decode-graphs.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/runtime/kv-cache.h"

namespace folio {

std::vector<int64_t> default_capture_sizes(int64_t max_num_seqs) {
    std::vector<int64_t> sizes{1, 2, 4};
    for (int64_t s = 8; s <= 128; s += 8) {
        sizes.push_back(s);
    }
    for (int64_t s = 144; s <= 256; s += 16) {
        sizes.push_back(s);
    }
    for (int64_t s = 288; s <= 1024; s += 32) {
        sizes.push_back(s);
    }
    std::erase_if(sizes, [&](int64_t s) { return s >= max_num_seqs; });
    if (max_num_seqs > 0) {
        sizes.push_back(max_num_seqs);
    }
    return sizes;
}

DecodeGraphs::DecodeGraphs(GenerativeModel& model, PagedKvCache& cache, DecodeGraphsParams params)
    : model_(model), cache_(cache), params_(std::move(params)) {
    if (params_.max_blocks <= 0) {
        fail("decode graphs: ", params_.max_blocks, " block-table entries per sequence");
    }
    std::sort(params_.capture_sizes.begin(), params_.capture_sizes.end());
    if (!params_.capture_sizes.empty() && params_.capture_sizes.front() <= 0) {
        fail("decode graphs: capture size ", params_.capture_sizes.front());
    }
    if (!model_.can_record()) {
        params_.capture_sizes.clear();
    }
}

std::vector<int32_t> DecodeGraphs::pack(const DecodeBatch& batch, int64_t size) const {
    const auto n = static_cast<int64_t>(batch.ids.size());
    const int64_t mb = params_.max_blocks, n_axes = model_.n_position_axes();
    if (static_cast<int64_t>(batch.positions.size()) != n_axes * n ||
        static_cast<int64_t>(batch.slots.size()) != n || static_cast<int64_t>(batch.seq_lens.size()) != n ||
        static_cast<int64_t>(batch.block_tables.size()) != n * mb || size < n) {
        fail("decode graphs: batch of ", n, " ids, ", batch.positions.size(), " position values, ",
             batch.slots.size(), " slots, ", batch.seq_lens.size(), " lengths and ",
             batch.block_tables.size(), " table entries (", mb, " per sequence) for ", size, " rows");
    }
    const int64_t slots_at = (1 + n_axes) * size;
    std::vector<int32_t> packed(static_cast<size_t>(slots_at + size * (2 + mb)), 0);
    auto* out = packed.data();
    std::copy(batch.ids.begin(), batch.ids.end(), out);
    std::copy(batch.positions.begin(), batch.positions.end(), out + size);
    std::fill(out + slots_at, out + slots_at + size, -1);
    std::copy(batch.slots.begin(), batch.slots.end(), out + slots_at);
    std::copy(batch.seq_lens.begin(), batch.seq_lens.end(), out + slots_at + size);
    std::copy(batch.block_tables.begin(), batch.block_tables.end(), out + slots_at + 2 * size);
    return packed;
}

Tensor DecodeGraphs::forward(const Tensor& inputs, int64_t size) {
    DecoderStep step;
    const int64_t n_axes = model_.n_position_axes(), slots_at = (1 + n_axes) * size;
    step.positions = inputs.view(size, {size, n_axes});
    step.slots = inputs.view(slots_at, {size});
    step.seq_lens = inputs.view(slots_at + size, {size});
    step.block_tables = inputs.view(slots_at + 2 * size, {size, params_.max_blocks});
    return model_.forward_text(model_.embed(inputs.view(0, {size}), params_.pending), step, cache_);
}

Tensor DecodeGraphs::run(const DecodeBatch& batch) {
    Backend& backend = model_.backend();
    const auto n = static_cast<int64_t>(batch.ids.size());
    const auto size_it = std::lower_bound(params_.capture_sizes.begin(), params_.capture_sizes.end(), n);
    if (size_it == params_.capture_sizes.end()) {
        const std::vector<int32_t> packed = pack(batch, n);
        return forward(backend.upload_i32(packed, {static_cast<int64_t>(packed.size())}), n);
    }
    const int64_t size = *size_it;
    const std::vector<int32_t> packed = pack(batch, size);
    if (const auto it = recorded_.find(size); it != recorded_.end()) {
        backend.update(it->second.inputs, packed);
        it->second.work->replay();
        ++n_replays_;
        return it->second.hidden;
    }
    return record(size, packed);
}

void DecodeGraphs::record_all() {
    for (const int64_t size : params_.capture_sizes) {
        if (!recorded_.contains(size)) {
            record(size, pack(DecodeBatch{}, size));
        }
    }
}

Tensor DecodeGraphs::record(int64_t size, std::span<const int32_t> packed) {
    Backend& backend = model_.backend();
    Recorded recorded;
    recorded.inputs = backend.upload_i32(packed, {static_cast<int64_t>(packed.size())});
    Tensor hidden = forward(recorded.inputs, size);
    recorded.work = model_.record([&] { recorded.hidden = forward(recorded.inputs, size); });
    recorded_.emplace(size, std::move(recorded));
    return hidden;
}

}  // namespace folio
