#include "engine/layout/layout-labels.h"

#include <algorithm>
#include <iterator>

#include "engine/common/error.h"

namespace folio {

std::string_view layout_label_name(int label) {
    if (label < 0 || label >= kLayoutLabelCount) {
        fail("layout label id ", label, " is outside 0..", kLayoutLabelCount - 1);
    }
    return kLayoutLabels[static_cast<std::size_t>(label)];
}

int layout_label_id(std::string_view name) {
    const auto* it = std::find(kLayoutLabels.begin(), kLayoutLabels.end(), name);
    if (it == kLayoutLabels.end()) {
        fail("unknown layout label '", name, "'");
    }
    return static_cast<int>(std::distance(kLayoutLabels.begin(), it));
}

}  // namespace folio
