#include "engine/layout/layout-output.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/layout/layout-postprocess.h"

namespace folio {

std::vector<uint8_t> LayoutRawOutput::binary_mask(int query, float threshold) const {
    const std::size_t plane = mask_plane();
    std::vector<uint8_t> mask(plane);
    if (!has_mask_bits()) {
        const float* values = masks.data() + static_cast<std::size_t>(query) * plane;
        for (std::size_t p = 0; p < plane; ++p) {
            mask[p] = layout_sigmoid(values[p]) > threshold ? 1 : 0;
        }
        return mask;
    }
    if (threshold != mask_min_score) {
        fail("layout masks came back as bits at ", mask_min_score, "; post-processing at ", threshold,
             " needs them at that threshold");
    }
    const auto at = std::lower_bound(mask_queries.begin(), mask_queries.end(), query);
    if (at == mask_queries.end() || *at != query) {
        fail("layout post-processing needs the mask of query ", query,
             ", whose scores stay under the masks' threshold ", mask_min_score);
    }
    const uint32_t* words =
        mask_bits.data() + static_cast<std::size_t>(at - mask_queries.begin()) * mask_plane_words();
    for (std::size_t p = 0; p < plane; ++p) {
        mask[p] = static_cast<uint8_t>((words[p / 32] >> (p % 32)) & 1U);
    }
    return mask;
}

}  // namespace folio
