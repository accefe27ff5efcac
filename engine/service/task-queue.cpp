#include "engine/service/task-queue.h"

namespace folio {

TaskQueue::TaskQueue(int n_threads) {
    for (int i = 0; i < std::max(n_threads, 1); ++i) {
        threads_.emplace_back([this] { work(); });
    }
}

TaskQueue::~TaskQueue() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) {
        t.join();
    }
}

void TaskQueue::post(std::function<void()> task, bool urgent) {
    {
        const std::lock_guard lock(mutex_);
        if (urgent) {
            tasks_.push_front(std::move(task));
        } else {
            tasks_.push_back(std::move(task));
        }
    }
    wake_.notify_one();
}

void TaskQueue::wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return tasks_.empty() && n_running_ == 0; });
}

int64_t TaskQueue::n_pending() const {
    const std::lock_guard lock(mutex_);
    return static_cast<int64_t>(tasks_.size()) + n_running_;
}

void TaskQueue::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) {
            return;  // stopping, nothing left
        }
        std::function<void()> task = std::move(tasks_.front());
        tasks_.pop_front();
        ++n_running_;
        lock.unlock();
        task();
        lock.lock();
        --n_running_;
        if (tasks_.empty() && n_running_ == 0) {
            idle_.notify_all();
        }
    }
}

}  // namespace folio
