// Engine messages for the user (the KV-cache plan, say): to stderr unless the application sets a sink.
#pragma once

#include <functional>
#include <string_view>

namespace folio {

using LogSink = std::function<void(std::string_view)>;

// Replaces the sink; an empty function restores stderr. Returns the previous sink.
LogSink set_log_sink(LogSink sink);
void log_info(std::string_view message);

}  // namespace folio
