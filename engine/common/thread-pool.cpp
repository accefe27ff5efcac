#include "engine/common/thread-pool.h"

#include <algorithm>

namespace folio {

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) {
        n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    }
    for (int i = 1; i < n_threads; ++i) {
        workers_.emplace_back([this, i] { worker_loop(i); });
    }
}

int ThreadPool::at_most_hardware(int n) {
    return std::min(n, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
}

void ThreadPool::parallel_for(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) {
        return;
    }
    const int64_t n_workers = n_threads();
    const int64_t chunk =
        std::max<int64_t>(std::max<int64_t>(min_chunk, 1), (n + n_workers * 4 - 1) / (n_workers * 4));
    const int64_t n_chunks = (n + chunk - 1) / chunk;
    if (n_chunks == 1 || workers_.empty()) {
        fn(0, n);
        return;
    }
    std::unique_lock lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunk_ = chunk;
    next_chunk_ = 0;
    n_chunks_ = n_chunks;
    n_finished_ = 0;
    ++generation_;
    wake_.notify_all();
    while (next_chunk_ < n_chunks_) {
        const int64_t c = next_chunk_++;
        lock.unlock();
        fn(c * chunk, std::min(n, (c + 1) * chunk));
        lock.lock();
        ++n_finished_;
    }
    done_.wait(lock, [this] { return n_finished_ == n_chunks_; });
    job_ = nullptr;
}

void ThreadPool::worker_loop(int /*index*/) {
    uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    while (true) {
        wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && job_ != nullptr); });
        if (stopping_) {
            return;
        }
        seen = generation_;
        while (job_ != nullptr && next_chunk_ < n_chunks_) {
            const int64_t c = next_chunk_++;
            const auto* fn = job_;
            const int64_t n = job_n_;
            const int64_t chunk = job_chunk_;
            lock.unlock();
            (*fn)(c * chunk, std::min(n, (c + 1) * chunk));
            lock.lock();
            if (++n_finished_ == n_chunks_) {
                done_.notify_all();
            }
        }
    }
}

}  // namespace folio
