#include "engine/runtime/model.h"

#include <algorithm>

#include "engine/common/error.h"

namespace folio {

void PromptPositions::append(int64_t token, std::vector<int32_t>& out) const {
    if (token < n_prompt()) {
        const auto first = pos.begin() + token * n_axes;
        std::transform(first, first + n_axes, std::back_inserter(out),
                       [](int64_t p) { return static_cast<int32_t>(p); });
        return;
    }
    out.insert(out.end(), static_cast<size_t>(n_axes), static_cast<int32_t>(token + delta));
}

Tensor GenerativeModel::forward_text(Tensor embeds, std::span<const int32_t> positions,
                                     std::span<const TokenModality> modality, PagedKvCache& cache,
                                     const KvBatch& batch) {
    const int64_t n = embeds.rows(), n_axes = n_position_axes();
    if (static_cast<int64_t>(positions.size()) != n * n_axes ||
        static_cast<int64_t>(batch.slots.size()) != n ||
        (!modality.empty() && static_cast<int64_t>(modality.size()) != n)) {
        fail("language model: ", positions.size(), " position values (", n_axes, " a token), ",
             modality.size(), " modalities and ", batch.slots.size(), " cache slots for ", n, " tokens");
    }
    std::vector<int32_t> slots;  // [n]
    for (int64_t i = 0; i < n; ++i) {
        slots.push_back(static_cast<int32_t>(batch.slots[i]));
    }
    Backend& b = backend();
    DecoderStep step;
    step.positions = b.upload_i32(positions, {n, n_axes});
    step.slots = b.upload_i32(slots, {n});
    if (std::any_of(modality.begin(), modality.end(),
                    [](TokenModality m) { return m != TokenModality::Text; })) {
        std::vector<int32_t> kinds;  // [n]
        std::transform(modality.begin(), modality.end(), std::back_inserter(kinds),
                       [](TokenModality m) { return static_cast<int32_t>(m); });
        step.modality = b.upload_i32(kinds, {n});
    }
    step.batch = &batch;
    return forward_text(std::move(embeds), step, cache);
}

}  // namespace folio
