#include "engine/runtime/request-queue.h"

#include <algorithm>

namespace folio {

Sequence* RequestQueue::front() const {
    for (const std::deque<Sequence*>& queue : queues_) {
        if (!queue.empty()) {
            return queue.front();
        }
    }
    return nullptr;
}

Sequence* RequestQueue::front(Priority priority) const {
    const std::deque<Sequence*>& queue = of(priority);
    return queue.empty() ? nullptr : queue.front();
}

bool RequestQueue::remove(int64_t id) {
    for (std::deque<Sequence*>& queue : queues_) {
        const auto it =
            std::find_if(queue.begin(), queue.end(), [id](const Sequence* s) { return s->id == id; });
        if (it != queue.end()) {
            queue.erase(it);
            return true;
        }
    }
    return false;
}

int64_t RequestQueue::size() const {
    int64_t n = 0;
    for (const std::deque<Sequence*>& queue : queues_) {
        n += static_cast<int64_t>(queue.size());
    }
    return n;
}

}  // namespace folio
