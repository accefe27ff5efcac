// The queue of sequences waiting to run: one first-come-first-served queue per priority class, interactive
// ahead of batch, with preempted sequences back at the front of their class.
#pragma once

#include <array>
#include <cstdint>
#include <deque>

#include "engine/runtime/sequence.h"

namespace folio {

class RequestQueue {
public:
    void push_back(Sequence* seq) { of(seq->priority).push_back(seq); }
    void push_front(Sequence* seq) { of(seq->priority).push_front(seq); }
    // The first sequence of the highest class that has one; null when the queue is empty.
    Sequence* front() const;
    // The first sequence of one class; null when it has none.
    Sequence* front(Priority priority) const;
    // Removes the sequence with this id; false when it is not queued.
    bool remove(int64_t id);
    bool empty() const { return size() == 0; }
    int64_t size() const;
    int64_t size(Priority priority) const { return static_cast<int64_t>(of(priority).size()); }
    // fn(seq) for every queued sequence, in the order they would be admitted.
    template <typename F>
    void for_each(F&& fn) const {
        for (const std::deque<Sequence*>& queue : queues_) {
            for (Sequence* seq : queue) {
                fn(seq);
            }
        }
    }

private:
    std::deque<Sequence*>& of(Priority p) { return queues_[static_cast<size_t>(p)]; }
    const std::deque<Sequence*>& of(Priority p) const { return queues_[static_cast<size_t>(p)]; }

    std::array<std::deque<Sequence*>, kNumPriorities> queues_;
};

}  // namespace folio
