#include "app/server/admission.h"

#include <algorithm>
#include <chrono>

namespace folio::server {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Admission::Result Admission::enter(const std::function<bool()>& client_gone) {
    std::unique_lock lock(mutex_);
    if (stopping_) {
        return Result::Stopping;
    }
    if (n_serving_ < max_serving_ && waiting_.empty()) {
        ++n_serving_;
        return Result::Admitted;
    }
    if (static_cast<int>(waiting_.size()) >= max_waiting_) {
        return Result::Full;
    }
    const auto until = max_waiting_seconds_ >= 0 ? Clock::now() + std::chrono::seconds(max_waiting_seconds_)
                                                 : Clock::time_point::max();
    const uint64_t ticket = next_ticket_++;
    waiting_.push_back(ticket);
    Result result = Result::Admitted;
    for (;;) {
        // First come, first served: a free place goes to the request that has waited longest.
        if (n_serving_ < max_serving_ && waiting_.front() == ticket) {
            break;
        }
        if (stopping_) {
            result = Result::Stopping;
            break;
        }
        if (Clock::now() >= until) {
            result = Result::TimedOut;
            break;
        }
        lock.unlock();
        const bool gone = client_gone && client_gone();
        lock.lock();
        if (gone) {
            result = Result::ClientGone;
            break;
        }
        changed_.wait_until(lock, std::min(until, Clock::now() + std::chrono::milliseconds(200)));
    }
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), ticket));
    if (result == Result::Admitted) {
        ++n_serving_;
    }
    changed_.notify_all();
    return result;
}

void Admission::leave() {
    const std::lock_guard lock(mutex_);
    --n_serving_;
    changed_.notify_all();
}

void Admission::stop() {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
}

std::pair<int, int> Admission::counts() {
    const std::lock_guard lock(mutex_);
    return {n_serving_, static_cast<int>(waiting_.size())};
}

void DecodeSlots::acquire() {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [&] { return n_free_ > 0; });
    --n_free_;
}

void DecodeSlots::release() {
    const std::lock_guard lock(mutex_);
    ++n_free_;
    freed_.notify_one();
}

}  // namespace folio::server
