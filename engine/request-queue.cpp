#include "request-queue.h"

#include <algorithm>

namespace folio {

bool RequestQueue::remove(int64_t id) {
    const auto it =
        std::find_if(queue_.begin(), queue_.end(), [id](const Sequence* s) { return s->id == id; });
    if (it == queue_.end()) {
        return false;
    }
    queue_.erase(it);
    return true;
}

}  // namespace folio
