// Rotary embedding frequencies, shared by the models' rotary tables.
#pragma once

#include <vector>

namespace folio {

// 1 / theta^(2i / dim) for i < dim / 2.
std::vector<float> rope_inverse_frequencies(int dim, float theta);

}  // namespace folio
