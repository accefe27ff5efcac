// Places for requests (Admission: so many served at once, so many more waiting first come first served, any
// beyond refused) and a count of threads that may decode images at once (DecodeSlots).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>

namespace folio::server {

// Places for requests: max_serving served at once, up to max_waiting more waiting for one (each at most
// max_waiting_seconds, -1 for no limit); a request beyond those is refused at once.
class Admission {
public:
    Admission(int max_serving, int max_waiting, int64_t max_waiting_seconds)
        : max_serving_(max_serving), max_waiting_(max_waiting), max_waiting_seconds_(max_waiting_seconds) {}

    enum class Result { Admitted, Full, TimedOut, Stopping, ClientGone };

    // Waits for a place while the client is there; client_gone is asked now and then.
    Result enter(const std::function<bool()>& client_gone);
    void leave();
    // Every waiting request and every later one is answered Stopping.
    void stop();
    // Requests served and waiting.
    std::pair<int, int> counts();

private:
    const int max_serving_;
    const int max_waiting_;
    const int64_t max_waiting_seconds_;
    std::mutex mutex_;
    std::condition_variable changed_;
    int n_serving_ = 0;
    std::deque<uint64_t> waiting_;  // the waiting requests' tickets, oldest first
    uint64_t next_ticket_ = 0;
    bool stopping_ = false;
};

// A place among the requests served, given back when the exchange ends (a stream's after its last event).
class AdmissionTicket {
public:
    explicit AdmissionTicket(Admission& admission) : admission_(&admission) {}
    ~AdmissionTicket() { admission_->leave(); }
    AdmissionTicket(const AdmissionTicket&) = delete;
    AdmissionTicket& operator=(const AdmissionTicket&) = delete;

private:
    Admission* admission_;
};

// A count of threads that may decode images at once.
class DecodeSlots {
public:
    explicit DecodeSlots(int n) : n_free_(std::max(1, n)) {}
    void acquire();
    void release();

private:
    std::mutex mutex_;
    std::condition_variable freed_;
    int n_free_;
};

}  // namespace folio::server
