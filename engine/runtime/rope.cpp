#include "engine/runtime/rope.h"

#include <cmath>

namespace folio {

std::vector<float> rope_inverse_frequencies(int dim, float theta) {
    std::vector<float> inv(static_cast<size_t>(dim / 2));
    for (int i = 0; i < dim / 2; ++i) {
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
        inv[i] = 1.0f / std::pow(theta, exponent);
    }
    return inv;
}

}  // namespace folio
