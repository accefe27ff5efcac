// Errors raised inside the engine. Internal code throws folio::Error with the offending value in the
// message; the public boundaries (folio-cli, the engine thread) catch and report.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace folio {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Builds a message from its arguments with operator<< and throws it as folio::Error.
template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
    std::ostringstream out;
    (out << ... << std::forward<Args>(args));
    throw Error(out.str());
}

}  // namespace folio
