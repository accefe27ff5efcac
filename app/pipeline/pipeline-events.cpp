#include "app/pipeline/pipeline-events.h"

#include <utility>

namespace folio::pipeline {

double msSince(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void EventQueue::push(Event event) {
    {
        const std::lock_guard lock(mutex_);
        events_.push_back(std::move(event));
    }
    changed_.notify_all();
}

std::deque<Event> EventQueue::take() {
    std::deque<Event> taken;
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !events_.empty(); });
    taken.swap(events_);
    return taken;
}

bool EventQueue::admitPage(int limit, const std::atomic<bool>& stop) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stop.load() || held_ < limit; });
    if (stop.load()) {
        return false;
    }
    ++held_;
    return true;
}

bool EventQueue::full(int limit) {
    const std::lock_guard lock(mutex_);
    return held_ >= limit;
}

void EventQueue::releasePage() {
    {
        const std::lock_guard lock(mutex_);
        --held_;
    }
    changed_.notify_all();
}

void EventQueue::wake() {
    // Under the lock, so that a waiter between its check and its wait cannot miss it.
    { const std::lock_guard lock(mutex_); }
    changed_.notify_all();
}

}  // namespace folio::pipeline
