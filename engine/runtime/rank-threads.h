// The threads of a tensor-parallel group's ranks in one process. Rank 0 runs on the caller's thread (the
// engine thread), every other rank on a thread of its own that lives as long as this, so that a rank's
// backend is always used from the thread that made it. run() gives every rank the same work and returns
// once all of them have finished it: the ranks go in lockstep, one call at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace folio {

class RankThreads {
public:
    // Throws folio::Error unless n_ranks is at least 1.
    explicit RankThreads(int n_ranks);
    ~RankThreads();
    RankThreads(const RankThreads&) = delete;
    RankThreads& operator=(const RankThreads&) = delete;

    int n_ranks() const { return n_ranks_; }
    // Runs work(r) for every rank r, rank 0 on this thread. on_failure hears a rank's error as soon as the
    // rank throws, so that the others, which may be waiting for it in a collective, can be stopped
    // (CollectiveGroup::abort). Once every rank has finished, rethrows the first exception a rank threw (the
    // cause, not the errors of ranks that stopped because of it).
    void run(const std::function<void(int)>& work,
             const std::function<void(const std::string&)>& on_failure = {});

private:
    void record_failure(std::exception_ptr error, const std::string& what);
    void thread_main(int rank);

    const int n_ranks_;
    std::mutex mutex_;
    std::condition_variable start_;
    std::condition_variable done_;
    const std::function<void(int)>* work_ = nullptr;
    const std::function<void(const std::string&)>* on_failure_ = nullptr;
    int64_t generation_ = 0;
    int n_running_ = 0;
    std::exception_ptr first_error_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;  // ranks 1, 2, ...
};

}  // namespace folio
