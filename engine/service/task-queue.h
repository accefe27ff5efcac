// A few threads that run posted tasks in order of posting, urgent ones first: the service builds requests on
// them, a chat turn ahead of a document's blocks.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace folio {

class TaskQueue {
public:
    explicit TaskQueue(int n_threads);
    // Runs what is queued, then joins.
    ~TaskQueue();
    TaskQueue(const TaskQueue&) = delete;
    TaskQueue& operator=(const TaskQueue&) = delete;

    // The task must not throw. An urgent task goes ahead of every queued one.
    void post(std::function<void()> task, bool urgent = false);
    // Returns once every task posted before has run.
    void wait_idle();
    // Tasks queued or running.
    int64_t n_pending() const;

private:
    void work();

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::deque<std::function<void()>> tasks_;
    int64_t n_running_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> threads_;  // last: they start once everything above exists
};

}  // namespace folio
