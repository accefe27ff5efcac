// Plain values the vision kernels take (the .cu files compile as C++17, without the engine's headers);
// cuda-vision.cpp makes them from the backend interface's types.
#pragma once

#include <cstdint>

namespace folio::kernels {

// folio::Activation, value for value.
enum class KernelActivation : int { None, Relu, Silu, Gelu, Sigmoid, QuickGelu };

// The sizes of a 4-D tensor [n, c, h, w].
struct Dims4 {
    int64_t n = 0, c = 0, h = 0, w = 0;
};

}  // namespace folio::kernels
