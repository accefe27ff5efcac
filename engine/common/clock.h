// Host wall-clock time for the engine's statistics and the benchmarks.
#pragma once

#include <chrono>

namespace folio {

// Seconds of steady-clock time from start until now.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace folio
