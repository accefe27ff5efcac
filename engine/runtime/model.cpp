#include "engine/runtime/model.h"

#include "engine/common/error.h"

namespace folio {

Tensor GenerativeModel::forward_text(Tensor embeds, std::span<const std::array<int64_t, 3>> positions,
                                     PagedKvCache& cache, const KvBatch& batch) {
    const int64_t n = embeds.rows();
    if (static_cast<int64_t>(positions.size()) != n || static_cast<int64_t>(batch.slots.size()) != n) {
        fail("language model: ", positions.size(), " positions and ", batch.slots.size(), " cache slots for ",
             n, " tokens");
    }
    std::vector<int32_t> flat_positions, slots;  // [n, 3], [n]
    for (int64_t i = 0; i < n; ++i) {
        for (const int64_t p : positions[i]) {
            flat_positions.push_back(static_cast<int32_t>(p));
        }
        slots.push_back(static_cast<int32_t>(batch.slots[i]));
    }
    Backend& b = backend();
    DecoderStep step;
    step.positions = b.upload_i32(flat_positions, {n, 3});
    step.slots = b.upload_i32(slots, {n});
    step.batch = &batch;
    return forward_text(std::move(embeds), step, cache);
}

}  // namespace folio
