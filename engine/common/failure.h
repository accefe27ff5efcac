// What kind of failure ended a request, and whether the engine can go on after it.
#pragma once

#include <exception>
#include <string>

#include "engine/common/error.h"

namespace folio {

enum class ErrorKind {
    None,
    InvalidRequest,  // refused before it ran: a bad image, a prompt over max_model_len, ...
    Failed,          // a step that ran it failed
    OutOfMemory,     // the device ran out of memory running it
    DeviceLost,      // the device failed; nothing more runs on it
    Stopped,         // the service stopped or unloaded before it finished
};

const char* error_kind_name(ErrorKind kind);
// Whether the engine can take more work after a failure of this kind.
bool can_continue_after(ErrorKind kind);

// A failure whose kind is known where it is raised.
class KindedError : public Error {
public:
    KindedError(ErrorKind kind, const std::string& what) : Error(what), kind_(kind) {}
    ErrorKind kind() const { return kind_; }

private:
    ErrorKind kind_;
};

// The kind of a failure inside a step: a KindedError's own; out of memory and the CUDA errors after which a
// context is unusable (illegal address, launch failure, ECC, no device) from the message; else Failed.
ErrorKind classify_failure(const std::exception& e);

}  // namespace folio
