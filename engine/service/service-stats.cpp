#include "engine/service/service-stats.h"

#include <algorithm>

namespace folio {

void TokenRate::add(Clock::time_point at, int64_t n_tokens) {
    if (!first_) {
        first_ = at;
    }
    samples_.emplace_back(at, n_tokens);
    n_in_window_ += n_tokens;
    drop_before(at - std::chrono::duration_cast<Clock::duration>(window_));
}

double TokenRate::per_second(Clock::time_point now) {
    drop_before(now - std::chrono::duration_cast<Clock::duration>(window_));
    if (!first_ || n_in_window_ == 0) {
        return 0.0;
    }
    const double span = std::min(window_.count(), std::chrono::duration<double>(now - *first_).count());
    return static_cast<double>(n_in_window_) / std::max(span, 1e-3);
}

void TokenRate::drop_before(Clock::time_point at) {
    while (!samples_.empty() && samples_.front().first < at) {
        n_in_window_ -= samples_.front().second;
        samples_.pop_front();
    }
}

}  // namespace folio
