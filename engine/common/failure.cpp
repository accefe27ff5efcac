#include "engine/common/failure.h"

#include <array>
#include <string_view>

namespace folio {

const char* error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::None:
            return "none";
        case ErrorKind::InvalidRequest:
            return "invalid request";
        case ErrorKind::Failed:
            return "failed";
        case ErrorKind::OutOfMemory:
            return "out of memory";
        case ErrorKind::DeviceLost:
            return "device lost";
        case ErrorKind::Stopped:
            return "stopped";
    }
    return "unknown";
}

bool can_continue_after(ErrorKind kind) {
    return kind != ErrorKind::DeviceLost;
}

ErrorKind classify_failure(const std::exception& e) {
    if (const auto* kinded = dynamic_cast<const KindedError*>(&e)) {
        return kinded->kind();
    }
    const std::string_view what = e.what();
    // cudaGetErrorString's texts for the sticky errors, and the loss of the device.
    constexpr std::array<std::string_view, 10> kDeviceLost = {
        "illegal memory access",   "unspecified launch failure", "device-side assert",
        "uncorrectable ECC error", "no CUDA-capable device",     "illegal instruction",
        "misaligned address",      "launch timed out",           "fallen off the bus",
        "busy or unavailable"};
    for (const std::string_view text : kDeviceLost) {
        if (what.find(text) != std::string_view::npos) {
            return ErrorKind::DeviceLost;
        }
    }
    if (what.find("out of memory") != std::string_view::npos) {
        return ErrorKind::OutOfMemory;
    }
    return ErrorKind::Failed;
}

}  // namespace folio
