#include "engine/runtime/rank-threads.h"

#include "engine/common/error.h"

namespace folio {

RankThreads::RankThreads(int n_ranks) : n_ranks_(n_ranks) {
    if (n_ranks < 1) {
        fail("a tensor-parallel group of ", n_ranks, " ranks");
    }
    for (int r = 1; r < n_ranks; ++r) {
        threads_.emplace_back([this, r] { thread_main(r); });
    }
}

RankThreads::~RankThreads() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    start_.notify_all();
    for (std::thread& t : threads_) {
        t.join();
    }
}

void RankThreads::record_failure(std::exception_ptr error, const std::string& what) {
    const std::function<void(const std::string&)>* on_failure = nullptr;
    {
        const std::lock_guard lock(mutex_);
        if (!first_error_) {
            first_error_ = std::move(error);
            on_failure = on_failure_;
        }
    }
    if (on_failure != nullptr && *on_failure) {
        (*on_failure)(what);
    }
}

namespace {

std::string message_of(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "a rank failed";
    }
}

}  // namespace

void RankThreads::run(const std::function<void(int)>& work,
                      const std::function<void(const std::string&)>& on_failure) {
    {
        const std::lock_guard lock(mutex_);
        work_ = &work;
        on_failure_ = &on_failure;
        first_error_ = nullptr;
        n_running_ = n_ranks_ - 1;
        ++generation_;
    }
    start_.notify_all();
    try {
        work(0);
    } catch (...) {
        const std::exception_ptr error = std::current_exception();
        record_failure(error, message_of(error));
    }
    std::exception_ptr error;
    {
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&] { return n_running_ == 0; });
        work_ = nullptr;
        on_failure_ = nullptr;
        error = first_error_;
    }
    if (error) {
        std::rethrow_exception(error);
    }
}

void RankThreads::thread_main(int rank) {
    int64_t seen = 0;
    for (;;) {
        const std::function<void(int)>* work = nullptr;
        {
            std::unique_lock lock(mutex_);
            start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) {
                return;
            }
            seen = generation_;
            work = work_;
        }
        try {
            (*work)(rank);
        } catch (...) {
            const std::exception_ptr error = std::current_exception();
            record_failure(error, message_of(error));
        }
        {
            const std::lock_guard lock(mutex_);
            --n_running_;
        }
        done_.notify_all();
    }
}

}  // namespace folio
