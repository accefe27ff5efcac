// The queue of sequences waiting to run: first come, first served, with preempted sequences back at the
// front.
#pragma once

#include <cstdint>
#include <deque>

#include "sequence.h"

namespace folio {

class RequestQueue {
public:
    void push_back(Sequence* seq) { queue_.push_back(seq); }
    void push_front(Sequence* seq) { queue_.push_front(seq); }
    Sequence* front() const { return queue_.front(); }
    void pop_front() { queue_.pop_front(); }
    // Removes the sequence with this id; false when it is not queued.
    bool remove(int64_t id);
    bool empty() const { return queue_.empty(); }
    int64_t size() const { return static_cast<int64_t>(queue_.size()); }
    auto begin() const { return queue_.begin(); }
    auto end() const { return queue_.end(); }

private:
    std::deque<Sequence*> queue_;
};

}  // namespace folio
