// A fixed set of worker threads that split index ranges between them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace folio {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);  // 0: one per hardware thread
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int n_threads() const { return static_cast<int>(workers_.size()) + 1; }
    // n, or the hardware's threads where it has fewer.
    static int at_most_hardware(int n);

    // Calls fn(begin, end) on disjoint chunks covering [0, n), chunks no smaller than min_chunk;
    // the calling thread takes part. Returns when every chunk is done.
    void parallel_for(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

private:
    void worker_loop(int index);

    std::vector<std::jthread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    const std::function<void(int64_t, int64_t)>* job_ = nullptr;
    int64_t job_n_ = 0;
    int64_t job_chunk_ = 0;
    int64_t next_chunk_ = 0;
    int64_t n_chunks_ = 0;
    int64_t n_finished_ = 0;
    uint64_t generation_ = 0;
    bool stopping_ = false;
};

}  // namespace folio
