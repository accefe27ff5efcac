// Turning a runtime size into a template argument of the kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace folio::kernels {

// n clamped to [1, 8], the form in which the kernels take it.
inline int clamp_1_to_8(int64_t n) {
    return static_cast<int>(std::clamp<int64_t>(n, 1, 8));
}

// Calls fn with std::integral_constant<int, clamp_1_to_8(n)>.
template <typename F>
void with_1_to_8(int64_t n, F&& fn) {
    switch (clamp_1_to_8(n)) {
        case 1:
            fn(std::integral_constant<int, 1>{});
            break;
        case 2:
            fn(std::integral_constant<int, 2>{});
            break;
        case 3:
            fn(std::integral_constant<int, 3>{});
            break;
        case 4:
            fn(std::integral_constant<int, 4>{});
            break;
        case 5:
            fn(std::integral_constant<int, 5>{});
            break;
        case 6:
            fn(std::integral_constant<int, 6>{});
            break;
        case 7:
            fn(std::integral_constant<int, 7>{});
            break;
        default:
            fn(std::integral_constant<int, 8>{});
            break;
    }
}

// Calls fn with std::integral_constant<int, n> for n of 8, 4 or 2, else with std::integral_constant<int, 1>.
template <typename F>
void with_1_2_4_8(int n, F&& fn) {
    switch (n) {
        case 8:
            fn(std::integral_constant<int, 8>{});
            break;
        case 4:
            fn(std::integral_constant<int, 4>{});
            break;
        case 2:
            fn(std::integral_constant<int, 2>{});
            break;
        default:
            fn(std::integral_constant<int, 1>{});
            break;
    }
}

}  // namespace folio::kernels
