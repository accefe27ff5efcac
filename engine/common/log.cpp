#include "engine/common/log.h"

#include <iostream>
#include <mutex>

namespace folio {

namespace {

std::mutex& sink_mutex() {
    static std::mutex m;
    return m;
}

LogSink& current_sink() {
    static LogSink sink;
    return sink;
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
    const std::lock_guard lock(sink_mutex());
    LogSink previous = std::move(current_sink());
    current_sink() = std::move(sink);
    return previous;
}

void log_info(std::string_view message) {
    const std::lock_guard lock(sink_mutex());
    if (current_sink()) {
        current_sink()(message);
    } else {
        std::cerr << message << '\n';
    }
}

}  // namespace folio
